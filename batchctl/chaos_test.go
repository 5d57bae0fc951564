package batchctl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
)

// keyLedger is a downstream that honours Idempotency-Key: each key is
// applied once, and later requests with it get the same id.
type keyLedger struct {
	mu      sync.Mutex
	ids     map[string]string
	applied map[string]int
}

func (l *keyLedger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "no key", http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	id, seen := l.ids[key]
	if !seen {
		id = fmt.Sprint("crm-", len(l.ids)+1)
		l.ids[key] = id
		l.applied[key]++
	}
	l.mu.Unlock()
	time.Sleep(time.Millisecond) // a downstream takes its time
	fmt.Fprintf(w, `{"id":%q}`, id)
}

func (l *keyLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

// buildBatchctl builds the command once per test, for tests that run it as
// separate processes.
func buildBatchctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "batchctl")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/batchctl").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestWorkersSurviveKillsAndTerminatedBackends runs four batchctl worker
// processes on one batch of an external effect on PostgreSQL (6,000 rows;
// 20,000 in make test-long). One is killed with SIGKILL mid-run and a PostgreSQL backend of another is
// terminated. Every row must end with exactly one terminal outcome, the
// downstream must have applied each key once, the totals must equal the
// aggregate, and the surviving workers must never exit before the work is
// done.
func TestWorkersSurviveKillsAndTerminatedBackends(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs worker processes for about a minute")
	}
	dbURL := testdb.PostgresURL(t)
	schema := testdb.PostgresSchemaName(t)
	bin := buildBatchctl(t)
	ledger := &keyLedger{ids: map[string]string{}, applied: map[string]int{}}
	srv := httptest.NewServer(ledger)
	defer srv.Close()

	// 20,000 rows, a kill after 3,000 effects and a terminated backend
	// after 8,000 in make test-long; a third of that in make test.
	n, kill, terminate := testenv.Pick(6_000, 20_000), testenv.Pick(1_000, 3_000), testenv.Pick(3_000, 8_000)
	var csv strings.Builder
	csv.WriteString("email,name,country,signup_date,amount\n")
	for i := range n {
		fmt.Fprintf(&csv, "c%d@example.com,Customer %d,FR,2021-03-04,%d.50\n", i, i, i%500)
	}
	file := writeFile(t, "many.csv", []byte(csv.String()))
	dbFor := func(app string) string {
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("application_name", app)
		u.RawQuery = q.Encode()
		return u.String()
	}
	env := append(os.Environ(), "ROWFATE_WEBHOOK_URL="+srv.URL, "DATABASE_URL=")
	imp := exec.Command(bin, "import", "customers-webhook", file, "--no-work", "--database", dbFor("rowfate-import"), "--pg-schema", schema)
	imp.Env = env
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}

	type worker struct {
		cmd    *exec.Cmd
		out    strings.Builder
		done   chan error
		killed bool
	}
	tok := run(t, "worker-token", "create", "chaos", "--all-tenants", "--database", dbFor("rowfate-token"), "--pg-schema", schema)
	token := strings.TrimSpace(tok.stdout)
	if tok.code != exitOK || token == "" {
		t.Fatalf("worker-token create: %s", tok)
	}
	workers := make([]*worker, 4)
	for i := range workers {
		w := &worker{done: make(chan error, 1)}
		w.cmd = exec.Command(bin, "worker", "--until-done", "--worker-token", token, "--lease", "2s", "--workers", "2",
			"--database", dbFor(fmt.Sprint("rowfate-chaos-", i)), "--pg-schema", schema, "-o", "json")
		w.cmd.Env = env
		w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.out
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { w.done <- w.cmd.Wait() }()
		workers[i] = w
	}
	defer func() {
		for _, w := range workers {
			_ = w.cmd.Process.Kill()
		}
	}()
	waitFor := func(applied int) {
		testenv.Until(t, func() bool { return ledger.count() >= applied }, func() string {
			return fmt.Sprintf("%d effects applied (%d so far)", applied, ledger.count())
		})
	}
	waitFor(kill)
	if err := workers[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	workers[0].killed = true
	waitFor(terminate)
	admin, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var terminated int
	if err := admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM
		(SELECT pid FROM pg_stat_activity WHERE application_name = 'rowfate-chaos-1' LIMIT 1) AS one`).Scan(&terminated); err != nil || terminated != 1 {
		t.Fatalf("terminate a backend: %d, %v", terminated, err)
	}
	for i, w := range workers[1:] {
		select {
		case err := <-w.done:
			if err != nil {
				t.Errorf("worker %d exited with %v:\n%s", i+1, err, w.out.String())
			}
		case <-time.After(testenv.Patience(t)):
			t.Fatalf("worker %d did not finish", i+1)
		}
	}

	// Every row ended once, with the downstream's id for its key.
	c := &session{t: t, database: dbFor("rowfate-check")}
	var b jsonBatch
	c.runJSON(exitOK, &b, "status", "1", "-o", "json", "--pg-schema", schema)
	if b.Status != "finished" || b.Counts["succeeded"] != int64(n) || len(b.Counts) != 1 {
		t.Fatalf("batch: %+v", b)
	}
	var rs []jsonRow
	c.runJSON(exitOK, &rs, "rows", "1", "--limit", "0", "-o", "json", "--pg-schema", schema)
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	if len(rs) != n || len(ledger.ids) != n {
		t.Fatalf("%d rows, %d keys applied; want %d", len(rs), len(ledger.ids), n)
	}
	// Each row's effect key is the kind's, derived from the row: read it
	// where the engine recorded it. The downstream sees it under the
	// tenant.
	keys := map[int64]string{}
	krs, err := admin.Query(context.Background(), `SELECT row_no, effect_key FROM `+schema+`.effects WHERE batch_id = 1`)
	if err != nil {
		t.Fatal(err)
	}
	for krs.Next() {
		var row int64
		var k string
		if err := krs.Scan(&row, &k); err != nil {
			t.Fatal(err)
		}
		keys[row] = "default/" + k
	}
	krs.Close()
	for _, r := range rs {
		key := keys[r.RowNo]
		if r.State != "succeeded" || r.ResultID != ledger.ids[key] || ledger.applied[key] != 1 {
			t.Fatalf("row %d: %s %q, key applied %d times (id %q)", r.RowNo, r.State, r.ResultID, ledger.applied[key], ledger.ids[key])
		}
	}
	var totals, fresh int64
	if err := admin.QueryRow(context.Background(), `SELECT (SELECT sum(n_succeeded) FROM `+schema+`.batch_chunks WHERE batch_id = 1),
		(SELECT count(*) FROM `+schema+`.batch_rows WHERE batch_id = 1 AND state = 'succeeded')`).Scan(&totals, &fresh); err != nil || totals != fresh {
		t.Fatalf("totals %d, aggregate %d, %v", totals, fresh, err)
	}
}
