package server_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// whereFile has four bad dates (rows 3 to 6) in three countries.
const whereFile = `email,name,country,signup_date,amount
a@example.com,Ann,DE,2020-01-01,1.00
b@example.com,Bob,DE,2023-13-01,2.00
c@example.com,Cy,FR,2023-13-02,3.00
d@example.com,Di,DE,2023-13-03,4.00
e@example.com,Eve,PT,2023-13-04,5.00
`

// TestAPIRowsWhere: the rows a where over the file's columns selects,
// alone and with a state; a bulk preview, set and skip with a where
// change exactly those rows; a where naming no column of the file, or
// that cannot be read, is 400 naming the columns or the position.
func TestAPIRowsWhere(t *testing.T) {
	t.Parallel()
	onBothStores(t, apiOptions{}, testAPIRowsWhere)
}

func testAPIRowsWhere(t *testing.T, h *apiHarness) {
	b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "where.csv", []byte(whereFile)), http.StatusCreated)
	h.work(b.ID)
	base := fmt.Sprintf("/v1/batches/%d", b.ID)
	for q, want := range map[string][]int64{
		"where=" + url.QueryEscape("country = DE"):                                            {2, 3, 5},
		"state=invalid&where=" + url.QueryEscape("COUNTRY = DE"):                              {3, 5},
		"where=" + url.QueryEscape("country in (FR, PT) or name = 'Ann'"):                     {2, 4, 6},
		"where=" + url.QueryEscape("country = DE and signup_date != 2020-01-01") + "&limit=1": {3},
		"where=" + url.QueryEscape("amount is null"):                                          nil,
	} {
		if got := h.listRowNos(t, base+"/rows?"+q); !slices.Equal(got, want) {
			t.Errorf("rows?%s: %v, want %v", q, got, want)
		}
	}
	for w, want := range map[string]string{
		"city = Berlin":      `unknown column "city" (columns: email, name, country, signup_date or amount)`,
		"country == DE":      "at position 10",
		"country = DE and (": "at the end",
	} {
		if a := h.get(base+"/rows?where="+url.QueryEscape(w), viewerA); a.status != http.StatusBadRequest || !strings.Contains(a.problem(t).Detail, want) {
			t.Errorf("rows where %q: %s; want 400 with %q", w, a, want)
		}
		a := h.postJSON(base+"/rows/bulk", adminA, map[string]any{"action": "skip", "reason": "r", "filter": map[string]any{"where": w}})
		if a.status != http.StatusBadRequest || !strings.Contains(a.problem(t).Detail, want) {
			t.Errorf("bulk skip where %q: %s; want 400 with %q", w, a, want)
		}
	}

	bulk := base + "/rows/bulk"
	h.wantBulk(t, bulk, map[string]any{"action": "skip", "reason": "r", "preview": true,
		"filter": map[string]any{"states": []string{"invalid"}, "where": "country = DE"}}, apiBulk{Action: "skip", Preview: true, Matched: 2})
	// A where alone is a filter: the set changes FR's invalid row only.
	h.wantBulk(t, bulk, map[string]any{"action": "set", "column": "signup_date", "value": "2020-05-05",
		"filter": map[string]any{"where": "country = FR"}}, apiBulk{Action: "set", Matched: 1, Changed: 1, Valid: 1})
	h.wantBulk(t, bulk, map[string]any{"action": "skip", "reason": "not ours",
		"filter": map[string]any{"states": []string{"invalid"}, "where": "country in (DE, PT)"}}, apiBulk{Action: "skip", Matched: 3, Changed: 3})
	got := h.batchOf(h.get(base, viewerA), http.StatusOK)
	if got.Counts["succeeded"] != 1 || got.Counts["valid"] != 1 || got.Counts["skipped"] != 3 || got.Counts["invalid"] != 0 {
		t.Fatalf("counts after the bulk actions: %v", got.Counts)
	}
	if got := h.listRowNos(t, base+"/rows?state=valid&where="+url.QueryEscape("signup_date = 2020-05-05")); !slices.Equal(got, []int64{4}) {
		t.Fatalf("valid rows of the new date: %v, want [4]", got)
	}
}

// wantBulk posts a bulk action and fails unless its answer is want.
func (h *apiHarness) wantBulk(t *testing.T, path string, body map[string]any, want apiBulk) {
	t.Helper()
	var res apiBulk
	a := h.postJSON(path, adminA, body)
	a.decode(t, &res)
	if a.status != http.StatusOK || res != want {
		t.Fatalf("bulk %v: %s; want %+v", body, a, want)
	}
}
