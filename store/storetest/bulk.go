package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// runBulk runs the conformance tests of row filters and bulk actions.
func runBulk(t *testing.T, newStore NewStoreFunc) {
	t.Run("RowFilterByStateCodeColumn", func(t *testing.T) { t.Parallel(); testRowFilter(t, newStore(t)) })
	t.Run("BulkSkipAndRetry", func(t *testing.T) { t.Parallel(); testBulkSkipRetry(t, newStore(t)) })
	t.Run("BulkEditPages", func(t *testing.T) { t.Parallel(); testBulkEdit(t, newStore(t)) })
	t.Run("BulkRefusesHeldAndCancelled", func(t *testing.T) { t.Parallel(); testBulkRefuses(t, newStore(t)) })
}

// bulkErrors are the field errors of the invalid rows of ingestErrors.
var bulkErrors = map[int64][]rows.FieldError{
	2: {{Column: "signup", Code: "bad_date", Message: "not a date"}},
	3: {{Column: "signup", Code: "bad_date", Message: "not a date"}},
	4: {{Column: "email", Code: "required", Message: "is required"}},
	5: {{Column: "email", Code: "bad_date", Message: "not a date"}},
	// An error of each, but none with both bad_date and signup.
	6: {{Column: "signup", Code: "required", Message: "is required"}, {Column: "email", Code: "bad_date", Message: "not a date"}},
	// Beyond the first page of a small limit.
	25: {{Column: "signup", Code: "bad_date", Message: "not a date"}},
}

// ingestErrors writes a 30-row batch (rows 2-31, chunks of 10, columns
// signup and email) whose rows in bulkErrors are invalid with those errors.
func ingestErrors(t *testing.T, s driver.Store) *batchtype.Batch {
	t.Helper()
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := range 30 {
			no := int64(i + 2)
			r := driver.IngestRow{RowNo: no, ChunkNo: int64(i / 10), State: rows.StateValid, Values: []string{fmt.Sprintf("d%d", no), fmt.Sprintf("e%d", no)}}
			if errs, bad := bulkErrors[no]; bad {
				r.State, r.Errors = rows.StateInvalid, slices.Clone(errs)
				for j := range r.Errors {
					r.Errors[j].Row = no
				}
			}
			if !yield(r, nil) {
				return
			}
		}
	}
	b, err := s.BatchIngest(context.Background(), driver.BatchIngestParams{TenantID: tenant, Kind: "k", SourceName: "f.csv",
		Header: []string{"signup", "email"}, Rows: seq})
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	return b
}

// listed returns the row numbers a filter lists, paging by keyset with
// limit rows a page.
func listed(t *testing.T, s driver.Store, id int64, f driver.RowFilter, limit int) []int64 {
	t.Helper()
	var (
		out   []int64
		after int64
	)
	for {
		page, err := s.RowsList(context.Background(), driver.RowsListParams{TenantID: tenant, BatchID: id, Filter: f, AfterRowNo: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			out = append(out, r.RowNo)
		}
		if len(page) < limit {
			return out
		}
		after = page[len(page)-1].RowNo
	}
}

// testRowFilter: a filter keeps the rows in its states with an error of
// its code, on its column, both on one error when both are named; pages
// by keyset; the old State parameter still filters.
func testRowFilter(t *testing.T, s driver.Store) {
	b := ingestErrors(t, s)
	// Rows 10, 20 and 30 fail: failed rows have errors too, of another code.
	finishWith(t, s, b.ID, func(row int64) rows.State {
		if row%10 == 0 {
			return rows.StateFailed
		}
		return rows.StateSucceeded
	})
	inv := []rows.State{rows.StateInvalid}
	for _, c := range []struct {
		name  string
		f     driver.RowFilter
		limit int
		want  []int64
	}{
		{"state", driver.RowFilter{States: inv}, 100, []int64{2, 3, 4, 5, 6, 25}},
		{"states", driver.RowFilter{States: []rows.State{rows.StateFailed, rows.StateInvalid}}, 100, []int64{2, 3, 4, 5, 6, 10, 20, 25, 30}},
		{"code", driver.RowFilter{Code: "bad_date"}, 100, []int64{2, 3, 5, 6, 25}},
		{"code paged", driver.RowFilter{Code: "bad_date"}, 2, []int64{2, 3, 5, 6, 25}},
		{"column", driver.RowFilter{Column: "signup"}, 100, []int64{2, 3, 6, 25}},
		{"code and column", driver.RowFilter{States: inv, Code: "bad_date", Column: "signup"}, 1, []int64{2, 3, 25}},
		{"failed code", driver.RowFilter{Code: "x"}, 100, []int64{10, 20, 30}},
		{"nothing", driver.RowFilter{Code: "bad_date", Column: "nowhere"}, 100, nil},
		{"all", driver.RowFilter{}, 1000, nil},
	} {
		got := listed(t, s, b.ID, c.f, c.limit)
		if c.name == "all" {
			if len(got) != 30 {
				t.Fatalf("empty filter lists %d rows, want 30", len(got))
			}
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("%s: %+v lists %v, want %v", c.name, c.f, got, c.want)
		}
	}
	page, err := s.RowsList(context.Background(), driver.RowsListParams{TenantID: tenant, BatchID: b.ID, State: rows.StateFailed})
	if err != nil || len(page) != 3 || page[0].RowNo != 10 {
		t.Fatalf("State failed: %+v, %v", page, err)
	}
	if page, err := s.RowsList(context.Background(), driver.RowsListParams{TenantID: "t2", BatchID: b.ID, Filter: driver.RowFilter{States: inv}}); err != nil || len(page) != 0 {
		t.Fatalf("another tenant's rows: %+v, %v", page, err)
	}
}

// testBulkSkipRetry: a preview counts and changes nothing; a skip of every
// row with one code skips exactly those, keeps their values, recounts
// the batch and its errors, and is one history entry and one event; a
// retry makes only failed and dead rows due again, whatever the filter.
func testBulkSkipRetry(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingestErrors(t, s)
	finishWith(t, s, b.ID, func(row int64) rows.State {
		if row%10 == 0 {
			return rows.StateFailed
		}
		return rows.StateSucceeded
	})
	before := CheckInvariant(t, s, tenant, b.ID)
	seqBefore := len(Events(t, s, tenant, b.ID, 100))
	every := []rows.State{rows.StateInvalid, rows.StateSucceeded, rows.StateFailed}
	skip := driver.RowsBulkParams{TenantID: tenant, BatchID: b.ID, Action: driver.BulkSkip, Filter: driver.RowFilter{States: every, Code: "bad_date"},
		Message: "skipped by ann: dates are lost", Actor: "ann", Detail: map[string]any{"reason": "dates are lost"}}
	pre := skip
	pre.Preview = true
	if n, err := s.RowsBulk(ctx, pre); err != nil || n != 5 {
		t.Fatalf("preview: %d, %v; want 5", n, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), before)
	if h, _ := s.HistoryList(ctx, driver.HistoryListParams{TenantID: tenant, BatchID: b.ID}); len(h) != 0 {
		t.Fatalf("a preview wrote history: %+v", h)
	}
	n, err := s.RowsBulk(ctx, skip)
	if err != nil || n != 5 {
		t.Fatalf("skip: %d, %v; want 5", n, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateSkipped: 5, rows.StateInvalid: 1, rows.StateFailed: 3, rows.StateSucceeded: 21})
	all := rowsOf(t, s, b.ID)
	for no, r := range all {
		wantSkipped := slices.Contains([]int64{2, 3, 5, 6, 25}, no)
		if (r.State == rows.StateSkipped) != wantSkipped {
			t.Fatalf("row %d is %s after a skip of bad_date", no, r.State)
		}
		if wantSkipped && (!r.Reviewed || len(r.Errors) != 1 || r.Errors[0].Code != rows.CodeSkipped || r.Errors[0].Row != no ||
			r.Errors[0].Message != "skipped by ann: dates are lost" || r.Values[0] != fmt.Sprint("d", no)) {
			t.Fatalf("skipped row %d: %+v", no, r)
		}
	}
	got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	if err != nil || len(got.ErrorCounts) != 1 || got.ErrorCounts[0] != (rows.ErrorCount{Column: "email", Code: "required", Count: 1}) {
		t.Fatalf("error counts after the skip: %+v, %v", got.ErrorCounts, err)
	}
	wantBulkHistory(t, s, b.ID, 1, "skip", 5)
	evs := Events(t, s, tenant, b.ID, 100)[seqBefore:]
	if len(evs) != 1 || evs[0].Type != batchtype.EventSkipped {
		t.Fatalf("events of the skip: %+v", evs)
	}

	// Retry: of failed rows only, though the filter names others too.
	retry := driver.RowsBulkParams{TenantID: tenant, BatchID: b.ID, Action: driver.BulkRetry, Actor: "bob",
		Filter: driver.RowFilter{States: []rows.State{rows.StateFailed, rows.StateInvalid, rows.StateSucceeded}}}
	if n, err := s.RowsBulk(ctx, retry); err != nil || n != 3 {
		t.Fatalf("retry: %d, %v; want 3", n, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateSkipped: 5, rows.StateInvalid: 1, rows.StateValid: 3, rows.StateSucceeded: 21})
	if r := rowsOf(t, s, b.ID)[10]; r.State != rows.StateValid || r.Attempts != 0 || len(r.Errors) != 0 {
		t.Fatalf("retried row 10: %+v", r)
	}
	wantBulkHistory(t, s, b.ID, 2, "retry", 3)
	// Nothing left to change: no history, no event.
	if n, err := s.RowsBulk(ctx, retry); err != nil || n != 0 {
		t.Fatalf("second retry: %d, %v", n, err)
	}
	wantBulkHistory(t, s, b.ID, 2, "retry", 3)
}

// wantBulkHistory fails unless the batch has n history entries, the last
// one for the whole batch with action and its detail's rows.
func wantBulkHistory(t *testing.T, s driver.Store, id int64, n int, action string, changed int64) {
	t.Helper()
	h, err := s.HistoryList(context.Background(), driver.HistoryListParams{TenantID: tenant, BatchID: id})
	if err != nil || len(h) != n {
		t.Fatalf("history = %+v, %v; want %d entries", h, err, n)
	}
	last := h[n-1]
	var detail struct {
		Rows int64 `json:"rows"`
	}
	if err := json.Unmarshal(last.Detail, &detail); err != nil || last.Action != action || last.RowNo != 0 || detail.Rows != changed {
		t.Fatalf("history entry %+v (%s): want %s of %d rows for the batch", last, last.Detail, action, changed)
	}
}

// testBulkEdit: a bulk edit writes each row's values, state and errors,
// reviewed; a row changed since it was read makes it a conflict that
// writes nothing.
func testBulkEdit(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingestErrors(t, s)
	before := CheckInvariant(t, s, tenant, b.ID)
	stale := driver.RowsEditParams{TenantID: tenant, BatchID: b.ID, Actor: "ann", Rows: []driver.RowEdit{
		{RowNo: 2, From: rows.StateInvalid, State: rows.StateValid, Values: []string{"2024-01-01", "e2"}},
		{RowNo: 7, From: rows.StateInvalid, State: rows.StateValid, Values: []string{"2024-01-01", "e7"}}, // valid, not invalid
	}}
	if _, err := s.RowsEdit(ctx, stale); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("edit of a changed row: %v, want ErrConflict", err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), before)
	if r := rowsOf(t, s, b.ID)[2]; r.State != rows.StateInvalid || r.Values[0] != "d2" {
		t.Fatalf("a refused edit wrote row 2: %+v", r)
	}
	edit := driver.RowsEditParams{TenantID: tenant, BatchID: b.ID, Actor: "ann", Detail: []byte(`{"column":"signup","rows":2}`), Rows: []driver.RowEdit{
		{RowNo: 2, From: rows.StateInvalid, State: rows.StateValid, Values: []string{"2024-01-01", "e2"}},
		{RowNo: 3, From: rows.StateInvalid, State: rows.StateInvalid, Values: []string{"soon", "e3"},
			Errors: []rows.FieldError{{Row: 3, Column: "signup", Code: "bad_date", Message: "still not a date"}}},
	}}
	if n, err := s.RowsEdit(ctx, edit); err != nil || n != 2 {
		t.Fatalf("edit: %d, %v", n, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateValid: 25, rows.StateInvalid: 5})
	all := rowsOf(t, s, b.ID)
	if r := all[2]; r.State != rows.StateValid || !r.Reviewed || r.Values[0] != "2024-01-01" || r.Values[1] != "e2" || len(r.Errors) != 0 {
		t.Fatalf("row 2 after the edit: %+v", r)
	}
	if r := all[3]; r.State != rows.StateInvalid || !r.Reviewed || r.Values[0] != "soon" || len(r.Errors) != 1 || r.Errors[0].Message != "still not a date" {
		t.Fatalf("row 3 after the edit: %+v", r)
	}
	if r := all[4]; r.Reviewed || r.Values[0] != "d4" {
		t.Fatalf("row 4 was not edited: %+v", r)
	}
	got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	counts := map[string]int64{}
	for _, c := range got.ErrorCounts {
		counts[c.Column+"/"+string(c.Code)] = c.Count
	}
	if want := map[string]int64{"signup/bad_date": 2, "email/required": 1, "email/bad_date": 2, "signup/required": 1}; err != nil || !maps.Equal(counts, want) {
		t.Fatalf("error counts after the edit: %v, %v; want %v", counts, err, want)
	}
	wantBulkHistory(t, s, b.ID, 1, "edit", 2)
}

// testBulkRefuses: rows a deferred lease holds make a skip a conflict that
// changes nothing, and a cancelled batch refuses every bulk action.
func testBulkRefuses(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingestErrors(t, s)
	before := CheckInvariant(t, s, tenant, b.ID)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID, DeferKinds: []string{"k"}})
	if !l.Deferred {
		t.Fatalf("lease not deferred: %+v", l)
	}
	skip := driver.RowsBulkParams{TenantID: tenant, BatchID: b.ID, Action: driver.BulkSkip, Message: "m", Filter: driver.RowFilter{States: []rows.State{rows.StateValid}}}
	if _, err := s.RowsBulk(ctx, skip); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("skip of rows a deferred lease holds: %v, want ErrConflict", err)
	}
	edit := driver.RowsEditParams{TenantID: tenant, BatchID: b.ID, Rows: []driver.RowEdit{
		{RowNo: l.Rows[0].RowNo, From: rows.StateValid, State: rows.StateValid, Values: []string{"x", "y"}}}}
	if _, err := s.RowsEdit(ctx, edit); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("edit of a row a deferred lease holds: %v, want ErrConflict", err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), before)
	// Invalid rows are not held: they may be skipped beside the lease.
	skip.Filter = driver.RowFilter{States: []rows.State{rows.StateInvalid}}
	if n, err := s.RowsBulk(ctx, skip); err != nil || n != 6 {
		t.Fatalf("skip of invalid rows beside a deferred lease: %d, %v", n, err)
	}
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	retry := driver.RowsBulkParams{TenantID: tenant, BatchID: b.ID, Action: driver.BulkRetry, Filter: driver.RowFilter{States: []rows.State{rows.StateFailed}}}
	if _, err := s.RowsBulk(ctx, retry); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("retry in a cancelled batch: %v, want ErrConflict", err)
	}
	if _, err := s.RowsBulk(ctx, driver.RowsBulkParams{TenantID: "t2", BatchID: b.ID, Action: driver.BulkSkip, Preview: true}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another tenant's batch: %v, want ErrNotFound", err)
	}
}
