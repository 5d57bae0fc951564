package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// env is what every contender's run shares: the inputs, the binaries and
// an administrative connection to PostgreSQL.
type env struct {
	cfg      *config
	tmp      string
	self     string // this program, re-executed for the child contenders
	batchctl string
	buildErr error // why batchctl could not be built, if it could not
	admin    *pgx.Conn

	raw, valid, rawXLSX string // the inputs
	rawRows, validRows  int
	floor               floorFiles // the floor contenders' inputs

	// rowfateValid and rowfateInvalid are rowfate's own counts of the raw
	// file, from its first import that reported them.
	rowfateValid, rowfateInvalid int64

	mu    sync.Mutex
	heads map[string]string // "file:n" -> a file with the first n data rows
}

func newEnv(ctx context.Context, cfg *config, tmp string) (*env, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	admin, err := pgx.Connect(ctx, cfg.dbURL)
	if err != nil {
		return nil, fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	return &env{cfg: cfg, tmp: tmp, self: self, admin: admin, heads: map[string]string{}, rowfateValid: -1}, nil
}

func (e *env) close() { e.admin.Close(context.Background()) }

// prepare generates the inputs the selected contenders need and builds
// batchctl.
func (e *env) prepare(ctx context.Context, selected []*contender) error {
	needs := map[string]bool{}
	for _, c := range selected {
		needs[c.input] = true
		if strings.HasPrefix(c.name, "rowfate") {
			needs["batchctl"] = true
		}
	}
	e.raw = filepath.Join(e.tmp, "customers.csv")
	step(fmt.Sprintf("generating %d rows with bench/gencustomers", e.cfg.rows))
	f, err := os.Create(e.raw)
	if err != nil {
		return err
	}
	gen := exec.CommandContext(ctx, "go", "run", "./bench/gencustomers", "-n", fmt.Sprint(e.cfg.rows))
	gen.Dir, gen.Stdout, gen.Stderr = e.cfg.repo, f, os.Stderr
	err = gen.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bench/gencustomers: %w", err)
	}
	e.rawRows = e.cfg.rows

	e.valid = filepath.Join(e.tmp, "customers-valid.csv")
	kept, err := filterValid(e.raw, e.valid)
	if err != nil {
		return fmt.Errorf("valid-rows file: %w", err)
	}
	e.validRows = kept
	step(fmt.Sprintf("valid-rows filter kept %d of %d rows", kept, e.rawRows))

	if needs[inputFloor] {
		step("writing the floor's outcome rows")
		ff, err := writeFloorFiles(e.raw, e.tmp, time.Now())
		if err != nil {
			return fmt.Errorf("floor files: %w", err)
		}
		if ff.customers != e.validRows {
			return fmt.Errorf("floor files: %d valid rows, the valid-rows file %d", ff.customers, e.validRows)
		}
		e.floor = ff
	}
	if needs[inputRawXLSX] {
		e.rawXLSX = filepath.Join(e.tmp, "customers.xlsx")
		step("writing the same rows as XLSX")
		if err := csvToXLSX(e.raw, e.rawXLSX); err != nil {
			return fmt.Errorf("xlsx file: %w", err)
		}
	}
	if needs["batchctl"] {
		if e.cfg.batchctlPath != "" {
			e.batchctl = e.cfg.batchctlPath
		} else {
			e.batchctl = filepath.Join(e.tmp, "batchctl")
			step("building batchctl")
			b := exec.CommandContext(ctx, "go", "build", "-o", e.batchctl, "./cmd/batchctl")
			b.Dir = e.cfg.repo
			if out, err := b.CombinedOutput(); err != nil {
				e.buildErr = fmt.Errorf("go build ./cmd/batchctl: %v: %s", err, lastLine(string(out)))
				step(e.buildErr.Error())
			}
		}
	}
	return nil
}

// step reports progress on stderr.
func step(s string) { fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), s) }

// input returns the file a contender reads and its data rows, cut to the
// contender's first limit rows when limit is smaller than the whole file.
func (e *env) input(ctx context.Context, kind string, limit int) (string, int, error) {
	file, n := e.raw, e.rawRows
	switch kind {
	case inputValid:
		file, n = e.valid, e.validRows
	case inputRawXLSX:
		file = e.rawXLSX
	}
	if limit <= 0 || limit >= n {
		return file, n, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := fmt.Sprintf("%s:%d", file, limit)
	if h, ok := e.heads[key]; ok {
		return h, limit, nil
	}
	h := strings.TrimSuffix(file, ".csv") + fmt.Sprintf("-first%d.csv", limit)
	if err := headCSV(file, h, limit); err != nil {
		return "", 0, err
	}
	e.heads[key] = h
	return h, limit, nil
}

// withSearchPath returns the database URL with search_path set to schema.
func (e *env) withSearchPath(schema string) string {
	sep := "?"
	if strings.Contains(e.cfg.dbURL, "?") {
		sep = "&"
	}
	return e.cfg.dbURL + sep + "search_path=" + url.QueryEscape(schema)
}

// slot is where one run of one contender writes: a fresh PostgreSQL schema
// and a fresh directory (for SQLite files, logs).
type slot struct {
	schema string
	dir    string
	store  string // the contender's
	file   string // the input
	rows   int    // its data rows
	// batchctl is the binary a rowfate contender runs: -batchctl-base's
	// for a base contender.
	batchctl string
}

// outcome is one run's measurement.
type outcome struct {
	wall   time.Duration
	rssKiB int64
	loaded int64 // rows in the target table afterwards
	// outcomes is the outcome rows a floor contender loaded (0 for the
	// others).
	outcomes int64
}

// runOnce runs contender c once in a fresh schema and directory, and drops
// the schema afterwards.
func (e *env) runOnce(ctx context.Context, c *contender, round int) (outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	file, n, err := e.input(ctx, c.input, c.limit(e.cfg))
	if err != nil {
		return outcome{}, err
	}
	s := &slot{
		schema:   fmt.Sprintf("bench_compare_%d_%s_%d", os.Getpid(), schemaName.Replace(c.name), round),
		dir:      filepath.Join(e.tmp, fmt.Sprintf("%s-round%d", c.name, round)),
		store:    c.store,
		file:     file,
		rows:     n,
		batchctl: e.batchctl,
	}
	if c.base {
		s.batchctl = e.cfg.batchctlBase
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return outcome{}, err
	}
	if _, err := e.admin.Exec(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", s.schema, s.schema)); err != nil {
		return outcome{}, fmt.Errorf("create schema: %w", err)
	}
	defer func() {
		bg := context.Background()
		if _, err := e.admin.Exec(bg, "DROP SCHEMA IF EXISTS "+s.schema+" CASCADE"); err != nil {
			fmt.Fprintln(os.Stderr, "drop schema:", err)
		}
		// Flush the dropped table's dirty pages now rather than during
		// the next contender's run.
		e.admin.Exec(bg, "CHECKPOINT") //nolint:errcheck // best effort
		if !e.cfg.keep {
			os.RemoveAll(s.dir)
		}
	}()
	o, err := c.run(ctx, e, s)
	if err != nil {
		return o, err
	}
	if c.store == storePostgres {
		if err := e.admin.QueryRow(ctx, "SELECT count(*) FROM "+s.schema+".customers").Scan(&o.loaded); err != nil {
			return o, fmt.Errorf("count loaded rows: %w", err)
		}
	}
	if o.loaded == 0 {
		return o, fmt.Errorf("no row reached the customers table (%.2f s)", o.wall.Seconds())
	}
	return o, nil
}

// schemaName turns a contender's name into a part of an unquoted
// identifier.
var schemaName = strings.NewReplacer("-", "_", "@", "_at_")

// createTarget creates the contenders' customers table in schema: rowfate's
// customers table on PostgreSQL as processors/customers EnsureSchema
// leaves it (its columns, types, unique constraint, and the tier columns
// and the index on tenant_id and id that ensureTier adds), with a default
// for updated_at so that COPY and pgloader can leave it out. Every
// contender writes the same three indexes rowfate's upsert maintains.
func (e *env) createTarget(ctx context.Context, schema string) error {
	_, err := e.admin.Exec(ctx, `CREATE TABLE `+schema+`.customers (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		tenant_id text NOT NULL DEFAULT 'default',
		email text NOT NULL,
		name text NOT NULL,
		country text,
		signup_date date NOT NULL,
		amount numeric(18,2),
		updated_at timestamptz NOT NULL DEFAULT now(),
		tier text,
		tier_runs integer NOT NULL DEFAULT 0,
		CONSTRAINT customers_tenant_email_key UNIQUE (tenant_id, email));
		CREATE INDEX customers_tenant_id ON `+schema+`.customers (tenant_id, id)`)
	return err
}

// proc is a finished child process: its wall time, peak RSS and output.
type proc struct {
	wall           time.Duration
	rssKiB         int64
	stdout, stderr string
}

// command describes a child process to measure.
type command struct {
	name string
	args []string
	env  []string // added to this process's environment
	dir  string
}

// gnuTime is GNU time, which measures each child's peak RSS: wait4's
// ru_maxrss of a process this program starts directly would include this
// program's own peak, because Go starts children with vfork (CLONE_VM) and
// the kernel carries the shared memory's high-water mark over the exec.
const gnuTime = "/usr/bin/time"

// measure runs cmds in parallel, each under GNU time, and waits for all
// of them: the wall time is from the first start to the last exit, the
// peak RSS the largest of the processes' (in KiB). A process exiting with
// a status in okCodes counts as success.
func measure(ctx context.Context, dir string, okCodes []int, cmds ...command) ([]proc, time.Duration, int64, error) {
	out := make([]proc, len(cmds))
	execs := make([]*exec.Cmd, len(cmds))
	bufs := make([][2]*tailBuffer, len(cmds))
	timeFiles := make([]string, len(cmds))
	start := time.Now()
	for i, c := range cmds {
		timeFiles[i] = filepath.Join(dir, fmt.Sprintf("time-%d-%d", time.Now().UnixNano(), i))
		x := exec.CommandContext(ctx, gnuTime, append([]string{"-f", "%e %M", "-o", timeFiles[i], c.name}, c.args...)...)
		x.Dir = c.dir
		x.Env = append(os.Environ(), c.env...)
		bufs[i] = [2]*tailBuffer{{max: 1 << 20}, {max: 64 << 10}}
		x.Stdout, x.Stderr = bufs[i][0], bufs[i][1]
		x.WaitDelay = 5 * time.Second
		if err := x.Start(); err != nil {
			for _, prev := range execs[:i] {
				prev.Process.Kill()
				prev.Wait()
			}
			return nil, 0, 0, err
		}
		execs[i] = x
	}
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for i, x := range execs {
		wg.Go(func() {
			errs[i] = x.Wait()
			out[i].wall = time.Since(start)
		})
	}
	wg.Wait()
	wall := time.Since(start)
	var peak int64
	var firstErr error
	for i, x := range execs {
		out[i].stdout, out[i].stderr = bufs[i][0].String(), bufs[i][1].String()
		out[i].rssKiB = readMaxRSS(timeFiles[i])
		peak = max(peak, out[i].rssKiB)
		if err := errs[i]; err != nil && firstErr == nil && !slices.Contains(okCodes, x.ProcessState.ExitCode()) {
			firstErr = fmt.Errorf("%s: %v: %s", filepath.Base(cmds[i].name), err, lastLine(out[i].stderr))
		}
	}
	return out, wall, peak, firstErr
}

// readMaxRSS reads the peak RSS from GNU time's output file: the last
// line, "SECONDS KIB" (a line before it notes a non-zero exit status).
func readMaxRSS(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	var secs float64
	var kib int64
	fmt.Sscanf(lastLine(string(b)), "%f %d", &secs, &kib)
	return kib
}

// tailBuffer keeps the last max bytes written to it (roughly: it trims
// by halves).
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if t.buf.Len() > t.max {
		b := t.buf.Bytes()
		keep := append([]byte(nil), b[len(b)-t.max/2:]...)
		t.buf.Reset()
		t.buf.Write(keep)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// lastLine is the last non-empty line of s, for error messages.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
