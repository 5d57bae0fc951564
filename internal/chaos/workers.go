package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// worker is one `batchctl worker` process the supervisor runs, kills,
// stops and restarts.
type worker struct {
	name, tenant, token string

	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool // SIGSTOPped
	// expected is set before the supervisor kills the process: its exit
	// is a fault, not a failure.
	expected bool
	log      *bytes.Buffer
	exited   chan struct{}
}

// pool runs the workers.
type pool struct {
	bin, url string
	env      []string
	args     []string
	workers  []*worker

	mu sync.Mutex
	// unexpected are the exits no fault explains.
	unexpected []string
	// crashes counts the failpoint crashes (a fault of their own);
	// leasesLost the workers' own stale work refused ("lease lost" in
	// their logs: a renewal or a flush found a newer claim).
	crashes    int
	leasesLost int
	done       bool
}

func (p *pool) start(w *worker) error {
	cmd := exec.Command(p.bin, append([]string{"worker", "--worker-token", w.token, "--database", p.url}, p.args...)...)
	cmd.Env = append(os.Environ(), p.env...)
	w.mu.Lock()
	w.log = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = w.log, w.log
	w.cmd, w.stopped, w.expected = cmd, false, false
	w.exited = make(chan struct{})
	w.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start worker %s: %w", w.name, err)
	}
	go p.wait(w, cmd)
	return nil
}

// wait notes how a worker ended and starts it again, unless the run is
// over.
func (p *pool) wait(w *worker, cmd *exec.Cmd) {
	err := cmd.Wait()
	w.mu.Lock()
	expected := w.expected
	log := w.log.String()
	close(w.exited)
	w.mu.Unlock()
	p.mu.Lock()
	done := p.done
	p.leasesLost += strings.Count(log, "lease lost")
	switch {
	case expected, done:
	case strings.Contains(log, "failpoint "):
		p.crashes++
	default:
		p.unexpected = append(p.unexpected, fmt.Sprintf("worker %s exited on its own (%v):\n%s", w.name, err, tail(log, 2000)))
	}
	p.mu.Unlock()
	if done {
		return
	}
	time.Sleep(300 * time.Millisecond)
	if err := p.start(w); err != nil {
		p.mu.Lock()
		p.unexpected = append(p.unexpected, err.Error())
		p.mu.Unlock()
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// signal sends sig to a worker; kill marks the exit expected.
func (p *pool) signal(w *worker, sig syscall.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil || w.cmd.Process == nil {
		return
	}
	switch sig {
	case syscall.SIGKILL:
		w.expected = true
		if w.stopped {
			_ = w.cmd.Process.Signal(syscall.SIGCONT)
		}
	case syscall.SIGSTOP:
		w.stopped = true
	case syscall.SIGCONT:
		w.stopped = false
	}
	_ = w.cmd.Process.Signal(sig)
}

// stopAll ends the run: every worker is continued, then asked to stop
// (SIGTERM) and waited for.
func (p *pool) stopAll() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
	for _, w := range p.workers {
		w.mu.Lock()
		if w.cmd != nil && w.cmd.Process != nil {
			_ = w.cmd.Process.Signal(syscall.SIGCONT)
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
		}
		exited := w.exited
		w.mu.Unlock()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			p.signal(w, syscall.SIGKILL)
			<-exited
		}
	}
}
