package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The inputs a contender can read.
const (
	inputRaw     = "raw CSV"   // the generated file, invalid rows included
	inputValid   = "valid CSV" // its valid rows only
	inputRawXLSX = "raw XLSX"  // the generated rows as XLSX
	// inputFloor is the valid rows and one outcome row per raw row (see
	// writeFloorFiles).
	inputFloor = "valid CSV + outcome rows"
)

// The stores a contender writes to.
const (
	storePostgres = "PostgreSQL"
	storeSQLite   = "SQLite"
)

// contender is one way of loading the customers file.
type contender struct {
	name  string // for -only and -skip
	label string // for the table
	input string
	store string
	// floor marks the floor contenders: the least storing every row's
	// outcome costs on their store, which the others are compared with.
	floor bool
	// base marks a rowfate contender run with -batchctl-base's binary.
	base bool
	// limit is how many data rows of the input one run reads (0: all);
	// the time is then scaled to the whole input.
	limit func(*config) int
	// unavailable says why the contender cannot run here, or "".
	unavailable func(*env) string
	run         func(context.Context, *env, *slot) (outcome, error)
}

// contenders lists every contender in the order each round runs them.
func contenders(cfg *config) []*contender {
	full := func(*config) int { return 0 }
	always := func(*env) string { return "" }
	needPgloader := func(*env) string {
		if _, err := exec.LookPath("pgloader"); err != nil {
			return "pgloader is not installed (apt-get install -y pgloader)"
		}
		return ""
	}
	needBatchctl := func(e *env) string {
		if e.buildErr != nil {
			return e.buildErr.Error()
		}
		return ""
	}
	needSQLite3 := func(*env) string {
		if _, err := exec.LookPath("sqlite3"); err != nil {
			return "the sqlite3 shell is not installed (apt-get install -y sqlite3)"
		}
		return ""
	}
	list := []*contender{
		{name: "copy", label: `psql \copy`, input: inputValid, store: storePostgres, limit: full, unavailable: always, run: runCopy},
		{name: "floor-pg", label: `floor: rows + outcomes, psql \copy, 1 transaction`, input: inputFloor, store: storePostgres,
			floor: true, limit: full, unavailable: always, run: runFloorPG},
		{name: "floor-pg-parallel", label: `floor: rows + outcomes, psql \copy, 2 parallel sessions`, input: inputFloor, store: storePostgres,
			limit: full, unavailable: always, run: runFloorPGParallel},
		{name: "sqlite3-import", label: "floor: rows + outcomes, sqlite3 .import, 1 transaction", input: inputFloor, store: storeSQLite,
			floor: true, limit: full, unavailable: needSQLite3, run: runFloorSQLite},
		{name: "pgloader-valid", label: "pgloader", input: inputValid, store: storePostgres, limit: full, unavailable: needPgloader, run: runPgloader},
		{name: "pgloader-raw", label: "pgloader (bad rows to reject file)", input: inputRaw, store: storePostgres,
			limit: func(c *config) int { return c.pgloaderRaw }, unavailable: needPgloader, run: runPgloader},
		{name: "naive", label: "naive loop (INSERT … ON CONFLICT per row)", input: inputValid, store: storePostgres,
			limit: func(c *config) int { return c.naiveRows }, unavailable: always, run: runNaive},
		{name: "river", label: fmt.Sprintf("River (job per row, %d workers)", cfg.riverWorkers), input: inputValid, store: storePostgres,
			limit: func(c *config) int { return c.riverRows }, unavailable: always, run: runRiver},
		{name: "rowfate-pg", label: "rowfate, 1 process", input: inputRaw, store: storePostgres, limit: full, unavailable: needBatchctl, run: runRowfate},
		{name: "rowfate-pg-2w", label: "rowfate, ingest + 2 worker processes", input: inputRaw, store: storePostgres, limit: full, unavailable: needBatchctl, run: runRowfateWorkers},
		{name: "rowfate-sqlite", label: "rowfate", input: inputRaw, store: storeSQLite, limit: full, unavailable: needBatchctl, run: runRowfate},
		{name: "rowfate-pg-xlsx", label: "rowfate, 1 process", input: inputRawXLSX, store: storePostgres, limit: full, unavailable: needBatchctl, run: runRowfate},
		{name: "rowfate-sqlite-xlsx", label: "rowfate", input: inputRawXLSX, store: storeSQLite, limit: full, unavailable: needBatchctl, run: runRowfate},
	}
	if cfg.batchctlBase == "" {
		return list
	}
	// Each rowfate contender's twin on the base binary runs right after
	// it, so that both see the machine in the same state.
	needBase := func(*env) string {
		if _, err := os.Stat(cfg.batchctlBase); err != nil {
			return fmt.Sprintf("-batchctl-base: %v", err)
		}
		return ""
	}
	var out []*contender
	for _, c := range list {
		out = append(out, c)
		if strings.HasPrefix(c.name, "rowfate") {
			b := *c
			b.name, b.label, b.base, b.unavailable = c.name+"@base", c.label+" (base binary)", true, needBase
			out = append(out, &b)
		}
	}
	return out
}

// runCopy loads the file into the target table with psql's \copy: one
// COPY, no upsert, no validation beyond the column types.
func runCopy(ctx context.Context, e *env, s *slot) (outcome, error) {
	if err := e.createTarget(ctx, s.schema); err != nil {
		return outcome{}, err
	}
	cmd := fmt.Sprintf(`\copy %s.customers (email, name, country, signup_date, amount) FROM '%s' WITH (FORMAT csv, HEADER true)`,
		s.schema, sqlQuote(s.file))
	_, wall, rss, err := measure(ctx, s.dir, nil, command{name: "psql", args: []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", e.cfg.dbURL, "-c", cmd}})
	return outcome{wall: wall, rssKiB: rss}, err
}

// runPgloader loads the file with pgloader into the target table. Rows
// PostgreSQL rejects go to pgloader's reject file (under the run's
// directory); pgloader then retries the rest of their batch.
func runPgloader(ctx context.Context, e *env, s *slot) (outcome, error) {
	if err := e.createTarget(ctx, s.schema); err != nil {
		return outcome{}, err
	}
	target, err := pgloaderURL(e.cfg.dbURL)
	if err != nil {
		return outcome{}, err
	}
	load := fmt.Sprintf(`LOAD CSV
     FROM '%s' (email, name, country, signup_date, amount)
     INTO %s
     TARGET TABLE %s.customers
     TARGET COLUMNS (email, name, country, signup_date, amount)
     WITH skip header = 1, fields optionally enclosed by '"', fields escaped by double-quote, fields terminated by ','
;
`, s.file, target, s.schema)
	cmdFile := filepath.Join(s.dir, "load.pgl")
	if err := os.WriteFile(cmdFile, []byte(load), 0o644); err != nil {
		return outcome{}, err
	}
	_, wall, rss, err := measure(ctx, s.dir, nil, command{name: "pgloader", args: []string{"--root-dir", filepath.Join(s.dir, "pgloader"), cmdFile}})
	return outcome{wall: wall, rssKiB: rss}, err
}

// pgloaderURL is the database URL in the form pgloader parses: it knows
// sslmode among the query parameters, and no others.
func pgloaderURL(dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	q := url.Values{}
	if m := u.Query().Get("sslmode"); m != "" {
		q.Set("sslmode", m)
	}
	u.Scheme, u.RawQuery = "postgresql", q.Encode()
	return u.String(), nil
}

// runNaive runs the naive loop in a child process (see child.go).
func runNaive(ctx context.Context, e *env, s *slot) (outcome, error) {
	if err := e.createTarget(ctx, s.schema); err != nil {
		return outcome{}, err
	}
	_, wall, rss, err := measure(ctx, s.dir, nil, command{name: e.self, args: []string{"child", "naive", "-file", s.file, "-database", e.withSearchPath(s.schema)}})
	return outcome{wall: wall, rssKiB: rss}, err
}

// runRiver runs River in a child process (see child.go). The wall time is
// the child's own, from the start of the insert to the last job done.
func runRiver(ctx context.Context, e *env, s *slot) (outcome, error) {
	if err := e.createTarget(ctx, s.schema); err != nil {
		return outcome{}, err
	}
	procs, _, rss, err := measure(ctx, s.dir, nil, command{name: e.self, args: []string{"child", "river",
		"-file", s.file, "-database", e.withSearchPath(s.schema), "-schema", s.schema,
		"-workers", strconv.Itoa(e.cfg.riverWorkers), "-conns", strconv.Itoa(e.cfg.riverConns)}})
	if err != nil {
		return outcome{}, err
	}
	var res childResult
	if err := json.Unmarshal([]byte(lastLine(procs[0].stdout)), &res); err != nil {
		return outcome{}, fmt.Errorf("river child output %q: %w", lastLine(procs[0].stdout), err)
	}
	return outcome{wall: time.Duration(res.Seconds * float64(time.Second)), rssKiB: rss}, nil
}

// database is the --database value of a rowfate run.
func (e *env) database(s *slot) string {
	if s.store == storeSQLite {
		return filepath.Join(s.dir, "rowfate.db")
	}
	return e.withSearchPath(s.schema)
}

// runRowfate imports the file with batchctl in one process: ingest,
// validation, and the valid rows upserted by the in-process workers.
// Exit status 3 (some rows invalid) is success here.
func runRowfate(ctx context.Context, e *env, s *slot) (outcome, error) {
	procs, wall, rss, err := measure(ctx, s.dir, []int{3}, command{name: s.batchctl,
		args: []string{"import", "customers", s.file, "--database", e.database(s), "-o", "json"}})
	if err != nil {
		return outcome{}, err
	}
	o := outcome{wall: wall, rssKiB: rss}
	valid, invalid, err := importCounts(procs[0].stdout)
	if err != nil {
		return o, err
	}
	e.noteRowfateCounts(valid, invalid)
	o.loaded = valid
	return o, nil
}

// runRowfateWorkers imports the file with --no-work and then runs two
// batchctl worker processes until done. The worker credential is made
// before the clock starts, for the default tenant (the one the import
// uses); a credential made with --all-tenants worked no rows in this
// version, so the harness does not use one.
func runRowfateWorkers(ctx context.Context, e *env, s *slot) (outcome, error) {
	db := e.database(s)
	tok, err := exec.CommandContext(ctx, s.batchctl, "worker-token", "create", "bench", "--database", db).Output()
	if err != nil {
		return outcome{}, fmt.Errorf("worker-token create: %w", err)
	}
	token := "ROWFATE_WORKER_TOKEN=" + strings.TrimSpace(string(tok))
	_, ingest, rss1, err := measure(ctx, s.dir, []int{3}, command{name: s.batchctl,
		args: []string{"import", "customers", s.file, "--no-work", "--database", db, "-o", "json"}})
	if err != nil {
		return outcome{}, err
	}
	worker := command{name: s.batchctl, args: []string{"worker", "--until-done", "--database", db}, env: []string{token}}
	_, work, rss2, err := measure(ctx, s.dir, nil, worker, worker)
	return outcome{wall: ingest + work, rssKiB: max(rss1, rss2)}, err
}

// importCounts reads the succeeded and invalid counts from the JSON that
// batchctl import -o json prints.
func importCounts(stdout string) (succeeded, invalid int64, err error) {
	var b struct {
		Counts map[string]int64 `json:"counts"`
	}
	if err := json.Unmarshal([]byte(stdout), &b); err != nil {
		return 0, 0, fmt.Errorf("batchctl import -o json: %w", err)
	}
	return b.Counts["succeeded"], b.Counts["invalid"], nil
}

// noteRowfateCounts keeps the first counts rowfate reported for the raw
// file.
func (e *env) noteRowfateCounts(valid, invalid int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rowfateValid < 0 {
		e.rowfateValid, e.rowfateInvalid = valid, invalid
	}
}
