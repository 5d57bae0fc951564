package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAPIExportFilter: POST /v1/exports takes the filter batchctl export
// does (where, batch, state), records it on the export's batch, and
// refuses one it cannot apply before anything is written.
func TestAPIExportFilter(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQL": postgresAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testAPIExportFilter(t, mk(t, apiOptions{}))
		})
	}
}

func testAPIExportFilter(t *testing.T, h *apiHarness) {
	customer := func(email, country, amount string) map[string]string {
		return map[string]string{"email": email, "name": "N", "country": country, "signup_date": "2024-01-02", "amount": amount}
	}
	first := h.batchOf(h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "source_name": "first.csv", "rows": []map[string]string{
		customer("a@example.com", "DE", "1.00"), customer("b@example.com", "FR", "2.00"),
	}}), http.StatusCreated)
	h.work(first.ID)
	second := h.batchOf(h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "source_name": "second.csv", "rows": []map[string]string{
		customer("b@example.com", "FR", "3.00"), customer("c@example.com", "DE", "4.00"), customer("d@example.com", "IT", "5.00"),
	}}), http.StatusCreated)
	h.work(second.ID)

	for _, tc := range []struct {
		req  map[string]any
		want []string
	}{
		{map[string]any{"where": "country=DE"}, []string{"a@example.com", "c@example.com"}},
		{map[string]any{"batch": second.ID}, []string{"b@example.com", "c@example.com", "d@example.com"}},
		{map[string]any{"batch": second.ID, "state": "succeeded", "where": "country in (DE, IT)"}, []string{"c@example.com", "d@example.com"}},
	} {
		tc.req["kind"] = "customers"
		a := h.postJSON("/v1/exports", adminA, tc.req)
		b := h.batchOf(a, http.StatusCreated)
		var rec struct {
			Recalc map[string]string `json:"recalc"`
		}
		a.decode(t, &rec)
		if rec.Recalc["where"] != fmt.Sprint(tc.req["where"]) && tc.req["where"] != nil {
			t.Errorf("%v: the batch records %v", tc.req, rec.Recalc)
		}
		file := h.get(fmt.Sprintf("/v1/batches/%d/file", b.ID), adminA)
		if file.status != http.StatusOK || b.Total != int64(len(tc.want)) {
			t.Fatalf("%v: %d rows, download %s", tc.req, b.Total, file)
		}
		for _, email := range tc.want {
			if !bytes.Contains(file.body, []byte(email)) {
				t.Errorf("%v: %s is not in the file:\n%s", tc.req, email, file.body)
			}
		}
	}

	before, _ := h.batches(adminA, "")
	for _, tc := range []struct {
		token  string
		req    map[string]any
		status int
		detail string
	}{
		{adminA, map[string]any{"where": "nope = 1"}, http.StatusBadRequest, "email, name, country, signup_date or amount"},
		{adminA, map[string]any{"where": "country="}, http.StatusBadRequest, "where"},
		{adminA, map[string]any{"state": "succeeded"}, http.StatusBadRequest, "state"},
		{adminA, map[string]any{"batch": second.ID, "state": "nope"}, http.StatusBadRequest, "unknown state"},
		// Another tenant's batch is not there for globex.
		{adminB, map[string]any{"batch": second.ID}, http.StatusNotFound, "no batch"},
	} {
		tc.req["kind"] = "customers"
		a := h.postJSON("/v1/exports", tc.token, tc.req)
		if a.status != tc.status || !strings.Contains(a.problem(t).Detail, tc.detail) {
			t.Errorf("%v: want %d and %q, got %s", tc.req, tc.status, tc.detail, a)
		}
	}
	if after, _ := h.batches(adminA, ""); len(after) != len(before) {
		t.Errorf("refused exports created batches: %d, then %d", len(before), len(after))
	}
}
