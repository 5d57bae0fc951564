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

// TestAPILookAlikeColumn: a column that looks like a column of the kind
// the file lacks is 422 file_rejected with the options that settle it as
// data (map, ignore); the preview says the file would be rejected; with
// ignore the file imports (issue 27, item 1).
func TestAPILookAlikeColumn(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	file := []byte("email,name,country,signup_date,Amount (EUR)\nann@example.com,Ann,FR,2021-03-04,77.00\n")
	a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "eur.csv", file)
	if a.status != http.StatusUnprocessableEntity {
		t.Fatalf("a look-alike column: %s", a)
	}
	if p := a.problem(t); p.Code != "file_rejected" || fmt.Sprint(p.Hints) != "[{map [Amount (EUR)=amount]} {ignore [Amount (EUR)]}]" {
		t.Errorf("problem %+v, want file_rejected with the hints map and ignore", p)
	}
	var pv struct {
		Mapping struct {
			Suggestions []struct{ Header, Column string }
		}
		Counts map[string]int64
	}
	pa := h.upload("/v1/batches/preview", adminA, map[string]string{"kind": "customers"}, "eur.csv", file)
	pa.decode(t, &pv)
	if pa.status != http.StatusOK || len(pv.Mapping.Suggestions) != 1 || len(pv.Counts) != 0 {
		t.Errorf("preview: %s", pa)
	}
	b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "ignore": "Amount (EUR)"}, "eur.csv", file), http.StatusCreated)
	if b.Counts["valid"] != 1 {
		t.Errorf("imported with the column ignored: %+v", b)
	}
	if st, _ := h.batches(adminA, ""); len(st) != 1 {
		t.Errorf("%d batches, want the one imported with ignore", len(st))
	}
}

// TestAPIImportOfPreviewKeepsName: a file previewed, then imported by its
// upload id without a source_name, is a batch named after the file the
// client sent, not "upload"; a source_name given with the upload still
// names it (issue 27).
func TestAPIImportOfPreviewKeepsName(t *testing.T) {
	t.Parallel()
	for name, newAPI := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQL": postgresAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newAPI(t, apiOptions{})
			file := []byte("email,name,country,signup_date,amount\nnm1@example.com,Ann,FR,2021-03-04,1\n")
			var pv struct {
				Upload string `json:"upload"`
			}
			a := h.upload("/v1/batches/preview", adminA, map[string]string{"kind": "customers"}, "clients 2026.csv", file)
			a.decode(t, &pv)
			if a.status != http.StatusOK || pv.Upload == "" {
				t.Fatalf("preview: %s", a)
			}
			b := h.batchOf(h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "upload": pv.Upload}), http.StatusCreated)
			if b.SourceName != "clients 2026.csv" {
				t.Errorf("the import of a preview's upload is named %q, want the file's name", b.SourceName)
			}
			named := h.batchOf(h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "upload": pv.Upload, "source_name": "renamed.csv", "options": map[string]any{"new_batch": true}}), http.StatusCreated)
			if named.SourceName != "renamed.csv" {
				t.Errorf("with a source_name: %q", named.SourceName)
			}
		})
	}
}
