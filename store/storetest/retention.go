package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// BackdateFunc moves a batch's end (finished_at) back by d, as if it had
// ended that long before: a retention policy counts in days, which a test
// does not wait for. Each store's tests write it in their own SQL.
type BackdateFunc func(t *testing.T, s driver.Store, id int64, d time.Duration)

// RunRetention runs the conformance tests of retention policies and purges;
// Run runs them without the policy sweep, which needs backdate.
func RunRetention(t *testing.T, newStore NewStoreFunc, backdate BackdateFunc) {
	t.Run("RetentionPolicySweep", func(t *testing.T) { t.Parallel(); testPolicySweep(t, newStore(t), backdate) })
}

func runRetention(t *testing.T, newStore NewStoreFunc) {
	t.Run("RetentionPolicies", func(t *testing.T) { t.Parallel(); testPolicies(t, newStore(t)) })
	t.Run("PurgeBatch", func(t *testing.T) { t.Parallel(); testPurgeBatch(t, newStore(t)) })
	t.Run("PurgeByAge", func(t *testing.T) { t.Parallel(); testPurgeByAge(t, newStore(t)) })
	t.Run("PurgedBatchRefusesWhatNeedsValues", func(t *testing.T) { t.Parallel(); testPurgedRefusals(t, newStore(t)) })
	t.Run("PurgeRacesAWorker", func(t *testing.T) { t.Parallel(); testPurgeRacesWorker(t, newStore(t)) })
	t.Run("PurgeRacesARetry", func(t *testing.T) { t.Parallel(); testPurgeRacesRetry(t, newStore(t)) })
	t.Run("PurgeTenantIsolation", func(t *testing.T) { t.Parallel(); testPurgeTenants(t, newStore(t)) })
}

func retentionOf(t *testing.T, s driver.Store) driver.RetentionStore {
	t.Helper()
	rs, ok := s.(driver.RetentionStore)
	if !ok {
		t.Fatalf("%T does not implement driver.RetentionStore", s)
	}
	return rs
}

// finished ingests n rows of tenantID's and works them: every third
// failed, the rest succeeded.
func finished(t *testing.T, s driver.Store, tenantID string, n int) *batchtype.Batch {
	t.Helper()
	b := ingest(t, s, tenantID, n, 10, 3)
	finishWith(t, s, b.ID, func(row int64) rows.State {
		if row%3 == 0 {
			return rows.StateFailed
		}
		return rows.StateSucceeded
	})
	got, err := s.BatchGet(context.Background(), driver.BatchGetParams{TenantID: tenantID, ID: b.ID})
	if err != nil || got.Status != batchtype.StatusFinished {
		t.Fatalf("batch after work = %+v, %v", got, err)
	}
	return got
}

func purge(t *testing.T, rs driver.RetentionStore, p driver.ValuesPurgeParams) []batchtype.Purge {
	t.Helper()
	out, err := rs.ValuesPurge(context.Background(), p)
	if err != nil {
		t.Fatalf("purge %+v: %v", p, err)
	}
	return out
}

// testPolicies: set, replace, list and remove a tenant's policies; another
// tenant sees none of them.
func testPolicies(t *testing.T, s driver.Store) {
	ctx := context.Background()
	rs := retentionOf(t, s)
	if _, err := rs.RetentionSet(ctx, driver.RetentionSetParams{TenantID: tenant, Kind: "k", ValuesDays: 0}); err == nil {
		t.Fatal("a policy of 0 days was stored")
	}
	for _, p := range []driver.RetentionSetParams{{TenantID: tenant, Kind: "k", ValuesDays: 30}, {TenantID: tenant, ValuesDays: 90}, {TenantID: tenant, Kind: "k", ValuesDays: 7}} {
		got, err := rs.RetentionSet(ctx, p)
		if err != nil || got.ValuesDays != p.ValuesDays || got.Kind != p.Kind || got.UpdatedAt.IsZero() {
			t.Fatalf("set %+v = %+v, %v", p, got, err)
		}
	}
	list, err := rs.RetentionList(ctx, tenant)
	if err != nil || len(list) != 2 || list[0].Kind != "" || list[0].ValuesDays != 90 || list[1].Kind != "k" || list[1].ValuesDays != 7 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if other, err := rs.RetentionList(ctx, "t2"); err != nil || len(other) != 0 {
		t.Fatalf("another tenant's list = %+v, %v", other, err)
	}
	if err := rs.RetentionRemove(ctx, "t2", "k"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("remove another tenant's policy = %v, want ErrNotFound", err)
	}
	if err := rs.RetentionRemove(ctx, tenant, "k"); err != nil {
		t.Fatal(err)
	}
	if list, _ := rs.RetentionList(ctx, tenant); len(list) != 1 {
		t.Fatalf("after remove: %+v", list)
	}
}

// testPurgeBatch: a named batch loses its values and keeps its outcomes,
// errors and counts; it says so, with its history; a second purge changes
// nothing.
func testPurgeBatch(t *testing.T, s driver.Store) {
	ctx := context.Background()
	rs := retentionOf(t, s)
	b := finished(t, s, tenant, 25)
	keep := ingest(t, s, tenant, 5, 10)
	before := rowsOf(t, s, b.ID)
	dry := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, BatchID: b.ID, DryRun: true})
	if len(dry) != 1 || dry[0].Rows != 25 || !dry[0].At.IsZero() {
		t.Fatalf("dry run = %+v", dry)
	}
	if got := rowsOf(t, s, b.ID); got[5].ValuesPurged || len(got[5].Values) != 2 {
		t.Fatalf("a dry run dropped values: %+v", got[5])
	}
	out := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, BatchID: b.ID, Actor: "ops"})
	if len(out) != 1 || out[0].Rows != 25 || out[0].At.IsZero() || out[0].By != batchtype.PurgedByCommand || out[0].Already {
		t.Fatalf("purge = %+v", out)
	}
	got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	if err != nil || got.ValuesPurgedAt == nil || got.ValuesPurgedBy != batchtype.PurgedByCommand {
		t.Fatalf("purged batch = %+v, %v", got, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), b.Counts)
	for no, r := range rowsOf(t, s, b.ID) {
		was := before[no]
		if !r.ValuesPurged || r.Values != nil || r.State != was.State || r.ResultID != was.ResultID || r.Attempts != was.Attempts || len(r.Errors) != len(was.Errors) {
			t.Fatalf("row %d purged = %+v, was %+v", no, r, was)
		}
	}
	if r := rowsOf(t, s, keep.ID)[2]; r.ValuesPurged || len(r.Values) != 2 {
		t.Fatalf("another batch's row = %+v", r)
	}
	again := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, BatchID: b.ID})
	if len(again) != 1 || !again[0].Already || !again[0].At.Equal(out[0].At) {
		t.Fatalf("second purge = %+v, want the first's time %v", again, out[0].At)
	}
	hist, err := s.HistoryList(ctx, driver.HistoryListParams{TenantID: tenant, BatchID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	var purges int
	for _, h := range hist {
		if h.Action == "purge" {
			purges++
			if h.Actor != "ops" {
				t.Fatalf("purge recorded by %q", h.Actor)
			}
		}
	}
	if purges != 1 {
		t.Fatalf("history has %d purges, want 1: %+v", purges, hist)
	}
}

// testPurgeByAge: the ended batches are purged, a running one is left;
// a dry run changes nothing; named, a running batch is refused.
func testPurgeByAge(t *testing.T, s driver.Store) {
	ctx := context.Background()
	rs := retentionOf(t, s)
	done := finished(t, s, tenant, 5)
	cancelled := ingest(t, s, tenant, 5, 10)
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: cancelled.ID}); err != nil {
		t.Fatal(err)
	}
	running := ingest(t, s, tenant, 5, 10)
	if _, err := rs.ValuesPurge(ctx, driver.ValuesPurgeParams{TenantID: tenant, BatchID: running.ID}); !errors.Is(err, driver.ErrBatchRunning) {
		t.Fatalf("purge of a running batch = %v, want ErrBatchRunning", err)
	}
	// An hour: nothing ended that long ago.
	if out := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, OlderThan: time.Hour}); len(out) != 0 {
		t.Fatalf("purge older than an hour = %+v", out)
	}
	time.Sleep(20 * time.Millisecond) // an age the database clock has passed
	dry := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, OlderThan: time.Millisecond, DryRun: true})
	if len(dry) != 2 || dry[0].BatchID != done.ID || dry[1].BatchID != cancelled.ID {
		t.Fatalf("dry run = %+v", dry)
	}
	out := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, OlderThan: time.Millisecond})
	if len(out) != 2 {
		t.Fatalf("purge by age = %+v", out)
	}
	if again := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, OlderThan: time.Millisecond}); len(again) != 0 {
		t.Fatalf("second purge by age = %+v", again)
	}
	if r := rowsOf(t, s, running.ID)[2]; r.ValuesPurged || len(r.Values) != 2 {
		t.Fatalf("running batch's row = %+v", r)
	}
}

// testPurgedRefusals: a retry, a re-run, an edit and a settle to work a
// row again need the values: each refuses a purged batch, naming it.
func testPurgedRefusals(t *testing.T, s driver.Store) {
	ctx := context.Background()
	rs := retentionOf(t, s)
	b := finished(t, s, tenant, 12)
	purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, BatchID: b.ID})
	want := func(what string, err error) {
		t.Helper()
		var pe *batchtype.ValuesPurgedError
		if !errors.Is(err, batchtype.ErrValuesPurged) || !errors.As(err, &pe) || pe.BatchID != b.ID || pe.By != batchtype.PurgedByCommand {
			t.Fatalf("%s of a purged batch = %v, want a ValuesPurgedError", what, err)
		}
	}
	_, err := s.RowsRetry(ctx, driver.RowsRetryParams{TenantID: tenant, BatchID: b.ID, States: []rows.State{rows.StateFailed}})
	want("retry", err)
	_, err = s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: b.ID, Actor: "a",
		Replace: []driver.RerunRow{{RowNo: 3, State: rows.StateValid, Values: []string{"new", "x"}}}})
	want("re-run", err)
	err = s.RowReview(ctx, driver.RowReviewParams{TenantID: tenant, BatchID: b.ID, RowNo: 3, From: rows.StateFailed,
		State: rows.StateValid, Values: []string{"new", "x"}, Actor: "a", Action: "edit"})
	want("edit", err)
	got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	if err != nil || got.Status != batchtype.StatusFinished {
		t.Fatalf("batch after refusals = %+v, %v", got, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), b.Counts)
}

// testPurgeRacesWorker: a batch a worker holds is running: a purge naming
// it is refused, and a sweep leaves it; once the worker's flush finished
// it, the purge goes through.
func testPurgeRacesWorker(t *testing.T, s driver.Store) {
	ctx := context.Background()
	rs := retentionOf(t, s)
	b := ingest(t, s, tenant, 5, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	var wg sync.WaitGroup
	var purgeErr error
	wg.Go(func() {
		_, purgeErr = rs.ValuesPurge(ctx, driver.ValuesPurgeParams{TenantID: tenant, BatchID: b.ID})
	})
	wg.Wait()
	if !errors.Is(purgeErr, driver.ErrBatchRunning) {
		t.Fatalf("purge beside a worker = %v, want ErrBatchRunning", purgeErr)
	}
	if out := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, OlderThan: time.Millisecond}); len(out) != 0 {
		t.Fatalf("a sweep purged a batch being worked: %+v", out)
	}
	flushLease(t, s, l)
	if out := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, BatchID: b.ID}); len(out) != 1 || out[0].Rows != 5 {
		t.Fatalf("purge once finished = %+v", out)
	}
}

// testPurgeRacesRetry: a purge and a retry of the same finished batch at
// once: one of them wins, never both — either the retry reopened the
// batch (the purge is refused) or the values went first (the retry is).
func testPurgeRacesRetry(t *testing.T, s driver.Store) {
	ctx := context.Background()
	rs := retentionOf(t, s)
	for range 4 {
		b := finished(t, s, tenant, 12)
		start := make(chan struct{})
		var purgeErr, retryErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			_, purgeErr = rs.ValuesPurge(ctx, driver.ValuesPurgeParams{TenantID: tenant, BatchID: b.ID})
		})
		wg.Go(func() {
			<-start
			_, retryErr = s.RowsRetry(ctx, driver.RowsRetryParams{TenantID: tenant, BatchID: b.ID, States: []rows.State{rows.StateFailed}})
		})
		close(start)
		wg.Wait()
		got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case purgeErr == nil && errors.Is(retryErr, batchtype.ErrValuesPurged):
			if got.ValuesPurgedAt == nil || got.Status != batchtype.StatusFinished {
				t.Fatalf("purge won, batch = %+v", got)
			}
		case retryErr == nil && errors.Is(purgeErr, driver.ErrBatchRunning):
			if got.ValuesPurgedAt != nil || got.Status != batchtype.StatusRunning {
				t.Fatalf("retry won, batch = %+v", got)
			}
		default:
			t.Fatalf("purge = %v, retry = %v: want exactly one to win", purgeErr, retryErr)
		}
	}
}

// testPurgeTenants: a tenant's purge, by batch or by age, never touches
// another tenant's batches.
func testPurgeTenants(t *testing.T, s driver.Store) {
	ctx := context.Background()
	rs := retentionOf(t, s)
	mine := finished(t, s, tenant, 5)
	theirs := finished(t, s, "t2", 5)
	if _, err := rs.ValuesPurge(ctx, driver.ValuesPurgeParams{TenantID: tenant, BatchID: theirs.ID}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("purge of another tenant's batch = %v, want ErrNotFound", err)
	}
	time.Sleep(20 * time.Millisecond)
	out := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, OlderThan: time.Millisecond})
	if len(out) != 1 || out[0].BatchID != mine.ID {
		t.Fatalf("purge by age = %+v, want batch %d alone", out, mine.ID)
	}
	page, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "t2", BatchID: theirs.ID, Limit: 10})
	if err != nil || len(page) != 5 {
		t.Fatalf("other tenant's rows = %d, %v", len(page), err)
	}
	for _, r := range page {
		if r.ValuesPurged || len(r.Values) != 2 {
			t.Fatalf("other tenant's row = %+v", r)
		}
	}
	if b, _ := s.BatchGet(ctx, driver.BatchGetParams{TenantID: "t2", ID: theirs.ID}); b.ValuesPurgedAt != nil {
		t.Fatalf("other tenant's batch purged: %+v", b)
	}
}

// testPolicySweep: the sweep of every tenant purges the batches past their
// kind's policy, or their tenant's for every kind, and no other.
func testPolicySweep(t *testing.T, s driver.Store, backdate BackdateFunc) {
	ctx := context.Background()
	rs := retentionOf(t, s)
	for _, p := range []driver.RetentionSetParams{{TenantID: tenant, Kind: "k", ValuesDays: 30}, {TenantID: tenant, ValuesDays: 5}, {TenantID: "t2", ValuesDays: 60}} {
		if _, err := rs.RetentionSet(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	young := finished(t, s, tenant, 3) // kind k: 30 days, ended 10 days ago
	old := finished(t, s, tenant, 3)   // kind k: ended 40 days ago
	other := finished(t, s, "t2", 3)   // tenant t2: 60 days, ended 40 days ago
	fresh := finished(t, s, tenant, 3) // ended now
	backdate(t, s, young.ID, 10*24*time.Hour)
	backdate(t, s, old.ID, 40*24*time.Hour)
	backdate(t, s, other.ID, 40*24*time.Hour)
	out := purge(t, rs, driver.ValuesPurgeParams{Policy: true, By: batchtype.PurgedByPolicy})
	if len(out) != 1 || out[0].BatchID != old.ID || out[0].By != batchtype.PurgedByPolicy {
		t.Fatalf("sweep = %+v, want batch %d alone", out, old.ID)
	}
	for _, id := range []int64{young.ID, other.ID, fresh.ID} {
		tn := tenant
		if id == other.ID {
			tn = "t2"
		}
		if b, _ := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tn, ID: id}); b == nil || b.ValuesPurgedAt != nil {
			t.Fatalf("batch %d purged by the sweep: %+v", id, b)
		}
	}
	b, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: old.ID})
	if err != nil || b.ValuesPurgedBy != batchtype.PurgedByPolicy {
		t.Fatalf("swept batch = %+v, %v", b, err)
	}
	// Without the kind's policy, the tenant's 5 days apply to young.
	if err := rs.RetentionRemove(ctx, tenant, "k"); err != nil {
		t.Fatal(err)
	}
	if out := purge(t, rs, driver.ValuesPurgeParams{Policy: true, By: batchtype.PurgedByPolicy}); len(out) != 1 || out[0].BatchID != young.ID {
		t.Fatalf("sweep under the tenant's policy = %+v, want batch %d", out, young.ID)
	}
}

// MigrateRetentionOverRows checks migration 0013 (row retention) on a
// database that has batches and rows: undo must take the database back to
// migration 0012 (drop what 0013 added and its schema_migrations row).
// The batches read back as before, with their values, and can be purged.
func MigrateRetentionOverRows(t *testing.T, s driver.Store, undo func(t *testing.T)) {
	t.Helper()
	ctx := context.Background()
	done := finished(t, s, tenant, 25)
	open := ingest(t, s, tenant, 5, 10)
	before := rowsOf(t, s, done.ID)
	undo(t)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate from 0012 with rows: %v", err)
	}
	for _, b := range []*batchtype.Batch{done, open} {
		got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
		if err != nil || got.ValuesPurgedAt != nil || got.Status != b.Status || got.Counts.Total() != b.Counts.Total() {
			t.Fatalf("batch %d after the migration = %+v, %v", b.ID, got, err)
		}
	}
	for no, r := range rowsOf(t, s, done.ID) {
		if r.ValuesPurged || len(r.Values) != 2 || r.Values[0] != before[no].Values[0] || r.State != before[no].State {
			t.Fatalf("row %d after the migration = %+v, was %+v", no, r, before[no])
		}
	}
	rs := retentionOf(t, s)
	if out := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, BatchID: done.ID}); len(out) != 1 || out[0].Rows != 25 {
		t.Fatalf("purge after the migration = %+v", out)
	}
}
