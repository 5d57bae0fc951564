package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// execChild is the program of the customers-exec kind in a chaos run (the
// harness's own binary, run with -exec-child URL by the exec processor):
// it posts the row on stdin to the downstream with the row's effect key
// as Idempotency-Key (and the row's ROWFATE_ variables as the X-Rowfate-
// headers httpcall sends) and prints the id it answers. A call the
// downstream turned away (503) exits 75, EX_TEMPFAIL: retried, nothing
// applied. Any other failed call exits 1, retried too, but its effect may
// have happened (its own 10 s timeout may end a call the downstream
// applied). A worker killed mid-call leaves the key claimed, as a
// webhook's would.
//
// With -exec-pids DIR it first records itself there (pid, start time,
// its worker's pid), so that the harness can tell a row's program that
// outlived its worker (exec.go promises that none does). One run in 150
// waits 0.5–1.5 s before it posts, as a slow program would: a kill then
// has a run under way to leave behind.
func execChild(url, pidDir, sabotage string) int {
	key := os.Getenv("ROWFATE_EFFECT_KEY")
	row, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	if err != nil || key == "" || !json.Valid(row) {
		fmt.Fprintf(os.Stderr, "exec child: key %q, row %q: %v\n", key, row, err)
		return 65 // EX_DATAERR: the processor broke the protocol
	}
	worker := 0
	if _, _, sup, err := procStat(os.Getppid()); err == nil {
		worker = sup // the supervisor's parent
	}
	if pidDir != "" {
		rec, err := recordSelf(pidDir, worker)
		if err != nil {
			fmt.Fprintln(os.Stderr, "exec child:", err)
			return 71 // EX_OSERR
		}
		defer os.Remove(rec)
	}
	h := fnv.New32a()
	h.Write([]byte(key + os.Getenv("ROWFATE_ATTEMPT")))
	if n := h.Sum32(); n%150 == 0 {
		time.Sleep(500*time.Millisecond + time.Duration(n/150%1000)*time.Millisecond)
	}
	if strings.Contains(sabotage, "exec-orphan") && h.Sum32()%200 == 1 {
		// Leave a process behind that escapes the run's process group,
		// as a careless program would: the orphan check must see it.
		self, _ := os.Executable()
		cmd := exec.Command(self, "-exec-linger", "20s", "-exec-worker", strconv.Itoa(worker), "-exec-pids", pidDir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		_ = cmd.Start()
	}
	if strings.Contains(sabotage, "exec-key-drift") && h.Sum32()%100 == 2 {
		// Send the row once more under a key of its own, as a program
		// that retries with a fresh key would: two effects for one row.
		_, _ = post(url, key+"-again", row)
	}
	id, code := post(url, key, row)
	if code != 0 {
		return code
	}
	fmt.Println(id)
	return 0
}

// post sends the row to the downstream under key and returns the id it
// answered, or the exit code of a failure.
func post(url, key string, row []byte) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(row))
	if err != nil {
		fmt.Fprintln(os.Stderr, "exec child:", err)
		return "", 64
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	for _, v := range []string{"Tenant", "Batch", "Row", "Attempt"} {
		req.Header.Set("X-Rowfate-"+v, os.Getenv("ROWFATE_"+strings.ToUpper(v)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "exec child:", err)
		return "", 1
	}
	defer resp.Body.Close()
	var body struct {
		ID string `json:"id"`
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		// Turned away: nothing was applied (EX_TEMPFAIL, exec.ExitTempFail).
		fmt.Fprintln(os.Stderr, "exec child: downstream answered", resp.Status)
		return "", 75
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil || body.ID == "" {
		fmt.Fprintln(os.Stderr, "exec child: downstream answered", resp.Status)
		return "", 1
	}
	return body.ID, 0
}

// execLinger is the process -sabotage exec-orphan leaves behind: it
// records itself like a row's program and sleeps.
func execLinger(d time.Duration, pidDir string, worker int) int {
	if pidDir != "" {
		rec, err := recordSelf(pidDir, worker)
		if err == nil {
			defer os.Remove(rec)
		}
	}
	time.Sleep(d)
	return 0
}

// recordSelf writes DIR/<pid> with "pid start worker_pid key batch row":
// this process, its start time (so that a reused pid is not taken for
// it), and its worker.
func recordSelf(dir string, worker int) (string, error) {
	pid := os.Getpid()
	start, _, _, err := procStat(pid)
	if err != nil {
		return "", err
	}
	line := fmt.Sprintf("%d %s %d %s %s %s\n", pid, start, worker, os.Getenv("ROWFATE_EFFECT_KEY"), os.Getenv("ROWFATE_BATCH"), os.Getenv("ROWFATE_ROW"))
	path := filepath.Join(dir, strconv.Itoa(pid))
	tmp := filepath.Join(dir, "."+strconv.Itoa(pid))
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// procStat reads a process's start time (clock ticks since boot, as text),
// state and parent from /proc/PID/stat.
func procStat(pid int) (start string, state byte, ppid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields
	// start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22
	// (starttime).
	if len(f) < 20 {
		return "", 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[19], f[0][0], ppid, nil
}
