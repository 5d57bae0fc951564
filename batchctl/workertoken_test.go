package batchctl

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/internal/testenv"
)

// workerToken creates a worker credential named name (for every tenant
// unless args say otherwise) and returns its token.
func (c *session) workerToken(name string, args ...string) string {
	c.t.Helper()
	if len(args) == 0 {
		args = []string{"--all-tenants"}
	}
	r := c.run(append([]string{"worker-token", "create", name}, args...)...)
	token := strings.TrimSpace(r.stdout)
	if r.code != exitOK || !strings.HasPrefix(token, "rfw_") {
		c.t.Fatalf("worker-token create %s: %s", name, r)
	}
	return token
}

// TestDevTokenRefusedOnPostgres: the development token skips the
// credential check on a local SQLite file only; on PostgreSQL, which many
// machines share, it is refused with the command that makes a real one,
// and a real one works.
func TestDevTokenRefusedOnPostgres(t *testing.T) {
	t.Parallel()
	c := postgresSession(t)
	if r := c.run("import", "customers", fixture, "--no-work"); r.code != exitOK {
		t.Fatalf("import --no-work: %s", r)
	}
	r := c.run("worker", "--until-done", "--worker-token", "dev")
	if r.code != exitUsage || !strings.Contains(r.stderr, "batchctl worker-token create") || strings.Contains(r.stdout, "worked") {
		t.Fatalf("worker --worker-token dev on PostgreSQL: want exit 2 and how to create a token, got %s", r)
	}
	r = c.run("worker", "--until-done")
	if r.code != exitUsage || !strings.Contains(r.stderr, "batchctl worker-token create") || strings.Contains(r.stderr, "--worker-token dev") {
		t.Fatalf("worker without a credential on PostgreSQL: want exit 2, and no offer of the development token, got %s", r)
	}
	if r := c.run("worker", "--until-done", "--worker-token", c.workerToken("pg-worker")); r.code != exitOK || !strings.Contains(r.stdout, "worked 285 rows") {
		t.Fatalf("worker with a real credential: %s", r)
	}
}

// jsonWorker is an entry of worker-token list -o json, declared here so
// that renaming a json tag breaks this test.
type jsonWorker struct {
	Name       string     `json:"name"`
	TenantIDs  []string   `json:"tenant_ids"`
	AllTenants bool       `json:"all_tenants"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// TestWorkerTokenListRevoke: list shows every credential, never its token
// or hash; revoke ends one for good.
func TestWorkerTokenListRevoke(t *testing.T) {
	t.Parallel()
	c := setup(t)
	if r := c.run("migrate"); r.code != exitOK {
		t.Fatalf("migrate: %s", r)
	}
	if r := c.run("worker-token", "list"); r.code != exitOK || !strings.Contains(r.stdout, "no worker credentials") || !strings.Contains(r.stdout, "batchctl worker-token create") {
		t.Fatalf("list of none: %s", r)
	}
	acme := c.workerToken("acme-worker", "--tenant", "acme")
	all := c.workerToken("all-worker")
	secrets := []string{acme, all, tokenHash(acme), tokenHash(all)}
	leaks := func(r result) bool {
		for _, s := range secrets {
			if strings.Contains(r.stdout+r.stderr, s) {
				return true
			}
		}
		return false
	}

	r := c.run("worker-token", "list")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != exitOK || leaks(r) || len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "acme-worker\tacme\tcreated ") || !strings.HasSuffix(lines[0], "\tactive") ||
		!strings.HasPrefix(lines[1], "all-worker\tall tenants\tcreated ") {
		t.Fatalf("list: %s", r)
	}
	var ws []jsonWorker
	c.runJSON(exitOK, &ws, "worker-token", "list", "-o", "json")
	if len(ws) != 2 || ws[0].Name != "acme-worker" || fmt.Sprint(ws[0].TenantIDs) != "[acme]" || ws[0].AllTenants ||
		ws[1].Name != "all-worker" || ws[1].TenantIDs == nil || len(ws[1].TenantIDs) != 0 || !ws[1].AllTenants ||
		ws[0].CreatedAt.IsZero() || ws[0].RevokedAt != nil {
		t.Fatalf("list -o json: %+v", ws)
	}
	if r := c.run("worker-token", "list", "-o", "json"); leaks(r) {
		t.Fatalf("list -o json shows a token or its hash: %s", r)
	}
	// A tenant named on the command line: the credentials that may work it.
	if r := c.run("worker-token", "list", "--tenant", "globex"); r.code != exitOK || strings.Contains(r.stdout, "acme-worker") || !strings.Contains(r.stdout, "all-worker") {
		t.Fatalf("list --tenant globex: %s", r)
	}

	if r := c.run("worker-token", "revoke", "acme-worker"); r.code != exitOK || r.stdout != "worker credential acme-worker revoked\n" || leaks(r) {
		t.Fatalf("revoke: %s", r)
	}
	if r := c.run("worker", "--until-done", "--worker-token", acme); r.code != exitError || !strings.Contains(r.stderr, "not valid") {
		t.Fatalf("worker with a revoked credential: %s", r)
	}
	c.runJSON(exitOK, &ws, "worker-token", "list", "-o", "json")
	if len(ws) != 2 || ws[0].RevokedAt == nil || ws[1].RevokedAt != nil {
		t.Fatalf("list after the revoke: %+v", ws)
	}
	if r := c.run("worker-token", "list"); r.code != exitOK || !strings.Contains(r.stdout, "acme-worker\tacme\tcreated ") || !strings.Contains(r.stdout, "\trevoked ") {
		t.Fatalf("list after the revoke: %s", r)
	}
	if r := c.run("worker-token", "revoke", "acme-worker"); r.code != exitOK {
		t.Fatalf("a second revoke: %s", r)
	}
	if r := c.run("worker-token", "revoke", "nobody"); r.code != exitError || !strings.Contains(r.stderr, `no worker credential named "nobody"`) || !strings.Contains(r.stderr, "batchctl worker-token list") {
		t.Fatalf("revoke of an unknown name: %s", r)
	}
	if r := c.run("worker-token"); r.code != exitUsage || !strings.Contains(r.stderr, "create, list or revoke") {
		t.Fatalf("worker-token without a subcommand: %s", r)
	}
}

func TestRevokedWorkerStopsSQLite(t *testing.T) {
	t.Parallel()
	testRevokedWorkerStops(t, setup(t))
}

func TestRevokedWorkerStopsPostgres(t *testing.T) {
	t.Parallel()
	testRevokedWorkerStops(t, postgresSession(t))
}

// blockingDownstream holds every request until its client gives up or the
// test ends, and tells when the first one came: a worker then holds a
// chunk with a row under way.
type blockingDownstream struct {
	once    sync.Once
	arrived chan struct{}
	release chan struct{}
}

func (d *blockingDownstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.once.Do(func() { close(d.arrived) })
	select {
	case <-r.Context().Done():
	case <-d.release:
	}
	http.Error(w, "stopped", http.StatusServiceUnavailable)
}

// testRevokedWorkerStops: a running worker process whose credential is
// revoked, while it holds a chunk with a row under way, stops within one
// lease: it gives its rows back (none is left processing for its lease to
// expire), says why and exits 1.
func testRevokedWorkerStops(t *testing.T, c *session) {
	if testing.Short() {
		t.Skip("runs a worker process")
	}
	const lease = 6 * time.Second
	bin := buildBatchctl(t)
	down := &blockingDownstream{arrived: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(down)
	defer srv.Close()
	defer close(down.release)
	env := append(os.Environ(), "ROWFATE_WEBHOOK_URL="+srv.URL, "DATABASE_URL=")
	imp := exec.Command(bin, "import", "customers-webhook", fixture, "--no-work", "--database", c.database)
	imp.Env = env
	if out, err := imp.CombinedOutput(); err != nil && (imp.ProcessState == nil || imp.ProcessState.ExitCode() != exitRows) {
		t.Fatalf("import: %v\n%s", err, out)
	}
	token := c.workerToken("doomed")

	w := exec.Command(bin, "worker", "--worker-token", token, "--lease", lease.String(), "--grace", "100ms", "--database", c.database)
	w.Env = env
	var out lockedBuffer
	w.Stdout, w.Stderr = &out, &out
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = w.Wait(); close(exited) }()
	t.Cleanup(func() { _ = w.Process.Kill(); <-exited })

	testenv.Receive(t, down.arrived, func() string { return "the worker's first call downstream\n" + out.String() })
	if r := c.run("worker-token", "revoke", "doomed"); r.code != exitOK {
		t.Fatalf("revoke: %s", r)
	}
	revoked := time.Now()
	testenv.Receive(t, exited, func() string { return "the revoked worker to exit\n" + out.String() })
	took := time.Since(revoked)
	t.Logf("the revoked worker exited %v after the revoke:\n%s", took, out.String())

	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.ExitCode() != exitError || !strings.Contains(out.String(), `worker "doomed" was revoked`) {
		t.Fatalf("revoked worker: want exit 1 saying why, got %v\n%s", waitErr, out.String())
	}
	if took > lease {
		t.Errorf("the revoked worker ran on for %v, more than its lease (%v)\n%s", took, lease, out.String())
	}
	var rs []jsonRow
	c.runJSON(exitOK, &rs, "rows", "1", "--state", "processing", "-o", "json")
	if len(rs) != 0 {
		t.Errorf("the revoked worker left %d rows processing, for its lease to expire: %+v", len(rs), rs)
	}
	var ws []jsonWorker
	c.runJSON(exitOK, &ws, "worker-token", "list", "-o", "json")
	if len(ws) != 1 || ws[0].RevokedAt == nil {
		t.Errorf("credentials: %+v", ws)
	}
}

// TestCredentialCheckEvery: a running worker checks its credential every
// third of its lease, the engine's default lease when none is set.
func TestCredentialCheckEvery(t *testing.T) {
	t.Parallel()
	for lease, want := range map[time.Duration]time.Duration{0: 10 * time.Second, 30 * time.Second: 10 * time.Second, 6 * time.Second: 2 * time.Second} {
		if got := credentialCheckEvery(lease); got != want {
			t.Errorf("credentialCheckEvery(%v) = %v, want %v", lease, got, want)
		}
	}
}
