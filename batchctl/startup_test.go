package batchctl

import (
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/internal/testdb"
)

// TestWorkerWaitsForTheDatabasePostgres: a worker started while its
// database is out of reach (restarting, failing over) waits for it and
// then works, instead of exiting; the chaos harness found a worker that
// exited because a restart cut its first migration.
func TestWorkerWaitsForTheDatabasePostgres(t *testing.T) {
	t.Parallel()
	c := postgresSession(t)
	u, err := url.Parse(c.database)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.run("import", "customers", fixture, "--no-work"); r.code != exitOK {
		t.Fatalf("import --no-work: %s", r)
	}

	// The worker's address refuses connections for a while, then
	// forwards them to the database.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	go func() {
		time.Sleep(1500 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listen again on %s: %v", addr, err)
			return
		}
		t.Cleanup(func() { l.Close() })
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", u.Host)
			if err != nil {
				in.Close()
				continue
			}
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	token := c.workerToken("late") // on the database itself, before the worker's address answers
	late := *u
	late.Host = addr
	w := &session{t: t, database: late.String()}
	start := time.Now()
	r := w.run("worker", "--until-done", "--worker-token", token, "--batch", "1")
	if r.code != exitOK || !strings.Contains(r.stderr, "database not ready; retrying") {
		t.Fatalf("worker started before its database: want exit 0 after retries, got %s", r)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("the worker finished in %s, before the database was reachable", took)
	}
	if r := c.run("status", "1"); r.code != exitRows || !strings.Contains(r.stdout, "finished") {
		t.Errorf("status after the worker: %s", r)
	}
}

// TestWorkerFailsFastOnAMissingDatabase: an error a retry cannot clear (a
// database that does not exist) ends the worker at once.
func TestWorkerFailsFastOnAMissingDatabase(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_database_here"
	// "At once" is told by what it printed (no retry), not by a time. The
	// token is never checked: there is no database to check it in.
	r := run(t, "worker", "--until-done", "--worker-token", "rfw_never_checked", "--database", u.String())
	if r.code != exitError || !strings.Contains(r.stderr, "no_such_database_here") || strings.Contains(r.stderr, "retrying") {
		t.Fatalf("worker on a missing database: want exit 1 at once, got %s", r)
	}
}
