package main

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// orphanGrace is how long a customers-exec row's program may outlive its
// worker: the run's supervisor gets the parent-death signal when its
// worker dies and kills the run's process group at once (processors/exec,
// "Stopping"); a restarted worker also kills what dead workers' runs left
// (its state directory). Two seconds is that, on a loaded machine.
const orphanGrace = 2 * time.Second

// orphanWatch looks at the exec runs' pid records (each run of the
// harness's exec program writes one, execchild.go) for programs that
// outlive their worker.
type orphanWatch struct {
	dir string

	mu sync.Mutex
	// flagged are the orphans already reported, by pid.
	flagged map[int]bool
	// firstSeen is when a record whose worker the harness does not know
	// (the worker died before the program looked) was first seen.
	firstSeen map[int]time.Time
	// atDeath are programs seen alive after their worker died, within the
	// grace: what the check had to look at.
	atDeath map[int]bool
}

// execRun is one pid record.
type execRun struct {
	pid, worker int
	start       string
	key         string
	batch, row  string
}

func newOrphanWatch(dir string) *orphanWatch {
	return &orphanWatch{dir: dir, flagged: map[int]bool{}, firstSeen: map[int]time.Time{}, atDeath: map[int]bool{}}
}

// watchOrphans scans the records four times a second until ctx is done.
func (h *harness) watchOrphans(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.orphans.scan(h.work, false, h.rep)
		}
	}
}

// live reads the records of the programs that run now; the records of
// those that ended are removed.
func (o *orphanWatch) live() []execRun {
	entries, err := os.ReadDir(o.dir)
	if err != nil {
		return nil
	}
	var out []execRun
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(o.dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 3 {
			continue
		}
		r := execRun{start: f[1]}
		r.pid, _ = strconv.Atoi(f[0])
		r.worker, _ = strconv.Atoi(f[2])
		if len(f) >= 6 {
			r.key, r.batch, r.row = f[3], f[4], f[5]
		}
		start, state, _, err := procStat(r.pid)
		if err != nil || start != r.start || state == 'Z' || state == 'X' {
			os.Remove(path) // it ended (a zombie has); a reused pid is another process
			continue
		}
		out = append(out, r)
	}
	return out
}

// scan reports every program alive longer than orphanGrace after its
// worker ended; final (the workers are all stopped) reports every one
// still alive and kills it, so that nothing of the run is left behind.
func (o *orphanWatch) scan(p *pool, final bool, rep *report) {
	now := time.Now()
	for _, r := range o.live() {
		alive, diedAt, known := p.alive(r.worker)
		if alive && !final {
			continue
		}
		o.mu.Lock()
		if !known {
			if _, ok := o.firstSeen[r.pid]; !ok {
				o.firstSeen[r.pid] = now
			}
			diedAt = o.firstSeen[r.pid]
		}
		late := now.Sub(diedAt)
		orphan := !o.flagged[r.pid] && (final || late >= orphanGrace)
		if !orphan && !o.flagged[r.pid] {
			o.atDeath[r.pid] = true
		}
		if orphan {
			o.flagged[r.pid] = true
		}
		o.mu.Unlock()
		if !orphan {
			continue
		}
		if final {
			rep.violate("exec_orphan", "exec program pid %d (key %s, batch %s row %s) was still running after the run settled and every worker stopped (its worker was pid %d)",
				r.pid, r.key, r.batch, r.row, r.worker)
			if pgid, err := syscall.Getpgid(r.pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(r.pid, syscall.SIGKILL)
			continue
		}
		rep.violate("exec_orphan", "exec program pid %d (key %s, batch %s row %s) still ran %.1f s after its worker pid %d ended",
			r.pid, r.key, r.batch, r.row, late.Seconds(), r.worker)
	}
}

// workersWithRuns lists the workers that have a row's program running
// now, by name: kill_worker prefers them, so that the orphan check has
// runs to look at.
func (h *harness) workersWithRuns() []*worker {
	seen := map[*worker]bool{}
	var out []*worker
	for _, r := range h.orphans.live() {
		if w := h.work.workerOf(r.worker); w != nil && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// coverage returns how many programs were seen running after their
// worker had died and ended within the grace (what the check looked at
// and passed), and the orphans found.
func (o *orphanWatch) coverage() (atDeath, orphans int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for pid := range o.atDeath {
		if !o.flagged[pid] {
			atDeath++
		}
	}
	return atDeath, len(o.flagged)
}
