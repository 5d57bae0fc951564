package server_test

import (
	"fmt"
	"net/http"
	"testing"
)

// TestAPICancelledBatchRefusesWork: a retry, or an edit that would make
// a row due, of a cancelled batch is a conflict the client can act on
// (409, re-run it), not an internal error.
func TestAPICancelledBatchRefusesWork(t *testing.T) {
	t.Parallel()
	onBothStores(t, apiOptions{}, func(t *testing.T, h *apiHarness) {
		b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "c.csv",
			[]byte("email,name,country,signup_date,amount\nc1@example.com,C One,PT,2020-01-03,1.00\nnot-an-email,C Two,PT,2020-01-03,1.00\n")), http.StatusCreated)
		if a := h.postJSON(fmt.Sprintf("/v1/batches/%d/cancel", b.ID), adminA, map[string]any{}); a.status != http.StatusOK {
			t.Fatalf("cancel: %s", a)
		}
		for what, a := range map[string]answer{
			"retry": h.postJSON(fmt.Sprintf("/v1/batches/%d/retry", b.ID), adminA, map[string]any{}),
			"edit":  h.postJSON(fmt.Sprintf("/v1/batches/%d/rows/3/edit", b.ID), adminA, map[string]any{"set": map[string]string{"email": "c2@example.com"}}),
		} {
			if a.status != http.StatusConflict {
				t.Errorf("%s of a cancelled batch: %s", what, a)
			}
		}
	})
}
