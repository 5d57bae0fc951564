// Package storetest is the conformance suite every driver.Store passes, run
// against a real database by each store's tests:
//
//	storetest.Run(t, func(t *testing.T) driver.Store { ... })
//
// It drives the store directly, the way the engine does, and checks the
// rules the engine relies on: all-or-nothing ingest, counters derived from
// rows, fencing by lease token, due times, and tenant scope.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// NewStoreFunc returns a migrated store on an empty database.
type NewStoreFunc func(t *testing.T) driver.Store

// Run runs the conformance suite.
func Run(t *testing.T, newStore NewStoreFunc) {
	t.Run("MigrateTwice", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
	})
	t.Run("IngestCountsFromRows", func(t *testing.T) { t.Parallel(); testIngestCounts(t, newStore(t)) })
	t.Run("IngestErrorLeavesNothing", func(t *testing.T) { t.Parallel(); testIngestError(t, newStore(t)) })
	t.Run("ClaimFlushFinish", func(t *testing.T) { t.Parallel(); testClaimFlush(t, newStore(t)) })
	t.Run("StaleTokenRejected", func(t *testing.T) { t.Parallel(); testStaleToken(t, newStore(t)) })
	t.Run("ExpiredLeaseReclaimed", func(t *testing.T) { t.Parallel(); testExpiredLease(t, newStore(t)) })
	t.Run("ExpiredLeaseFencedByTheClock", func(t *testing.T) { t.Parallel(); testExpiredUnclaimed(t, newStore(t)) })
	t.Run("LeaseCheck", func(t *testing.T) { t.Parallel(); testLeaseCheck(t, newStore(t)) })
	t.Run("RetryWaitsUntilDue", func(t *testing.T) { t.Parallel(); testRetryDue(t, newStore(t)) })
	t.Run("TenantScope", func(t *testing.T) { t.Parallel(); testTenantScope(t, newStore(t)) })
	t.Run("RowsListPages", func(t *testing.T) { t.Parallel(); testRowsList(t, newStore(t)) })
	t.Run("BatchListTotals", func(t *testing.T) { t.Parallel(); testBatchList(t, newStore(t)) })
	runControl(t, newStore)
	runEvents(t, newStore)
	runReview(t, newStore)
	runBulk(t, newStore)
	runWhere(t, newStore)
	runDeferred(t, newStore)
	runService(t, newStore)
	runStats(t, newStore)
	runFair(t, newStore)
	runGroups(t, newStore)
	runRetention(t, newStore)
	t.Run("KindDefinitions", func(t *testing.T) { t.Parallel(); testKindDefinitions(t, newStore(t)) })
	t.Run("SchemaStatus", func(t *testing.T) {
		t.Parallel()
		st, err := newStore(t).SchemaStatus(context.Background())
		if err != nil || st.Current == 0 || st.Current != st.Latest {
			t.Fatalf("status of a migrated store = %+v, %v", st, err)
		}
	})
}

const tenant = "t1"

// ingest writes n rows in chunks of size; rows whose number is in invalid
// are stored invalid.
func ingest(t *testing.T, s driver.Store, tenantID string, n, size int, invalid ...int64) *batchtype.Batch {
	t.Helper()
	bad := map[int64]bool{}
	for _, r := range invalid {
		bad[r] = true
	}
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			rowNo := int64(i + 2)
			r := driver.IngestRow{RowNo: rowNo, ChunkNo: int64(i / size), State: rows.StateValid, Values: []string{fmt.Sprintf("v%d", i), "x"}}
			if bad[rowNo] {
				r.State = rows.StateInvalid
				r.Errors = []rows.FieldError{{Row: rowNo, Column: "a", Code: "required", Message: "is required"}}
			}
			if !yield(r, nil) {
				return
			}
		}
	}
	b, err := s.BatchIngest(context.Background(), driver.BatchIngestParams{
		TenantID: tenantID, Kind: "k", SourceName: "f.csv", Header: []string{"a", "b"}, Rows: seq,
		Warnings: []batchtype.Warning{{Message: `unknown columns ignored: "x"`}},
		SummaryFunc: func() driver.IngestSummary {
			return driver.IngestSummary{SourceDigest: "abc", SkippedEmpty: 3, ErrorCounts: []rows.ErrorCount{{Column: "a", Code: "required", Count: int64(len(invalid))}},
				Warnings: []batchtype.Warning{{Message: "dates both ways", Hints: []rows.Hint{{Option: rows.OptionDateOrder, Values: []string{"dmy", "mdy"}}}}}}
		},
	})
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	return b
}

// CheckInvariant fails the test unless the stored totals of the batch equal
// a fresh count of its rows by state.
func CheckInvariant(t testing.TB, s driver.Store, tenantID string, id int64) rows.Counts {
	t.Helper()
	ctx := context.Background()
	b, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenantID, ID: id})
	if err != nil {
		t.Fatalf("get batch: %v", err)
	}
	fresh, err := s.RowsCount(ctx, driver.RowsCountParams{TenantID: tenantID, BatchID: id})
	if err != nil {
		t.Fatalf("count rows: %v", err)
	}
	if !maps.Equal(b.Counts, fresh) {
		t.Fatalf("batch %d totals %v != fresh count %v", id, b.Counts, fresh)
	}
	return fresh
}

func wantCounts(t testing.TB, got rows.Counts, want rows.Counts) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Fatalf("counts = %v, want %v", got, want)
	}
}

func testIngestCounts(t *testing.T, s driver.Store) {
	b := ingest(t, s, tenant, 25, 10, 3, 14)
	wantCounts(t, b.Counts, rows.Counts{rows.StateValid: 23, rows.StateInvalid: 2})
	if b.Status != batchtype.StatusRunning || b.SourceDigest != "abc" || b.SkippedEmpty != 3 || b.Kind != "k" {
		t.Fatalf("batch = %+v", b)
	}
	if len(b.Header) != 2 || b.Header[0] != "a" {
		t.Fatalf("header = %v", b.Header)
	}
	// A warning keeps its hints; one without them is stored as before
	// hints were (a string), so batches stored then read the same.
	wantWarnings := `unknown columns ignored: "x" []; dates both ways [{date_order [dmy mdy]}]`
	if got := warningsText(b.Warnings); got != wantWarnings {
		t.Fatalf("warnings = %s, want %s", got, wantWarnings)
	}
	if got, err := s.BatchGet(context.Background(), driver.BatchGetParams{TenantID: b.TenantID, ID: b.ID}); err != nil || warningsText(got.Warnings) != wantWarnings {
		t.Fatalf("warnings read back = %v, %v; want %s", got, err, wantWarnings)
	}
	if fmt.Sprint(b.ErrorCounts) != "[{a required 2}]" {
		t.Fatalf("error counts = %v", b.ErrorCounts)
	}
	CheckInvariant(t, s, tenant, b.ID)

	// A batch with no valid row is finished at once.
	all := ingest(t, s, tenant, 2, 10, 2, 3)
	if all.Status != batchtype.StatusFinished || all.FinishedAt == nil {
		t.Fatalf("all-invalid batch status = %s", all.Status)
	}
}

func testIngestError(t *testing.T, s driver.Store) {
	ctx := context.Background()
	boom := errors.New("line 7: bare quote")
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := range 2500 {
			if !yield(driver.IngestRow{RowNo: int64(i + 2), ChunkNo: int64(i / 1000), State: rows.StateValid, Values: []string{"x"}}, nil) {
				return
			}
		}
		yield(driver.IngestRow{}, boom)
	}
	_, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: tenant, Kind: "k", SourceName: "f.csv", Header: []string{"a"}, Rows: iter.Seq2[driver.IngestRow, error](seq)})
	if !errors.Is(err, boom) {
		t.Fatalf("ingest error = %v, want %v", err, boom)
	}
	bs, err := s.BatchList(ctx, driver.BatchListParams{TenantID: tenant})
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 0 {
		t.Fatalf("a failed ingest left %d batches behind", len(bs))
	}
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim after failed ingest = %v, want ErrNoWork", err)
	}
}

func claim(t *testing.T, s driver.Store, p driver.ChunkClaimParams) *driver.Lease {
	t.Helper()
	if p.Owner == "" {
		p.Owner = "w1"
	}
	if p.LeaseDuration == 0 {
		p.LeaseDuration = time.Minute
	}
	l, err := s.ChunkClaim(context.Background(), p)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return l
}

func succeedAll(l *driver.Lease) []driver.RowOutcome {
	out := make([]driver.RowOutcome, len(l.Rows))
	for i, r := range l.Rows {
		out[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateSucceeded, ResultID: fmt.Sprint("id-", r.RowNo)}
	}
	return out
}

func testClaimFlush(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 15, 10, 4)
	seen := map[int64]bool{}
	for range 2 {
		l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
		if l.Kind != "k" || len(l.Header) != 2 || l.Token <= 0 || l.TenantID != tenant {
			t.Fatalf("lease = %+v", l)
		}
		if seen[l.ChunkNo] {
			t.Fatalf("chunk %d claimed twice while leased", l.ChunkNo)
		}
		seen[l.ChunkNo] = true
		for i, r := range l.Rows {
			if r.Attempts != 1 || (i > 0 && r.RowNo <= l.Rows[i-1].RowNo) {
				t.Fatalf("leased rows out of order or wrong attempts: %+v", l.Rows)
			}
		}
		mid := CheckInvariant(t, s, tenant, b.ID)
		if mid[rows.StateProcessing] == 0 {
			t.Fatalf("claimed rows not processing: %v", mid)
		}
		res, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: succeedAll(l), Release: true})
		if err != nil {
			t.Fatalf("flush: %v", err)
		}
		if res.EventSeq < 2 {
			t.Fatalf("event seq = %d", res.EventSeq)
		}
	}
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim after all done = %v", err)
	}
	got := CheckInvariant(t, s, tenant, b.ID)
	wantCounts(t, got, rows.Counts{rows.StateSucceeded: 14, rows.StateInvalid: 1})
	fin, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	if fin.Status != batchtype.StatusFinished {
		t.Fatalf("status = %s, want finished", fin.Status)
	}
	rs, err := s.RowsList(ctx, driver.RowsListParams{TenantID: tenant, BatchID: b.ID, State: rows.StateSucceeded, Limit: 1})
	if err != nil || len(rs) != 1 || rs[0].ResultID != "id-2" || rs[0].Values[0] != "v0" {
		t.Fatalf("rows = %+v, %v", rs, err)
	}
}

func testStaleToken(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 3, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	outs := succeedAll(l)
	for _, token := range []int64{l.Token - 1, l.Token + 1} {
		_, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: token, Outcomes: outs, Release: true})
		if !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("flush with token %d (lease %d) = %v, want ErrLeaseLost", token, l.Token, err)
		}
	}
	// Another tenant with the right token is rejected too.
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: "other", BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outs}); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("flush by another tenant = %v, want ErrLeaseLost", err)
	}
	rs, err := s.RowsList(ctx, driver.RowsListParams{TenantID: tenant, BatchID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.State != rows.StateProcessing || r.ResultID != "" {
			t.Fatalf("stale flush changed row %d: %+v", r.RowNo, r)
		}
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateProcessing: 3})
}

func testExpiredLease(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 3, 10)
	old := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID, LeaseDuration: time.Minute})
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w2", LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim of a live lease = %v, want ErrNoWork", err)
	}
	// Let the lease run out without waiting a minute: a renewal sets the
	// expiry to now plus the duration, so a 1ms renewal ends it. (A short
	// lease from the start would make the check above flaky on a loaded
	// machine.)
	if err := s.LeaseRenew(ctx, driver.LeaseRenewParams{TenantID: tenant, BatchID: b.ID, ChunkNo: old.ChunkNo, Token: old.Token, LeaseDuration: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	l := claim(t, s, driver.ChunkClaimParams{Owner: "w2", BatchID: b.ID})
	if l.ChunkNo != old.ChunkNo || l.Token <= old.Token {
		t.Fatalf("reclaim token %d after %d", l.Token, old.Token)
	}
	if len(l.Rows) != 3 || l.Rows[0].Attempts != 2 {
		t.Fatalf("reclaimed rows = %+v (processing rows of the lost lease must be worked again)", l.Rows)
	}
	if err := s.LeaseRenew(ctx, driver.LeaseRenewParams{TenantID: tenant, BatchID: b.ID, ChunkNo: old.ChunkNo, Token: old.Token, LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("renew with old token = %v, want ErrLeaseLost", err)
	}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: old.ChunkNo, Token: old.Token, Outcomes: succeedAll(old)}); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("late flush of old owner = %v, want ErrLeaseLost", err)
	}
	if err := s.LeaseRenew(ctx, driver.LeaseRenewParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, LeaseDuration: time.Minute}); err != nil {
		t.Fatalf("renew with current token: %v", err)
	}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: succeedAll(l), Release: true}); err != nil {
		t.Fatalf("flush of new owner: %v", err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateSucceeded: 3})
}

// testExpiredUnclaimed: a lease past its expiry by the database's clock
// is lost even when no other worker has claimed the chunk since (its
// token still matches): it renews nothing, claims no effect key, flushes
// nothing and runs no transactional effect. A worker stalled past its
// lease, with nobody to take its chunk, woke up, renewed and flushed
// "Old Name" over a newer batch's "New Name".
func testExpiredUnclaimed(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 2, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	expire(t, s, l)
	if err := s.LeaseRenew(ctx, driver.LeaseRenewParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("renewal of an expired lease = %v, want ErrLeaseLost", err)
	}
	if _, err := s.EffectsClaim(ctx, driver.EffectsClaimParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token,
		Effects: []driver.EffectRef{{RowNo: l.Rows[0].RowNo, Key: fmt.Sprint("expired-", b.ID), Digest: "d"}}}); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("effect claim under an expired lease = %v, want ErrLeaseLost", err)
	}
	ran := false
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: succeedAll(l), Release: true,
		EffectFunc: func(context.Context, driver.Tx) ([]driver.RowOutcome, error) { ran = true; return nil, nil }}); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("flush under an expired lease = %v, want ErrLeaseLost", err)
	}
	if ran {
		t.Fatal("a transactional effect ran under an expired lease")
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateProcessing: 2})
	again := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	if len(again.Rows) != 2 || again.Token <= l.Token {
		t.Fatalf("the next claim: %+v", again)
	}
}

// testLeaseCheck: LeaseCheck answers as LeaseRenew would, without
// renewing: held, stopped (paused, cancelled), lost (released, stale,
// expired).
func testLeaseCheck(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 2, 1)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	p := driver.LeaseRenewParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token}
	check := func(want error, what string) {
		t.Helper()
		if err := s.LeaseCheck(ctx, p); !errors.Is(err, want) {
			t.Fatalf("%s: LeaseCheck = %v, want %v", what, err, want)
		}
	}
	check(nil, "a held lease")
	stale := p
	stale.Token++
	if err := s.LeaseCheck(ctx, stale); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("a stale token: %v", err)
	}
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}, true); err != nil {
		t.Fatal(err)
	}
	check(driver.ErrBatchStopped, "a paused batch")
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}, false); err != nil {
		t.Fatal(err)
	}
	check(nil, "a resumed batch")
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: succeedAll(l), Release: true}); err != nil {
		t.Fatal(err)
	}
	check(driver.ErrLeaseLost, "a released lease")
	l2 := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	p = driver.LeaseRenewParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l2.ChunkNo, Token: l2.Token}
	expire(t, s, l2)
	check(driver.ErrLeaseLost, "an expired lease")
}

func testRetryDue(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 2, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	outs := []driver.RowOutcome{
		{RowNo: l.Rows[0].RowNo, State: rows.StateRetrying, Error: &rows.FieldError{Code: "processor_error", Message: "503"}, RetryDelay: 1500 * time.Millisecond},
		{RowNo: l.Rows[1].RowNo, State: rows.StateFailed, Error: &rows.FieldError{Code: "processor_error", Message: "no"}},
	}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outs, Release: true}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateRetrying: 1, rows.StateFailed: 1})
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim before the retry is due = %v, want ErrNoWork", err)
	}
	time.Sleep(1600 * time.Millisecond)
	l2 := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	if len(l2.Rows) != 1 || l2.Rows[0].Attempts != 2 {
		t.Fatalf("due rows = %+v", l2.Rows)
	}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l2.ChunkNo, Token: l2.Token, Outcomes: []driver.RowOutcome{{RowNo: l2.Rows[0].RowNo, State: rows.StateDead, Error: &rows.FieldError{Code: "attempts_exhausted", Message: "503"}}}, Release: true}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateDead: 1, rows.StateFailed: 1})
	rs, err := s.RowsList(ctx, driver.RowsListParams{TenantID: tenant, BatchID: b.ID, State: rows.StateFailed})
	if err != nil || len(rs) != 1 || len(rs[0].Errors) != 1 || rs[0].Errors[0].Message != "no" {
		t.Fatalf("failed rows = %+v, %v", rs, err)
	}
}

func testTenantScope(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, "acme", 2, 10)
	if _, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: "globex", ID: b.ID}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("get by another tenant = %v, want ErrNotFound", err)
	}
	if rs, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "globex", BatchID: b.ID}); err != nil || len(rs) != 0 {
		t.Fatalf("rows by another tenant = %d, %v", len(rs), err)
	}
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", TenantIDs: []string{"globex"}, LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("claim outside tenant scope = %v, want ErrNoWork", err)
	}
	l := claim(t, s, driver.ChunkClaimParams{TenantIDs: []string{"globex", "acme"}})
	if l.TenantID != "acme" {
		t.Fatalf("lease tenant = %s", l.TenantID)
	}
}

func testRowsList(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 7, 3, 2, 5, 8)
	var got []int64
	after := int64(0)
	for {
		rs, err := s.RowsList(ctx, driver.RowsListParams{TenantID: tenant, BatchID: b.ID, State: rows.StateInvalid, AfterRowNo: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			break
		}
		for _, r := range rs {
			got = append(got, r.RowNo)
			if len(r.Errors) != 1 || r.Errors[0].Code != "required" || r.Errors[0].Row != r.RowNo {
				t.Fatalf("row %d errors = %+v", r.RowNo, r.Errors)
			}
		}
		after = rs[len(rs)-1].RowNo
	}
	if fmt.Sprint(got) != "[2 5 8]" {
		t.Fatalf("invalid rows = %v", got)
	}
}

// testBatchList: a page of batches, newest first, each with the totals a
// BatchGet of it gives, another tenant's batches left out.
func testBatchList(t *testing.T, s driver.Store) {
	ctx := context.Background()
	var ids []int64
	for i := range 5 {
		b := ingest(t, s, tenant, 3+i, 2, 2)
		ids = append(ids, b.ID)
	}
	ingest(t, s, "other", 4, 2)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: ids[4]})
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: ids[4], ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: succeedAll(l), Release: true}); err != nil {
		t.Fatal(err)
	}
	page, err := s.BatchList(ctx, driver.BatchListParams{TenantID: tenant, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	next, err := s.BatchList(ctx, driver.BatchListParams{TenantID: tenant, BeforeID: page[len(page)-1].ID})
	if err != nil {
		t.Fatal(err)
	}
	all := append(page, next...)
	if len(page) != 3 || len(all) != 5 {
		t.Fatalf("pages of %d and %d batches, want 3 and 2", len(page), len(next))
	}
	for i, b := range all {
		if b.ID != ids[4-i] {
			t.Fatalf("batch %d is %d, want %d (newest first)", i, b.ID, ids[4-i])
		}
		got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
		if err != nil {
			t.Fatal(err)
		}
		wantCounts(t, b.Counts, got.Counts)
		wantCounts(t, b.Counts, CheckInvariant(t, s, tenant, b.ID))
		if b.TenantID != tenant || b.SourceDigest != "abc" || len(b.Warnings) != 2 || b.CreatedAt.IsZero() {
			t.Fatalf("listed batch = %+v", b)
		}
	}
	if all[0].Counts[rows.StateSucceeded] == 0 {
		t.Fatalf("flushed batch lists no succeeded rows: %v", all[0].Counts)
	}
}

// warningsText is each warning's message and hints.
func warningsText(ws []batchtype.Warning) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("%s %v", w.Message, w.Hints)
	}
	return strings.Join(parts, "; ")
}
