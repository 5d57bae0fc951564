package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAPIMaxFailed: max_failed is an import option (JSON and form), shown
// on the batch, and changed on a running batch by POST
// /v1/batches/{id}/limit (admin only, the tenant's batches only, a bad
// bound 400).
func TestAPIMaxFailed(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	file := []byte("email,name,country,signup_date,amount\nmf1@example.com,Ann,FR,2021-03-04,1\n")
	a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "max_failed": "5%"}, "mf.csv", file)
	if a.status != http.StatusCreated || !strings.Contains(string(a.body), `"max_failed":"5%"`) {
		t.Fatalf("import with max_failed: %s", a)
	}
	b := h.batchOf(a, http.StatusCreated)
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "max_failed": "5%%", "new_batch": "true"}, "mf.csv", file); a.status != http.StatusBadRequest ||
		!strings.Contains(a.problem(t).Detail, "max_failed") {
		t.Fatalf("a bad max_failed: %s", a)
	}
	path := fmt.Sprintf("/v1/batches/%d/limit", b.ID)
	if a := h.postJSON(path, adminA, map[string]any{"max_failed": "12"}); a.status != http.StatusOK || !strings.Contains(string(a.body), `"max_failed":"12"`) {
		t.Fatalf("limit: %s", a)
	}
	if a := h.postJSON(path, adminA, map[string]any{"max_failed": "none"}); a.status != http.StatusOK || strings.Contains(string(a.body), `"max_failed"`) {
		t.Fatalf("limit none: %s", a)
	}
	for _, c := range []struct {
		token string
		body  map[string]any
		want  int
	}{
		{adminA, map[string]any{"max_failed": "lots"}, http.StatusBadRequest},
		{adminA, map[string]any{}, http.StatusBadRequest},
		{adminA, map[string]any{"max_failed": "1", "other": 2}, http.StatusBadRequest},
		{viewerA, map[string]any{"max_failed": "1"}, http.StatusForbidden},
		{adminB, map[string]any{"max_failed": "1"}, http.StatusNotFound},
	} {
		if a := h.postJSON(path, c.token, c.body); a.status != c.want {
			t.Errorf("limit %v: %s, want %d", c.body, a, c.want)
		}
	}
}
