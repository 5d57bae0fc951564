package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The floor: what storing every row's outcome costs at the least. Rowfate
// adds to COPY that it keeps one outcome row per input row (batch_rows);
// the floor contenders load the valid rows and those outcome rows with the
// bulk loader of the store (psql \copy, the sqlite3 shell's .import) and
// nothing else, from files written before the clock starts.

// floorChunkSize is rowfate's default chunk size (batch/kind.go): the
// outcome rows carry the chunk number rowfate would give them.
const floorChunkSize = 1000

// floorFiles are the floor contenders' inputs, written by writeFloorFiles.
type floorFiles struct {
	// pgOutcomes is the outcome rows as CSV for COPY into batch_rows on
	// PostgreSQL (pgOutcomeColumns, with a header).
	pgOutcomes string
	// sqliteOutcomes is the outcome rows as CSV with every column of
	// batch_rows on SQLite in table order (sqliteBatchRows), with a header:
	// the sqlite3 shell's .import fills a table's columns in order and
	// has no column list.
	sqliteOutcomes string
	// sqliteCustomers is the valid rows with every column of the SQLite
	// customers table (sqliteCustomersTable) in order, ids included, with
	// a header, for the same reason.
	sqliteCustomers string
	outcomes        int // outcome rows: the raw file's data rows
	customers       int // valid rows
}

// pgOutcomeColumns are the batch_rows columns the PostgreSQL floor
// copies: the ones rowfate's COPY at ingest names (store/postgres
// InsertRows), next_attempt_at left out because it is NULL for every final
// outcome.
const pgOutcomeColumns = "batch_id, row_no, tenant_id, chunk_no, state, payload, errors, result_id, attempts, updated_at, key_digest"

// floorError is one entry of an invalid outcome row's errors, shaped like
// rows.FieldError's JSON.
type floorError struct {
	Row     int64  `json:"row"`
	Column  string `json:"column"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeFloorFiles reads the raw file and writes the floor's inputs into
// dir: one outcome row per data row (batch 1, tenant 'default', rowfate's
// row and chunk numbers; 'succeeded' with a result id, one attempt and the
// key digest for a valid row, 'invalid' with an errors array otherwise;
// the cells as payload, encoded as rowfate's store encodes them) and the
// valid rows in the SQLite customers table's shape. A row is valid as in
// filterValid (validRow, then the first row of each email), so that the
// valid rows here are those of the valid-rows file. The outcome rows'
// updated_at is now.
func writeFloorFiles(raw, dir string, now time.Time) (floorFiles, error) {
	ff := floorFiles{
		pgOutcomes:      filepath.Join(dir, "outcomes-pg.csv"),
		sqliteOutcomes:  filepath.Join(dir, "outcomes-sqlite.csv"),
		sqliteCustomers: filepath.Join(dir, "customers-valid-sqlite.csv"),
	}
	in, err := os.Open(raw)
	if err != nil {
		return ff, err
	}
	defer in.Close()
	r := csv.NewReader(bufio.NewReaderSize(in, 1<<16))
	r.FieldsPerRecord = -1
	if _, err := r.Read(); err != nil { // the header, checked by filterValid
		return ff, fmt.Errorf("read %s: %w", raw, err)
	}
	var ws []*csvFile
	open := func(path string, header ...string) (*csvFile, error) {
		f, err := createCSV(path)
		if err != nil {
			return nil, err
		}
		ws = append(ws, f)
		return f, f.w.Write(header)
	}
	defer func() {
		for _, f := range ws {
			f.f.Close()
		}
	}()
	pg, err := open(ff.pgOutcomes, strings.Split(pgOutcomeColumns, ", ")...)
	if err != nil {
		return ff, err
	}
	lite, err := open(ff.sqliteOutcomes, "batch_id", "row_no", "tenant_id", "chunk_no", "state", "payload", "errors", "result_id",
		"attempts", "next_attempt_at", "effect_key", "updated_at", "reviewed", "key_digest")
	if err != nil {
		return ff, err
	}
	cust, err := open(ff.sqliteCustomers, "id", "tenant_id", "email", "name", "country", "signup_date", "amount", "updated_at", "tier", "tier_runs")
	if err != nil {
		return ff, err
	}
	pgNow := now.UTC().Format("2006-01-02 15:04:05.999999Z07:00")
	liteNow := strconv.FormatInt(now.UnixMilli(), 10)
	first := map[string]int64{} // lower-cased email -> its first valid row
	var n, valid int64
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ff, fmt.Errorf("read %s: %w", raw, err)
		}
		// Rows are numbered as a spreadsheet shows them, the header being
		// row 1 (rows.Record.Row); the generated file has no blank lines.
		rowNo := n + 2
		chunk := strconv.FormatInt(n/floorChunkSize, 10)
		n++
		payload, err := json.Marshal(rec) // storesql.EncodeValues
		if err != nil {
			return ff, err
		}
		var errs floorError
		col := rowProblem(rec)
		if col == "" {
			key := strings.ToLower(rec[0])
			if f, dup := first[key]; dup {
				errs = floorError{Row: rowNo, Column: "email", Code: "duplicate_key", Message: fmt.Sprintf("same email as row %d", f)}
			} else {
				first[key] = rowNo
			}
		} else {
			errs = floorError{Row: rowNo, Column: col, Code: "invalid", Message: "fails the customers kind's validation"}
		}
		// An empty field is NULL to COPY's CSV; the sqlite3 shell's .import
		// has no NULL and writes ''.
		row, empty := strconv.FormatInt(rowNo, 10), ""
		if errs.Code == "" {
			valid++
			id := strconv.FormatInt(valid, 10)
			sum := sha256.Sum256([]byte(strings.ToLower(rec[0])))
			digest := hex.EncodeToString(sum[:16])
			// bytea's hex input; CSV does not treat the backslash as an
			// escape. SQLite gets the hex text: .import writes text only.
			err = errors.Join(
				pg.w.Write([]string{"1", row, "default", chunk, "succeeded", string(payload), empty, id, "1", pgNow, `\x` + digest}),
				lite.w.Write([]string{"1", row, "default", chunk, "succeeded", string(payload), empty, id, "1", empty, empty, liteNow, "0", digest}),
				cust.w.Write([]string{id, "default", rec[0], rec[1], rec[2], rec[3], rec[4], pgNow, "", "0"}))
		} else {
			e, jerr := json.Marshal([]floorError{errs})
			if jerr != nil {
				return ff, jerr
			}
			err = errors.Join(
				pg.w.Write([]string{"1", row, "default", chunk, "invalid", string(payload), string(e), empty, "0", pgNow, empty}),
				lite.w.Write([]string{"1", row, "default", chunk, "invalid", string(payload), string(e), empty, "0", empty, empty, liteNow, "0", empty}))
		}
		if err != nil {
			return ff, err
		}
	}
	for _, f := range ws {
		if err := f.close(); err != nil {
			return ff, err
		}
	}
	ff.outcomes, ff.customers = int(n), int(valid)
	return ff, nil
}

// csvFile is a buffered CSV file being written.
type csvFile struct {
	f  *os.File
	bw *bufio.Writer
	w  *csv.Writer
}

func createCSV(path string) (*csvFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	return &csvFile{f: f, bw: bw, w: csv.NewWriter(bw)}, nil
}

// close flushes and closes the file.
func (c *csvFile) close() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return err
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	return c.f.Close()
}

// createBatchRows creates a table built like rowfate's batch_rows on
// PostgreSQL after every migration (migrations/postgres: 0001 the table
// and its primary key, 0004 reviewed, 0005 key_digest and fillfactor 45,
// 0006 row-level security, which the owner bypasses as rowfate's ingest
// COPY does), with no other index: the migrations leave none.
func (e *env) createBatchRows(ctx context.Context, schema string) error {
	_, err := e.admin.Exec(ctx, `CREATE TABLE `+schema+`.batch_rows (
		batch_id        bigint      NOT NULL,
		row_no          bigint      NOT NULL,
		tenant_id       text        NOT NULL,
		chunk_no        bigint      NOT NULL,
		state           text        NOT NULL,
		payload         jsonb       NOT NULL,
		errors          jsonb,
		result_id       text,
		attempts        integer     NOT NULL DEFAULT 0,
		next_attempt_at timestamptz,
		effect_key      text,
		updated_at      timestamptz NOT NULL DEFAULT now(),
		reviewed        boolean     NOT NULL DEFAULT false,
		key_digest      bytea,
		PRIMARY KEY (batch_id, row_no)
	) WITH (fillfactor = 45);
	ALTER TABLE `+schema+`.batch_rows ENABLE ROW LEVEL SECURITY;
	CREATE POLICY tenant_isolation ON `+schema+`.batch_rows USING (tenant_id = current_setting('app.tenant_id', true))`)
	if err != nil {
		return fmt.Errorf("create batch_rows: %w", err)
	}
	return nil
}

// floorCopies are the two \copy commands of the PostgreSQL floor: the
// valid rows into the customers table (as the copy contender) and the
// outcome rows into batch_rows.
func (e *env) floorCopies(schema string) (customers, outcomes string) {
	customers = fmt.Sprintf(`\copy %s.customers (email, name, country, signup_date, amount) FROM '%s' WITH (FORMAT csv, HEADER true)`,
		schema, sqlQuote(e.valid))
	outcomes = fmt.Sprintf(`\copy %s.batch_rows (%s) FROM '%s' WITH (FORMAT csv, HEADER true)`,
		schema, pgOutcomeColumns, sqlQuote(e.floor.pgOutcomes))
	return customers, outcomes
}

// sqlQuote doubles the single quotes of a path for a quoted literal.
func sqlQuote(s string) string { return strings.ReplaceAll(s, "'", "''") }

// runFloorPG loads the valid rows and the outcome rows in one transaction
// of one psql session: what storing every row's outcome costs on top of
// COPY, at the least.
func runFloorPG(ctx context.Context, e *env, s *slot) (outcome, error) {
	if err := e.createFloorTables(ctx, s.schema); err != nil {
		return outcome{}, err
	}
	customers, outcomes := e.floorCopies(s.schema)
	script := filepath.Join(s.dir, "floor.sql")
	if err := os.WriteFile(script, []byte("BEGIN;\n"+customers+"\n"+outcomes+"\nCOMMIT;\n"), 0o644); err != nil {
		return outcome{}, err
	}
	_, wall, rss, err := measure(ctx, s.dir, nil, command{name: "psql", args: []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", e.cfg.dbURL, "-f", script}})
	if err != nil {
		return outcome{}, err
	}
	return e.checkFloorPG(ctx, s.schema, outcome{wall: wall, rssKiB: rss})
}

// runFloorPGParallel runs the floor's two COPYs in two psql sessions at
// once, each its own transaction; the wall time is until both are done.
func runFloorPGParallel(ctx context.Context, e *env, s *slot) (outcome, error) {
	if err := e.createFloorTables(ctx, s.schema); err != nil {
		return outcome{}, err
	}
	customers, outcomes := e.floorCopies(s.schema)
	psql := func(cmd string) command {
		return command{name: "psql", args: []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", e.cfg.dbURL, "-c", cmd}}
	}
	_, wall, rss, err := measure(ctx, s.dir, nil, psql(customers), psql(outcomes))
	if err != nil {
		return outcome{}, err
	}
	return e.checkFloorPG(ctx, s.schema, outcome{wall: wall, rssKiB: rss})
}

// createFloorTables creates the customers table of the copy contender and
// the batch_rows table in schema.
func (e *env) createFloorTables(ctx context.Context, schema string) error {
	if err := e.createTarget(ctx, schema); err != nil {
		return err
	}
	return e.createBatchRows(ctx, schema)
}

// checkFloorPG counts the rows a PostgreSQL floor run loaded, and fails
// the run unless it loaded every valid row and one outcome row per input
// row.
func (e *env) checkFloorPG(ctx context.Context, schema string, o outcome) (outcome, error) {
	if err := e.admin.QueryRow(ctx, "SELECT (SELECT count(*) FROM "+schema+".customers), (SELECT count(*) FROM "+schema+".batch_rows)").
		Scan(&o.loaded, &o.outcomes); err != nil {
		return o, fmt.Errorf("count floor rows: %w", err)
	}
	return o, e.checkFloorCounts(o)
}

// checkFloorCounts fails a floor run that did not load every valid row and
// one outcome row per input row.
func (e *env) checkFloorCounts(o outcome) error {
	if o.loaded != int64(e.floor.customers) || o.outcomes != int64(e.floor.outcomes) {
		return fmt.Errorf("loaded %d customers and %d outcome rows, want %d and %d", o.loaded, o.outcomes, e.floor.customers, e.floor.outcomes)
	}
	return nil
}

// sqliteCustomersTable is rowfate's customers table on SQLite as
// processors/customers creates it, with what ensureTier adds (the tier
// columns, an index on tenant_id and id), as the PostgreSQL contenders'
// table has them (createTarget).
const sqliteCustomersTable = `CREATE TABLE customers (
	id INTEGER PRIMARY KEY,
	tenant_id TEXT NOT NULL DEFAULT 'default',
	email TEXT NOT NULL,
	name TEXT NOT NULL,
	country TEXT,
	signup_date TEXT NOT NULL,
	amount TEXT,
	updated_at TEXT NOT NULL,
	tier TEXT,
	tier_runs INTEGER NOT NULL DEFAULT 0,
	UNIQUE (tenant_id, email));
CREATE INDEX customers_tenant_id ON customers (tenant_id, id)`

// sqliteBatchRows is rowfate's batch_rows on SQLite after every migration
// (migrations/sqlite: 0001 the table, 0004 reviewed, 0005 key_digest); the
// migrations leave no index on it but its primary key.
const sqliteBatchRows = `CREATE TABLE batch_rows (
	batch_id        INTEGER NOT NULL,
	row_no          INTEGER NOT NULL,
	tenant_id       TEXT    NOT NULL,
	chunk_no        INTEGER NOT NULL,
	state           TEXT    NOT NULL,
	payload         TEXT    NOT NULL,
	errors          TEXT,
	result_id       TEXT,
	attempts        INTEGER NOT NULL DEFAULT 0,
	next_attempt_at INTEGER,
	effect_key      TEXT,
	updated_at      INTEGER NOT NULL,
	reviewed        INTEGER NOT NULL DEFAULT 0,
	key_digest      BLOB,
	PRIMARY KEY (batch_id, row_no)
) WITHOUT ROWID`

// runFloorSQLite imports the valid rows and the outcome rows with the
// sqlite3 shell's .import in one transaction, into a new database file in
// WAL mode with rowfate's SQLite store's synchronous setting (store/sqlite
// Open: NORMAL). The tables are created, and the file switched to WAL,
// before the clock starts; synchronous is the connection's, so the
// measured invocation sets it.
func runFloorSQLite(ctx context.Context, e *env, s *slot) (outcome, error) {
	db := filepath.Join(s.dir, "floor.db")
	setup := exec.CommandContext(ctx, "sqlite3", "-bail", db, "PRAGMA journal_mode=WAL", sqliteCustomersTable, sqliteBatchRows)
	if out, err := setup.CombinedOutput(); err != nil {
		return outcome{}, fmt.Errorf("sqlite3 setup: %w: %s", err, lastLine(string(out)))
	}
	procs, wall, rss, err := measure(ctx, s.dir, nil, command{name: "sqlite3", args: []string{"-bail", db,
		"PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON", "BEGIN",
		".import --csv --skip 1 " + shellQuote(e.floor.sqliteCustomers) + " customers",
		".import --csv --skip 1 " + shellQuote(e.floor.sqliteOutcomes) + " batch_rows",
		"COMMIT"}})
	if err != nil {
		return outcome{}, err
	}
	// .import reports a row it could not insert and goes on.
	if msg := strings.TrimSpace(procs[0].stderr); msg != "" {
		return outcome{}, fmt.Errorf("sqlite3 .import: %s", lastLine(msg))
	}
	o := outcome{wall: wall, rssKiB: rss}
	out, err := exec.CommandContext(ctx, "sqlite3", db, "SELECT (SELECT count(*) FROM customers) || ' ' || (SELECT count(*) FROM batch_rows)").Output()
	if err != nil {
		return o, fmt.Errorf("count floor rows: %w", err)
	}
	if _, err := fmt.Sscanf(string(out), "%d %d", &o.loaded, &o.outcomes); err != nil {
		return o, fmt.Errorf("count floor rows %q: %w", out, err)
	}
	return o, e.checkFloorCounts(o)
}

// shellQuote quotes an argument of a sqlite3 shell dot-command.
func shellQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
