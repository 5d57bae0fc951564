// Command rowfate-chaos is Rowfate's crash-and-fault harness (make chaos). It
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
//     and forged acks (a flush naming the other tenant);
//   - a downstream that answers 503, hangs past the processor's timeout,
//     or answers slowly;
//   - imports through the proxy whose COMMIT is dropped or whose answer
//     is lost, or whose connection is reset midway, retried (imports.go).
//
// When the faults stop and every batch settles, it checks the history
// offline (see check.go) and prints a report; any violation exits 1, and
// a run that fails keeps its evidence (the workers' logs, the database's
// tables, the downstream's log) in a folder it names. The same seed
// gives the same schedule of faults (the run's timing is the machine's).
//
// -sabotage breaks one property on purpose, to show that its check fails
// (see sabotages).
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
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
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
	// keep is where a failed run's evidence goes (default: a new folder
	// in the system's temporary folder).
	keep string
	// show is how many violations of each kind are printed.
	show     int
	sabotage map[string]bool
}

// sabotages break one property each, so that a run shows its check
// failing: the harness's checks must be able to fail.
var sabotages = map[string]string{
	"downstream-reapply": "the downstream applies a replayed key again (check: a key applied twice)",
	"drop-customer":      "before the checks a customer row is deleted, one changed and one inserted (check: the customers table against the succeeded rows)",
	"import-new-batch":   "import retries and re-imports pass --new-batch, skipping the engine's dedupe (check: one batch per file)",
	"exec-orphan":        "one exec run in 200 leaves a process outside its group (check: exec orphans)",
	"exec-key-drift":     "one exec run in 100 also sends its row under another key (check: at most one effect per row)",
	"uncounted-faults":   "a hang and a cancel are injected and left out of the unknown bound (check: unknown rows within the bound)",
	"late-replay":        "a succeeded row's request is sent again after the run settled (check: sent after settled)",
	"leave-paused":       "the first batch paused is never resumed (check: every batch settles; the failure report)",
}

var tenants = []string{"acme", "globex"}

// workersPerTenant is how many worker processes work each tenant: each
// holds at most one lease, which bounds the unknown rows a cancel makes.
const workersPerTenant = 3

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 3*time.Minute, "how long faults are injected")
	flag.Uint64Var(&o.seed, "seed", 0, "the seed of the fault schedule (0: a random one, printed)")
	flag.IntVar(&o.rows, "rows", 200_000, "rows in all, over every batch")
	flag.IntVar(&o.batches, "batches", 40, "batches to import")
	flag.DurationVar(&o.settle, "settle", 3*time.Minute, "how long every batch may take to settle once the faults stop")
	flag.StringVar(&o.report, "report", "", "write the report as JSON to this file")
	flag.StringVar(&o.bin, "batchctl", "", "a batchctl built with -tags chaos (default: build one)")
	flag.StringVar(&o.keep, "keep", "", "where a failed run keeps its evidence (default: a new folder under $TMPDIR)")
	flag.IntVar(&o.show, "show", 10, "violations printed of each kind (all are counted)")
	sabotage := flag.String("sabotage", "", "break a property on purpose, to see its check fail: "+sabotageNames())
	child := flag.String("exec-child", "", "run as the customers-exec kind's program, posting to this URL (the harness's workers use it)")
	pidDir := flag.String("exec-pids", "", "with -exec-child: record the program's pid in this folder")
	childSabotage := flag.String("exec-sabotage", "", "with -exec-child: the run's sabotage")
	linger := flag.Duration("exec-linger", 0, "run as the process -sabotage exec-orphan leaves behind")
	lingerWorker := flag.Int("exec-worker", 0, "with -exec-linger: the worker's pid")
	flag.Parse()
	if *child != "" {
		os.Exit(execChild(*child, *pidDir, *childSabotage))
	}
	if *linger > 0 {
		os.Exit(execLinger(*linger, *pidDir, *lingerWorker))
	}
	o.sabotage = map[string]bool{}
	for _, s := range strings.Split(*sabotage, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, ok := sabotages[s]; !ok {
			fmt.Fprintf(os.Stderr, "chaos: unknown -sabotage %q: %s\n", s, sabotageNames())
			os.Exit(2)
		}
		o.sabotage[s] = true
	}
	if o.seed == 0 {
		o.seed = rand.Uint64()%1_000_000_000 + 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("chaos: seed %d (rerun with -seed %d), %s of faults, %d rows in %d batches\n", o.seed, o.seed, o.duration, o.rows, o.batches)
	for s := range o.sabotage {
		fmt.Printf("chaos: SABOTAGE %s: %s\n", s, sabotages[s])
	}
	rep, err := run(ctx, o)
	if rep != nil {
		rep.print(os.Stdout, o.show)
		if o.report != "" {
			b, _ := json.MarshalIndent(rep, "", "  ")
			_ = os.WriteFile(o.report, append(b, '\n'), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if rep.ViolationCount > 0 {
		fmt.Fprintf(os.Stderr, "chaos: %d violations (seed %d); evidence kept in %s\n", rep.ViolationCount, o.seed, rep.Kept)
		os.Exit(1)
	}
}

func sabotageNames() string {
	var names []string
	for s := range sabotages {
		names = append(names, s)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// harness is one run's parts.
type harness struct {
	o options
	// rng draws the schedule (which fault, when, and a generator for
	// each fault's choices); importRng what befalls each import: the
	// same seed gives the same schedule.
	rng       *rand.Rand
	importRng *rand.Rand
	pg        *cluster
	// prox is the workers' way to PostgreSQL, iprox the imports': the
	// same faults hit both, and iprox can also cut an ingest's COMMIT.
	prox, iprox *proxy
	down        *downstream
	pool        *pgxpool.Pool
	store       *postgres.Store
	bin         string
	// dir is the run's folder: the workers' logs, the exec runs' pid
	// records, and on failure the evidence. It is removed when the run
	// passes.
	dir string
	// pidDir is where each exec run records its pid.
	pidDir string
	// execCommand is the workers' ROWFATE_EXEC_COMMAND entry.
	execCommand string
	work        *pool
	rep         *report
	orphans     *orphanWatch
	// closers end the run's parts, in reverse (onExit).
	closers []func()

	mu      sync.Mutex
	batches []*imported
	files   []*file
	// paused are batches paused by a fault, to resume; pauses counts the
	// pauses of each batch (each may give back a row in flight with its
	// attempt, to be sent again).
	paused map[int64]bool
	pauses map[int64]int
	// cancelledAt is when the harness cancelled each batch it cancelled.
	cancelledAt map[int64]time.Time
	// neverResume is the batch -sabotage leave-paused leaves paused.
	neverResume map[int64]bool
	// harnessClaims counts the chunks of each batch the stale and forged
	// acks claimed.
	harnessClaims map[int64]int
	// uncounted are the batches -sabotage uncounted-faults cancelled:
	// their cancels are left out of the unknown bound.
	uncounted map[int64]bool
}

// imported is a batch the harness imported, with what it expects of it.
type imported struct {
	ID      int64
	Tenant  string
	Kind    string
	Rows    int
	Invalid int
	File    *file
	Created time.Time
}

func run(ctx context.Context, o options) (*report, error) {
	h := &harness{o: o, rng: rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15)),
		importRng: rand.New(rand.NewPCG(o.seed^0x1b873593, o.seed^0xcc9e2d51)),
		paused:    map[int64]bool{}, pauses: map[int64]int{}, cancelledAt: map[int64]time.Time{}, neverResume: map[int64]bool{},
		harnessClaims: map[int64]int{}, uncounted: map[int64]bool{},
		rep: &report{Seed: o.seed, Faults: map[string]int{}, Started: time.Now().UTC(), Violations: map[string]*violationKind{},
			Imports: importStats{CommitFaults: map[string]int{}}}}
	var err error
	if h.dir, err = os.MkdirTemp("", fmt.Sprintf("rowfate-chaos-run-%d-*", o.seed)); err != nil {
		return nil, err
	}
	defer h.closeAll()
	err = h.run(ctx)
	h.rep.WallSeconds = time.Since(h.rep.Started).Seconds()
	if err == nil && h.rep.ViolationCount == 0 {
		h.closeAll()
		os.RemoveAll(h.dir)
		return h.rep, nil
	}
	// A failed run keeps its evidence, taken before the cluster and the
	// workers' folder go, and the report says where.
	h.keepEvidence(ctx, err)
	h.closeAll()
	dir := h.dir
	if o.keep != "" {
		if rerr := os.Rename(h.dir, o.keep); rerr == nil {
			dir = o.keep
		}
	}
	h.rep.Kept = dir
	h.writeReport(dir)
	fmt.Fprintf(os.Stderr, "chaos: the run failed: its evidence (report, open state, workers' logs, the database's tables, the downstream's log, PostgreSQL's log) is in %s\n", dir)
	return h.rep, err
}

// onExit registers f to run when the run ends, the last registered first.
func (h *harness) onExit(f func()) { h.closers = append(h.closers, f) }

// closeAll runs what onExit registered, once.
func (h *harness) closeAll() {
	for len(h.closers) > 0 {
		f := h.closers[len(h.closers)-1]
		h.closers = h.closers[:len(h.closers)-1]
		f()
	}
}

func (h *harness) run(ctx context.Context) error {
	o := h.o
	tmp, err := os.MkdirTemp("", "rowfate-chaos-*")
	if err != nil {
		return err
	}
	h.onExit(func() { os.RemoveAll(tmp) })
	h.pidDir = filepath.Join(h.dir, "exec-pids")
	for _, d := range []string{h.pidDir, filepath.Join(h.dir, "workers")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if h.bin = o.bin; h.bin == "" {
		h.bin = filepath.Join(tmp, "batchctl")
		if out, err := exec.CommandContext(ctx, "go", "build", "-tags", "chaos", "-o", h.bin, "./cmd/batchctl").CombinedOutput(); err != nil {
			return fmt.Errorf("build batchctl -tags chaos: %v\n%s", err, out)
		}
	}
	if h.pg, err = newCluster(ctx); err != nil {
		return err
	}
	h.onExit(h.pg.stop)
	h.rep.Versions = versions(ctx, h)
	if h.prox, err = newProxy(fmt.Sprintf("127.0.0.1:%d", h.pg.port)); err != nil {
		return err
	}
	h.onExit(h.prox.close)
	if h.iprox, err = newProxy(fmt.Sprintf("127.0.0.1:%d", h.pg.port)); err != nil {
		return err
	}
	h.onExit(h.iprox.close)
	if h.down, err = newDownstream(o.seed, o.sabotage["downstream-reapply"]); err != nil {
		return err
	}
	h.onExit(h.down.close)
	// The harness's own connections are spared by terminate_backends.
	if h.pool, err = pgxpool.New(ctx, h.pg.url("postgres")+"&application_name=chaos"); err != nil {
		return err
	}
	h.onExit(h.pool.Close)
	h.store = postgres.New(h.pool, nil)
	if err := h.store.Migrate(ctx); err != nil {
		return err
	}
	if err := h.startWorkers(ctx); err != nil {
		return err
	}
	h.orphans = newOrphanWatch(h.pidDir)
	wctx, stopWatch := context.WithCancel(ctx)
	h.onExit(stopWatch)
	go h.watchOrphans(wctx)

	// The batches come in over most of the run; the faults run for all
	// of it.
	fctx, stopFaults := context.WithTimeout(ctx, o.duration)
	h.onExit(stopFaults)
	var wg sync.WaitGroup
	importErr := make(chan error, 1)
	wg.Go(func() { importErr <- h.importAll(fctx, tmp) })
	wg.Go(func() { h.faults(fctx) })
	wg.Wait()
	h.logf("faults over; %d batches imported", len(h.batches))
	if err := <-importErr; err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	faultsEnd := time.Now()
	h.restore(ctx)
	settled := h.settle(ctx)
	h.logf("settled: %v", settled)
	h.rep.SettleSeconds = time.Since(faultsEnd).Seconds()
	if !settled {
		h.rep.violate("not_settled", "batches not settled %s after the faults stopped (their state: open-state.txt)", o.settle)
		h.rep.OpenState = h.openState(ctx)
	}
	h.work.stopAll()
	stopWatch()
	h.rep.WorkerCrashes, h.rep.WorkerLeasesLost = h.work.crashes, h.work.leasesLost
	for _, u := range h.work.unexpected {
		h.rep.violate("worker_exited", "%s", u)
	}
	// Every worker is gone: a row's program still running outlived it.
	time.Sleep(orphanGrace)
	h.orphans.scan(h.work, true, h.rep)
	if o.sabotage["late-replay"] {
		h.lateReplay()
	}
	h.logf("workers stopped; checking")
	return h.check(ctx)
}

// startWorkers starts the worker processes, each with a credential of
// its own for its tenant, the external kinds pointed at the downstream and
// the failpoints on.
func (h *harness) startWorkers(ctx context.Context) error {
	o := h.o
	self, err := os.Executable()
	if err != nil {
		return err
	}
	h.execCommand = "ROWFATE_EXEC_COMMAND=" + self + " -exec-child " + h.down.url() + " -exec-pids " + h.pidDir
	var childSabotage []string
	for _, s := range []string{"exec-orphan", "exec-key-drift"} {
		if o.sabotage[s] {
			childSabotage = append(childSabotage, s)
		}
	}
	if len(childSabotage) > 0 {
		h.execCommand += " -exec-sabotage " + strings.Join(childSabotage, ",")
	}
	proxied := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", h.prox.port())
	h.work = &pool{bin: h.bin, url: proxied, logDir: filepath.Join(h.dir, "workers"), live: map[int]*worker{}, deaths: map[int]death{},
		env: []string{"ROWFATE_WEBHOOK_URL=" + h.down.url(), h.execCommand, "ROWFATE_EXEC_STATE_DIR=" + filepath.Join(h.dir, "exec-state"),
			"ROWFATE_FAILPOINTS=after-claim=0.01,after-effect=0.01,in-ack=0.01", "DATABASE_URL=", "ROWFATE_WORKER_TOKEN="},
		args: []string{"--lease", "2s", "--grace", "1s", "--workers", "1"}}
	// Each worker has a credential of its own for its tenant: on
	// PostgreSQL a worker needs a real one (--worker-token dev is
	// refused there).
	for _, t := range tenants {
		for i := 1; i <= workersPerTenant; i++ {
			name := fmt.Sprintf("w-%s-%d", t, i)
			out, err := h.cli(ctx, "worker-token", "create", name, "--tenant", t)
			if err != nil {
				return err
			}
			h.work.workers = append(h.work.workers, &worker{name: name, tenant: t, token: strings.TrimSpace(out)})
		}
	}
	for _, w := range h.work.workers {
		if err := h.work.start(w); err != nil {
			return err
		}
	}
	h.onExit(h.work.stopAll)
	return nil
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
// the harness's own commands are not under test), as application chaos,
// which terminate_backends spares.
func (h *harness) cli(ctx context.Context, args ...string) (string, error) {
	return h.cliAt(ctx, h.pg.url("postgres")+"&application_name=chaos", args...)
}

// cliAt runs batchctl against the database at url.
func (h *harness) cliAt(ctx context.Context, url string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--database", url)...)
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

// running lists the batches that are still running.
func (h *harness) running(ctx context.Context) []*imported {
	h.mu.Lock()
	all := append([]*imported(nil), h.batches...)
	h.mu.Unlock()
	var out []*imported
	for _, b := range all {
		got, err := h.store.BatchGet(ctx, driver.BatchGetParams{TenantID: b.Tenant, ID: b.ID})
		if err == nil && got.Status == batchtype.StatusRunning {
			out = append(out, b)
		}
	}
	return out
}

// restore ends every lasting fault: stopped workers go on, paused
// batches resume, the proxy forwards again, the downstream answers.
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
	h.down.calm()
}

// resume resumes a batch the harness paused, retrying for a minute while
// the database restarts or drops connections: a resume lost to a fault
// would leave the batch paused, and unsettled, for good.
func (h *harness) resume(ctx context.Context, b *imported) {
	h.mu.Lock()
	never := h.neverResume[b.ID]
	h.mu.Unlock()
	if never {
		return
	}
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
			if err != nil || got.Status == batchtype.StatusRunning || got.Counts["processing"] > 0 {
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
	if out, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
		v["rowfate"] += fmt.Sprintf(" + %d files changed", len(slices.DeleteFunc(strings.Split(strings.TrimSpace(string(out)), "\n"), func(s string) bool { return s == "" })))
	}
	return v
}
