package server_test

import (
	"fmt"
	"net/http"
	"testing"
)

// TestAPIIdempotencyKeyWithOtherOptions: the same Idempotency-Key and file
// with another date_order is 409 idempotency_key_reused, not the earlier
// batch (issue 27, item 4).
func TestAPIIdempotencyKeyWithOtherOptions(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	file := []byte("email,name,country,signup_date,amount\nk1@example.com,Ann,FR,01/02/2025,1\n")
	first := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "date_order": "dmy"}, "k.csv", file, "Idempotency-Key", "k-1"), http.StatusCreated)
	same := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "date_order": "dmy"}, "k.csv", file, "Idempotency-Key", "k-1")
	if b := h.batchOf(same, http.StatusOK); b.ID != first.ID {
		t.Fatalf("the same key, file and options: %s", same)
	}
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "date_order": "mdy"}, "k.csv", file, "Idempotency-Key", "k-1"); a.status != http.StatusConflict || a.problem(t).Code != "idempotency_key_reused" {
		t.Fatalf("the same key and file with another date_order: %s", a)
	}
}

// TestAPIRerunWithLocale: a re-run without a file takes the options too:
// a batch imported without its locale is fixed by a re-run with it
// (issue 27, item 6).
func TestAPIRerunWithLocale(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	file := []byte("email,name,country,signup_date,amount\nde1@example.com,Eva,DE,2022-01-02,\"1.234,56\"\nde2@example.com,Uwe,DE,2022-01-02,\"0,5\"\n")
	b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "de.csv", file), http.StatusCreated)
	if b.Counts["invalid"] != 2 {
		t.Fatalf("imported without the locale: %+v", b)
	}
	var rr struct {
		Batch apiBatch `json:"batch"`
		Valid int64    `json:"valid"`
	}
	a := h.postJSON(fmt.Sprintf("/v1/batches/%d/rerun", b.ID), adminA, map[string]any{"options": map[string]any{"locale": "de"}})
	a.decode(t, &rr)
	if a.status != http.StatusOK || rr.Valid != 2 || rr.Batch.Counts["valid"] != 2 {
		t.Fatalf("rerun with the locale: %s", a)
	}
}
