package server_test

import (
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
