package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestAPIBulkRows: the rows filtered by states, code and column; a bulk
// action's preview, set and skip over a filter; the refusals (a viewer,
// an empty filter, an unknown column, a cancelled batch); the history.
func TestAPIBulkRows(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQLTenantRole": postgresRLSAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testAPIBulkRows(t, mk(t, apiOptions{}))
		})
	}
}

// bulkFile has two bad dates (rows 3 and 4), a bad email (5) and a
// missing name (6).
const bulkFile = `email,name,country,signup_date,amount
a@example.com,Ann,PT,2020-01-01,1.00
b@example.com,Bob,PT,2023-13-01,2.00
c@example.com,Cy,PT,2023-13-02,3.00
not-an-email,Di,PT,2020-01-01,4.00
e@example.com,,PT,2020-01-01,5.00
`

// apiHistory is a page of a batch's history.
type apiHistory struct {
	History []struct {
		Action string `json:"action"`
		Actor  string `json:"actor"`
		RowNo  int64  `json:"row_no"`
	} `json:"history"`
}

type apiBulk struct {
	Action  string `json:"action"`
	Preview bool   `json:"preview"`
	Matched int64  `json:"matched"`
	Changed int64  `json:"changed"`
	Valid   int64  `json:"valid"`
	Invalid int64  `json:"invalid"`
}

// listRowNos lists the row numbers of a rows query.
func (h *apiHarness) listRowNos(t *testing.T, path string) []int64 {
	t.Helper()
	var page struct {
		Rows []apiRow `json:"rows"`
	}
	a := h.get(path, viewerA)
	if a.status != http.StatusOK {
		t.Fatalf("GET %s: %s", path, a)
	}
	a.decode(t, &page)
	var out []int64
	for _, r := range page.Rows {
		out = append(out, r.RowNo)
	}
	return out
}

func testAPIBulkRows(t *testing.T, h *apiHarness) {
	b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "bulk.csv", []byte(bulkFile)), http.StatusCreated)
	h.work(b.ID)
	base := fmt.Sprintf("/v1/batches/%d", b.ID)
	var row struct {
		Errors []struct{ Code, Column string } `json:"errors"`
	}
	h.get(base+"/rows/3", viewerA).decode(t, &row)
	if len(row.Errors) != 1 || row.Errors[0].Column != "signup_date" {
		t.Fatalf("row 3's errors: %+v", row)
	}
	date := row.Errors[0].Code
	for q, want := range map[string][]int64{
		"state=invalid,failed":                    {3, 4, 5, 6},
		"state=succeeded":                         {2},
		"code=" + date:                            {3, 4},
		"code=" + date + "&column=signup_date":    {3, 4},
		"code=" + date + "&column=email":          nil,
		"state=invalid&column=name&limit=1":       {6},
		"state=invalid,succeeded&after=3&limit=2": {4, 5},
	} {
		if got := h.listRowNos(t, base+"/rows?"+q); !slices.Equal(got, want) {
			t.Errorf("rows?%s: %v, want %v", q, got, want)
		}
	}
	if a := h.get(base+"/rows?state=invalid,bogus", viewerA); a.status != http.StatusBadRequest {
		t.Errorf("a bad state in the list: %s", a)
	}

	bulk := base + "/rows/bulk"
	if a := h.postJSON(bulk, viewerA, map[string]any{"action": "skip", "reason": "r", "filter": map[string]any{"code": date}}); a.status != http.StatusForbidden {
		t.Errorf("a viewer's bulk skip: %s", a)
	}
	if a := h.postJSON(bulk, adminA, map[string]any{"action": "skip", "reason": "r"}); a.status != http.StatusBadRequest || a.problem(t).Code != "bad_request" {
		t.Errorf("an empty filter: %s", a)
	}
	a := h.postJSON(bulk, adminA, map[string]any{"action": "set", "column": "nope", "value": "x", "filter": map[string]any{"code": date}})
	if a.status != http.StatusBadRequest || !strings.Contains(a.problem(t).Detail, "signup_date") {
		t.Errorf("an unknown column: %s", a)
	}

	var res apiBulk
	a = h.postJSON(bulk, adminA, map[string]any{"action": "set", "column": "signup_date", "value": "2020-05-05", "preview": true,
		"filter": map[string]any{"states": []string{"invalid"}, "code": date}})
	a.decode(t, &res)
	if a.status != http.StatusOK || res != (apiBulk{Action: "set", Preview: true, Matched: 2}) {
		t.Fatalf("preview: %s", a)
	}
	a = h.postJSON(bulk, adminA, map[string]any{"action": "set", "column": "signup_date", "value": "2020-05-05",
		"filter": map[string]any{"states": []string{"invalid"}, "code": date}})
	a.decode(t, &res)
	if a.status != http.StatusOK || res != (apiBulk{Action: "set", Matched: 2, Changed: 2, Valid: 2}) {
		t.Fatalf("set: %s", a)
	}
	a = h.postJSON(bulk, adminA, map[string]any{"action": "skip", "reason": "no name", "filter": map[string]any{"column": "name"}})
	a.decode(t, &res)
	if a.status != http.StatusOK || res != (apiBulk{Action: "skip", Matched: 1, Changed: 1}) {
		t.Fatalf("skip: %s", a)
	}
	got := h.batchOf(h.get(base, viewerA), http.StatusOK)
	if got.Counts["valid"] != 2 || got.Counts["skipped"] != 1 || got.Counts["invalid"] != 1 || got.Counts["succeeded"] != 1 {
		t.Fatalf("counts after the bulk actions: %v", got.Counts)
	}
	var hist apiHistory
	h.get(base+"/history", viewerA).decode(t, &hist)
	if len(hist.History) != 2 || hist.History[0].Action != "edit" || hist.History[1].Action != "skip" || hist.History[1].RowNo != 0 || hist.History[0].Actor != "api:admin-acme" {
		t.Fatalf("history: %+v", hist)
	}

	if a := h.postJSON(base+"/cancel", adminA, nil); a.status != http.StatusOK {
		t.Fatalf("cancel: %s", a)
	}
	if a := h.postJSON(bulk, adminA, map[string]any{"action": "retry", "all": true}); a.status != http.StatusConflict {
		t.Errorf("a bulk retry of a cancelled batch: %s", a)
	}
}
