package exec

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// runDir is Config.StateDir: one file per run under way, named by the
// run's token (EnvRun) and holding its worker's pid and start time. A
// worker that dies leaves its files behind; New finds them, and kills the
// processes that carry their tokens if they are still running.
//
// The parent-death signal already ends a dead worker's runs; this is for
// what it misses: a supervisor killed before its worker (its group lives
// on, orphaned), a worker killed in the instant between the fork and the
// supervisor's traps.
type runDir struct {
	dir string
	// self is this worker's line in its records: pid and start time, so
	// that a later pid reuse is not taken for this worker alive.
	self string
}

// openRunDir makes the directory if need be and checks that no other
// user can write in it: its files decide which processes New kills.
func openRunDir(dir string) (*runDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("exec: Config.StateDir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("exec: Config.StateDir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return nil, fmt.Errorf("exec: Config.StateDir %s is not a directory", dir)
	case !ok || int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("exec: Config.StateDir %s belongs to another user", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("exec: Config.StateDir %s is writable by other users (mode %v)", dir, fi.Mode().Perm())
	}
	start, _, err := procStat(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("exec: read this process's start time: %w", err)
	}
	return &runDir{dir: dir, self: strconv.Itoa(os.Getpid()) + " " + start + "\n"}, nil
}

// record writes a run's file, whole or not at all (renamed into place).
func (d *runDir) record(token string) error {
	tmp := filepath.Join(d.dir, "."+token)
	if err := os.WriteFile(tmp, []byte(d.self), 0o600); err != nil {
		return fmt.Errorf("record run: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(d.dir, token)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("record run: %w", err)
	}
	return nil
}

// remove deletes a finished run's file. A file that cannot be removed
// only costs the next New a look at a worker that is gone.
func (d *runDir) remove(token string) { _ = os.Remove(filepath.Join(d.dir, token)) }

// reap kills the processes of the recorded runs whose worker is gone, and
// removes their records.
func (d *runDir) reap(log *slog.Logger) error {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("exec: Config.StateDir: %w", err)
	}
	dead := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue // a record being written
		}
		b, err := os.ReadFile(filepath.Join(d.dir, name))
		if err != nil {
			continue // removed meanwhile: its run ended
		}
		pid, start, ok := parseRecord(b)
		if !ok || !alive(pid, start) {
			dead[name] = true
		}
	}
	if len(dead) == 0 {
		return nil
	}
	// A process may fork between a scan and its kill: scan again until a
	// scan finds nothing (a few rounds; each kills the groups it finds).
	total := 0
	for range 10 {
		killed := killRuns(dead)
		if killed == 0 {
			break
		}
		total += killed
	}
	if total > 0 {
		log.Warn("exec: killed processes left running by a worker that is gone", "processes", total, "state_dir", d.dir)
	}
	for name := range dead {
		_ = os.Remove(filepath.Join(d.dir, name))
	}
	return nil
}

// parseRecord reads a record's worker pid and start time.
func parseRecord(b []byte) (pid int, start string, ok bool) {
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, "", false
	}
	pid, err := strconv.Atoi(f[0])
	return pid, f[1], err == nil && pid > 0
}

// alive reports whether the worker pid, started at start, still runs: a
// zombie is gone, and so is a process that took its pid since.
func alive(pid int, start string) bool {
	got, state, err := procStat(pid)
	return err == nil && got == start && state != 'Z' && state != 'X'
}

// procStat returns a process's start time (in clock ticks since boot, as
// text) and state from /proc/PID/stat.
func procStat(pid int) (start string, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[19] field 22 (starttime).
	if len(f) < 20 {
		return "", 0, errors.New("malformed /proc stat")
	}
	return f[19], f[0][0], nil
}

// killRuns kills, with their process groups, the processes whose
// environment names one of the runs, and returns how many it found.
// A process that cleared its environment is not found, and a process of
// another user cannot be read nor killed.
func killRuns(runs map[string]bool) int {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self, own := os.Getpid(), syscall.Getpgrp()
	killed := 0
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !runs[runToken(env)] {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid != own && pgid > 1 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		killed++
	}
	return killed
}

// runToken returns EnvRun's value in an environment as /proc shows it
// (NUL-separated), or "".
func runToken(env []byte) string {
	prefix := []byte(EnvRun + "=")
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}
