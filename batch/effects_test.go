package batch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/processors/httpcall"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/storetest"
)

// gatedStore stalls a worker (a GC pause, SIGSTOP, a slow network) from
// its first flush on: that flush and every renewal after it wait for the
// gate, so its lease runs out while it stands still.
type gatedStore struct {
	batch.Store
	gate    chan struct{}
	arrived chan struct{}
	once    sync.Once
	// flushed, when set, is told what each flush returned.
	flushed chan error
}

func (g *gatedStore) ChunkFlush(ctx context.Context, p driver.ChunkFlushParams) (*driver.FlushResult, error) {
	g.once.Do(func() { close(g.arrived) })
	<-g.gate
	res, err := g.Store.ChunkFlush(ctx, p)
	if g.flushed != nil {
		select {
		case g.flushed <- err:
		default:
		}
	}
	return res, err
}

func (g *gatedStore) LeaseRenew(ctx context.Context, p driver.LeaseRenewParams) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.Store.LeaseRenew(ctx, p)
}

func (g *gatedStore) LeaseCheck(ctx context.Context, p driver.LeaseRenewParams) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.Store.LeaseCheck(ctx, p)
}

// wait stands still from the first flush on, until the gate opens.
func (g *gatedStore) wait(ctx context.Context) error {
	select {
	case <-g.arrived:
		select {
		case <-g.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	default:
	}
	return nil
}

func customersRegistry(t *testing.T, bd *bundle) *batch.Registry {
	t.Helper()
	if err := customers.EnsureSchema(context.Background(), bd.db, bd.dialect); err != nil {
		t.Fatal(err)
	}
	reg := batch.NewRegistry()
	if err := batch.Register(reg, customers.Kind(bd.db, bd.dialect)); err != nil {
		t.Fatal(err)
	}
	return reg
}

func importCSV(t *testing.T, e *batch.Engine, tenant, csv string) *batchtype.Batch {
	t.Helper()
	b, err := e.Import(context.Background(), batch.ImportParams{TenantID: tenant, Kind: customers.Name, SourceName: "c.csv", Source: strings.NewReader(csv)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStaleWorkerEffectIsFenced: a worker stalled past its lease, whose
// chunk another worker reclaimed and finished, and after which a newer
// import changed the customer, cannot apply its stale effect: the effect
// runs inside the flush, after the fencing token is checked.
func TestStaleWorkerEffectIsFenced(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		reg := customersRegistry(t, bd)
		gated := &gatedStore{Store: bd.store, gate: make(chan struct{}), arrived: make(chan struct{})}
		stale, err := batch.NewEngine(batch.Config{Store: gated, Registry: reg, LeaseDuration: 300 * time.Millisecond, PollInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		fresh := newEngine(t, bd.store, reg, 0)
		const header = "email,name,country,signup_date,amount\n"
		old := importCSV(t, fresh, "default", header+"x@example.com,Old Name,FR,2020-01-02,1\n")
		var staleStats batch.WorkStats
		done := make(chan error, 1)
		go func() {
			var err error
			staleStats, err = stale.Work(ctx, batch.WorkParams{BatchID: old.ID, Workers: 1, UntilDone: true})
			done <- err
		}()
		<-gated.arrived
		time.Sleep(400 * time.Millisecond) // the stalled worker's lease runs out
		if _, err := fresh.Work(ctx, batch.WorkParams{BatchID: old.ID, Workers: 1, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		newer := importCSV(t, fresh, "default", header+"x@example.com,New Name,FR,2020-01-02,1\n")
		if _, err := fresh.Work(ctx, batch.WorkParams{BatchID: newer.ID, Workers: 1, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		close(gated.gate) // the stalled worker wakes up
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if staleStats.LeaseLost != 1 {
			t.Errorf("the stalled worker's stats: %+v, want one lease lost", staleStats)
		}
		var name string
		if err := bd.db.QueryRowContext(ctx, `SELECT name FROM customers WHERE email = 'x@example.com'`).Scan(&name); err != nil || name != "New Name" {
			t.Fatalf("name = %q, %v: the stale worker's effect was applied", name, err)
		}
		got := storetest.CheckInvariant(t, bd.store, "default", old.ID)
		if got[rows.StateSucceeded] != 1 || len(got) != 1 {
			t.Fatalf("counts = %v", got)
		}
	})
}

// TestStaleWorkerUnreclaimedIsFenced: the same stall, but nobody claims the
// stalled worker's chunk while it stands still (the only other worker
// works the newer batch alone): its token still matches when it wakes up,
// but its lease is past its expiry by the database's clock, so it renews
// nothing and its flush, and the effect inside it, are refused.
func TestStaleWorkerUnreclaimedIsFenced(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		reg := customersRegistry(t, bd)
		gated := &gatedStore{Store: bd.store, gate: make(chan struct{}), arrived: make(chan struct{}), flushed: make(chan error, 1)}
		stale, err := batch.NewEngine(batch.Config{Store: gated, Registry: reg, LeaseDuration: 300 * time.Millisecond, PollInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		fresh := newEngine(t, bd.store, reg, 0)
		const header = "email,name,country,signup_date,amount\n"
		old := importCSV(t, fresh, "default", header+"y@example.com,Old Name,FR,2020-01-02,1\n")
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		var staleStats batch.WorkStats
		done := make(chan error, 1)
		go func() {
			var err error
			staleStats, err = stale.Work(wctx, batch.WorkParams{BatchID: old.ID, Workers: 1})
			done <- err
		}()
		<-gated.arrived
		time.Sleep(1500 * time.Millisecond) // five leases: it is long expired, and nobody took it
		newer := importCSV(t, fresh, "default", header+"y@example.com,New Name,FR,2020-01-02,1\n")
		if _, err := fresh.Work(ctx, batch.WorkParams{BatchID: newer.ID, Workers: 1, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		// The stalled worker wakes up, told to stop first: its flush goes
		// on (a flush outlives its worker's context), but it claims
		// nothing afterwards, which would work the old row again, legitimately.
		stop()
		close(gated.gate)
		flushErr, _ := testenv.Receive(t, gated.flushed, func() string { return "the stalled worker's flush" })
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if !errors.Is(flushErr, batch.ErrLeaseLost) || staleStats.LeaseLost == 0 {
			t.Errorf("the stalled worker's flush: %v (stats %+v), want its lease lost", flushErr, staleStats)
		}
		var name string
		if err := bd.db.QueryRowContext(ctx, `SELECT name FROM customers WHERE email = 'y@example.com'`).Scan(&name); err != nil || name != "New Name" {
			t.Fatalf("name = %q, %v: the stalled worker's effect was applied after its lease expired", name, err)
		}
	})
}

// TestCustomersPerTenant: two tenants' customers with one email are two
// customers, and each tenant's export lists its own.
func TestCustomersPerTenant(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		reg := customersRegistry(t, bd)
		if err := batch.RegisterExport(reg, customers.ExportKind(bd.db, bd.dialect)); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, bd.store, reg, 0)
		const header = "email,name,country,signup_date,amount\n"
		for _, tenant := range []string{"acme", "globex"} {
			b := importCSV(t, e, tenant, header+"same@example.com,"+tenant+" person,FR,2020-01-02,1\n")
			if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{tenant}, UntilDone: true}); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		if err := bd.db.QueryRowContext(ctx, `SELECT count(*) FROM customers WHERE email = 'same@example.com'`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("%d customers with the email, %v: a tenant overwrote another's", n, err)
		}
		for _, tenant := range []string{"acme", "globex"} {
			var out bytes.Buffer
			b, err := e.Export(ctx, customers.Name, batch.ExportParams{TenantID: tenant, DestName: "x.csv", Dest: &out})
			if err != nil {
				t.Fatal(err)
			}
			if b.Counts.Total() != 1 || !strings.Contains(out.String(), tenant+" person") {
				t.Fatalf("%s's export: %d rows\n%s", tenant, b.Counts.Total(), out.String())
			}
		}
	})
}

// TestUnknownKindIsLeftAlone: a worker that does not know a batch's kind
// neither claims its rows (no attempt used) nor dies: it reports the kind.
func TestUnknownKindIsLeftAlone(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		b := importCSV(t, e, "default", "email,name,signup_date\nu@example.com,U,2020-01-02\n")
		other := newEngine(t, bd.store, outcomesRegistry(t, &outcomeProcessor{calls: map[string]int{}}), 0)
		stats, err := other.Work(ctx, batch.WorkParams{UntilDone: true})
		if err != nil {
			t.Fatalf("a worker that does not know the kind: %v", err)
		}
		if len(stats.UnknownKinds) != 1 || stats.UnknownKinds[0] != customers.Name || stats.Chunks != 0 {
			t.Fatalf("stats = %+v", stats)
		}
		rs, _ := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID})
		if len(rs) != 1 || rs[0].State != rows.StateValid || rs[0].Attempts != 0 {
			t.Fatalf("rows after the unknowing worker: %+v", rs)
		}
		if _, err := other.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); !errors.Is(err, batch.ErrUnknownKind) {
			t.Fatalf("working that batch by id = %v, want ErrUnknownKind", err)
		}
	})
}

// TestTinyLease: a lease shorter than a renewal period's floor does not
// crash the heartbeat.
func TestTinyLease(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		p := &outcomeProcessor{calls: map[string]int{}}
		e := newEngine(t, bd.store, outcomesRegistry(t, p), 2*time.Nanosecond)
		b, err := e.Import(context.Background(), batch.ImportParams{Kind: "outcomes", SourceName: "o.csv", Source: strings.NewReader("key,mode\na,ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(context.Background(), batch.WorkParams{BatchID: b.ID, Workers: 1, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWorkerSurvivesTerminatedBackends: every PostgreSQL backend of the
// engine's pool is terminated while rows are worked; the worker retries,
// records every outcome once, and does not exit.
func TestWorkerSurvivesTerminatedBackends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := testdb.PostgresSchema(t)
	cfg.ConnConfig.RuntimeParams["application_name"] = "rowfate-terminate-test"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := postgres.New(pool, &postgres.Config{Schema: testdb.SchemaOf(cfg)})
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	admin, err := pgxpool.New(ctx, testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var calls atomic.Int64
	var killed atomic.Int64
	proc := batch.ProcessFunc[outcomeRow](func(ctx context.Context, r outcomeRow) (string, error) {
		calls.Add(1)
		if r.Key == "c" && killed.Add(1) == 1 {
			var n int
			if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'rowfate-terminate-test'`).Scan(&n); err != nil || n == 0 {
				t.Errorf("terminate backends: %d, %v", n, err)
			}
		}
		return "id-" + r.Key, nil
	})
	reg := batch.NewRegistry()
	if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "outcomes", Processor: proc, ChunkSize: 2}); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, s, reg, 0)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	b, err := e.Import(ctx, batch.ImportParams{Kind: "outcomes", SourceName: "o.csv", Source: strings.NewReader("key,mode\na,ok\nb,ok\nc,ok\nd,ok\ne,ok\nf,ok\n")})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, Workers: 1, UntilDone: true})
	if err != nil {
		t.Fatalf("the worker gave up: %v", err)
	}
	if stats.Retries == 0 {
		t.Errorf("no retry was counted: %+v", stats)
	}
	got := storetest.CheckInvariant(t, s, "default", b.ID)
	if got[rows.StateSucceeded] != 6 || len(got) != 1 {
		t.Fatalf("counts = %v", got)
	}
	if n := calls.Load(); n != 6 {
		t.Errorf("the processor ran %d times for 6 rows: a flush's outcomes were lost and its rows ran again", n)
	}
}

// keyLedger is a downstream that honours Idempotency-Key: it applies each
// key once and answers every later request with that key with the same id.
type keyLedger struct {
	mu      sync.Mutex
	ids     map[string]string
	applied map[string]int
}

func (l *keyLedger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	l.mu.Lock()
	id, seen := l.ids[key]
	if !seen {
		id = fmt.Sprint("pay-", len(l.ids)+1)
		l.ids[key] = id
		l.applied[key]++
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":%q}`, id)
}

// TestExternalEffectInterruptedBeforeTheAck: a worker makes the call (the
// downstream applies the effect) and stalls before its flush; its lease
// runs out, another worker claims the rows and calls again with the same
// effect keys. The downstream applies each key once, every row succeeds
// once, and the stalled worker's late flush is rejected.
func TestExternalEffectInterruptedBeforeTheAck(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		ledger := &keyLedger{ids: map[string]string{}, applied: map[string]int{}}
		srv := httptest.NewServer(ledger)
		defer srv.Close()
		proc, err := httpcall.New(httpcall.Config[outcomeRow]{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		reg := batch.NewRegistry()
		// A call's run ends within 1.2 s of its claim (Timeout + RunGrace):
		// no other lease runs a key again before then.
		if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "payments", Processor: proc, KeyedEffects: true,
			Timeout: time.Second, RunGrace: 200 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		gated := &gatedStore{Store: bd.store, gate: make(chan struct{}), arrived: make(chan struct{})}
		// A lease of 2 s: long enough that a loaded machine renews it in time
		// while the calls run (with 300 ms the stale worker lost its lease
		// three times under a CPU hog before it reached the gate).
		const lease = 2 * time.Second
		stale, err := batch.NewEngine(batch.Config{Store: gated, Registry: reg, LeaseDuration: lease, PollInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		fresh := newEngine(t, bd.store, reg, 0)
		b, err := fresh.Import(ctx, batch.ImportParams{Kind: "payments", SourceName: "p.csv", Source: strings.NewReader("key,mode\na,ok\nb,ok\nc,ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan batch.WorkStats, 1)
		go func() {
			s, err := stale.Work(ctx, batch.WorkParams{BatchID: b.ID, Workers: 1, UntilDone: true})
			if err != nil {
				t.Error(err)
			}
			done <- s
		}()
		<-gated.arrived                          // the calls were made; the flush and the renewals stand still
		time.Sleep(lease + 500*time.Millisecond) // past the lease, and past the runs' bound (1.2 s)
		if _, err := fresh.Work(ctx, batch.WorkParams{BatchID: b.ID, Workers: 1, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		close(gated.gate)
		// Its flush is rejected; on a loaded machine it may have lost an
		// earlier lease too, and worked the rows again, before it reached
		// the gate: what must hold is below — each key applied once, each
		// row succeeded with the downstream's id.
		if s := <-done; s.LeaseLost < 1 {
			t.Errorf("stalled worker: %+v, want its flush rejected", s)
		}
		got := storetest.CheckInvariant(t, bd.store, "default", b.ID)
		if got[rows.StateSucceeded] != 3 || len(got) != 1 {
			t.Fatalf("counts = %v", got)
		}
		ledger.mu.Lock()
		defer ledger.mu.Unlock()
		if len(ledger.applied) != 3 {
			t.Fatalf("%d keys applied, want 3", len(ledger.applied))
		}
		for k, n := range ledger.applied {
			if n != 1 {
				t.Errorf("key %s applied %d times", k, n)
			}
		}
		rs, _ := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID})
		for _, r := range rs {
			if r.ResultID != ledger.ids[fmt.Sprintf("default/%d/%d", b.ID, r.RowNo)] || r.Attempts < 2 {
				t.Errorf("row %d: result %q, attempts %d", r.RowNo, r.ResultID, r.Attempts)
			}
		}
	})
}

// TestCancelMidRun: after a cancel commits, no row succeeds; processors
// under way see their context cancelled at the next stop check.
func TestCancelMidRun(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		var started atomic.Int64
		var cancelledSeen atomic.Int64
		proc := batch.ProcessFunc[outcomeRow](func(ctx context.Context, r outcomeRow) (string, error) {
			started.Add(1)
			select {
			case <-time.After(30 * time.Millisecond):
				return "id-" + r.Key, nil
			case <-ctx.Done():
				cancelledSeen.Add(1)
				return "", ctx.Err()
			}
		})
		reg := batch.NewRegistry()
		if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "slow", Processor: proc, ChunkSize: 20}); err != nil {
			t.Fatal(err)
		}
		// The cancel is seen by the check twice a second, not by the
		// lease's renewal; a lease a loaded machine keeps renewing.
		e := newEngine(t, bd.store, reg, 2*time.Second)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "slow", SourceName: "s.csv", Source: strings.NewReader(okRows(200))})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, Workers: 2, UntilDone: true})
			done <- err
		}()
		for started.Load() < 10 {
			time.Sleep(5 * time.Millisecond)
		}
		c, err := e.Cancel(ctx, "default", b.ID)
		if err != nil || c.Status != batchtype.StatusCancelled {
			t.Fatalf("cancel: %+v, %v", c, err)
		}
		atCancel := c.Counts[rows.StateSucceeded]
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := storetest.CheckInvariant(t, bd.store, "default", b.ID)
		if got[rows.StateSucceeded] != atCancel {
			t.Fatalf("%d rows succeeded after the cancel committed (%d at the cancel): %v", got[rows.StateSucceeded]-atCancel, atCancel, got)
		}
		if got.Open() != 0 || got[rows.StateCancelled] == 0 || got.Total() != 200 {
			t.Fatalf("counts after the cancel: %v", got)
		}
		if cancelledSeen.Load() == 0 {
			t.Errorf("no processor saw its context cancelled")
		}
		final, _ := bd.store.BatchGet(ctx, driver.BatchGetParams{TenantID: "default", ID: b.ID})
		if final.Status != batchtype.StatusCancelled {
			t.Fatalf("status = %s", final.Status)
		}
	})
}

// TestListenWakesIdleWorkers: on PostgreSQL an idle worker of another
// process wakes on a notification of new rows instead of its next poll,
// and listens again after its LISTEN backend is terminated.
func TestListenWakesIdleWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := testdb.PostgresSchema(t)
	schema := testdb.SchemaOf(cfg)
	newStore := func(app string) *postgres.Store {
		c := cfg.Copy()
		c.ConnConfig.RuntimeParams["application_name"] = app
		pool, err := pgxpool.NewWithConfig(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return postgres.New(pool, &postgres.Config{Schema: schema})
	}
	producer, listener := newStore("rowfate-producer"), newStore("rowfate-listener-"+schema)
	if err := producer.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	p := &outcomeProcessor{calls: map[string]int{}}
	reg := outcomesRegistry(t, p)
	importer := newEngine(t, producer, reg, 0)
	worker, err := batch.NewEngine(batch.Config{Store: listener, Registry: reg, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _, _ = worker.Work(wctx, batch.WorkParams{Workers: 1}) }()
	admin, err := pgxpool.New(ctx, testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for round, key := range []string{"a", "b"} {
		time.Sleep(300 * time.Millisecond) // the worker is idle, listening
		if round == 1 {
			var n int
			if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'`, "rowfate-listener-"+schema).Scan(&n); err != nil || n != 1 {
				t.Fatalf("terminate the LISTEN backend: %d, %v", n, err)
			}
			time.Sleep(500 * time.Millisecond) // it listens again
		}
		b, err := importer.Import(ctx, batch.ImportParams{Kind: "outcomes", SourceName: "o.csv", Source: strings.NewReader("key,mode\n" + key + ",ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		// Its poll is an hour: only the notification can wake it within
		// the test's patience.
		deadline := time.Now().Add(testenv.Patience(t))
		for {
			got, _ := producer.BatchGet(ctx, driver.BatchGetParams{TenantID: "default", ID: b.ID})
			if got.Status == batchtype.StatusFinished {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the idle worker did not wake (its poll is an hour)", round)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestPausedKeyedRowsCancelCleanly: a keyed kind's chunk is paused while
// its first row's call is under way; the batch is then cancelled. The row
// in flight may have had its effect: unknown, not cancelled (its key was
// still claimed when the pause gave it back). The rows never called had
// their new claims released by the pause: cancelled.
func TestPausedKeyedRowsCancelCleanly(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		calling := make(chan string, 4)
		proc := batch.ProcessFunc[outcomeRow](func(ctx context.Context, r outcomeRow) (string, error) {
			calling <- r.Key
			<-ctx.Done() // the call is under way until the pause stops it
			return "", ctx.Err()
		})
		reg := batch.NewRegistry()
		if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "payments", Processor: proc, KeyedEffects: true}); err != nil {
			t.Fatal(err)
		}
		// The pause is seen by the check twice a second; a lease a loaded
		// machine keeps renewing (a lost one would hold row a back).
		e := newEngine(t, bd.store, reg, 2*time.Second)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "payments", SourceName: "p.csv", Source: strings.NewReader("key,mode\na,ok\nb,ok\nc,ok\nd,ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		worked := make(chan error, 1)
		go func() {
			_, err := e.Work(wctx, batch.WorkParams{BatchID: b.ID, Workers: 1})
			worked <- err
		}()
		if key, _ := testenv.Receive(t, calling, func() string { return "the first call" }); key != "a" {
			t.Fatalf("first call for %q", key)
		}
		if _, err := e.PauseBatch(ctx, "default", b.ID, true); err != nil {
			t.Fatal(err)
		}
		// The pause gives every row back: none is processing.
		testenv.Until(t, func() bool {
			got, err := bd.store.BatchGet(ctx, driver.BatchGetParams{TenantID: "default", ID: b.ID})
			return err == nil && got.Counts[rows.StateValid] == 4
		}, func() string { return "the paused chunk's rows given back" })
		stop()
		if err := <-worked; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if _, err := e.Cancel(ctx, "default", b.ID); err != nil {
			t.Fatal(err)
		}
		got := storetest.CheckInvariant(t, bd.store, "default", b.ID)
		if got[rows.StateUnknown] != 1 || got[rows.StateCancelled] != 3 || len(got) != 2 {
			t.Fatalf("after the cancel: %v, want 1 unknown (the call under way) and 3 cancelled", got)
		}
	})
}

// TestStopSeenBeforeTheRenewal: a worker holding an hour-long lease (its
// next renewal twenty minutes away) learns of a cancel or a pause at once:
// the call under way sees its context cancelled, and no row starts after
// it. Workers used to learn of it only at their next renewal: after a
// cancel, 922 effects started up to 8.1 s later.
func TestStopSeenBeforeTheRenewal(t *testing.T) {
	t.Parallel()
	for _, stop := range []string{"cancel", "pause"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			forEachEngine(t, func(t *testing.T, bd *bundle) {
				ctx := context.Background()
				var started, stopped atomic.Int64
				release := make(chan struct{})
				proc := batch.ProcessFunc[outcomeRow](func(ctx context.Context, r outcomeRow) (string, error) {
					started.Add(1)
					select {
					case <-release:
						return "id-" + r.Key, nil
					case <-ctx.Done():
						stopped.Add(1)
						return "", ctx.Err()
					}
				})
				reg := batch.NewRegistry()
				if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "slow", Processor: proc, ChunkSize: 50}); err != nil {
					t.Fatal(err)
				}
				e := newEngine(t, bd.store, reg, time.Hour)
				var csv strings.Builder
				csv.WriteString("key,mode\n")
				for i := range 50 {
					fmt.Fprintf(&csv, "k%d,ok\n", i)
				}
				b, err := e.Import(ctx, batch.ImportParams{Kind: "slow", SourceName: "s.csv", Source: strings.NewReader(csv.String())})
				if err != nil {
					t.Fatal(err)
				}
				wctx, quit := context.WithCancel(ctx)
				defer quit()
				done := make(chan error, 1)
				go func() {
					_, err := e.Work(wctx, batch.WorkParams{BatchID: b.ID, Workers: 1})
					done <- err
				}()
				for range 3 {
					release <- struct{}{}
				}
				testenv.Until(t, func() bool { return started.Load() == 4 }, func() string { return "the fourth row to start" })
				if stop == "cancel" {
					_, err = e.Cancel(ctx, "default", b.ID)
				} else {
					_, err = e.PauseBatch(ctx, "default", b.ID, true)
				}
				if err != nil {
					t.Fatal(err)
				}
				testenv.Until(t, func() bool { return stopped.Load() == 1 }, func() string {
					return "the call under way to see the " + stop + " (the lease is an hour long: no renewal comes)"
				})
				quit()
				if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
					t.Fatal(err)
				}
				if n := started.Load(); n != 4 {
					t.Fatalf("%d rows started, want 4: a row started after the %s was seen", n, stop)
				}
			})
		})
	}
}

// frozenStore is a worker that stands still (SIGSTOP, a partition) from
// the start: it renews and checks nothing, so its lease runs out while
// its processor's call is under way.
type frozenStore struct{ batch.Store }

func (frozenStore) LeaseRenew(ctx context.Context, _ driver.LeaseRenewParams) error {
	<-ctx.Done()
	return ctx.Err()
}

func (frozenStore) LeaseCheck(ctx context.Context, _ driver.LeaseRenewParams) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestNoSecondRunBesideAStalledOne: a worker stands still with a keyed
// call under way; its lease runs out and another worker claims the chunk
// while the call may still be going (within Timeout + RunGrace of its
// claim). The row is not run a second time beside it: it waits, with a
// reason, and is run once the first run is surely over.
func TestNoSecondRunBesideAStalledOne(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		var calls atomic.Int64
		stuck := make(chan struct{})
		defer close(stuck)
		proc := batch.ProcessFunc[outcomeRow](func(ctx context.Context, r outcomeRow) (string, error) {
			if calls.Add(1) == 1 {
				<-stuck // the stalled worker's call: it never answers
				return "", errors.New("stalled")
			}
			return "id-" + r.Key, nil
		})
		reg := batch.NewRegistry()
		if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "payments", Processor: proc, KeyedEffects: true,
			Timeout: time.Hour, BackoffFunc: func(int) time.Duration { return time.Millisecond }}); err != nil {
			t.Fatal(err)
		}
		stalled, err := batch.NewEngine(batch.Config{Store: frozenStore{bd.store}, Registry: reg, LeaseDuration: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		b, err := stalled.Import(ctx, batch.ImportParams{Kind: "payments", SourceName: "p.csv", Source: strings.NewReader("key,mode\na,ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		go func() { _, _ = stalled.Work(sctx, batch.WorkParams{BatchID: b.ID, Workers: 1}) }()
		testenv.Until(t, func() bool { return calls.Load() == 1 }, func() string { return "the first call" })
		time.Sleep(300 * time.Millisecond) // past the stalled worker's lease
		fresh := newEngine(t, bd.store, reg, time.Minute)
		wctx, quit := context.WithCancel(ctx)
		defer quit()
		go func() { _, _ = fresh.Work(wctx, batch.WorkParams{BatchID: b.ID, Workers: 1}) }()
		var held []rows.FieldError
		testenv.Until(t, func() bool {
			if n := calls.Load(); n > 1 {
				t.Fatalf("%d calls: the key was run again beside its first run", n)
			}
			rs, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID})
			if err == nil && len(rs) == 1 && rs[0].State == rows.StateRetrying {
				held = rs[0].Errors
				return true
			}
			return false
		}, func() string { return "the fresh worker's claim of the row" })
		if len(held) == 0 || held[0].Code != batch.CodeKeyHeld || !strings.Contains(held[0].Message, "earlier run") {
			t.Fatalf("the row, reclaimed while its first run may be under way: errors %+v; want it held for that run", held)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d calls: the key was run again beside its first run", n)
		}
	})
}

// unansweredRenewals is a store whose renewals and checks of the first
// lease renewed never answer (as through a PostgreSQL restart): the
// worker cannot learn that the lease ended.
type unansweredRenewals struct {
	batch.Store
	token atomic.Int64 // the first lease's token
}

func (s *unansweredRenewals) unanswered(p driver.LeaseRenewParams) bool {
	s.token.CompareAndSwap(0, p.Token)
	return s.token.Load() == p.Token
}

func (s *unansweredRenewals) LeaseRenew(ctx context.Context, p driver.LeaseRenewParams) error {
	if s.unanswered(p) {
		return errors.New("the database system is starting up")
	}
	return s.Store.LeaseRenew(ctx, p)
}

func (s *unansweredRenewals) LeaseCheck(ctx context.Context, p driver.LeaseRenewParams) error {
	if s.unanswered(p) {
		return errors.New("the database system is starting up")
	}
	return s.Store.LeaseCheck(ctx, p)
}

// TestNoRowStartedPastTheLease: a worker whose renewals get no answer
// stops starting rows once its lease may have ended by the database's
// clock (a lease's length after its claim was sent), and gives the chunk
// up as lost. It used to go on through the whole chunk, so that rows
// started while another worker held the chunk (the chaos harness saw
// requests arrive after their rows had been settled by the next claim).
func TestNoRowStartedPastTheLease(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		var mu sync.Mutex
		var first, last time.Time // the first lease's row starts
		proc := batch.ProcessFunc[outcomeRow](func(ctx context.Context, r outcomeRow) (string, error) {
			if info, _ := batch.RowFrom(ctx); info.Attempt == 1 {
				mu.Lock()
				if first.IsZero() {
					first = time.Now()
				}
				last = time.Now()
				mu.Unlock()
			}
			select {
			case <-time.After(100 * time.Millisecond):
				return "id-" + r.Key, nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
		reg := batch.NewRegistry()
		if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "slow", Processor: proc, ChunkSize: 50}); err != nil {
			t.Fatal(err)
		}
		const lease = time.Second
		e := newEngine(t, &unansweredRenewals{Store: bd.store}, reg, lease)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "slow", SourceName: "s.csv", Source: strings.NewReader(okRows(50))})
		if err != nil {
			t.Fatal(err)
		}
		stats, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, Workers: 1, UntilDone: true})
		if err != nil {
			t.Fatal(err)
		}
		// 50 rows of 100 ms take 5 s; the lease is 1 s. The first row
		// starts after the claim was sent, so the last row of the first
		// lease starts within the lease of the first; a second of slack
		// for a loaded machine.
		if span := last.Sub(first); stats.LeaseLost < 1 || span > lease+time.Second {
			t.Fatalf("the first lease started rows for %s with no renewal answered (lease %s); stats %+v", span.Round(time.Millisecond), lease, stats)
		}
		got := storetest.CheckInvariant(t, bd.store, "default", b.ID)
		if got[rows.StateSucceeded] != 50 {
			t.Fatalf("counts %v, want 50 succeeded by the next lease", got)
		}
	})
}

// TestFailureAfterAnUnansweredRunIsUnknown: a keyed row's first run never
// answers (its lease is lost with the call under way); its last attempt
// fails with an error to retry. The row is unknown, not dead: the first
// run may have applied the effect, and the last one's failure does not
// undo it (the chaos harness saw a row applied at its first attempt and
// dead after a 503 at its fifth).
func TestFailureAfterAnUnansweredRunIsUnknown(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		proc := batch.ProcessFunc[outcomeRow](func(ctx context.Context, r outcomeRow) (string, error) {
			if info, _ := batch.RowFrom(ctx); info.Attempt == 1 {
				<-ctx.Done() // under way when the lease is lost
				return "", ctx.Err()
			}
			// Not applied: only the first run's silence makes it unknown.
			return "", batch.NotApplied(errors.New("503 Service Unavailable"))
		})
		reg := batch.NewRegistry()
		if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "payments", Processor: proc, KeyedEffects: true, MaxAttempts: 3,
			Timeout: 2 * time.Second, BackoffFunc: func(int) time.Duration { return time.Millisecond }}); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, &unansweredRenewals{Store: bd.store}, reg, time.Second)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "payments", SourceName: "p.csv", Source: strings.NewReader("key,mode\na,ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, Workers: 1, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		rs, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID})
		if err != nil || len(rs) != 1 {
			t.Fatal(rs, err)
		}
		if r := rs[0]; r.State != rows.StateUnknown || r.Attempts != 3 || len(r.Errors) == 0 || !strings.Contains(r.Errors[len(r.Errors)-1].Message, "earlier attempt") {
			t.Fatalf("row: %s, attempts %d, errors %+v; want unknown after its third attempt", r.State, r.Attempts, r.Errors)
		}
	})
}

// TestExhaustedKeyedRowIsUnknownUnlessNotApplied: a keyed row whose every
// attempt failed with an error to retry. When the errors do not say the
// call had no effect, the last one may have had it (a program whose own
// call timed out after the downstream applied it exits 1, as the chaos
// harness's did), and no retry will find out: unknown, with the exhausted
// code. When every error is batch.NotApplied (a 503), it is dead.
func TestExhaustedKeyedRowIsUnknownUnlessNotApplied(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		proc := batch.ProcessFunc[outcomeRow](func(ctx context.Context, r outcomeRow) (string, error) {
			if r.Key == "refused" {
				return "", batch.NotApplied(errors.New("503 Service Unavailable"))
			}
			return "", errors.New("exit status 1: Post: context deadline exceeded")
		})
		reg := batch.NewRegistry()
		if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "payments", Processor: proc, KeyedEffects: true, MaxAttempts: 2,
			BackoffFunc: func(int) time.Duration { return time.Millisecond }}); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, bd.store, reg, 0)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "payments", SourceName: "p.csv", Source: strings.NewReader("key,mode\ntimedout,ok\nrefused,ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, Workers: 1, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		wantCounts := rows.Counts{rows.StateUnknown: 1, rows.StateDead: 1}
		if got := storetest.CheckInvariant(t, bd.store, "default", b.ID); fmt.Sprint(got) != fmt.Sprint(wantCounts) {
			t.Fatalf("counts %v, want %v", got, wantCounts)
		}
		rs, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID})
		if err != nil || len(rs) != 2 {
			t.Fatal(rs, err)
		}
		for _, r := range rs {
			want := map[string]rows.State{"timedout": rows.StateUnknown, "refused": rows.StateDead}[r.Values[0]]
			if r.State != want || r.Attempts != 2 || len(r.Errors) != 1 || r.Errors[0].Code != batch.CodeExhausted {
				t.Errorf("row %s: %s after %d attempts, errors %+v; want %s after 2 (%s)", r.Values[0], r.State, r.Attempts, r.Errors, want, batch.CodeExhausted)
			}
		}
	})
}

// okRows is a file of n rows that succeed: k0 to k<n-1>.
func okRows(n int) string {
	var csv strings.Builder
	csv.WriteString("key,mode\n")
	for i := range n {
		fmt.Fprintf(&csv, "k%d,ok\n", i)
	}
	return csv.String()
}

// ringingStore rings the engine's bell (a notification that rows are due)
// right after its first claim found nothing, before the claim returns:
// the moment between an idle worker's claim and its wait.
type ringingStore struct {
	batch.Store
	before func() // makes rows due, once
	mu     sync.Mutex
	wake   func()
	once   sync.Once
}

func (s *ringingStore) Listen(ctx context.Context, wake func()) error {
	s.mu.Lock()
	s.wake = wake
	s.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (s *ringingStore) ChunkClaim(ctx context.Context, p driver.ChunkClaimParams) (*driver.Lease, error) {
	l, err := s.Store.ChunkClaim(ctx, p)
	if errors.Is(err, batch.ErrNoWork) {
		s.once.Do(func() {
			s.before()
			for {
				s.mu.Lock()
				wake := s.wake
				s.mu.Unlock()
				if wake != nil {
					wake()
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	return l, err
}

// TestNoWakeLostBetweenClaimAndWait: a notification that arrives after an
// idle worker's claim found nothing, and before it waits, still wakes it
// (the wait was taken after the claim, so the ring was lost and the
// worker slept its whole poll: TestListenWakesIdleWorkers failed under
// load when LISTEN began only after the import).
func TestNoWakeLostBetweenClaimAndWait(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bd := engines[0].setup(t)
	p := &outcomeProcessor{calls: map[string]int{}}
	reg := outcomesRegistry(t, p)
	importer := newEngine(t, bd.store, reg, 0)
	var id atomic.Int64
	rs := &ringingStore{Store: bd.store, before: func() {
		b, err := importer.Import(ctx, batch.ImportParams{Kind: "outcomes", SourceName: "o.csv", Source: strings.NewReader("key,mode\na,ok\n")})
		if err != nil {
			t.Error(err)
			return
		}
		id.Store(b.ID)
	}}
	worker, err := batch.NewEngine(batch.Config{Store: rs, Registry: reg, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _, _ = worker.Work(wctx, batch.WorkParams{Workers: 1}) }()
	defer func() { stop(); <-done }()
	testenv.Until(t, func() bool {
		if id.Load() == 0 {
			return false
		}
		b, err := bd.store.BatchGet(ctx, driver.BatchGetParams{TenantID: "default", ID: id.Load()})
		return err == nil && b.Status == batchtype.StatusFinished
	}, func() string {
		return "the idle worker did not wake for rows made due between its claim and its wait (its poll is an hour)"
	})
}
