package batchctl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/server"
)

// TestServeTokenFlags: --insecure-dev and a bootstrap token exclude each
// other; sizes and hook secrets are checked before anything opens.
func TestServeTokenFlags(t *testing.T) {
	t.Setenv("ROWFATE_SERVE_TOKEN", "")
	db := t.TempDir() + "/r.db"
	if r := run(t, "serve", "--database", db, "--insecure-dev", "--token", "x"); r.code != exitUsage || !strings.Contains(r.stderr, "exclude each other") {
		t.Fatalf("serve with both: %s", r)
	}
	if r := run(t, "serve", "--database", db, "--max-upload", "lots"); r.code != exitUsage || !strings.Contains(r.stderr, "--max-upload") {
		t.Fatalf("serve with a bad size: %s", r)
	}
	if r := run(t, "serve", "--database", db, "--hook-secret", "nosecret"); r.code != exitUsage || !strings.Contains(r.stderr, "TENANT=whsec_") {
		t.Fatalf("serve with a bad hook secret: %s", r)
	}
	if r := run(t, "serve", "--database", db, "--tenant-role", "app"); r.code != exitUsage || !strings.Contains(r.stderr, "for PostgreSQL") {
		t.Fatalf("serve --tenant-role on SQLite: %s", r)
	}
	if r := run(t, "serve", "--database", db, "--workers", "-1"); r.code != exitUsage {
		t.Fatalf("serve with -1 workers: %s", r)
	}
}

var servingOn = regexp.MustCompile(`serving on (http://\S+)`)

// startServe runs `batchctl serve` as its own process and returns its URL.
// Its in-process workers get the development worker token unless the
// environment names one.
func startServe(t *testing.T, bin string, args ...string) (string, *serveLog) {
	t.Helper()
	env := []string{}
	if os.Getenv("ROWFATE_WORKER_TOKEN") == "" {
		env = append(env, "ROWFATE_WORKER_TOKEN=dev")
	}
	return startServeEnv(t, bin, env, args...)
}

// startServeEnv is startServe with variables added to the environment.
func startServeEnv(t *testing.T, bin string, env []string, args ...string) (string, *serveLog) {
	t.Helper()
	// --files: on PostgreSQL the default is ./rowfate-files, the package's
	// source folder here.
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--files", t.TempDir()}, args...)...)
	cmd.Env = append(append(os.Environ(), "DATABASE_URL="), env...)
	return serveProcess(t, cmd)
}

// serveLog is a serve process's log as it is written: a test reads it
// (when it fails) while the process may still be writing.
type serveLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *serveLog) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s + "\n")
}

// String is the log so far.
func (l *serveLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveProcess starts cmd, a batchctl serve, and returns its URL once its
// log says where it serves, and the log. The process is interrupted when
// the test ends.
func serveProcess(t *testing.T, cmd *exec.Cmd) (string, *serveLog) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	log := &serveLog{}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.line(sc.Text())
			if m := servingOn.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		return u, log
	case <-time.After(testenv.Patience(t)):
		t.Fatalf("serve did not start:\n%s", log.String())
		return "", nil
	}
}

// TestServeAcrossProcesses: a worker process writes, a separate serve
// process streams: a client subscribed at the head before the work starts
// receives the live events up to the final one, and /readyz says ready.
func TestServeAcrossProcesses(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresURL(t)
	schema := testdb.PostgresSchemaName(t)
	bin := buildBatchctl(t)
	var csv strings.Builder
	csv.WriteString("email,name,country,signup_date,amount\n")
	for i := range 5000 {
		fmt.Fprintf(&csv, "s%d@example.com,Customer %d,FR,2021-03-04,%d.50\n", i, i, i%500)
	}
	file := writeFile(t, "serve.csv", []byte(csv.String()))
	db := []string{"--database", dbURL, "--pg-schema", schema}
	imp := exec.Command(bin, append([]string{"import", "customers", file, "--no-work"}, db...)...)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	// Requests run as a tenant role under row-level security.
	role := schema + "_tenant"
	testdb.DropRoles(t, role)
	base, log := startServe(t, bin, append([]string{"--token", "tok", "--rate", "1000", "--workers", "0", "--tenant-role", role}, db...)...)
	resp, err := http.Get(base + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	resp.Body.Close()

	ws := "ws" + strings.TrimPrefix(base, "http")
	c, resp, err := websocket.DefaultDialer.Dial(ws+"/v1/batches/1/events?cursor=1", http.Header{"Authorization": {"Bearer tok"}})
	if err != nil {
		t.Fatalf("dial: %v %v\n%s", err, resp, log.String())
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience(t))
	defer cancel()
	tok := run(t, append([]string{"worker-token", "create", "serve-test", "--all-tenants"}, db...)...)
	token := strings.TrimSpace(tok.stdout)
	if tok.code != exitOK || token == "" {
		t.Fatalf("worker-token create: %s", tok)
	}
	w := exec.CommandContext(ctx, bin, append([]string{"worker", "--until-done", "--worker-token", token, "--batch", "1"}, db...)...)
	w.Env = append(os.Environ(), "DATABASE_URL=")
	workerOut := make(chan []byte, 1)
	go func() { out, _ := w.CombinedOutput(); workerOut <- out }()
	_ = c.SetReadDeadline(time.Now().Add(testenv.Patience(t)))
	var last int64 = 1
	for {
		var m server.StreamMessage
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("after seq %d: %v\nserve:\n%s\nworker:\n%s", last, err, log.String(), <-workerOut)
		}
		if m.Replay || m.Event.Seq <= last {
			t.Fatalf("message %+v after seq %d", m, last)
		}
		last = m.Event.Seq
		if m.Event.Final {
			if m.Event.Done != 5000 {
				t.Fatalf("final event: %+v", m.Event)
			}
			break
		}
	}
	<-workerOut
	if last < 3 {
		t.Fatalf("only %d events: the run was not watched live", last)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeInsecureDev: --insecure-dev serves without a token, after a
// warning that says so; SIGINT stops it cleanly.
func TestServeInsecureDev(t *testing.T) {
	t.Parallel()
	db := testdb.SQLitePath(t)
	if r := run(t, "import", "customers", "../fixtures/customers.csv", "--database", db); r.code != exitRows {
		t.Fatalf("import: %s", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, builtins, []string{"serve", "--insecure-dev", "--addr", "127.0.0.1:0", "--database", db}, strings.NewReader(""), io.Discard, &stderr)
	}()
	var base string
	testenv.Until(t, func() bool {
		if m := servingOn.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
		return base != ""
	}, func() string { return "serve to start: " + stderr.String() })
	if !strings.Contains(stderr.String(), "WARNING: --insecure-dev: no token is checked") {
		t.Fatalf("no warning: %s", stderr.String())
	}
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/v1/batches/1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	var m server.StreamMessage
	if err := c.ReadJSON(&m); err != nil || m.Event.Seq != 1 {
		t.Fatalf("first message %+v, %v", m, err)
	}
	cancel()
	if got := <-code; got != exitOK {
		t.Fatalf("serve exit %d: %s", got, stderr.String())
	}
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue // the rest of the log
		}
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("stream after stop: %v, want 1001", err)
		}
		break
	}
}

// TestServeRefusesOversizeHeaders: a request whose headers pass 64 KiB
// is answered 431 by batchctl serve's own listener before any handler
// runs, and the server goes on serving.
func TestServeRefusesOversizeHeaders(t *testing.T) {
	t.Parallel()
	bin := buildBatchctl(t)
	db := filepath.Join(t.TempDir(), "h.db")
	if r := run(t, "migrate", "--database", db); r.code != exitOK {
		t.Fatalf("migrate: %s", r)
	}
	base, log := startServe(t, bin, "--database", db, "--token", "tok", "--workers", "0")
	req, err := http.NewRequest("GET", base+"/v1/batches", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("X-Padding", strings.Repeat("a", 100<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("oversize headers: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("oversize headers: %s, want 431", resp.Status)
	}
	resp, err = http.Get(base + "/livez")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after oversize headers, livez: %v %v\n%s", resp, err, log.String())
	}
	resp.Body.Close()
}

// TestServeWorkersNeedACredential: serve with in-process workers and no
// worker token refuses to start, saying what it needs; it never serves.
func TestServeWorkersNeedACredential(t *testing.T) {
	t.Setenv("ROWFATE_WORKER_TOKEN", "")
	t.Setenv("ROWFATE_SERVE_TOKEN", "")
	db := testdb.SQLitePath(t)
	if r := run(t, "migrate", "--database", db); r.code != exitOK {
		t.Fatalf("migrate: %s", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, builtins, []string{"serve", "--addr", "127.0.0.1:0", "--database", db, "--token", "tok", "--files", t.TempDir()},
			strings.NewReader(""), io.Discard, &stderr)
	}()
	// It ends, or it serves: a serve that says where it serves has
	// started workers with no credential.
	var code int
	testenv.Until(t, func() bool {
		select {
		case code = <-done:
			return true
		default:
		}
		if servingOn.MatchString(stderr.String()) {
			cancel()
			<-done
			t.Fatalf("serve started its workers without a worker token:\n%s", stderr.String())
		}
		return false
	}, func() string { return "serve to refuse or to start: " + stderr.String() })
	if code != exitUsage || !strings.Contains(stderr.String(), "--worker-token") || !strings.Contains(stderr.String(), "ROWFATE_WORKER_TOKEN") ||
		!strings.Contains(stderr.String(), "--workers 0") {
		t.Fatalf("serve without a worker token: exit %d\n%s", code, stderr.String())
	}
	if r := run(t, "serve", "--addr", "127.0.0.1:0", "--database", db, "--token", "tok", "--worker-token", "rfw_forged"); r.code != exitError ||
		!strings.Contains(r.stderr, "not valid") || strings.Contains(r.stderr, "rfw_forged") {
		t.Fatalf("serve with a forged worker token: %s", r)
	}
}

// TestServeWorkersScoped: serve's in-process workers work only the
// tenants of their worker token. globex's batch is first in the queue, so
// a worker of every tenant would take it before acme's.
func TestServeWorkersScoped(t *testing.T) {
	t.Parallel()
	bin := buildBatchctl(t)
	c := setup(t)
	for _, tenant := range []string{"globex", "acme"} {
		if r := c.run("import", "customers", fixture, "--no-work", "--tenant", tenant); r.code != exitOK && r.code != exitRows {
			t.Fatalf("import for %s: %s", tenant, r)
		}
	}
	r := c.run("worker-token", "create", "acme-serve", "--tenant", "acme")
	token := strings.TrimSpace(r.stdout)
	if r.code != exitOK || !strings.HasPrefix(token, "rfw_") {
		t.Fatalf("worker-token create: %s", r)
	}
	_, log := startServeEnv(t, bin, []string{"ROWFATE_WORKER_TOKEN=" + token}, "--database", c.database, "--token", "tok", "--workers", "1")
	status := func(id int64, tenant string) jsonBatch {
		t.Helper()
		r := c.run("status", fmt.Sprint(id), "-o", "json", "--tenant", tenant)
		var b jsonBatch
		if err := json.Unmarshal([]byte(r.stdout), &b); err != nil {
			t.Fatalf("status %d: %v\n%s", id, err, r)
		}
		return b
	}
	testenv.Until(t, func() bool { return status(2, "acme").Status == "finished" }, func() string {
		return fmt.Sprintf("acme's batch to finish: %+v\nserve:\n%s", status(2, "acme"), log.String())
	})
	if acme := status(2, "acme"); acme.Counts["succeeded"] != 285 {
		t.Errorf("acme's batch: %+v", acme)
	}
	if globex := status(1, "globex"); globex.Status != "running" || globex.Counts["valid"] != 285 || globex.Counts["succeeded"] != 0 {
		t.Fatalf("globex's batch %+v: the workers of acme's token worked it", globex)
	}
}
