package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
)

// TestAPIPurgedBatch: a purged batch says when and how on GET, its rows
// come with null values and values_purged, and its error report is a
// 409 values_purged naming the batch and the date.
func TestAPIPurgedBatch(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	file := []byte("email,name,country,signup_date,amount\np1@example.com,Ann,FR,2021-03-04,1\nnot-an-email,Bob,FR,2021-03-04,2\n")
	b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "p.csv", file), http.StatusCreated)
	if _, err := h.eng.Work(context.Background(), batch.WorkParams{BatchID: b.ID, TenantIDs: []string{"acme"}, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
	ps, err := h.eng.Purge(context.Background(), batch.PurgeParams{TenantID: "acme", BatchID: b.ID})
	if err != nil || len(ps) != 1 {
		t.Fatalf("purge = %+v, %v", ps, err)
	}
	date := ps[0].At.UTC().Format("2006-01-02")
	if a := h.get(fmt.Sprintf("/v1/batches/%d", b.ID), viewerA); a.status != http.StatusOK ||
		!strings.Contains(string(a.body), `"values_purged_at":"`+date) || !strings.Contains(string(a.body), `"values_purged_by":"command"`) {
		t.Fatalf("purged batch: %s", a)
	}
	if a := h.get(fmt.Sprintf("/v1/batches/%d/rows", b.ID), viewerA); a.status != http.StatusOK ||
		!strings.Contains(string(a.body), `"values":null`) || !strings.Contains(string(a.body), `"values_purged":true`) {
		t.Fatalf("purged rows: %s", a)
	}
	a := h.get(fmt.Sprintf("/v1/batches/%d/report", b.ID), viewerA)
	if p := a.problem(t); a.status != http.StatusConflict || p.Code != "values_purged" || !strings.Contains(p.Detail, date) ||
		!strings.Contains(p.Detail, fmt.Sprintf("batch %d", b.ID)) {
		t.Fatalf("report of a purged batch: %s", a)
	}
}
