// Command chaos is Rowfate's crash-and-fault harness (make chaos). It
// starts a throwaway PostgreSQL cluster, a TCP fault proxy of its own in
// front of it, a downstream HTTP service that honours Idempotency-Key, and
// six `batchctl worker` processes (two tenants, three workers each, with
// their own credentials, built with -tags chaos so that failpoints can
// crash them), then imports a stream of batches of the customers kind
// (transactional), the customers-webhook kind (external, keyed: an HTTP
// call per row) and the customers-exec kind (external, keyed: a program
// per row, this binary run with -exec-child, which makes the call) and
// injects faults at random every 1–5 s from a printed seed:
//
//   - SIGKILL of a worker; SIGSTOP past its lease, then SIGCONT;
//   - failpoints that crash a worker after a claim, after the downstream
//     call before the outcome is recorded, inside the ack transaction;
//   - pg_ctl restart -m immediate; terminating every backend (the LISTEN
//     ones included);
//   - proxy resets, blackholes (silent half-open connections), latency;
//   - cancels and pauses of running batches;
//   - replayed stale acks (a flush with a token a newer claim replaced)
//     and forged acks (a flush naming the other tenant).
//
// When the faults stop and every batch settles, it checks the history
// offline (see check.go) and prints a report; any violation exits 1. The
// same seed gives the same schedule of faults (the run's timing is the
// machine's).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/store/postgres"
)

// options are the harness's flags.
type options struct {
	duration time.Duration
	seed     uint64
	rows     int
	batches  int
	settle   time.Duration
	report   string
	bin      string
}

var tenants = []string{"acme", "globex"}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 3*time.Minute, "how long faults are injected")
	flag.Uint64Var(&o.seed, "seed", 0, "the seed of the fault schedule (0: a random one, printed)")
	flag.IntVar(&o.rows, "rows", 200_000, "rows in all, over every batch")
	flag.IntVar(&o.batches, "batches", 40, "batches to import")
	flag.DurationVar(&o.settle, "settle", 3*time.Minute, "how long every batch may take to settle once the faults stop")
	flag.StringVar(&o.report, "report", "", "write the report as JSON to this file")
	flag.StringVar(&o.bin, "batchctl", "", "a batchctl built with -tags chaos (default: build one)")
	child := flag.String("exec-child", "", "run as the customers-exec kind's program, posting to this URL (the harness's workers use it)")
	flag.Parse()
	if *child != "" {
		os.Exit(execChild(*child))
	}
	if o.seed == 0 {
		o.seed = rand.Uint64()%1_000_000_000 + 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("chaos: seed %d (rerun with -seed %d), %s of faults, %d rows in %d batches\n", o.seed, o.seed, o.duration, o.rows, o.batches)
	rep, err := run(ctx, o)
	if rep != nil {
		rep.print(os.Stdout)
		if o.report != "" {
			b, _ := json.MarshalIndent(rep, "", "  ")
			_ = os.WriteFile(o.report, append(b, '\n'), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if len(rep.Violations) > 0 {
		fmt.Fprintf(os.Stderr, "chaos: %d violations (seed %d)\n", len(rep.Violations), o.seed)
		os.Exit(1)
	}
}

// harness is one run's parts.
type harness struct {
	o options
	// rng draws the schedule (which fault, when); pickRng the choices
	// within a fault (which worker, which batch), which depend on what
	// is running: the same seed gives the same schedule.
	rng     *rand.Rand
	pickRng *rand.Rand
	pg      *cluster
	prox    *proxy
	down    *downstream
	pool    *pgxpool.Pool
	store   *postgres.Store
	bin     string
	// execCommand is the workers' ROWFATE_EXEC_COMMAND entry.
	execCommand string
	work        *pool
	rep         *report

	mu      sync.Mutex
	batches []*imported
	// paused are batches paused by a fault, to resume.
	paused map[int64]bool
}

// imported is a batch the harness imported, with what it expects of it.
type imported struct {
	ID      int64
	Tenant  string
	Kind    string
	Rows    int
	Invalid int
}

func run(ctx context.Context, o options) (*report, error) {
	h := &harness{o: o, rng: rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15)),
		pickRng: rand.New(rand.NewPCG(o.seed^0x5bd1e995, o.seed)), paused: map[int64]bool{},
		rep: &report{Seed: o.seed, Faults: map[string]int{}, Started: time.Now().UTC()}}
	tmp, err := os.MkdirTemp("", "rowfate-chaos-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if h.bin = o.bin; h.bin == "" {
		h.bin = filepath.Join(tmp, "batchctl")
		if out, err := exec.CommandContext(ctx, "go", "build", "-tags", "chaos", "-o", h.bin, "./cmd/batchctl").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build batchctl -tags chaos: %v\n%s", err, out)
		}
	}
	if h.pg, err = newCluster(ctx); err != nil {
		return nil, err
	}
	defer h.pg.stop()
	h.rep.Versions = versions(ctx, h)
	if h.prox, err = newProxy(fmt.Sprintf("127.0.0.1:%d", h.pg.port)); err != nil {
		return nil, err
	}
	defer h.prox.close()
	if h.down, err = newDownstream(); err != nil {
		return nil, err
	}
	defer h.down.close()
	// The harness's own connections are spared by terminate_backends.
	if h.pool, err = pgxpool.New(ctx, h.pg.url("postgres")+"&application_name=chaos"); err != nil {
		return nil, err
	}
	defer h.pool.Close()
	h.store = postgres.New(h.pool, nil)
	if err := h.store.Migrate(ctx); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	h.execCommand = "ROWFATE_EXEC_COMMAND=" + self + " -exec-child " + h.down.url()
	proxied := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", h.prox.port())
	h.work = &pool{bin: h.bin, url: proxied,
		env:  []string{"ROWFATE_WEBHOOK_URL=" + h.down.url(), h.execCommand, "ROWFATE_FAILPOINTS=after-claim=0.01,after-effect=0.01,in-ack=0.01", "DATABASE_URL="},
		args: []string{"--lease", "2s", "--grace", "1s", "--workers", "1"}}
	for _, t := range tenants {
		for i := 1; i <= 3; i++ {
			name := fmt.Sprintf("w-%s-%d", t, i)
			out, err := h.cli(ctx, "worker-token", "create", name, "--tenant", t)
			if err != nil {
				return nil, err
			}
			h.work.workers = append(h.work.workers, &worker{name: name, tenant: t, token: strings.TrimSpace(out)})
		}
	}
	for _, w := range h.work.workers {
		if err := h.work.start(w); err != nil {
			return nil, err
		}
	}
	defer h.work.stopAll()

	// The batches come in over most of the run; the faults run for all
	// of it.
	fctx, stopFaults := context.WithTimeout(ctx, o.duration)
	defer stopFaults()
	var wg sync.WaitGroup
	importErr := make(chan error, 1)
	wg.Go(func() { importErr <- h.importAll(fctx, tmp) })
	wg.Go(func() { h.faults(fctx) })
	wg.Wait()
	h.logf("faults over; %d batches imported", len(h.batches))
	if err := <-importErr; err != nil {
		return h.rep, err
	}
	if ctx.Err() != nil {
		return h.rep, ctx.Err()
	}
	faultsEnd := time.Now()
	h.restore(ctx)
	settled := h.settle(ctx)
	h.logf("settled: %v", settled)
	h.rep.SettleSeconds = time.Since(faultsEnd).Seconds()
	if !settled {
		h.rep.violate("batches not settled %s after the faults stopped", o.settle)
	}
	h.work.stopAll()
	h.rep.WorkerCrashes, h.rep.WorkerLeasesLost = h.work.crashes, h.work.leasesLost
	for _, u := range h.work.unexpected {
		h.rep.violate("%s", u)
	}
	h.logf("workers stopped; checking")
	if err := h.check(ctx); err != nil {
		return h.rep, err
	}
	h.rep.WallSeconds = time.Since(h.rep.Started).Seconds()
	return h.rep, nil
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// logf says where the run is, on stderr.
func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chaos: %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// cli runs batchctl against the cluster directly (not through the proxy:
// the harness's own commands are not under test).
func (h *harness) cli(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--database", h.pg.url("postgres"))...)
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "ROWFATE_WEBHOOK_URL="+h.down.url(), h.execCommand)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			return string(out), nil // some rows invalid: the point
		}
		return string(out), fmt.Errorf("batchctl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// importAll imports the batches, spread over the first 80% of the run, so
// that batches are running while the faults come.
func (h *harness) importAll(ctx context.Context, tmp string) error {
	// A customers-exec row starts a process (this binary, which makes the
	// HTTP call): some ten times what a row of the other kinds costs. Its
	// batches get a fifth of the rows of the others, so that the run's
	// work fits the settle bound on two cores; the total stays -rows.
	execs := h.o.batches / 3
	weight := 5*(h.o.batches-execs) + execs
	big := max((h.o.rows*5+weight-1)/weight, 1)
	gap := h.o.duration * 8 / 10 / time.Duration(h.o.batches)
	start := time.Now()
	for i := 0; i < h.o.batches; i++ {
		tenant := tenants[i%len(tenants)]
		// Two in three batches have an external effect.
		kind := []string{"customers", "customers-webhook", "customers-exec"}[i%3]
		per := big
		if kind == "customers-exec" {
			per = max(big/5, 1)
		}
		path := filepath.Join(tmp, fmt.Sprintf("batch-%d.csv", i))
		invalid, err := writeCustomers(path, i, per)
		if err != nil {
			return err
		}
		var out string
		for try := 0; ; try++ {
			// --once makes a retry after a lost answer return the batch
			// the first try made.
			out, err = h.cli(context.WithoutCancel(ctx), "import", kind, path, "--no-work", "--once", "--tenant", tenant, "-o", "json")
			if err == nil || try == 5 {
				break
			}
			h.logf("import of batch file %d, try %d: %v", i, try+1, firstLine(err.Error()))
			time.Sleep(time.Second)
		}
		if err != nil {
			return err
		}
		var b struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal([]byte(out), &b); err != nil || b.ID == 0 {
			return fmt.Errorf("import %s: %v: %s", path, err, out)
		}
		h.mu.Lock()
		h.batches = append(h.batches, &imported{ID: b.ID, Tenant: tenant, Kind: kind, Rows: per, Invalid: invalid})
		h.mu.Unlock()
		h.logf("imported batch %d (%s, %s, %d rows)", b.ID, kind, tenant, per)
		h.rep.Rows += per
		// Batch i+1 is due at its place in the schedule, whatever this
		// import took (imports retried through faults take long); once the
		// faults are over, the rest come at once.
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(time.Duration(i+1) * gap))):
		}
	}
	return nil
}

// writeCustomers writes a customers file of n rows, one in 100 invalid,
// emails unique to the batch; it returns the invalid rows.
func writeCustomers(path string, batchNo, n int) (int, error) {
	var b strings.Builder
	b.WriteString("email,name,country,signup_date,amount\n")
	invalid := 0
	for i := 0; i < n; i++ {
		email := fmt.Sprintf("b%d.c%d@example.com", batchNo, i)
		if i%100 == 99 {
			email = "not-an-email"
			invalid++
		}
		fmt.Fprintf(&b, "%s,Customer %d,PT,2021-03-04,%d.%02d\n", email, i, i%900, i%100)
	}
	return invalid, os.WriteFile(path, []byte(b.String()), 0o644)
}

// running lists the batches that are still running.
func (h *harness) running(ctx context.Context) []*imported {
	h.mu.Lock()
	all := append([]*imported(nil), h.batches...)
	h.mu.Unlock()
	var out []*imported
	for _, b := range all {
		got, err := h.store.BatchGet(ctx, driver.BatchGetParams{TenantID: b.Tenant, ID: b.ID})
		if err == nil && got.Status == driver.StatusRunning {
			out = append(out, b)
		}
	}
	return out
}

// restore ends every lasting fault: stopped workers go on, paused
// batches resume, the proxy forwards again.
func (h *harness) restore(ctx context.Context) {
	for _, w := range h.work.workers {
		h.work.signal(w, syscall.SIGCONT)
	}
	// Every batch the store says is paused: a pause whose resume is still
	// pending, or one the harness could not resume while the faults ran.
	h.mu.Lock()
	all := append([]*imported(nil), h.batches...)
	h.mu.Unlock()
	for _, b := range all {
		got, err := h.store.BatchGet(ctx, driver.BatchGetParams{TenantID: b.Tenant, ID: b.ID})
		if err != nil || got.Paused {
			h.resume(ctx, b)
		}
	}
	h.down.setSlow(0)
}

// resume resumes a batch the harness paused, retrying for a minute while
// the database restarts or drops connections: a resume lost to a fault
// would leave the batch paused, and unsettled, for good.
func (h *harness) resume(ctx context.Context, b *imported) {
	var err error
	for try := 0; try < 60 && ctx.Err() == nil; try++ {
		if _, err = h.store.BatchPause(ctx, driver.BatchControlParams{TenantID: b.Tenant, ID: b.ID}, false); err == nil {
			h.mu.Lock()
			delete(h.paused, b.ID)
			h.mu.Unlock()
			return
		}
		time.Sleep(time.Second)
	}
	h.logf("could not resume batch %d: %v", b.ID, err)
}

// settle waits until every batch is finished or cancelled with its final
// event.
func (h *harness) settle(ctx context.Context) bool {
	deadline := time.Now().Add(h.o.settle)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		open := 0
		h.mu.Lock()
		all := append([]*imported(nil), h.batches...)
		h.mu.Unlock()
		for _, b := range all {
			got, err := h.store.BatchGet(ctx, driver.BatchGetParams{TenantID: b.Tenant, ID: b.ID})
			if err != nil || got.Status == driver.StatusRunning || got.Counts["processing"] > 0 {
				open++
			}
		}
		if open == 0 {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return false
}

// versions names what ran.
func versions(ctx context.Context, h *harness) map[string]string {
	v := map[string]string{}
	if out, err := exec.CommandContext(ctx, "go", "version").Output(); err == nil {
		v["go"] = strings.TrimSpace(string(out))
	}
	if out, err := h.pg.run(ctx, "pg_ctl", "--version"); err == nil {
		v["postgres"] = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		v["rowfate"] = strings.TrimSpace(string(out))
	}
	return v
}
