package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestAPICrossTenantFiles: the files the service keeps belong to the
// tenant that sent or made them. A preview's upload id is opaque (not
// the content's digest), and neither it nor a batch's source_digest lets
// another tenant import, re-run with or download the file: every
// endpoint that takes an upload or serves a kept file answers globex as
// if the file did not exist, on both stores and under row-level
// security.
func TestAPICrossTenantFiles(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQL": postgresAPI, "PostgreSQLTenantRole": postgresRLSAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testAPICrossTenantFiles(t, mk(t, apiOptions{}))
		})
	}
}

func testAPICrossTenantFiles(t *testing.T, h *apiHarness) {
	file := fixture(t)
	sum := sha256.Sum256(file)
	digest := hex.EncodeToString(sum[:])

	// acme previews its customers, imports the preview's upload, works
	// it, and exports its customers to a kept file.
	a := h.upload("/v1/batches/preview", viewerA, map[string]string{"kind": "customers"}, "customers.csv", file)
	if a.status != http.StatusOK {
		t.Fatalf("preview: %s", a)
	}
	var pv struct {
		Upload string `json:"upload"`
	}
	a.decode(t, &pv)
	if pv.Upload == "" || strings.Contains(pv.Upload, digest) || strings.Contains(pv.Upload, digest[:16]) {
		t.Errorf("the preview's upload %q is the content's digest %s: it must be an opaque id", pv.Upload, digest)
	}
	imported := h.batchOf(h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "upload": pv.Upload, "source_name": "customers.csv"}), http.StatusCreated)
	if imported.SourceDigest != digest {
		t.Errorf("source_digest %s, want the content's digest %s", imported.SourceDigest, digest)
	}
	h.work(imported.ID)
	export := h.batchOf(h.postJSON("/v1/exports", adminA, map[string]string{"kind": "customers", "format": "csv"}), http.StatusCreated)
	if export.Total == 0 {
		t.Fatalf("acme's export is empty: %+v", export)
	}
	exported := h.get(fmt.Sprintf("/v1/batches/%d/file", export.ID), adminA)
	if exported.status != http.StatusOK || !bytes.Contains(exported.body, []byte("@example.com")) {
		t.Fatalf("acme's export download: %s", exported)
	}

	// globex has a batch of its own to re-run.
	own := h.batchOf(h.postJSON("/v1/batches", adminB, map[string]any{"kind": "customers", "source_name": "own.csv", "rows": []map[string]string{
		{"email": "g1@example.com", "name": "G One", "country": "PT", "signup_date": "2020-01-01", "amount": "1.00"},
	}}), http.StatusCreated)

	// Whatever globex knows of acme's files, nothing takes it there.
	for what, id := range map[string]string{"acme's preview upload": pv.Upload, "acme's import digest": imported.SourceDigest, "acme's export digest": export.SourceDigest} {
		if a := h.postJSON("/v1/batches", adminB, map[string]any{"kind": "customers", "upload": id}); a.status != http.StatusNotFound || a.problem(t).Code != "file_not_kept" {
			t.Errorf("globex creates a batch from %s: %s", what, a)
		}
		if a := h.postJSON(fmt.Sprintf("/v1/batches/%d/rerun", own.ID), adminB, map[string]any{"upload": id}); a.status != http.StatusNotFound || a.problem(t).Code != "file_not_kept" {
			t.Errorf("globex re-runs its batch with %s: %s", what, a)
		}
	}
	for what, id := range map[string]int64{"acme's import": imported.ID, "acme's export": export.ID} {
		if a := h.get(fmt.Sprintf("/v1/batches/%d/file", id), adminB); a.status != http.StatusNotFound || a.problem(t).Code != "not_found" || bytes.Contains(a.body, []byte("@example.com")) {
			t.Errorf("globex downloads %s: %s", what, a)
		}
	}
	// globex has its own batch and nothing of acme's.
	if bs, _ := h.batches(adminB, ""); len(bs) != 1 || bs[0].ID != own.ID {
		t.Errorf("globex's batches: %+v", bs)
	}
	var rows struct {
		Rows []apiRow `json:"rows"`
	}
	h.get(fmt.Sprintf("/v1/batches/%d/rows", own.ID), adminB).decode(t, &rows)
	if len(rows.Rows) != 1 || !slices.Contains(rows.Rows[0].Values, "g1@example.com") {
		t.Errorf("globex's rows after its attempts: %+v", rows.Rows)
	}

	// The same bytes sent by globex are globex's own file: it imports
	// and downloads them, and acme's upload is still acme's.
	gp := h.upload("/v1/batches/preview", adminB, map[string]string{"kind": "customers"}, "customers.csv", file)
	var gpv struct {
		Upload string `json:"upload"`
	}
	gp.decode(t, &gpv)
	if gpv.Upload == pv.Upload {
		t.Errorf("globex's preview of the same bytes has acme's upload id %q", pv.Upload)
	}
	gb := h.batchOf(h.postJSON("/v1/batches", adminB, map[string]any{"kind": "customers", "upload": gpv.Upload, "source_name": "customers.csv"}), http.StatusCreated)
	if dl := h.get(fmt.Sprintf("/v1/batches/%d/file", gb.ID), adminB); dl.status != http.StatusOK || !bytes.Equal(dl.body, file) {
		t.Errorf("globex downloads its own file: %d, %d bytes", dl.status, len(dl.body))
	}
	if a := h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "upload": gpv.Upload}); a.status != http.StatusNotFound || a.problem(t).Code != "file_not_kept" {
		t.Errorf("acme creates a batch from globex's upload: %s", a)
	}
	// (The same file again is the batch it made: 200.)
	if a := h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "upload": pv.Upload}); a.status != http.StatusOK && a.status != http.StatusCreated {
		t.Errorf("acme's own upload again: %s", a)
	}
	if dl := h.get(fmt.Sprintf("/v1/batches/%d/file", imported.ID), viewerA); dl.status != http.StatusOK || !bytes.Equal(dl.body, file) {
		t.Errorf("acme downloads its file: %d, %d bytes", dl.status, len(dl.body))
	}
}
