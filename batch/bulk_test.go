package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/storetest"
)

// rowNos lists the rows of a batch a filter selects, by keyset pages of 2.
func rowNos(t *testing.T, e *batch.Engine, id int64, f batch.RowFilter) []int64 {
	t.Helper()
	var (
		out   []int64
		after int64
	)
	for {
		page, err := e.Rows(context.Background(), batch.RowsParams{BatchID: id, Filter: f, AfterRowNo: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			out = append(out, r.RowNo)
		}
		if len(page) < 2 {
			return out
		}
		after = page[len(page)-1].RowNo
	}
}

// rowAt returns one row of a batch.
func rowAt(t *testing.T, e *batch.Engine, id, no int64) *batchtype.Row {
	t.Helper()
	r, err := e.Row(context.Background(), batch.RowParams{BatchID: id, RowNo: no})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBulkRows: filters by state, code and column; a preview changes
// nothing; set and replace validate the rows again (a fixed value makes a
// row valid, a bad one keeps it invalid with its new error, a taken key is
// a duplicate); a skip of every row with one code skips exactly those; a
// retry retries failed rows; protected rows are never changed; an empty
// filter, an unknown column and a cancelled batch are refused; each
// action is one history entry with its filter and rows.
func TestBulkRows(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		d := newDownstream()
		d.refuse["g@x.io"] = true
		e := newEngine(t, bd.store, membersRegistry(t, d, false), 30*time.Second)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "members", SourceName: "m.csv", Source: strings.NewReader(
			"email,name,amount\na@x.io,A,1\nb@x.io,B,-2\nc@x.io,,3\nd@x.io,D,-4\nA@x.io,E,-5\nf@x.io,F,x\ng@x.io,G,7\n")})
		if err != nil {
			t.Fatal(err)
		}
		work(t, e, b.ID) // 2 succeeds, 8 fails, 3-7 are invalid
		neg := rowAt(t, e, b.ID, 3).Errors[0].Code
		if got := rowNos(t, e, b.ID, batch.RowFilter{Code: string(neg)}); !slices.Equal(got, []int64{3, 5, 6}) {
			t.Fatalf("code %s: rows %v", neg, got)
		}
		if got := rowNos(t, e, b.ID, batch.RowFilter{States: []rows.State{rows.StateInvalid, rows.StateFailed}, Column: "amount"}); !slices.Equal(got, []int64{3, 5, 6, 7}) {
			t.Fatalf("invalid or failed, on amount: rows %v", got)
		}
		if got := rowNos(t, e, b.ID, batch.RowFilter{States: []rows.State{rows.StateFailed, rows.StateSucceeded}}); !slices.Equal(got, []int64{2, 8}) {
			t.Fatalf("failed or succeeded: rows %v", got)
		}

		// Refused: an empty filter, an unknown column, no reason.
		if _, err := e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSkip, Reason: "r"}); !errors.Is(err, batch.ErrInvalidRequest) {
			t.Fatalf("skip with an empty filter: %v", err)
		}
		_, err = e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSet, Filter: batch.RowFilter{Code: string(neg)}, Column: "nope"})
		if !errors.Is(err, batch.ErrInvalidRequest) || !strings.Contains(err.Error(), "email, name, amount") {
			t.Fatalf("set of an unknown column: %v", err)
		}
		if _, err := e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSkip, Filter: batch.RowFilter{Code: "x"}}); !errors.Is(err, batch.ErrInvalidRequest) {
			t.Fatalf("skip without a reason: %v", err)
		}

		// A preview counts and changes nothing.
		before := storetest.CheckInvariant(t, bd.store, batch.DefaultTenant, b.ID)
		res, err := e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSet, Filter: batch.RowFilter{Code: string(neg)}, Column: "amount", Value: "5", Preview: true})
		if err != nil || res != (batch.BulkResult{Action: batch.BulkSet, Preview: true, Matched: 3}) {
			t.Fatalf("preview: %+v, %v", res, err)
		}
		wantCounts(t, storetest.CheckInvariant(t, bd.store, batch.DefaultTenant, b.ID), before)
		if r := rowAt(t, e, b.ID, 3); r.Values[2] != "-2" || r.Reviewed {
			t.Fatalf("a preview changed row 3: %+v", r)
		}

		// A bad value keeps the rows invalid, with the new error.
		res, err = e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSet, Filter: batch.RowFilter{Code: string(neg)}, Column: "amount", Value: "zz", Actor: "ann"})
		if err != nil || res.Matched != 3 || res.Changed != 3 || res.Invalid != 3 || res.Valid != 0 {
			t.Fatalf("set a bad amount: %+v, %v", res, err)
		}
		if r := rowAt(t, e, b.ID, 5); r.State != rows.StateInvalid || !r.Reviewed || r.Values[2] != "zz" || r.Errors[0].Code == neg || r.Errors[0].Column != "amount" {
			t.Fatalf("row 5 after a bad amount: %+v", r)
		}

		// A good one makes them valid, but for the taken email; the other
		// cells and the rows the filter did not select are kept.
		res, err = e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSet, Filter: batch.RowFilter{States: []rows.State{rows.StateInvalid}, Column: "amount"},
			Column: "amount", Value: "5", Actor: "ann"})
		if err != nil || res.Matched != 4 || res.Changed != 4 || res.Valid != 3 || res.Invalid != 1 {
			t.Fatalf("set a good amount: %+v, %v", res, err)
		}
		if r := rowAt(t, e, b.ID, 6); r.State != rows.StateInvalid || r.Errors[0].Code != rows.CodeDuplicateKey || !strings.Contains(r.Errors[0].Message, "row 2") {
			t.Fatalf("row 6 repeats row 2's email: %+v", r)
		}
		if r := rowAt(t, e, b.ID, 3); r.State != rows.StateValid || strings.Join(r.Values, ",") != "b@x.io,B,5" {
			t.Fatalf("row 3 after a good amount: %+v", r)
		}
		if r := rowAt(t, e, b.ID, 4); r.State != rows.StateInvalid || r.Reviewed || r.Values[2] != "3" {
			t.Fatalf("row 4 was not selected: %+v", r)
		}

		// Replace: only rows whose cell holds the text.
		res, err = e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkReplace, Filter: batch.RowFilter{States: []rows.State{rows.StateInvalid}},
			Column: "email", Find: "A@", Replace: "e@"})
		if err != nil || res.Matched != 1 || res.Valid != 1 {
			t.Fatalf("replace: %+v, %v", res, err)
		}
		if r := rowAt(t, e, b.ID, 6); r.State != rows.StateValid || r.Values[0] != "e@x.io" {
			t.Fatalf("row 6 after the replace: %+v", r)
		}

		// A skip of every row with one error code: exactly those.
		res, err = e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSkip, Filter: batch.RowFilter{Code: "required"}, Reason: "no name", Actor: "bob"})
		if err != nil || res.Matched != 1 || res.Changed != 1 {
			t.Fatalf("skip: %+v, %v", res, err)
		}
		if r := rowAt(t, e, b.ID, 4); r.State != rows.StateSkipped || r.Errors[0].Message != "skipped by bob: no name" || r.Values[0] != "c@x.io" {
			t.Fatalf("skipped row 4: %+v", r)
		}

		// Protected rows: a filter of succeeded rows changes nothing.
		res, err = e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSkip, Filter: batch.RowFilter{States: []rows.State{rows.StateSucceeded, rows.StateSkipped}}, Reason: "r"})
		if err != nil || res.Matched != 0 || rowAt(t, e, b.ID, 2).State != rows.StateSucceeded {
			t.Fatalf("skip of succeeded rows: %+v, %v", res, err)
		}

		// Retry: the failed row (of the default states failed and dead).
		res, err = e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkRetry, All: true})
		if err != nil || res.Matched != 1 || res.Changed != 1 || rowAt(t, e, b.ID, 8).State != rows.StateValid {
			t.Fatalf("retry: %+v, %v", res, err)
		}
		wantCounts(t, storetest.CheckInvariant(t, bd.store, batch.DefaultTenant, b.ID),
			rows.Counts{rows.StateSucceeded: 1, rows.StateValid: 5, rows.StateSkipped: 1})

		h, err := e.History(ctx, batch.HistoryParams{BatchID: b.ID})
		if err != nil || len(h) != 5 {
			t.Fatalf("history: %+v, %v", h, err)
		}
		var edit struct {
			Filter         batch.RowFilter
			Column, Value  string
			Rows           int
			Valid, Invalid int
		}
		if err := json.Unmarshal(h[1].Detail, &edit); err != nil || h[1].Action != "edit" || h[1].RowNo != 0 || h[1].Actor != "ann" ||
			edit.Column != "amount" || edit.Value != "5" || edit.Rows != 4 || edit.Valid != 3 || edit.Invalid != 1 || edit.Filter.Column != "amount" {
			t.Fatalf("edit history: %+v %s (%v)", h[1], h[1].Detail, err)
		}
		var skip struct {
			Filter batch.RowFilter
			Reason string
			Rows   int
		}
		if err := json.Unmarshal(h[3].Detail, &skip); err != nil || h[3].Action != "skip" || skip.Reason != "no name" || skip.Filter.Code != "required" || skip.Rows != 1 ||
			h[4].Action != "retry" || !strings.Contains(string(h[4].Detail), `"all"`) {
			t.Fatalf("skip and retry history: %s, %s", h[3].Detail, h[4].Detail)
		}

		if _, err := e.Cancel(ctx, batch.DefaultTenant, b.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSkip, All: true, Reason: "r"}); !errors.Is(err, batch.ErrConflict) {
			t.Fatalf("bulk skip in a cancelled batch: %v", err)
		}
	})
}

func wantCounts(t *testing.T, got, want rows.Counts) {
	t.Helper()
	for _, s := range rows.States {
		if got[s] != want[s] {
			t.Fatalf("counts = %v, want %v", got, want)
		}
	}
}

// TestBulkRowsPurged: a bulk edit or retry of a batch whose values were
// purged is refused with ErrValuesPurged, as one row's is; a skip, which
// needs no values, is not.
func TestBulkRowsPurged(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		d := newDownstream()
		d.refuse["b@x.io"] = true
		e := newEngine(t, bd.store, membersRegistry(t, d, false), 30*time.Second)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "members", SourceName: "m.csv", Source: strings.NewReader(
			"email,name,amount\na@x.io,A,-1\nb@x.io,B,2\nc@x.io,C,-3\n")})
		if err != nil {
			t.Fatal(err)
		}
		work(t, e, b.ID)
		if _, err := e.Purge(ctx, batch.PurgeParams{BatchID: b.ID}); err != nil {
			t.Fatal(err)
		}
		inv := batch.RowFilter{States: []rows.State{rows.StateInvalid}}
		for _, p := range []batch.BulkRowsParams{
			{BatchID: b.ID, Action: batch.BulkSet, Filter: inv, Column: "amount", Value: "1"},
			{BatchID: b.ID, Action: batch.BulkReplace, Filter: inv, Column: "amount", Find: "-", Replace: ""},
			{BatchID: b.ID, Action: batch.BulkRetry, All: true},
		} {
			if _, err := e.BulkRows(ctx, p); !errors.Is(err, batch.ErrValuesPurged) {
				t.Fatalf("bulk %s of a purged batch: %v, want ErrValuesPurged", p.Action, err)
			}
		}
		res, err := e.BulkRows(ctx, batch.BulkRowsParams{BatchID: b.ID, Action: batch.BulkSkip, Filter: inv, Reason: "gone"})
		if err != nil || res.Changed != 2 {
			t.Fatalf("bulk skip of a purged batch: %+v, %v", res, err)
		}
		wantCounts(t, storetest.CheckInvariant(t, bd.store, batch.DefaultTenant, b.ID), rows.Counts{rows.StateSkipped: 2, rows.StateFailed: 1})
	})
}
