package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

func runDeferred(t *testing.T, newStore NewStoreFunc) {
	t.Run("DeferredClaimOneWrite", func(t *testing.T) { t.Parallel(); testDeferredClaim(t, newStore(t)) })
	t.Run("DeferredCrashLoopEndsDead", func(t *testing.T) { t.Parallel(); testDeferredCrashLoop(t, newStore(t)) })
	t.Run("DeferredLeaseGuardsRows", func(t *testing.T) { t.Parallel(); testDeferredGuards(t, newStore(t)) })
}

// testDeferredClaim: a deferred claim of a fresh chunk writes no row; its
// flush moves the rows from valid to their outcome and counts the attempt.
func testDeferredClaim(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 10, 10, 5)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID, DeferKinds: []string{"k"}})
	if !l.Deferred || len(l.Rows) != 9 || l.Rows[0].Attempts != 1 || l.Rows[0].RowNo != 2 {
		t.Fatalf("deferred lease: %+v", l)
	}
	// Nothing was written: the rows are still valid, the counts unchanged.
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateValid: 9, rows.StateInvalid: 1})
	out := succeedAll(l)
	out[1].State, out[1].ResultID, out[1].RetryDelay = rows.StateRetrying, "", 0
	out[1].Error = &rows.FieldError{Row: out[1].RowNo, Code: "timeout", Message: "try again"}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token,
		Outcomes: out, Deferred: true, Release: true}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateSucceeded: 8, rows.StateRetrying: 1, rows.StateInvalid: 1})
	for no, r := range rowsOf(t, s, b.ID) {
		if want := map[bool]int{true: 1, false: 0}[r.State != rows.StateInvalid]; r.Attempts != want {
			t.Fatalf("row %d (%s) has %d attempts, want %d", no, r.State, r.Attempts, want)
		}
	}
	// The retried row is claimed deferred again (the lease ended in a
	// flush) and is on its second attempt.
	l = claim(t, s, driver.ChunkClaimParams{BatchID: b.ID, DeferKinds: []string{"k"}})
	if !l.Deferred || len(l.Rows) != 1 || l.Rows[0].Attempts != 2 {
		t.Fatalf("second deferred lease: %+v", l)
	}
}

// testDeferredCrashLoop: a row whose worker dies every time under a
// deferred lease is claimed the counted way from then on, and ends dead
// after its attempts, as without deferral (one crash later).
func testDeferredCrashLoop(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: tenant, Kind: "k", Header: []string{"a"}, MaxAttempts: 2,
		Rows: func(yield func(driver.IngestRow, error) bool) {
			yield(driver.IngestRow{RowNo: 2, State: rows.StateValid, Values: []string{"x"}}, nil)
		}})
	if err != nil {
		t.Fatal(err)
	}
	p := driver.ChunkClaimParams{BatchID: b.ID, DeferKinds: []string{"k"}}
	l := claim(t, s, p)
	if !l.Deferred {
		t.Fatalf("first claim not deferred: %+v", l)
	}
	expire(t, s, l) // the worker died inside its flush transaction
	for attempt := 1; attempt <= 2; attempt++ {
		l := claim(t, s, p)
		if l.Deferred || len(l.Rows) != 1 || l.Rows[0].Attempts != attempt {
			t.Fatalf("claim after a dead deferred lease, attempt %d: %+v", attempt, l)
		}
		expire(t, s, l)
	}
	// The claim that finds it out of attempts marks it dead and finishes
	// the batch: nothing to hand out, no flush to follow.
	if l, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w1", BatchID: b.ID, DeferKinds: []string{"k"}, LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("a row past its attempts was handed out again: %+v, %v", l, err)
	}
	if got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID}); err != nil || got.Status != batchtype.StatusFinished {
		t.Fatalf("after the claim that killed its last row: %+v, %v; want finished", got, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateDead: 1})
}

// testDeferredGuards: rows under a deferred lease look due but are being
// worked: a re-run is refused, a review of a due row of the chunk
// conflicts (as for a processing row), a review of another row does not,
// and a stale flush of a deferred lease writes nothing.
func testDeferredGuards(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 10, 10, 4)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID, DeferKinds: []string{"k"}})
	if _, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: b.ID, Actor: "ann"}); !errors.Is(err, driver.ErrBatchBusy) {
		t.Fatalf("re-run beside a deferred lease: %v, want ErrBatchBusy", err)
	}
	err := s.RowReview(ctx, driver.RowReviewParams{TenantID: tenant, BatchID: b.ID, RowNo: 3, From: rows.StateValid,
		State: rows.StateSkipped, Actor: "ann", Action: "skip"})
	if !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("skip of a row under a deferred lease: %v, want ErrConflict", err)
	}
	err = s.RowReview(ctx, driver.RowReviewParams{TenantID: tenant, BatchID: b.ID, RowNo: 4, From: rows.StateInvalid,
		State: rows.StateValid, Values: []string{"fixed", "x"}, Actor: "ann", Action: "edit"})
	if err != nil {
		t.Fatalf("edit of an invalid row beside a deferred lease: %v", err)
	}
	// A new owner takes the chunk after the lease expires: the first
	// worker's flush is stale and writes nothing.
	expire(t, s, l)
	l2 := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID, DeferKinds: []string{"k"}})
	if l2.Deferred {
		t.Fatalf("claim after an expired deferred lease was deferred: %+v", l2)
	}
	_, err = s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token,
		Outcomes: succeedAll(l), Deferred: true, Release: true})
	if !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("stale deferred flush: %v, want ErrLeaseLost", err)
	}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l2.ChunkNo, Token: l2.Token,
		Outcomes: succeedAll(l2), Release: true}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateSucceeded: 10})
	if _, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: b.ID, Actor: "ann"}); err != nil {
		t.Fatalf("re-run once the lease was released: %v", err)
	}
}
