//go:build unix

package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/internal/testenv"
)

// job is the row type of the tests.
type job struct {
	Ref string `json:"ref"`
	Qty int    `json:"qty"`
}

var testRow = job{Ref: "J-1", Qty: 3}

func rowCtx(ctx context.Context) context.Context {
	return batch.ContextWithRow(ctx, batch.RowInfo{TenantID: "acme", BatchID: 7, RowNo: 12, Attempt: 2, EffectKey: "acme/7/12"})
}

// script writes a /bin/sh script into a new temporary directory and
// returns the command that runs it, and the directory. The script is run
// by sh rather than executed itself: executing a file just written races
// with forks of parallel tests that inherited its open descriptor
// (ETXTBSY).
func script(t *testing.T, body string) (command []string, dir string) {
	t.Helper()
	dir = t.TempDir()
	path := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", path}, dir
}

// newProcessor returns a Processor for cfg, recording its runs in a
// directory of the test's unless cfg names one.
func newProcessor(t *testing.T, cfg Config[job]) *Processor[job] {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// waitPID waits for a script to write a pid into file.
func waitPID(t *testing.T, file string) int {
	t.Helper()
	var pid int
	testenv.Until(t, func() bool {
		b, err := os.ReadFile(file)
		n, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		pid = n
		return err == nil && perr == nil && n > 0
	}, func() string { return "a pid in " + file })
	return pid
}

// gone reports whether a process has died. A killed grandchild is
// re-parented to init, which in some containers never reaps it, and
// kill(pid, 0) succeeds on a zombie: a zombie counts as dead.
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// assertGone waits for every pid to die, and kills and fails on any that
// does not within testenv.Patience.
func assertGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(testenv.Patience(t))
	for _, pid := range pids {
		for !gone(pid) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("process %d still alive after %s", pid, testenv.Patience(t))
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestStdinStdoutEnv(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, `
cat > "$OUT_DIR/stdin.json"
printf 'id-%s \n' "$ROWFATE_ROW"
echo "a second line is not the id"
printf '%s\n' "$ROWFATE_EFFECT_KEY" "$ROWFATE_TENANT" "$ROWFATE_BATCH" "$ROWFATE_ROW" "$ROWFATE_ATTEMPT" "$GREETING" > "$OUT_DIR/vars.txt"
env > "$OUT_DIR/env.txt"
`)
	p := newProcessor(t, Config[job]{Command: cmd, Env: []string{"OUT_DIR=" + dir, "GREETING=hello world"}})
	id, err := p.Process(rowCtx(t.Context()), testRow)
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	if id != "id-12" {
		t.Errorf("id = %q; want id-12, the first line trimmed", id)
	}

	stdin, err := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got job
	if err := json.Unmarshal(stdin, &got); err != nil || got != testRow {
		t.Errorf("stdin = %s (%v); want %+v as JSON", stdin, err, testRow)
	}

	vars, err := os.ReadFile(filepath.Join(dir, "vars.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "acme/7/12\nacme\n7\n12\n2\nhello world\n"; string(vars) != want {
		t.Errorf("variables = %q; want %q", vars, want)
	}

	env, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"PATH", "PWD", "OUT_DIR", "GREETING", EnvEffectKey, EnvTenant, EnvBatch, EnvRow, EnvAttempt, EnvRun}
	for _, line := range strings.Split(strings.TrimSpace(string(env)), "\n") {
		name, _, _ := strings.Cut(line, "=")
		if !slices.Contains(allowed, name) {
			t.Errorf("the command's environment has %s, which the worker's leaked", name)
		}
	}
}

// TestEnvNotInherited sets a variable of the worker's own (so it cannot
// run in parallel) and checks that the command sees it only when asked.
func TestEnvNotInherited(t *testing.T) {
	t.Setenv("RF_TEST_SECRET", "s3cret")
	cmd, _ := script(t, `echo "${RF_TEST_SECRET-unset}"`)
	for _, tc := range []struct {
		inherit bool
		want    string
	}{{false, "unset"}, {true, "s3cret"}} {
		p := newProcessor(t, Config[job]{Command: cmd, InheritEnv: tc.inherit})
		id, err := p.Process(rowCtx(t.Context()), testRow)
		if err != nil || id != tc.want {
			t.Errorf("InheritEnv %v: Process = %q, %v; want %q", tc.inherit, id, err, tc.want)
		}
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		body           string
		wantPermanent  bool
		wantNotApplied bool
		wantCode       int
		wantMsg        string
	}{
		{name: "65 EX_DATAERR", body: "echo 'ref J-1: unknown product' >&2; exit 65", wantPermanent: true, wantCode: 65, wantMsg: "exit status 65 (EX_DATAERR): ref J-1: unknown product"},
		{name: "64 EX_USAGE", body: "exit 64", wantPermanent: true, wantCode: 64, wantMsg: "exit status 64"},
		{name: "78 EX_CONFIG", body: "echo no config >&2; exit 78", wantPermanent: true, wantCode: 78, wantMsg: "no config"},
		{name: "75 EX_TEMPFAIL", body: "echo 'status 503' >&2; exit 75", wantNotApplied: true, wantCode: 75, wantMsg: "exit status 75 (EX_TEMPFAIL): status 503"},
		{name: "1", body: "echo 'warehouse API down' >&2; exit 1", wantCode: 1, wantMsg: "warehouse API down"},
		{name: "63", body: "exit 63", wantCode: 63, wantMsg: "exit status 63"},
		{name: "79", body: "exit 79", wantCode: 79, wantMsg: "exit status 79"},
		{name: "signal", body: "echo dying >&2; kill -9 $$", wantCode: -1, wantMsg: "signal: killed: dying"},
		{name: "stdout is not the error", body: "echo an-id; echo on stderr >&2; exit 2", wantCode: 2, wantMsg: "exit status 2: on stderr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd, _ := script(t, tc.body)
			p := newProcessor(t, Config[job]{Command: cmd})
			id, err := p.Process(rowCtx(t.Context()), testRow)
			if err == nil {
				t.Fatalf("Process = %q, nil; want an error", id)
			}
			if got := batch.IsPermanent(err); got != tc.wantPermanent {
				t.Errorf("IsPermanent = %v; want %v (err %v)", got, tc.wantPermanent, err)
			}
			if got := batch.IsNotApplied(err); got != tc.wantNotApplied {
				t.Errorf("IsNotApplied = %v; want %v (err %v)", got, tc.wantNotApplied, err)
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				t.Errorf("err %v is a context error; the program exited by itself", err)
			}
			var xerr *ExitError
			if !errors.As(err, &xerr) || xerr.Code != tc.wantCode {
				t.Fatalf("err = %v; want an *ExitError with code %d", err, tc.wantCode)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q; want it to contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestNoID(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"empty stdout":        "exit 0",
		"blank first line":    "echo '   '; echo later",
		"first line too long": "head -c 200000 /dev/zero | tr '\\0' x",
	} {
		cmd, _ := script(t, body)
		p := newProcessor(t, Config[job]{Command: cmd})
		id, err := p.Process(rowCtx(t.Context()), testRow)
		if err == nil || !batch.IsPermanent(err) {
			t.Errorf("%s: Process = %q, %v; want a permanent error", name, id, err)
		}
	}
}

// TestCancelKillsGroup: cancelling ctx (shutdown, lost lease) stops the
// script and the grandchild it left in the background, which holds the
// script's stdout open.
func TestCancelKillsGroup(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, `
sleep 300 &
echo $! > "$OUT_DIR/grandchild.pid"
echo $$ > "$OUT_DIR/child.pid"
sleep 300
`)
	p := newProcessor(t, Config[job]{Command: cmd, Env: []string{"OUT_DIR=" + dir}})
	ctx, cancel := context.WithCancel(rowCtx(t.Context()))
	defer cancel()
	type result struct {
		id  string
		err error
	}
	done := make(chan result, 1)
	go func() {
		id, err := p.Process(ctx, testRow)
		done <- result{id, err}
	}()
	grandchild := waitPID(t, filepath.Join(dir, "grandchild.pid"))
	child := waitPID(t, filepath.Join(dir, "child.pid"))

	start := time.Now()
	cancel()
	r, _ := testenv.Receive(t, done, func() string { return "Process to return after cancel" })
	if !errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded) || batch.IsPermanent(r.err) {
		t.Errorf("Process = %q, %v; want context.Canceled only", r.id, r.err)
	}
	t.Logf("Process returned %s after cancel", time.Since(start))
	assertGone(t, child, grandchild)
}

// TestGraceThenKill: a script and grandchild that ignore SIGTERM are
// killed once Grace has passed.
func TestGraceThenKill(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, `
trap '' TERM
sleep 300 &
echo $! > "$OUT_DIR/grandchild.pid"
sleep 300
`)
	p := newProcessor(t, Config[job]{Command: cmd, Env: []string{"OUT_DIR=" + dir}, Grace: 300 * time.Millisecond})
	ctx, cancel := context.WithCancel(rowCtx(t.Context()))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := p.Process(ctx, testRow)
		done <- err
	}()
	grandchild := waitPID(t, filepath.Join(dir, "grandchild.pid"))
	cancel()
	err, _ := testenv.Receive(t, done, func() string { return "Process to return after cancel, with a 300ms grace" })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v; want context.Canceled", err)
	}
	assertGone(t, grandchild)
}

// TestLeftoversKilledAfterExit: a program that exits 0 but leaves a
// background process holding its stdout still answers, and what it left
// is killed.
func TestLeftoversKilledAfterExit(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, `
sleep 300 &
echo $! > "$OUT_DIR/grandchild.pid"
echo id-1
`)
	p := newProcessor(t, Config[job]{Command: cmd, Env: []string{"OUT_DIR=" + dir}, Grace: 200 * time.Millisecond})
	id, err := p.Process(rowCtx(t.Context()), testRow)
	if err != nil || id != "id-1" {
		t.Fatalf("Process = %q, %v; want id-1", id, err)
	}
	assertGone(t, waitPID(t, filepath.Join(dir, "grandchild.pid")))
}

func TestDeadlineIsUnknown(t *testing.T) {
	t.Parallel()
	cmd, _ := script(t, "echo started >&2; sleep 300")
	p := newProcessor(t, Config[job]{Command: cmd})
	ctx, cancel := context.WithTimeout(rowCtx(t.Context()), 200*time.Millisecond)
	defer cancel()
	_, err := p.Process(ctx, testRow)
	if !errors.Is(err, context.DeadlineExceeded) || batch.IsPermanent(err) {
		t.Fatalf("err = %v; want a deadline, not permanent", err)
	}

	// A deadline that passed before the start ran nothing: retry it.
	expired, cancel2 := context.WithDeadline(rowCtx(t.Context()), time.Now().Add(-time.Second))
	defer cancel2()
	if _, err := p.Process(expired, testRow); err == nil || errors.Is(err, context.DeadlineExceeded) || batch.IsPermanent(err) {
		t.Errorf("expired before the start: err = %v; want retryable, not a deadline", err)
	}
}

func TestHugeOutputIsBounded(t *testing.T) {
	t.Parallel()
	cmd, _ := script(t, `
echo id-1
head -c 50000000 /dev/zero
head -c 50000000 /dev/zero | tr '\0' e >&2
`)
	p := newProcessor(t, Config[job]{Command: cmd})
	ctx, cancel := context.WithTimeout(rowCtx(t.Context()), 30*time.Second)
	defer cancel()
	id, err := p.Process(ctx, testRow)
	if err != nil || id != "id-1" {
		t.Fatalf("Process = %q, %v; want id-1", id, err)
	}

	cmd, _ = script(t, `head -c 50000000 /dev/zero | tr '\0' e >&2; echo last words >&2; exit 1`)
	p = newProcessor(t, Config[job]{Command: cmd})
	_, err = p.Process(ctx, testRow)
	if err == nil || len(err.Error()) > 2*maxExcerpt || !strings.HasSuffix(err.Error(), "last words") {
		t.Errorf("err = %.100q… (%d bytes); want a bounded message ending with stderr's last words", err, len(err.Error()))
	}
}

func TestBuffersAreBounded(t *testing.T) {
	t.Parallel()
	head, tail := &headBuffer{max: 10}, &tailBuffer{max: 10}
	for _, s := range []string{"0123", "456789ab", "", "cdefghijklmnopqrstuvwxyz", "ABC"} {
		for _, w := range []interface {
			Write([]byte) (int, error)
		}{head, tail} {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("Write(%q) = %d, %v; want every byte taken", s, n, err)
			}
		}
	}
	if string(head.buf) != "0123456789" || !head.dropped {
		t.Errorf("head = %q (dropped %v); want 0123456789, dropped", head.buf, head.dropped)
	}
	if string(tail.buf) != "tuvwxyzABC" {
		t.Errorf("tail = %q; want tuvwxyzABC", tail.buf)
	}
}

func TestNoRowRunsNothing(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, `touch "$OUT_DIR/ran"; echo id`)
	p := newProcessor(t, Config[job]{Command: cmd, Env: []string{"OUT_DIR=" + dir}})
	_, err := p.Process(t.Context(), testRow)
	if !errors.Is(err, ErrNoRow) || !batch.IsPermanent(err) {
		t.Errorf("err = %v; want permanent ErrNoRow", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran without a row (stat: %v)", err)
	}
}

func TestCommandFoundInPath(t *testing.T) {
	t.Parallel()
	p := newProcessor(t, Config[job]{Command: []string{"sh", "-c", `read -r line; echo "got $line"`}})
	id, err := p.Process(rowCtx(t.Context()), testRow)
	if want := `got {"ref":"J-1","qty":3}`; err != nil || id != want {
		t.Errorf("Process = %q, %v; want %q", id, err, want)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config[job]{
		"no command":      {},
		"empty program":   {Command: []string{""}},
		"unknown program": {Command: []string{"rowfate-no-such-program"}},
		"ROWFATE_ in Env": {Command: []string{"/bin/sh"}, Env: []string{"ROWFATE_ROW=1"}},
		"Env not k=v":     {Command: []string{"/bin/sh"}, Env: []string{"JUSTNAME"}},
		"missing Dir":     {Command: []string{"/bin/sh"}, Dir: "/rowfate/no/such/dir"},
		"negative Grace":  {Command: []string{"/bin/sh"}, Grace: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded; want an error", name)
		}
	}
}

// TestTimeoutWithoutDeadline: a call whose context has no deadline (a
// reconcile, a call outside the engine) is bounded by Config.Timeout, and
// its end is a deadline: the effect may have happened.
func TestTimeoutWithoutDeadline(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, `echo $$ > "$OUT_DIR/child.pid"; sleep 300`)
	p := newProcessor(t, Config[job]{Command: cmd, Env: []string{"OUT_DIR=" + dir}, Timeout: 300 * time.Millisecond, Grace: 100 * time.Millisecond})
	_, err := p.Process(rowCtx(context.WithoutCancel(t.Context())), testRow)
	if !errors.Is(err, context.DeadlineExceeded) || batch.IsPermanent(err) {
		t.Fatalf("err = %v; want a deadline, not permanent", err)
	}
	assertGone(t, waitPID(t, filepath.Join(dir, "child.pid")))
}

// TestReconcile: the reconcile program gets the row as the row's program
// does, its effect key above all, and its answer settles the row: an id
// is a success, ExitNotApplied a failure for good, anything else leaves
// the row unknown (an error that is not permanent).
func TestReconcile(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, `
cat > "$OUT_DIR/stdin.json"
printf '%s\n' "$ROWFATE_EFFECT_KEY" "$ROWFATE_TENANT" "$ROWFATE_ROW" > "$OUT_DIR/vars.txt"
case "$ANSWER" in
applied) echo "crm-$ROWFATE_ROW" ;;
not-applied) echo "no effect under $ROWFATE_EFFECT_KEY" >&2; exit 79 ;;
no-id) exit 0 ;;
usage) echo "bad setup" >&2; exit 64 ;;
down) echo "CRM unreachable" >&2; exit 1 ;;
slow) sleep 300 ;;
esac
`)
	for _, tc := range []struct {
		answer        string
		wantID        string
		wantPermanent bool
		wantMsg       string
	}{
		{answer: "applied", wantID: "crm-12"},
		{answer: "not-applied", wantPermanent: true, wantMsg: "no effect under acme/7/12"},
		{answer: "no-id", wantMsg: "no id"},
		{answer: "usage", wantMsg: "bad setup"},
		{answer: "down", wantMsg: "CRM unreachable"},
		{answer: "slow", wantMsg: "deadline"},
	} {
		p := newProcessor(t, Config[job]{Command: []string{"/bin/false"}, ReconcileCommand: cmd,
			Env: []string{"OUT_DIR=" + dir, "ANSWER=" + tc.answer}, Timeout: 500 * time.Millisecond, Grace: 100 * time.Millisecond})
		id, err := p.Reconcile(rowCtx(context.WithoutCancel(t.Context())), testRow)
		if id != tc.wantID || (err == nil) != (tc.wantMsg == "") || batch.IsPermanent(err) != tc.wantPermanent {
			t.Errorf("%s: Reconcile = %q, %v (permanent %v); want %q, permanent %v", tc.answer, id, err, batch.IsPermanent(err), tc.wantID, tc.wantPermanent)
		}
		if err != nil && !strings.Contains(err.Error(), tc.wantMsg) {
			t.Errorf("%s: err = %q; want it to contain %q", tc.answer, err, tc.wantMsg)
		}
	}
	stdin, err := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got job
	if err := json.Unmarshal(stdin, &got); err != nil || got != testRow {
		t.Errorf("stdin = %s (%v); want %+v as JSON", stdin, err, testRow)
	}
	if vars, err := os.ReadFile(filepath.Join(dir, "vars.txt")); err != nil || string(vars) != "acme/7/12\nacme\n12\n" {
		t.Errorf("variables = %q (%v); want the row's effect key, tenant and row", vars, err)
	}

	// Without a reconcile command it cannot tell: the row stays unknown.
	p := newProcessor(t, Config[job]{Command: []string{"/bin/true"}})
	if _, err := p.Reconcile(rowCtx(t.Context()), testRow); err == nil || batch.IsPermanent(err) {
		t.Errorf("Reconcile without a command: %v; want an error that is not permanent", err)
	}
	// Nor without a row.
	p = newProcessor(t, Config[job]{Command: []string{"/bin/true"}, ReconcileCommand: cmd})
	if _, err := p.Reconcile(t.Context(), testRow); err == nil || batch.IsPermanent(err) {
		t.Errorf("Reconcile without a row: %v; want an error that is not permanent", err)
	}
}
