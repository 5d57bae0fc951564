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

// runControl runs the conformance tests of effects, cancel, pause, retry,
// settle and credentials.
func runControl(t *testing.T, newStore NewStoreFunc) {
	t.Run("EffectKeysOneWinner", func(t *testing.T) { t.Parallel(); testEffectRace(t, newStore(t)) })
	t.Run("EffectKeyStatuses", func(t *testing.T) { t.Parallel(); testEffectStatuses(t, newStore(t)) })
	t.Run("ExhaustedRowsDie", func(t *testing.T) { t.Parallel(); testExhausted(t, newStore(t)) })
	t.Run("ExhaustedClaimedKeysUnknown", func(t *testing.T) { t.Parallel(); testExhaustedKeyed(t, newStore(t)) })
	t.Run("EffectUnansweredSticks", func(t *testing.T) { t.Parallel(); testEffectUnanswered(t, newStore(t)) })
	t.Run("ClaimOnlyKnownKinds", func(t *testing.T) { t.Parallel(); testKinds(t, newStore(t)) })
	t.Run("Cancel", func(t *testing.T) { t.Parallel(); testCancel(t, newStore(t)) })
	t.Run("CancelSweepsDeadLeases", func(t *testing.T) { t.Parallel(); testCancelSweep(t, newStore(t)) })
	t.Run("Pause", func(t *testing.T) { t.Parallel(); testPause(t, newStore(t)) })
	t.Run("PauseResumeBesideFlushes", func(t *testing.T) { t.Parallel(); testPauseBesideFlushes(t, newStore(t)) })
	t.Run("GiveBackUnworked", func(t *testing.T) { t.Parallel(); testGiveBack(t, newStore(t)) })
	t.Run("CancelDeadEffects", func(t *testing.T) { t.Parallel(); testCancelDeadEffects(t, newStore(t)) })
	t.Run("CancelGivenBackEffects", func(t *testing.T) { t.Parallel(); testCancelGivenBackEffects(t, newStore(t)) })
	t.Run("CancelRetryingUnanswered", func(t *testing.T) { t.Parallel(); testCancelRetryingUnanswered(t, newStore(t)) })
	t.Run("CancelRetryingRan", func(t *testing.T) { t.Parallel(); testCancelRetryingRan(t, newStore(t)) })
	t.Run("EffectsBoundToTheChunk", func(t *testing.T) { t.Parallel(); testEffectsBound(t, newStore(t)) })
	t.Run("EffectRunNotBesideAnother", func(t *testing.T) { t.Parallel(); testEffectRuns(t, newStore(t)) })
	t.Run("CrossTenant", func(t *testing.T) { t.Parallel(); testCrossTenant(t, newStore(t)) })
	t.Run("InFlightCutOff", func(t *testing.T) { t.Parallel(); testInFlight(t, newStore(t)) })
	t.Run("EffectFuncCommitsWithOutcomes", func(t *testing.T) { t.Parallel(); testEffectFunc(t, newStore(t)) })
	t.Run("RetryAndSettle", func(t *testing.T) { t.Parallel(); testRetrySettle(t, newStore(t)) })
	t.Run("WorkerCredentials", func(t *testing.T) { t.Parallel(); testWorkers(t, newStore(t)) })
	t.Run("WorkerListRevoke", func(t *testing.T) { t.Parallel(); testWorkerListRevoke(t, newStore(t)) })
}

// testExhausted: a row whose every attempt ended with its worker gone is
// dead at the next claim, with the reason, and the batch finishes.
func testExhausted(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: tenant, Kind: "k", Header: []string{"a"}, MaxAttempts: 2,
		Rows: func(yield func(driver.IngestRow, error) bool) {
			yield(driver.IngestRow{RowNo: 2, State: rows.StateValid, Values: []string{"x"}}, nil)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
		if len(l.Rows) != 1 || l.Rows[0].Attempts != attempt {
			t.Fatalf("claim %d: %+v", attempt, l.Rows)
		}
		expire(t, s, l)
	}
	// The claim that finds the row out of attempts marks it dead and, as
	// no row is left to work, finishes the batch itself: no flush follows
	// it, and a worker that crashed right after it left no batch running
	// forever.
	if l, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w1", BatchID: b.ID, LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim of a chunk whose rows are out of attempts: %+v, %v; want ErrNoWork", l, err)
	}
	got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	if err != nil || got.Status != batchtype.StatusFinished {
		t.Fatalf("after the claim that killed its last row: %+v, %v; want finished", got, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateDead: 1})
	rs, _ := s.RowsList(ctx, driver.RowsListParams{TenantID: tenant, BatchID: b.ID})
	if len(rs) != 1 || len(rs[0].Errors) != 1 || rs[0].Errors[0].Code != rows.CodeExhausted || rs[0].Errors[0].Row != 2 || rs[0].Attempts != 2 {
		t.Fatalf("dead row: %+v", rs)
	}
}

// expire ends a lease without waiting it out.
func expire(t *testing.T, s driver.Store, l *driver.Lease) {
	t.Helper()
	if err := s.LeaseRenew(context.Background(), driver.LeaseRenewParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token, LeaseDuration: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
}

func testKinds(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 2, 10)
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", Kinds: []string{"other"}, LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim of an unknown kind = %v, want ErrNoWork", err)
	}
	if _, err := s.ChunkNextDue(ctx, driver.ChunkNextDueParams{Kinds: []string{"other"}}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("next due of an unknown kind = %v", err)
	}
	kinds, err := s.KindsOpen(ctx, []string{tenant})
	if err != nil || fmt.Sprint(kinds) != "[k]" {
		t.Fatalf("open kinds = %v, %v", kinds, err)
	}
	claim(t, s, driver.ChunkClaimParams{BatchID: b.ID, Kinds: []string{"other", "k"}})
}

// testCancel: a cancel stops new claims, cancels the open rows at once, and
// the rows under a live lease when their flush comes; no row succeeds
// after it.
func testCancel(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 6, 2)
	live := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: "other", ID: b.ID}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("cancel by another tenant = %v", err)
	}
	c, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID})
	if err != nil || c.Status != batchtype.StatusCancelled {
		t.Fatalf("cancel: %+v, %v", c, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateCancelled: 4, rows.StateProcessing: 2})
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim after cancel = %v", err)
	}
	if err := s.LeaseRenew(ctx, driver.LeaseRenewParams{TenantID: tenant, BatchID: b.ID, ChunkNo: live.ChunkNo, Token: live.Token, LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrBatchStopped) {
		t.Fatalf("renew after cancel = %v, want ErrBatchStopped", err)
	}
	outs := []driver.RowOutcome{
		{RowNo: live.Rows[0].RowNo, State: rows.StateSucceeded, ResultID: "late"},
		{RowNo: live.Rows[1].RowNo, State: rows.StateRetrying, Error: &rows.FieldError{Code: "processor_error", Message: "503"}},
	}
	res, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: live.ChunkNo, Token: live.Token, Outcomes: outs, Release: true,
		EffectFunc: func(context.Context, driver.Tx) ([]driver.RowOutcome, error) {
			t.Error("a transactional effect ran after the cancel")
			return nil, nil
		}})
	if err != nil || !res.Cancelled {
		t.Fatalf("late flush: %+v, %v", res, err)
	}
	got := CheckInvariant(t, s, tenant, b.ID)
	wantCounts(t, got, rows.Counts{rows.StateCancelled: 5, rows.StateUnknown: 1})
	if again, _ := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}); again.Status != batchtype.StatusCancelled {
		t.Fatalf("second cancel: %+v", again)
	}
}

// testCancelSweep: rows a dead worker left processing in a cancelled batch
// are cancelled, at the cancel or by the next claim.
func testCancelSweep(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 2, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	expire(t, s, l)
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateCancelled: 2})

	// A lease that expires after the cancel: the next claim sweeps it.
	b2 := ingest(t, s, tenant, 2, 10)
	claim(t, s, driver.ChunkClaimParams{BatchID: b2.ID, LeaseDuration: 500 * time.Millisecond})
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: b2.ID}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b2.ID), rows.Counts{rows.StateProcessing: 2})
	time.Sleep(600 * time.Millisecond) // the worker is gone; its lease runs out
	sweep := claim(t, s, driver.ChunkClaimParams{BatchID: b2.ID})
	if !sweep.Cancelled || len(sweep.Rows) != 0 {
		t.Fatalf("sweep lease: %+v", sweep)
	}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b2.ID, ChunkNo: sweep.ChunkNo, Token: sweep.Token, Release: true}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b2.ID), rows.Counts{rows.StateCancelled: 2})
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim after the sweep = %v", err)
	}
}

// testPause: a paused batch, kind or tenant is claimed by no worker, and a
// lease on it stops at its next renewal; resuming lets work go on.
func testPause(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 2, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	for _, pause := range []func(bool) error{
		func(on bool) error {
			_, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}, on)
			return err
		},
		func(on bool) error { return s.Pause(ctx, driver.PauseParams{TenantID: tenant, Kind: "k", Paused: on}) },
		func(on bool) error { return s.Pause(ctx, driver.PauseParams{TenantID: tenant, Paused: on}) },
	} {
		if err := pause(true); err != nil {
			t.Fatal(err)
		}
		if err := s.LeaseRenew(ctx, driver.LeaseRenewParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrBatchStopped) {
			t.Fatalf("renew while paused = %v, want ErrBatchStopped", err)
		}
		if err := pause(false); err != nil {
			t.Fatal(err)
		}
		if err := s.LeaseRenew(ctx, driver.LeaseRenewParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, LeaseDuration: time.Minute}); err != nil {
			t.Fatalf("renew after resume = %v", err)
		}
	}
	if err := s.Pause(ctx, driver.PauseParams{TenantID: tenant, Kind: "k", Paused: true}); err != nil {
		t.Fatal(err)
	}
	if paused, err := s.Paused(ctx, tenant); err != nil || fmt.Sprint(paused) != "[k]" {
		t.Fatalf("paused = %v, %v", paused, err)
	}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Unworked: []int64{2, 3}, Release: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim of a paused kind = %v", err)
	}
	if err := s.Pause(ctx, driver.PauseParams{TenantID: tenant, Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
}

// testGiveBack: rows a lease claimed and did not work (a shutdown) go back
// without using an attempt.
func testGiveBack(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 3, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	outs := []driver.RowOutcome{{RowNo: 2, State: rows.StateSucceeded, ResultID: "x"}}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outs, Unworked: []int64{3, 4}, Release: true}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateSucceeded: 1, rows.StateValid: 2})
	l2 := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	if len(l2.Rows) != 2 || l2.Rows[0].Attempts != 1 {
		t.Fatalf("given-back rows: %+v (their attempt must not count)", l2.Rows)
	}
}

// testRetrySettle: failed and dead rows are retried on demand (the batch
// runs again), and an unknown row is settled by a person.
func testRetrySettle(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 4, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	fe := func(code string) *rows.FieldError { return &rows.FieldError{Code: rows.Code(code), Message: code} }
	outs := []driver.RowOutcome{
		{RowNo: 2, State: rows.StateFailed, Error: fe("processor_error")},
		{RowNo: 3, State: rows.StateDead, Error: fe("attempts_exhausted")},
		{RowNo: 4, State: rows.StateUnknown, Error: fe("timeout")},
		{RowNo: 5, State: rows.StateUnknown, Error: fe("timeout")},
	}
	if res, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outs, Release: true}); err != nil || !res.Finished {
		t.Fatalf("flush: %+v, %v", res, err)
	}
	n, err := s.RowsRetry(ctx, driver.RowsRetryParams{TenantID: tenant, BatchID: b.ID, States: []rows.State{rows.StateFailed, rows.StateDead}})
	if err != nil || n != 2 {
		t.Fatalf("retry: %d, %v", n, err)
	}
	got, _ := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	if got.Status != batchtype.StatusRunning || got.FinishedAt != nil {
		t.Fatalf("a retried batch is %s", got.Status)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateValid: 2, rows.StateUnknown: 2})
	if err := s.RowSettle(ctx, driver.RowSettleParams{TenantID: tenant, BatchID: b.ID, RowNo: 4, State: rows.StateSucceeded, ResultID: "found"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RowSettle(ctx, driver.RowSettleParams{TenantID: tenant, BatchID: b.ID, RowNo: 5, State: rows.StateFailed, Reason: "not in the CRM"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RowSettle(ctx, driver.RowSettleParams{TenantID: tenant, BatchID: b.ID, RowNo: 2, State: rows.StateSucceeded}); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("settling a row that is not unknown = %v", err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateValid: 2, rows.StateSucceeded: 1, rows.StateFailed: 1})
	l2 := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	if len(l2.Rows) != 2 || l2.Rows[0].Attempts != 1 {
		t.Fatalf("retried rows: %+v", l2.Rows)
	}
}

func testWorkers(t *testing.T, s driver.Store) {
	ctx := context.Background()
	if err := s.WorkerCreate(ctx, driver.WorkerCreateParams{Name: "w1", TokenHash: "h1", TenantIDs: []string{"acme"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.WorkerCreate(ctx, driver.WorkerCreateParams{Name: "w1", TokenHash: "h2"}); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("a second worker of the same name = %v", err)
	}
	w, err := s.WorkerAuth(ctx, "h1")
	if err != nil || w.Name != "w1" || fmt.Sprint(w.TenantIDs) != "[acme]" {
		t.Fatalf("auth = %+v, %v", w, err)
	}
	if _, err := s.WorkerAuth(ctx, "nope"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("auth with an unknown token = %v", err)
	}
	// A worker of every tenant must come back with nil tenants (any), not
	// an empty list, which a claim reads as no tenant at all: such a
	// worker claimed nothing and exited as if the work were done.
	if err := s.WorkerCreate(ctx, driver.WorkerCreateParams{Name: "all", TokenHash: "h3"}); err != nil {
		t.Fatal(err)
	}
	w, err = s.WorkerAuth(ctx, "h3")
	if err != nil || w.TenantIDs != nil {
		t.Fatalf("auth of an every-tenant worker = %#v, %v", w, err)
	}
}

// testInFlight: rows whose processor call a stop cut off are given back,
// their attempt returned, when the batch was paused; unknown (never
// cancelled) when it was cancelled: their effect may have happened.
// Found by the chaos harness (seed 1): a cancelled batch of an external
// kind recorded a row cancelled whose effect the downstream had applied.
func testInFlight(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 3, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token,
		Outcomes: []driver.RowOutcome{{RowNo: 2, State: rows.StateSucceeded, ResultID: "x"}}, InFlight: []int64{3}, Unworked: []int64{4}, Release: true}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateSucceeded: 1, rows.StateValid: 2})
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}, false); err != nil {
		t.Fatal(err)
	}
	l2 := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	if len(l2.Rows) != 2 || l2.Rows[0].Attempts != 1 {
		t.Fatalf("given-back rows: %+v (their attempt must not count)", l2.Rows)
	}
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	res, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l2.ChunkNo, Token: l2.Token,
		InFlight: []int64{3}, Unworked: []int64{4}, Release: true})
	if err != nil || !res.Cancelled {
		t.Fatalf("flush after the cancel: %+v, %v", res, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateSucceeded: 1, rows.StateUnknown: 1, rows.StateCancelled: 1})
}

// testPauseBesideFlushes: pauses and resumes of a batch while workers
// flush its chunks all succeed. A resume queues the batch's chunks again
// (their turns), and it took the batch's row before their rows, the
// opposite order of a flush: PostgreSQL broke the deadlock by failing the
// resume, and the batch stayed paused (a test's UntilDone then waited 30
// minutes).
func testPauseBesideFlushes(t *testing.T, s driver.Store) {
	ctx := context.Background()
	const chunks = 40
	b := ingest(t, s, tenant, chunks*5, 5)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	for w := range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: fmt.Sprint("w", w), BatchID: b.ID, LeaseDuration: time.Minute})
				if errors.Is(err, driver.ErrNoWork) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("claim: %w", err)
					return
				}
				if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: succeedAll(l), Release: true}); err != nil && !errors.Is(err, driver.ErrLeaseLost) {
					errs <- fmt.Errorf("flush: %w", err)
					return
				}
			}
		})
	}
	for round := 0; round < 40; round++ {
		for _, paused := range []bool{true, false} {
			if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}, paused); err != nil {
				close(stop)
				wg.Wait()
				t.Fatalf("round %d: pause %v beside flushes: %v", round, paused, err)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
