//go:build linux

package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rowfate/rowfate/internal/testenv"
)

// These tests run the processor in a worker process of their own (the
// test binary again, see main_test.go) and kill or stop that process, as
// a machine or an operator does to a batchctl worker: a row's program,
// and what it started, must not outlive its worker, nor run past its
// deadline while its worker cannot act.

// workerEnv and workerSpec are main_test.go's WorkerEnv and WorkerSpec,
// which live in package exec_test.
const workerEnv = "ROWFATE_EXEC_TEST_WORKER"

type workerSpec struct {
	Command  []string      `json:"command"`
	Env      []string      `json:"env"`
	StateDir string        `json:"state_dir"`
	Grace    time.Duration `json:"grace"`
	Timeout  time.Duration `json:"timeout"`
}

// leftBehind is the script of these tests: it records its own pid and
// that of a grandchild it leaves in the background, then runs on.
const leftBehind = `
sleep 300 &
echo $! > "$OUT_DIR/grandchild.pid"
echo $$ > "$OUT_DIR/child.pid"
sleep 300
`

// worker is a test worker process.
type worker struct {
	cmd  *osexec.Cmd
	out  bytes.Buffer
	done chan struct{}
}

// startWorker starts a worker process running spec, and kills it (and any
// process of pids() still alive) when the test ends, failed or not.
func startWorker(t *testing.T, spec workerSpec, pids func() []int) *worker {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: osexec.Command(os.Args[0], "-test.run=^$"), done: make(chan struct{})}
	w.cmd.Env = append(os.Environ(), workerEnv+"="+string(b))
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		<-w.done
		for _, pid := range pids() {
			if pid > 0 {
				if pgid, err := syscall.Getpgid(pid); err == nil && pgid != syscall.Getpgrp() {
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
				}
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return w
}

// kill SIGKILLs the worker and waits until it is reaped.
func (w *worker) kill(t *testing.T) {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.Receive(t, w.done, func() string { return "the killed worker to be reaped" })
}

// pidFiles reads the pids a leftBehind script wrote, 0 for those not
// written yet.
func pidFiles(dir string) []int {
	var out []int
	for _, name := range []string{"child.pid", "grandchild.pid"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		out = append(out, pid)
	}
	return out
}

// TestWorkerKilledKillsGroup: a worker killed with SIGKILL (no chance to
// clean up) takes its row's program and the program's background child
// with it. They used to be re-parented to init and run on, their effect
// landing after the row had been cancelled or reconciled.
func TestWorkerKilledKillsGroup(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, leftBehind)
	w := startWorker(t, workerSpec{Command: cmd, Env: []string{"OUT_DIR=" + dir}, StateDir: t.TempDir(), Timeout: time.Hour},
		func() []int { return pidFiles(dir) })
	child := waitPID(t, filepath.Join(dir, "child.pid"))
	grandchild := waitPID(t, filepath.Join(dir, "grandchild.pid"))
	w.kill(t)
	assertGone(t, child, grandchild)
}

// TestWorkerStoppedProgramDiesAtDeadline: a worker stopped with SIGSTOP
// (a debugger, a frozen VM, a cgroup freezer) cannot kill its row's
// program at the row's deadline; the run is bounded all the same.
func TestWorkerStoppedProgramDiesAtDeadline(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, leftBehind)
	const timeout = 3 * time.Second
	w := startWorker(t, workerSpec{Command: cmd, Env: []string{"OUT_DIR=" + dir}, StateDir: t.TempDir(), Timeout: timeout, Grace: 200 * time.Millisecond},
		func() []int { return pidFiles(dir) })
	child := waitPID(t, filepath.Join(dir, "child.pid"))
	grandchild := waitPID(t, filepath.Join(dir, "grandchild.pid"))
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	assertGone(t, child, grandchild)
	t.Logf("the program died %s after its worker was stopped (row timeout %s)", time.Since(stopped), timeout)
}

// TestNewReapsLeftoverGroups: a run whose worker died and whose group
// survived it (here the group's leader was killed first, as the OOM
// killer or an operator might, so nothing acted on the worker's death) is
// killed by the next New on the same state directory, while the run of a
// worker still alive is left alone.
func TestNewReapsLeftoverGroups(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	cmd, dir := script(t, leftBehind)
	// A grace of an hour keeps the worker waiting on the program's output
	// once the leader is gone, rather than cleaning up after it.
	w := startWorker(t, workerSpec{Command: cmd, Env: []string{"OUT_DIR=" + dir}, StateDir: state, Timeout: time.Hour, Grace: time.Hour},
		func() []int { return pidFiles(dir) })
	child := waitPID(t, filepath.Join(dir, "child.pid"))
	grandchild := waitPID(t, filepath.Join(dir, "grandchild.pid"))

	// A live run of this process, in the same state directory.
	liveCmd, liveDir := script(t, leftBehind)
	live := newProcessor(t, Config[job]{Command: liveCmd, Env: []string{"OUT_DIR=" + liveDir}, StateDir: state})
	ctx, cancel := context.WithCancel(rowCtx(t.Context()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = live.Process(ctx, testRow)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	liveChild := waitPID(t, filepath.Join(liveDir, "child.pid"))
	liveGrandchild := waitPID(t, filepath.Join(liveDir, "grandchild.pid"))

	pgid, err := syscall.Getpgid(child)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, func() bool { return gone(pgid) }, func() string { return "the group's leader to die" })
	w.kill(t)
	if gone(grandchild) {
		t.Fatalf("the run died with its worker although its group leader was killed first: nothing left to reap")
	}

	newProcessor(t, Config[job]{Command: []string{"/bin/true"}, StateDir: state})
	assertGone(t, child, grandchild)
	for _, pid := range []int{liveChild, liveGrandchild} {
		if gone(pid) {
			t.Errorf("New killed process %d, of a run whose worker is alive", pid)
		}
	}
	cancel()
	testenv.Receive(t, done, func() string { return "the live run to stop" })
	assertGone(t, liveChild, liveGrandchild)
	entries, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		t.Errorf("state directory still holds %v after every run ended", names)
	}
}

// TestStateDirChecked: a state directory other users can write to would
// let them choose which processes New kills.
func TestStateDirChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config[job]{Command: []string{"/bin/true"}, StateDir: dir}); err == nil || !strings.Contains(err.Error(), "StateDir") {
		t.Errorf("New with a world-writable state directory: %v; want an error naming StateDir", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config[job]{Command: []string{"/bin/true"}, StateDir: file}); err == nil {
		t.Error("New with a file as state directory succeeded")
	}
}
