package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/store/sqlite"
)

// openChildEnv names the database file a child process of
// TestTwoProcessesOpenANewFile opens and migrates.
const openChildEnv = "ROWFATE_SQLITE_OPEN_CHILD"

// TestMain lets the test binary be the child process of
// TestTwoProcessesOpenANewFile: with openChildEnv set it opens and migrates
// that file, says so, and exits.
func TestMain(m *testing.M) {
	if path := os.Getenv(openChildEnv); path != "" {
		fmt.Println("opening")
		s, err := sqlite.Open(path)
		if err == nil {
			err = s.Migrate(context.Background())
			s.Close()
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("migrated")
		os.Exit(0)
	}
	testenv.VerifyNoLeaks(m)
}

// TestTwoProcessesOpenANewFile: two processes open and migrate the same new
// file while a third holds its lock, as two batchctl commands started
// together on a new database do. Switching a file to WAL needs that lock;
// both must wait for it (the busy timeout is set before the journal mode),
// not fail at once with SQLITE_BUSY.
func TestTwoProcessesOpenANewFile(t *testing.T) {
	t.Parallel()
	path := testdb.SQLitePath(t)
	// The lock holder: a plain connection in the default rollback mode,
	// inside a write transaction (the reserved lock), as another process
	// holds it while it switches the same new file to WAL. SQLite does
	// not wait for that lock when it changes the journal mode, whatever
	// the busy timeout: a second process got SQLITE_BUSY at once.
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	for _, q := range []string{`CREATE TABLE holder (x INTEGER)`, `BEGIN IMMEDIATE`} {
		if _, err := holder.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	type child struct {
		cmd  *exec.Cmd
		out  *strings.Builder
		done chan error
	}
	started := make(chan struct{}, 2)
	children := make([]*child, 2)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), openChildEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := &child{cmd: cmd, out: &strings.Builder{}, done: make(chan error, 1)}
		children[i] = c
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				fmt.Fprintln(c.out, sc.Text())
				if sc.Text() == "opening" {
					started <- struct{}{}
				}
			}
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w\nstdout:\n%s\nstderr:\n%s", err, c.out, &stderr)
			}
			c.done <- err
		}()
	}
	t.Cleanup(func() {
		for _, c := range children {
			_ = c.cmd.Process.Kill()
		}
	})
	// Both children are about to open the file while it is locked; give
	// them a moment to run into the lock before it goes. (A child that
	// gets there late only makes this test weaker, never wrong.)
	for range children {
		<-started
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := holder.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	for i, c := range children {
		if err := <-c.done; err != nil {
			t.Errorf("process %d: %v", i+1, err)
		}
	}
	s, err := sqlite.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, err := s.SchemaStatus(ctx); err != nil || st.Current != st.Latest {
		t.Errorf("after both processes: schema %+v, %v; want it migrated", st, err)
	}
}
