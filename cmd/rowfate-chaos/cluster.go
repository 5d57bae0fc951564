package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// cluster is a throwaway PostgreSQL cluster the harness can crash and
// restart: initdb into a temporary folder, pg_ctl on a free port.
type cluster struct {
	bindir string
	dir    string
	port   int
	// user runs the server when the harness runs as root, which
	// PostgreSQL refuses.
	user string
}

// findBindir returns the newest installed PostgreSQL's bin folder.
func findBindir() (string, error) {
	if d := os.Getenv("PG_BINDIR"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, pg_ctl): install postgresql, or set PG_BINDIR")
}

func version(dir string) int {
	for _, part := range strings.Split(dir, "/") {
		if n, err := strconv.Atoi(part); err == nil {
			return n
		}
	}
	return 0
}

// freePort asks the kernel for a free port on loopback.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// newCluster creates and starts a cluster.
func newCluster(ctx context.Context) (*cluster, error) {
	bindir, err := findBindir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rowfate-chaos-pg-*")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &cluster{bindir: bindir, dir: dir, port: port}
	if os.Geteuid() == 0 {
		c.user = "rowfate-pg"
		if _, err := user.Lookup(c.user); err != nil {
			if out, err := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
				"--shell", "/usr/sbin/nologin", "--user-group", c.user).CombinedOutput(); err != nil {
				if _, lerr := user.Lookup(c.user); lerr != nil {
					return nil, fmt.Errorf("create user %s: %v: %s", c.user, err, out)
				}
			}
		}
		if out, err := exec.Command("chown", c.user, dir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown %s: %v: %s", dir, err, out)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := c.run(ctx, "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	// fsync=off and full_page_writes=off lose data only when the machine
	// crashes, which no fault does. synchronous_commit stays on: with it
	// off, a commit is acknowledged before its WAL is written, and the
	// pg_restart fault (a crash of the server) lost a batch whose import
	// had been told it committed (TestRestartKeepsAcknowledgedCommits).
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off "+
		"-c full_page_writes=off -c max_connections=300 -c log_min_messages=log -c track_commit_timestamp=on", port, dir)
	if out, err := c.run(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	return c, nil
}

// run runs a server tool, as the cluster's user when there is one.
func (c *cluster) run(ctx context.Context, tool string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bindir, tool)
	var cmd *exec.Cmd
	if c.user != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.user, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// url is the connection string of a database on the cluster's own port.
func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// restart crashes the server (immediate shutdown: no checkpoint, recovery
// from the WAL at start) and starts it again.
func (c *cluster) restart(ctx context.Context) error {
	// -l: the server's output goes to the log, not to pg_ctl's output,
	// which the harness reads to its end.
	out, err := c.run(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "log"), "-m", "immediate", "-w", "-t", "60", "restart")
	if err != nil {
		return fmt.Errorf("pg_ctl restart: %v: %s", err, out)
	}
	return nil
}

// log is the server's log file.
func (c *cluster) log() string { return filepath.Join(c.dir, "log") }

// stop stops the server and removes its folder.
func (c *cluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = c.run(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop")
	os.RemoveAll(c.dir)
}
