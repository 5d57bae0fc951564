package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	// log is this process's output (the file under the run's folder has
	// every process's, one after the other).
	log    *bytes.Buffer
	file   *os.File
	exited chan struct{}
}

// pool runs the workers.
type pool struct {
	bin, url string
	env      []string
	args     []string
	workers  []*worker
	// logDir holds a log file per worker, every process it ran in turn.
	logDir string

	mu sync.Mutex
	// unexpected are the exits no fault explains.
	unexpected []string
	// crashes counts the failpoint crashes (a fault of their own);
	// leasesLost the workers' own stale work refused ("lease lost" in
	// their logs: a renewal or a flush found a newer claim).
	crashes    int
	leasesLost int
	done       bool
	// live maps the pid of each running worker process to its worker;
	// deaths are the exits of every process that ran, by pid.
	live   map[int]*worker
	deaths map[int]death
	// stops are the SIGSTOPs, each a lease that may end unflushed.
	stops []death
}

// death is how a worker process ended.
type death struct {
	worker *worker
	at     time.Time
	// started is when the process started: the deaths of a tenant's
	// workers during a batch's life bound its unknown rows.
	started time.Time
}

func (p *pool) start(w *worker) error {
	// Started under the pool's lock, so that stopAll either sees the
	// process or stops it from starting.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return nil
	}
	cmd := exec.Command(p.bin, append([]string{"worker", "--worker-token", w.token, "--database", p.url, "-v"}, p.args...)...)
	cmd.Env = append(os.Environ(), p.env...)
	f, err := os.OpenFile(filepath.Join(p.logDir, w.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log, w.file = &bytes.Buffer{}, f
	out := io.MultiWriter(w.log, f)
	cmd.Stdout, cmd.Stderr = out, out
	w.cmd, w.stopped, w.expected = cmd, false, false
	w.exited = make(chan struct{})
	if err := cmd.Start(); err != nil {
		f.Close()
		close(w.exited)
		w.cmd = nil
		return fmt.Errorf("start worker %s: %w", w.name, err)
	}
	started := time.Now()
	fmt.Fprintf(f, "=== chaos: %s started pid %d at %s\n", w.name, cmd.Process.Pid, started.Format(time.RFC3339Nano))
	p.live[cmd.Process.Pid] = w
	go p.wait(w, cmd, started)
	return nil
}

// wait notes how a worker ended and starts it again, unless the run is
// over.
func (p *pool) wait(w *worker, cmd *exec.Cmd, started time.Time) {
	err := cmd.Wait()
	at := time.Now()
	w.mu.Lock()
	expected := w.expected
	log := w.log.String()
	fmt.Fprintf(w.file, "=== chaos: pid %d exited at %s: %v\n", cmd.Process.Pid, at.Format(time.RFC3339Nano), err)
	w.file.Close()
	close(w.exited)
	w.mu.Unlock()
	p.mu.Lock()
	delete(p.live, cmd.Process.Pid)
	p.deaths[cmd.Process.Pid] = death{worker: w, at: at, started: started}
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
	if sig == syscall.SIGSTOP {
		// Not under w.mu: start takes the pool's lock, then the worker's.
		p.mu.Lock()
		p.stops = append(p.stops, death{worker: w, at: time.Now()})
		p.mu.Unlock()
	}
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

// alive reports whether pid is a worker process that runs, and when a
// process that ran ended.
func (p *pool) alive(pid int) (bool, time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.live[pid]; ok {
		return true, time.Time{}, true
	}
	d, ok := p.deaths[pid]
	return false, d.at, ok
}

// workerOf returns the worker whose process pid is, running.
func (p *pool) workerOf(pid int) *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live[pid]
}

// lostLeases counts the ends of a tenant's worker processes between
// from and to, however they died (a kill, a failpoint), and the stops of
// its workers then: each may have left a lease with claimed effect keys
// that nobody flushed.
func (p *pool) lostLeases(tenant string, from, to time.Time) (deaths, stops int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.deaths {
		if d.worker.tenant == tenant && !d.at.Before(from) && !d.at.After(to) {
			deaths++
		}
	}
	for _, d := range p.stops {
		if d.worker.tenant == tenant && !d.at.Before(from) && !d.at.After(to) {
			stops++
		}
	}
	return deaths, stops
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
