// Package sqlite is the embedded batch store: one SQLite file, written by
// one process, through modernc.org/sqlite (pure Go, no cgo).
//
// The database runs in WAL mode with a busy timeout, and the store holds a
// single connection. SQLite allows one writer at a time anyway; funnelling
// every statement through one connection turns lock contention into
// queueing inside database/sql instead of SQLITE_BUSY errors, and makes
// every transaction (BEGIN IMMEDIATE) as exclusive as the chunk-row lock that
// PostgreSQL takes explicitly.
//
// The statements are shared with the PostgreSQL store (store/internal/storesql);
// this package supplies the connection and the two bulk writes (bulk.go): a
// prepared INSERT of 100 rows for ingest, and one UPDATE per flush from a
// JSON array of its outcomes. Times are integer milliseconds from SQLite's
// own clock.
//
// ARCHITECTURE.md at the repository root describes the data model.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/migrations"
	"github.com/rowfate/rowfate/store/internal/storesql"
)

var _ driver.Store = (*Store)(nil)

// now is the database clock in integer milliseconds.
const now = "CAST(unixepoch('subsec') * 1000 AS INTEGER)"

// Store is the batch store on one SQLite file.
type Store struct {
	*storesql.Store
	db   *sql.DB
	path string
}

// Open opens (creating if needed) the SQLite database at path and returns a
// store on it. It does not migrate; call Migrate.
func Open(path string) (*Store, error) {
	q := url.Values{}
	// The driver runs busy_timeout before the other pragmas, whatever
	// their order here.
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	return open(path, q)
}

// OpenReadOnly opens an existing database for reading only: it creates no
// file and no table, and works on a file the process may not write (a
// read-only file or folder), for commands that only look.
func OpenReadOnly(path string) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, unwrapPath(err))
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	s, err := open(path, q)
	if err == nil {
		return s, nil
	}
	// A WAL database needs its -shm file to be read; in a folder the
	// process cannot write, and with no writer running, the file is
	// read as immutable instead (no locks, no -shm).
	q.Set("immutable", "1")
	if s, err2 := open(path, q); err2 == nil {
		return s, nil
	}
	return nil, err
}

func open(path string, q url.Values) (*Store, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	if err := ping(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, explain(path, err))
	}
	s := &Store{db: db, path: path}
	s.Store = storesql.New(s.driver(), dialect())
	return s, nil
}

// busyTimeout is how long a statement waits for another process's lock
// before it fails with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// ping opens the store's connection, which runs the pragmas. SQLite does
// not wait for a lock when it switches a file to WAL: while another
// process holds the file's write lock, as one does while it switches the
// same new file, the switch fails at once with SQLITE_BUSY whatever the
// busy timeout (two batchctl commands started together on a new database
// did). So a busy open is tried again, for as long as the busy timeout.
func ping(db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	for delay := 2 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		err := db.Ping()
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().Add(delay).After(deadline) {
			return err
		}
		time.Sleep(delay)
	}
}

// explain turns SQLite's terse open errors into what a user can act on.
func explain(path string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CANTOPEN {
		dir := "."
		for i := len(path) - 1; i >= 0; i-- {
			if path[i] == '/' {
				dir = path[:i+1]
				break
			}
		}
		if st, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("cannot create the database: folder %s: %w", dir, unwrapPath(serr))
		} else if !st.IsDir() {
			return fmt.Errorf("cannot create the database: %s is not a folder", dir)
		}
		return fmt.Errorf("cannot open or create the database file (is folder %s writable?): %w", dir, err)
	}
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOTADB {
		return fmt.Errorf("not a SQLite database: %w", err)
	}
	return err
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func dialect() *storesql.Dialect {
	return &storesql.Dialect{
		Engine: migrations.SQLite,
		// One writer at a time: an import of a large file must not hold the
		// write lock while it reads the whole file (other processes gave up
		// after the busy timeout).
		IngestTxRows: 5000,
		MarkInTwo:    true,
		Now:          now,
		Ms:           "1",
		TimeType:     "INTEGER",
		InText: func(col, param string) string {
			return fmt.Sprintf("(%s IS NULL OR %s IN (SELECT value FROM json_each(%s)))", param, col, param)
		},
		ListArg: func(ss []string) any {
			if ss == nil {
				return nil
			}
			b, _ := json.Marshal(ss) // a []string always marshals
			return string(b)
		},
		TextIn: func(col, param string) string {
			return fmt.Sprintf("%s IN (SELECT value FROM json_each(%s))", col, param)
		},
		InInt: func(col, param string) string {
			return fmt.Sprintf("%s IN (SELECT value FROM json_each(%s))", col, param)
		},
		IntListArg: func(ns []int64) any {
			b, _ := json.Marshal(ns) // an []int64 always marshals
			return string(b)
		},
		InBytes: func(col, param string) string {
			return fmt.Sprintf("%s IN (SELECT unhex(value) FROM json_each(%s))", col, param)
		},
		BytesListArg: func(bs [][]byte) any {
			hexes := make([]string, len(bs))
			for i, b := range bs {
				hexes[i] = hex.EncodeToString(b)
			}
			b, _ := json.Marshal(hexes) // a []string always marshals
			return string(b)
		},
		JSONRecords: func(param string, cols map[string]string) string {
			return fmt.Sprintf("(SELECT %s FROM json_each(%s)) AS u", storesql.ColumnList(cols, func(name, _ string) string {
				return fmt.Sprintf("json_extract(value, '$.%s') AS %s", name, name)
			}), param)
		},
		WithRecords: func(param string, cols map[string]string) string {
			return fmt.Sprintf("WITH u AS MATERIALIZED (SELECT %s FROM json_each(%s))", storesql.ColumnList(cols, func(name, _ string) string {
				return fmt.Sprintf("json_extract(value, '$.%s') AS %s", name, name)
			}), param)
		},
		JSONError: func(rowExpr string, text ...string) string {
			// json_patch with an object drops its NULL members.
			members := "'row', " + rowExpr
			for i := 0; i+1 < len(text); i += 2 {
				members += fmt.Sprintf(", '%s', %s", text[i], text[i+1])
			}
			return "json_array(json_patch('{}', json_object(" + members + ")))"
		},
		HasTable: func(table string) (string, []any) {
			return `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1)`, []any{table}
		},
	}
}

// DB returns the underlying database, for processors that write to the same
// file (the demo customers table).
func (s *Store) DB() *sql.DB { return s.db }

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// interpretError maps SQLite errors to the engine's sentinels.
func interpretError(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CONSTRAINT:
			return fmt.Errorf("%w: %v", driver.ErrConflict, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			// Another process held the file's write lock past the busy
			// timeout: a retry may get it.
			return fmt.Errorf("%w: %w", driver.ErrTransient, err)
		}
	}
	return err
}

type liteDriver struct{ s *Store }

func (s *Store) driver() storesql.Driver { return liteDriver{s} }

// sqlQuerier is what *sql.DB and *sql.Tx have in common.
type sqlQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// querier is a connection or a transaction; stmts, in a transaction, keeps
// the statements prepared in it for the next call, until it ends.
type querier struct {
	q     sqlQuerier
	stmts *txStmts
}

// txStmts are a transaction's prepared statements. database/sql keeps
// every statement a transaction prepared until the transaction ends, even
// closed: an ingest in one transaction that prepared its insert once per
// group of rows held 12 KiB more per group (3 MiB at a million rows), and
// parsed the statement as many times.
type txStmts struct {
	insert *sql.Stmt // insertRowsSQL(insertGroup)
	// byQuery are the long statements of the transaction's other callers
	// (a kind's processor upserting a hundred rows a statement), prepared
	// on first use: parsing a 700-parameter INSERT again for each group
	// cost a twentieth of an import.
	byQuery map[string]*sql.Stmt
}

// Statements are kept for the transaction when they have at least
// preparedArgs arguments (statements generated for many rows at once,
// which a caller repeats), at most maxPrepared of them.
const (
	preparedArgs = 64
	maxPrepared  = 16
)

// prepared returns the transaction's prepared statement for query, or
// nil when it is not one to keep.
func (t *txStmts) prepared(ctx context.Context, q sqlQuerier, query string, nargs int) (*sql.Stmt, error) {
	if t == nil || nargs < preparedArgs {
		return nil, nil
	}
	if st, ok := t.byQuery[query]; ok {
		return st, nil
	}
	if len(t.byQuery) >= maxPrepared {
		return nil, nil
	}
	st, err := q.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if t.byQuery == nil {
		t.byQuery = make(map[string]*sql.Stmt)
	}
	t.byQuery[query] = st
	return st, nil
}

// close closes the statements; the transaction has ended.
func (t *txStmts) close() {
	if t.insert != nil {
		t.insert.Close()
	}
	for _, st := range t.byQuery {
		st.Close()
	}
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	st, err := q.stmts.prepared(ctx, q.q, query, len(args))
	if err != nil {
		return 0, interpretError(err)
	}
	var res sql.Result
	if st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = q.q.ExecContext(ctx, query, args...)
	}
	if err != nil {
		return 0, interpretError(err)
	}
	return res.RowsAffected()
}

func (q querier) Query(ctx context.Context, query string, args ...any) (storesql.Rows, error) {
	st, err := q.stmts.prepared(ctx, q.q, query, len(args))
	if err != nil {
		return nil, interpretError(err)
	}
	var rs *sql.Rows
	if st != nil {
		rs, err = st.QueryContext(ctx, args...)
	} else {
		rs, err = q.q.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, interpretError(err)
	}
	return rs, nil
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) storesql.Row {
	return liteRow{q.q.QueryRowContext(ctx, query, args...)}
}

type liteRow struct{ *sql.Row }

func (r liteRow) Scan(dest ...any) error { return interpretError(r.Row.Scan(dest...)) }

func (d liteDriver) DB() storesql.Querier { return querier{q: d.s.db} }

func (d liteDriver) InTx(ctx context.Context, f func(storesql.Querier) error) error {
	tx, err := d.s.db.BeginTx(ctx, nil)
	if err != nil {
		return interpretError(err)
	}
	stmts := &txStmts{}
	defer stmts.close()
	if err := f(querier{q: tx, stmts: stmts}); err != nil {
		_ = tx.Rollback()
		return interpretError(err)
	}
	return interpretError(tx.Commit())
}

// Notify has no one to tell: SQLite is one process's, and an engine wakes
// its own workers.
func (liteDriver) Notify(context.Context, storesql.Querier) error { return nil }

// NotifyEvent has no other process to tell either: the shared store tells
// this process's subscribers once the transaction commits.
func (liteDriver) NotifyEvent(context.Context, storesql.Querier, int64, int64) error { return nil }

// LockMigrations has nothing to do: the transaction is BEGIN IMMEDIATE,
// which already excludes every other writer of the file.
func (liteDriver) LockMigrations(context.Context, storesql.Querier) error { return nil }

// ValuesPartition does nothing: a SQLite store keeps its rows' values in
// batch_rows (migrations/sqlite/0014_batch_values.sql says why).
func (liteDriver) ValuesPartition(context.Context, int64) error { return nil }

// ValuesApart is false: every batch's values are in batch_rows.
func (liteDriver) ValuesApart(context.Context, storesql.Querier, int64) (bool, error) {
	return false, nil
}

// ValuesTruncate is never called: no batch's values are apart.
func (liteDriver) ValuesTruncate(context.Context, storesql.Querier, int64, string) error {
	return errors.New("sqlite: no batch keeps its values apart")
}
