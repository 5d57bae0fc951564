package batchctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/schemakind"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/tableschema"
)

type importOptions struct {
	workers int
	noWork  bool
	// inline is --inline: work a transactional kind's rows as they are
	// stored (batch.ImportParams.WorkInline).
	inline bool
	// workersSet: --workers was given, asking for the workers.
	workersSet bool
	dryRun     bool
	strict     bool
	once       bool
	// newBatch imports an error report as a new batch, not as a re-run.
	newBatch bool
	// maxInvalid is --max-invalid: N or P%.
	maxInvalid string
	// maxFailed is --max-failed: N or P%.
	maxFailed string
	read      readFlags
	// interval is --progress-interval.
	interval time.Duration
	// schema is a Table Schema file defining the kind for this import
	// only; createTable creates its table.
	schema      string
	createTable bool
	// after is not a flag: the last of the batch's events an import
	// printed while it read the file (-o jsonl), which the stream of its
	// work goes on after.
	after int64
}

func (c *cli) importCommand() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import <kind> <file> | import --schema <schema file> <file>",
		Short: "Import a CSV or XLSX file, work its valid rows, print the outcome",
		Long: `Import a file as a new batch of the kind: every row is read, bound to the
kind's columns and validated, and all rows are stored with their outcome
(valid, or invalid with field errors) in one transaction; a file rejected
as a whole (no header, a missing required column, a malformed line) writes
nothing. The valid rows are then worked by the kind's processor, unless
--no-work leaves them for ` + "`batchctl worker`" + `. A kind whose processor
writes in the engine's own database (customers, a --schema or stored
kind) has its rows worked while they are stored, in the same
transaction: each row is written once, with its outcome, and the import
leaves all of its effects or none. --workers N (or --inline=false)
stores the rows first and works them with N workers instead.

The format is found from the file's content (a workbook is XLSX whatever
its name); CSV encoding and delimiter are detected unless given. The header
is the first row, among the first 20, with the kind's required columns;
title rows above it are skipped.

Nothing is guessed. A numeric date such as 01/02/2025 is read in the
order --date-order declares, or the order the file's own dates settle
(13/02/2025 reads only day first); when nothing settles it, such rows are
invalid. Numbers are read with a decimal point and no thousands separator
unless --decimal-comma or --locale says otherwise; a value in another
form is invalid, with the option that reads it. A column the file does not
have is left alone by the kind (customers keeps a stored country or
amount), and an unknown column that looks like a missing one is named in
a warning, with the --map that maps it.

A file this tenant already imported as this kind, with the same options,
is not imported again: its batch is printed (and its exit code given),
and no row runs a second time; --new-batch imports it again as a new
batch. An error report of one of the tenant's batches (batchctl errors),
fixed and imported, is a re-run of that batch (see batchctl rerun): its
completed rows are kept and the report's rows replace the ones they came
from. --new-batch imports it as a new batch instead.

--dry-run validates every row exactly as an import would and reports the
outcome, without opening a database or running a processor.

The batch's id is printed on stderr as soon as the batch exists ("batch 12
created"), before its rows are stored, so that another terminal can
follow it with batchctl watch. While the file is read, the rows read and
the invalid ones so far are shown the same ways: a bar on a terminal, a
line every --progress-interval, the batch's ingest_progress events for
-o jsonl (written to its log at most every --progress-interval, 2s by
default, for watchers anywhere). While its rows are worked, a bar on stderr shows the rows done, the rate,
the time left and the rows in each state when stderr is a terminal; a
plain line every --progress-interval when it is not. -o jsonl prints
{"type":"created","batch_id":N,...} once the batch exists, then the
batch's events on stdout as JSON lines, as batchctl watch -o jsonl does,
then the batch as the last line.

--schema FILE imports with a kind defined by a Table Schema file (JSON or
YAML) without storing it (batchctl kind add stores one for every process):
for a one-off load into any table of the database. Its table must exist
with the schema's columns, or --create-table creates it. (A --schema value
without a . or a / is the PostgreSQL schema of the engine's tables, as for
every command.)

Exit codes: 0 every row succeeded; 3 some rows are invalid, failed, dead
or unknown; 4 the file was rejected (nothing was written).`,
		Example: `  batchctl import customers customers.csv
  batchctl import customers export.csv --delimiter ';' --encoding windows-1252
  batchctl import customers clients.xlsx --sheet Data --header-row 3
  batchctl import customers customers.csv --dry-run
  batchctl import customers kunden.csv --locale de --date-order dmy --map 'Betrag=amount'
  batchctl import customers customers.csv --new-batch
  batchctl import customers big.csv --no-work && batchctl worker --until-done
  batchctl import customers big.csv -o jsonl > events.jsonl
  batchctl import --schema orders.schema.json orders.csv --create-table`,
		Args: func(cmd *cobra.Command, a []string) error {
			if o.schema != "" && len(a) == 1 {
				return nil
			}
			return args(2, "<kind> <file>")(cmd, a)
		},
		Annotations: streams(),
		RunE: func(cmd *cobra.Command, a []string) error {
			kind, file := "", a[len(a)-1]
			if len(a) == 2 {
				kind = a[0]
			}
			o.workersSet = cmd.Flags().Changed("workers")
			return c.runImport(cmd.Context(), kind, file, o)
		},
	}
	importFlags(cmd, &o)
	return cmd
}

func (c *cli) runImport(ctx context.Context, kind, path string, o importOptions) error {
	schema, kind, err := c.importSchema(ctx, kind, o)
	if err != nil {
		return err
	}
	reg, err := c.registryWith(ctx, kind)
	if err != nil {
		return err
	}
	if schema == nil && kind != "" && !reg.Has(kind) {
		if schema, err = c.reportSchema(ctx, kind, path, o); err != nil {
			return err
		}
	}
	if schema != nil {
		// For the dry run; an import registers it again with its table.
		if err := schemakind.Register(reg, schema, 0, schemakind.Config{}); err != nil {
			return usagef("the schema does not compile: %v", err)
		}
	}
	if err := c.checkImport(reg, kind, o); err != nil {
		return err
	}
	p := batch.ImportParams{TenantID: c.global.tenant, Kind: kind, SourceName: path, Strict: o.strict, Once: o.once,
		WorkInline: o.inline && !o.noWork && !o.workersSet}
	if p.MaxInvalid, err = batch.ParseThreshold(o.maxInvalid); err != nil {
		return usagef("--max-invalid %v", err)
	}
	if p.MaxFailed, err = batch.ParseThreshold(o.maxFailed); err != nil {
		return usagef("--max-failed %v", err)
	}
	if err := o.read.apply(&p); err != nil {
		return err
	}
	if !o.dryRun {
		// A bad --database is a usage error before the file is read.
		if _, err := c.database(); err != nil {
			return err
		}
	}
	f, err := openInput(path)
	if err != nil {
		return err
	}
	defer f.Close()
	p.Source = f
	if o.dryRun {
		// No database: a dry run must not even create one.
		res, err := reg.DryRun(ctx, p)
		if err != nil {
			return interrupted(ctx, err, "nothing was written")
		}
		return c.printDryRun(res)
	}

	app, err := c.open(ctx, create)
	if err != nil {
		return err
	}
	defer app.close()
	if schema != nil {
		if o.createTable {
			if err := schemakind.CreateTable(ctx, app.kinds, schema); err != nil {
				return err
			}
		}
		if err := schemakind.RegisterAll(app.engine.Registry(), schema, 0, app.kinds); err != nil {
			return err
		}
	} else if !app.engine.Registry().Has(kind) {
		return usagef("unknown kind %q; known kinds: %s", kind, kindNames(app.engine.Registry().Kinds()))
	}
	p.NewBatch = o.newBatch
	b, announced, err := c.importShown(ctx, app, p, kind, path, &o)
	var report *batch.ReportError
	if errors.As(err, &report) {
		// The fixed error report of a batch is a re-run of that batch: its
		// completed rows are kept, its rows matched by the report's row.
		fmt.Fprintf(c.stderr, "%s is the error report of batch %d: re-running batch %d with it (--new-batch imports it as a new batch instead)\n", path, report.BatchID, report.BatchID)
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		var actor actorFlag
		return c.rerun(ctx, app, batch.RerunParams{TenantID: c.global.tenant, BatchID: report.BatchID, Source: f, SourceName: path,
			Read: p.Read, Conventions: p.Conventions, Actor: actor.get()}, o)
	}
	if err != nil {
		return interrupted(ctx, err, "nothing was written")
	}
	c.announce(b, path, announced)
	if !o.noWork && !b.Reused {
		if b, err = c.work(ctx, app, b, o); err != nil {
			return err
		}
	}
	return c.printOutcome(b)
}

// importFlags adds import's flags to cmd, into o.
func importFlags(cmd *cobra.Command, o *importOptions) {
	f := cmd.Flags()
	f.IntVar(&o.workers, "workers", 2, "concurrent workers for the batch's rows")
	f.BoolVar(&o.noWork, "no-work", false, "only import; leave the valid rows for batchctl worker")
	f.BoolVar(&o.inline, "inline", true, "work the rows of a transactional kind (customers, a --schema or stored kind) while they are stored, each written once with its outcome; --inline=false, or --workers, stores them first and works them with the workers")
	f.BoolVar(&o.dryRun, "dry-run", false, "validate every row and report; write nothing, run no processor")
	f.StringVar(&o.maxInvalid, "max-invalid", "", "reject the file, nothing written, when more than N (or P%) of its rows are invalid")
	f.StringVar(&o.maxFailed, "max-failed", "", "pause the batch when more than N (or P%) of its rows to work have failed or died (batchctl limit changes it)")
	f.BoolVar(&o.strict, "strict", false, "reject the file if it has a column the kind does not know, or lacks one of its optional columns")
	f.BoolVar(&o.newBatch, "new-batch", false, "import as a new batch: a file this tenant already imported as this kind with the same options (whose batch is returned otherwise), or an error report of a batch (re-run otherwise)")
	f.BoolVar(&o.once, "once", false, "what every import does now without --new-batch (kept for scripts that pass it)")
	f.StringVar(&o.schema, "schema", "", "a Table Schema file that defines the kind for this import alone (kept with the batch for its re-runs, retries and reports)")
	f.BoolVar(&o.createTable, "create-table", false, "with --schema: create the schema's table when it does not exist")
	addProgressInterval(f.DurationVar, &o.interval)
	o.read.add(f)
}

// importSchema reads --schema FILE, when given: the schema, and the kind it
// defines (which must be kind, when one is named too).
func (c *cli) importSchema(ctx context.Context, kind string, o importOptions) (*tableschema.Schema, string, error) {
	if o.createTable && o.schema == "" {
		return nil, "", usagef("--create-table creates the table of a --schema file (batchctl kind add --create-table stores a kind)")
	}
	if o.schema == "" {
		return nil, kind, nil
	}
	s, _, err := readSchema(o.schema)
	if err != nil {
		return nil, "", err
	}
	if kind != "" && kind != s.Name {
		return nil, "", usagef("the schema %s defines kind %s, not %s: give just the file", o.schema, s.Name, kind)
	}
	if err := c.checkBuiltin(ctx, s.Name); err != nil {
		return nil, "", err
	}
	return s, s.Name, nil
}

// checkImport refuses an import of kind that cannot run with o.
func (c *cli) checkImport(reg *batch.Registry, kind string, o importOptions) error {
	switch {
	case reg.IsRecalc(kind):
		return usagef("%s is a recalculation: its rows come from the database, not a file; run `batchctl recalc %s`", kind, kind)
	case !reg.Has(kind):
		return usagef("unknown kind %q; known kinds: %s", kind, kindNames(reg.Kinds()))
	case o.workers <= 0:
		return usagef("--workers must be 1 or more, not %d", o.workers)
	case o.interval < 0:
		return usagef("--progress-interval must be 0 or more, not %v", o.interval)
	case o.dryRun && c.global.output == "jsonl":
		return usagef("a dry run has no events to stream: use -o json")
	}
	return nil
}

// work works a new batch's rows until none is left, showing its progress,
// and returns the batch as it ends.
func (c *cli) work(ctx context.Context, app *app, b *batchtype.Batch, o importOptions) (*batchtype.Batch, error) {
	f, stop := c.follower(ctx, app)
	defer stop()
	show := c.newDisplay(b.ID, o.interval)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type followed struct {
		last *batchtype.Event
		err  error
	}
	done := make(chan followed, 1)
	go func() {
		last, err := f.follow(fctx, show, b.ID, o.after)
		done <- followed{last, err}
	}()

	_, err := app.engine.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{c.global.tenant}, Workers: o.workers, UntilDone: true})
	// The work wrote the final event when the batch settled: let the
	// stream reach it (it is already written, so this takes a moment);
	// stop it at once otherwise (a pause from elsewhere, an error).
	if err != nil || ctx.Err() != nil || !c.settledNow(ctx, app.engine, b.ID) {
		cancel()
	}
	grace := time.NewTimer(followGrace)
	defer grace.Stop()
	var r followed
	select {
	case r = <-done:
	case <-grace.C:
		cancel()
		r = <-done
	}
	show.stop(r.err == nil)

	left := fmt.Sprintf("batch %d was imported and its remaining rows stay open: run `batchctl worker --batch %d --until-done%s`", b.ID, b.ID, c.hint())
	if err != nil {
		return nil, interrupted(ctx, err, left)
	}
	if ctx.Err() != nil {
		return nil, &interruptedError{msg: left}
	}
	if r.err != nil && fctx.Err() == nil {
		// The JSON lines are the output: a stream cut short is an error.
		// The progress display is not: the summary says it all.
		if c.global.output == "jsonl" {
			return nil, r.err
		}
		fmt.Fprintf(c.stderr, "batch %d: progress display stopped: %v\n", b.ID, r.err)
	}
	return app.engine.Batch(ctx, batch.BatchParams{TenantID: c.global.tenant, ID: b.ID})
}

// settledNow reports whether the batch is settled; an error reading it is
// left to the read that follows.
func (c *cli) settledNow(ctx context.Context, eng *batch.Engine, id int64) bool {
	b, err := eng.Batch(ctx, batch.BatchParams{TenantID: c.global.tenant, ID: id})
	return err == nil && settled(b)
}

// followGrace bounds how long an import waits, once its work is done, for
// the event stream to deliver the final event the work wrote.
const followGrace = 10 * time.Second

// interrupted turns err into an interruptedError saying what is left when
// ctx was cancelled (the user pressed Ctrl-C), and returns err otherwise.
func interrupted(ctx context.Context, err error, left string) error {
	var fe *rows.FileError
	if ctx.Err() != nil && !errors.As(err, &fe) {
		return &interruptedError{msg: left}
	}
	return err
}

// openInput opens a file to read.
//
// A file that cannot be opened is a usage error (exit 2), not a rejected
// file (exit 4): a script must not read a mistyped path as the client's
// bad file.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("%s: %v", path, unwrapPath(err))
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, usagef("%s is a directory, not a file", path)
	}
	return f, nil
}

// printDryRun reports a dry run; the exit code is what the import would
// have given after validation (3 when rows are invalid).
func (c *cli) printDryRun(res *batch.DryRunResult) error {
	code := exitOK
	if res.Counts[rows.StateInvalid] > 0 {
		code = exitRows
	}
	if c.global.output == "json" {
		if err := c.json(toDryRunJSON(res)); err != nil {
			return err
		}
		return exitWith(code)
	}
	w := c.stdout
	fmt.Fprintf(w, "dry run  %s  (%s): nothing was written\n", res.SourceName, res.Kind)
	if res.Format == batch.FormatCSV {
		fmt.Fprintf(w, "  encoding %s, delimiter %s\n", res.Encoding, res.Delimiter)
	} else {
		fmt.Fprintf(w, "  sheet %q of %s, header on row %d\n", res.Sheet, strings.Join(quoteAll(res.Sheets), ", "), res.HeaderRow)
	}
	fmt.Fprintf(w, "  valid %d, invalid %d, total %d", res.Counts[rows.StateValid], res.Counts[rows.StateInvalid], res.Counts.Total())
	if res.SkippedEmpty > 0 {
		fmt.Fprintf(w, ", empty rows skipped %d", res.SkippedEmpty)
	}
	fmt.Fprintln(w)
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warningText(wn))
	}
	if s := describeConventions(res.Conventions); s != "" {
		fmt.Fprintf(w, "  %s\n", s)
	}
	if len(res.Errors) > 0 {
		fmt.Fprintf(w, "first errors:\n")
		for _, fe := range res.Errors {
			fmt.Fprintf(w, "  %s\n", fieldErrorText(fe))
		}
	}
	if more := res.ErrorTotal - int64(len(res.Errors)); more > 0 {
		fmt.Fprintf(w, "  %d more errors (import the file, then `batchctl errors` lists every row)\n", more)
	}
	if err := printErrorCounts(w, res.ErrorCounts); err != nil {
		return err
	}
	return exitWith(code)
}

// announce says what an import did with its file: a batch created (unless
// it was said as soon as the batch existed), or the batch that has it.
func (c *cli) announce(b *batchtype.Batch, path string, announced bool) {
	switch {
	case b.Reused:
		fmt.Fprintf(c.stderr, "%s was already imported as batch %d with the same options: nothing was imported again (--new-batch imports it as a new batch)\n", path, b.ID)
	case !announced:
		fmt.Fprintf(c.stderr, "batch %d created (%s, %s)\n", b.ID, b.Kind, path)
	}
}
