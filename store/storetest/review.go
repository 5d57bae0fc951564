package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// runReview runs the conformance tests of re-runs, edits and skips.
func runReview(t *testing.T, newStore NewStoreFunc) {
	t.Run("RerunReplacesOnlyUnprotected", func(t *testing.T) { t.Parallel(); testRerun(t, newStore(t)) })
	t.Run("RerunRefusesBusyBatch", func(t *testing.T) { t.Parallel(); testRerunBusy(t, newStore(t)) })
	t.Run("ReviewEditAndSkip", func(t *testing.T) { t.Parallel(); testReview(t, newStore(t)) })
	t.Run("EditsBesideAWorkerLoseNoUpdate", func(t *testing.T) { t.Parallel(); testEditsBesideWorker(t, newStore(t)) })
}

// finishWith claims every chunk of a batch and records outcome(row) for
// each of its rows.
func finishWith(t *testing.T, s driver.Store, id int64, outcome func(row int64) rows.State) {
	t.Helper()
	for {
		l, err := s.ChunkClaim(context.Background(), driver.ChunkClaimParams{Owner: "w", BatchID: id, LeaseDuration: time.Minute})
		if errors.Is(err, driver.ErrNoWork) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		out := make([]driver.RowOutcome, len(l.Rows))
		for i, r := range l.Rows {
			out[i] = driver.RowOutcome{RowNo: r.RowNo, State: outcome(r.RowNo)}
			switch out[i].State {
			case rows.StateSucceeded:
				out[i].ResultID = fmt.Sprint("id-", r.RowNo)
			case rows.StateFailed:
				out[i].Error = &rows.FieldError{Row: r.RowNo, Code: "x", Message: "refused"}
			}
		}
		if _, err := s.ChunkFlush(context.Background(), driver.ChunkFlushParams{TenantID: l.TenantID, BatchID: id, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: out, Release: true}); err != nil {
			t.Fatal(err)
		}
	}
}

func rowsOf(t *testing.T, s driver.Store, id int64) map[int64]batchtype.Row {
	t.Helper()
	out := map[int64]batchtype.Row{}
	var after int64
	for {
		page, err := s.RowsList(context.Background(), driver.RowsListParams{TenantID: tenant, BatchID: id, AfterRowNo: after, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			out[r.RowNo] = r
		}
		if len(page) < 500 {
			return out
		}
		after = page[len(page)-1].RowNo
	}
}

// testRerun: a re-run replaces failed and invalid rows, adds rows, keeps
// the totals equal to the aggregate, reopens the batch and records the
// history; replacing a completed row is a conflict that writes nothing.
func testRerun(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 20, 10, 3) // row 3 invalid
	finishWith(t, s, b.ID, func(row int64) rows.State {
		if row%4 == 0 {
			return rows.StateFailed
		}
		return rows.StateSucceeded
	})
	before := CheckInvariant(t, s, tenant, b.ID)
	if before[rows.StateFailed] != 5 {
		t.Fatalf("before: %v", before)
	}
	// A completed row among the replaced: nothing at all is written.
	_, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: b.ID, Actor: "ann",
		Replace: []driver.RerunRow{{RowNo: 4, State: rows.StateValid, Values: []string{"x", "y"}}, {RowNo: 5, State: rows.StateValid, Values: []string{"x", "y"}}}})
	if !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("re-run replacing a succeeded row: %v, want ErrConflict", err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), before)

	got, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: b.ID, Actor: "ann", Detail: []byte(`{"source":"fixed.csv"}`),
		Replace: []driver.RerunRow{
			{RowNo: 3, State: rows.StateValid, Values: []string{"fixed", "x"}},
			{RowNo: 4, State: rows.StateValid, Values: []string{"fixed", "x"}},
			{RowNo: 8, State: rows.StateInvalid, Values: []string{"", "x"}, Errors: []rows.FieldError{{Row: 8, Column: "a", Code: "required", Message: "is required"}}},
		},
		Add:         []driver.IngestRow{{RowNo: 22, ChunkNo: 2, State: rows.StateValid, Values: []string{"new", "x"}}},
		Header:      []string{"a", "b", "c"},
		ErrorCounts: []rows.ErrorCount{{Column: "a", Code: "required", Count: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := CheckInvariant(t, s, tenant, b.ID)
	wantCounts(t, c, rows.Counts{rows.StateSucceeded: 14, rows.StateValid: 3, rows.StateInvalid: 1, rows.StateFailed: 3})
	if got.Status != batchtype.StatusRunning || len(got.Header) != 3 || len(got.ErrorCounts) != 1 || got.ErrorCounts[0].Count != 1 {
		t.Fatalf("batch after re-run: %+v", got)
	}
	all := rowsOf(t, s, b.ID)
	if r := all[4]; r.State != rows.StateValid || r.Values[0] != "fixed" || r.Attempts != 0 || len(r.Errors) != 0 || r.ResultID != "" {
		t.Fatalf("row 4 after re-run: %+v", r)
	}
	if r := all[5]; r.State != rows.StateSucceeded || r.ResultID != "id-5" {
		t.Fatalf("completed row 5 changed: %+v", r)
	}
	// The new and replaced rows are worked; the batch finishes again.
	finishWith(t, s, b.ID, func(int64) rows.State { return rows.StateSucceeded })
	fin := CheckInvariant(t, s, tenant, b.ID)
	wantCounts(t, fin, rows.Counts{rows.StateSucceeded: 17, rows.StateInvalid: 1, rows.StateFailed: 3})
	h, err := s.HistoryList(ctx, driver.HistoryListParams{TenantID: tenant, BatchID: b.ID})
	if err != nil || len(h) != 1 || h[0].Action != "rerun" || h[0].Actor != "ann" || h[0].RowNo != 0 {
		t.Fatalf("history = %+v, %v", h, err)
	}
	if _, err := s.HistoryList(ctx, driver.HistoryListParams{TenantID: "t2", BatchID: b.ID}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another tenant's history: %v", err)
	}
	evs := Events(t, s, tenant, b.ID, 100)
	var reruns int
	for _, ev := range evs {
		if ev.Type == batchtype.EventRerun {
			reruns++
			if ev.Status != batchtype.StatusRunning || ev.Final {
				t.Fatalf("rerun event: %+v", ev)
			}
		}
	}
	if reruns != 1 || !evs[len(evs)-1].Final {
		t.Fatalf("events: %d reruns, last %+v", reruns, evs[len(evs)-1])
	}

	// A cancelled batch is reopened by a re-run.
	cb := ingest(t, s, tenant, 10, 10)
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: cb.ID}); err != nil {
		t.Fatal(err)
	}
	reopened, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: cb.ID, Actor: "ann",
		Replace: []driver.RerunRow{{RowNo: 2, State: rows.StateValid, Values: []string{"v", "x"}}}})
	if err != nil || reopened.Status != batchtype.StatusRunning || reopened.Counts[rows.StateValid] != 1 || reopened.Counts[rows.StateCancelled] != 9 {
		t.Fatalf("re-run of a cancelled batch: %+v, %v", reopened, err)
	}
}

// testRerunBusy: rows under a lease or of unknown outcome keep a re-run
// out.
func testRerunBusy(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 10, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	_, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: b.ID, Actor: "ann"})
	if !errors.Is(err, driver.ErrBatchBusy) {
		t.Fatalf("re-run with rows processing: %v, want ErrBatchBusy", err)
	}
	out := succeedAll(l)
	out[0].State, out[0].ResultID = rows.StateUnknown, ""
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: out, Release: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: b.ID, Actor: "ann"}); !errors.Is(err, driver.ErrBatchBusy) {
		t.Fatalf("re-run with an unknown row: %v, want ErrBatchBusy", err)
	}
	if _, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: "t2", BatchID: b.ID}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another tenant's re-run: %v", err)
	}
}

// testReview: an edit makes the row reviewed and due; a skip is terminal;
// a review of a row that changed meanwhile writes nothing.
func testReview(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 10, 10, 2, 3)
	err := s.RowReview(ctx, driver.RowReviewParams{TenantID: tenant, BatchID: b.ID, RowNo: 2, From: rows.StateInvalid,
		State: rows.StateValid, Values: []string{"fixed", "x"}, Actor: "ann", Action: "edit", Detail: []byte(`{"changes":{"a":{"old":"v0","new":"fixed"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	err = s.RowReview(ctx, driver.RowReviewParams{TenantID: tenant, BatchID: b.ID, RowNo: 3, From: rows.StateInvalid, State: rows.StateSkipped,
		Errors: []rows.FieldError{{Row: 3, Code: "skipped", Message: "skipped by bob: duplicate of a phone order"}}, Actor: "bob", Action: "skip"})
	if err != nil {
		t.Fatal(err)
	}
	// From no longer matches: a conflict, nothing written.
	err = s.RowReview(ctx, driver.RowReviewParams{TenantID: tenant, BatchID: b.ID, RowNo: 3, From: rows.StateInvalid, State: rows.StateValid, Values: []string{"z"}, Actor: "c", Action: "edit"})
	if !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("stale review: %v, want ErrConflict", err)
	}
	if err := s.RowReview(ctx, driver.RowReviewParams{TenantID: "t2", BatchID: b.ID, RowNo: 4, From: rows.StateValid, State: rows.StateSkipped, Action: "skip"}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another tenant's review: %v", err)
	}
	c := CheckInvariant(t, s, tenant, b.ID)
	wantCounts(t, c, rows.Counts{rows.StateValid: 9, rows.StateSkipped: 1})
	all := rowsOf(t, s, b.ID)
	if r := all[2]; !r.Reviewed || r.Values[0] != "fixed" || r.State != rows.StateValid {
		t.Fatalf("edited row: %+v", r)
	}
	if r := all[3]; !r.Reviewed || r.State != rows.StateSkipped || len(r.Errors) != 1 {
		t.Fatalf("skipped row: %+v", r)
	}
	// A re-run may not replace a reviewed row.
	_, err = s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: b.ID, Actor: "ann",
		Replace: []driver.RerunRow{{RowNo: 2, State: rows.StateValid, Values: []string{"again", "x"}}}})
	if !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("re-run over a reviewed row: %v, want ErrConflict", err)
	}
	h, err := s.HistoryList(ctx, driver.HistoryListParams{TenantID: tenant, BatchID: b.ID})
	if err != nil || len(h) != 2 || h[0].Action != "edit" || h[0].RowNo != 2 || h[1].Action != "skip" || h[1].Actor != "bob" {
		t.Fatalf("history = %+v, %v", h, err)
	}
	evs := Events(t, s, tenant, b.ID, 100)
	if evs[1].Type != batchtype.EventEdited || evs[2].Type != batchtype.EventSkipped {
		t.Fatalf("events: %+v", evs)
	}
}

// testEditsBesideWorker: 16 goroutines edit and skip rows of one chunk
// while a worker holds and flushes the chunk's other rows; at rest the
// totals equal the aggregate. 100 rounds.
func testEditsBesideWorker(t *testing.T, s driver.Store) {
	ctx := context.Background()
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		// Rows 2-17 invalid (the reviewers'), 18-41 valid (the worker's).
		invalid := make([]int64, 16)
		for i := range invalid {
			invalid[i] = int64(i + 2)
		}
		b := ingest(t, s, tenant, 40, 40, invalid...)
		l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				row := int64(i + 2)
				p := driver.RowReviewParams{TenantID: tenant, BatchID: b.ID, RowNo: row, From: rows.StateInvalid, Actor: "r", Action: "edit",
					State: rows.StateValid, Values: []string{fmt.Sprint("fixed", row), "x"}}
				if i%3 == 0 {
					p.State, p.Values, p.Action = rows.StateSkipped, nil, "skip"
				}
				if err := s.RowReview(ctx, p); err != nil {
					t.Errorf("round %d, review of row %d: %v", round, row, err)
				}
			})
		}
		wg.Go(func() {
			if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: succeedAll(l)}); err != nil {
				t.Errorf("round %d, flush: %v", round, err)
			}
		})
		wg.Wait()
		if t.Failed() {
			return
		}
		c := CheckInvariant(t, s, tenant, b.ID)
		wantCounts(t, c, rows.Counts{rows.StateSucceeded: 24, rows.StateSkipped: 6, rows.StateValid: 10})
	}
}
