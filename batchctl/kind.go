package batchctl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/schemakind"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/tableschema"
)

// readSchema reads and parses a schema file; its mistakes are a usage
// error listing each with its JSON path.
func readSchema(path string) (*tableschema.Schema, []byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !strings.ContainsAny(path, `./\`) {
		// import --schema sales ...: the PostgreSQL schema's old spelling.
		return nil, nil, usagef("--schema %s: no such Table Schema file; the PostgreSQL schema of the engine's tables is --pg-schema %s (or $ROWFATE_PG_SCHEMA)", path, shellQuote(path))
	}
	if err != nil {
		return nil, nil, &rows.FileError{File: path, Err: unwrapPath(err)}
	}
	s, err := tableschema.Parse(data, path)
	var es tableschema.Errors
	if errors.As(err, &es) {
		return nil, nil, usagef("the schema has %d mistake(s):\n  %s", len(es), strings.ReplaceAll(es.Error(), "\n", "\n  "))
	}
	return s, data, err
}

// describeSchema says what a schema kind does, in a line.
func describeSchema(s *tableschema.Schema) string {
	how := string(s.Mode)
	if len(s.PrimaryKey) > 0 {
		how += " on " + strings.Join(s.PrimaryKey, ", ")
	}
	scope := "per tenant"
	if !s.Tenant {
		scope = "shared by every tenant"
	}
	return fmt.Sprintf("table %s (%s), %s, %d columns", s.Table, scope, how, len(s.Fields))
}

type kindAddOptions struct {
	createTable bool
	addColumns  bool
}

func (c *cli) kindCommand() *cobra.Command {
	var o kindAddOptions
	add := &cobra.Command{
		Use:   "add <schema file>",
		Short: "Store a kind defined by a Table Schema file, as its next version",
		Long: `Store a kind defined by a Frictionless Table Schema (JSON or YAML) in the
database, so that every worker and service process knows it without a
redeploy (running ones pick it up within seconds). Each add is a new
version; a batch records the version it was validated with, and re-runs
use the current one. A schema identical to the current version stores
nothing.

The schema is checked first: a mistake is refused with its JSON path. Then
its table: it must exist with the schema's columns and types (a clear
error names a missing column or a type mismatch), or --create-table
creates it. A new version that adds fields needs their columns: kind add
prints the ALTER TABLE statements, and --add-columns runs them (each
column added nullable, as the rows already there have no value for it; a
column is never dropped or retyped). Nothing is stored when a check fails.

The extension members (x-table, x-tenant, x-mode, x-aliases, x-validate,
x-date-order, x-decimal-comma, x-rules) are described in README.md.`,
		Example: `  batchctl kind add fixtures/schemas/orders.schema.json --create-table
  batchctl kind add products.schema.yaml
  batchctl kind add orders.v2.schema.json --add-columns`,
		Args: args(1, "<schema file>"),
		RunE: func(cmd *cobra.Command, a []string) error { return c.kindAdd(cmd.Context(), a[0], o) },
	}
	add.Flags().BoolVar(&o.createTable, "create-table", false, "create the schema's table when it does not exist")
	add.Flags().BoolVar(&o.addColumns, "add-columns", false, "add the columns of new fields to the existing table (nullable; nothing is dropped or retyped)")
	var version int64
	show := &cobra.Command{
		Use:   "show <kind>",
		Short: "Print a stored kind's schema (the current version, or --version)",
		Long:  `Print a stored kind's schema as it was added, byte for byte; -o json prints it with its version and dates. It changes nothing.`,
		Example: `  batchctl kind show orders
  batchctl kind show orders --version 2 > orders.v2.schema.json`,
		Args: args(1, "<kind>"),
		RunE: func(cmd *cobra.Command, a []string) error { return c.kindShow(cmd.Context(), a[0], version) },
	}
	show.Flags().Int64Var(&version, "version", 0, "the version to print (default: the current one)")
	rm := &cobra.Command{
		Use:   "rm <kind>",
		Short: "Remove a stored kind",
		Long: `Remove a stored kind: it can no longer be imported, and workers stop
claiming its batches within seconds. Its versions stay in the database for
the batches that recorded them, and its table and rows are left as they
are. Adding the schema again makes a new version.`,
		Example: `  batchctl kind rm orders`,
		Args:    args(1, "<kind>"),
		RunE:    func(cmd *cobra.Command, a []string) error { return c.kindRemove(cmd.Context(), a[0]) },
	}
	cmd := &cobra.Command{
		Use:   "kind",
		Short: "Manage kinds defined by Table Schema files: add, show, rm",
		Long: `Kinds defined by a Table Schema file rather than Go code, stored in the
database and versioned. batchctl kinds lists them with the built-in kinds.`,
		Example: `  batchctl kind add orders.schema.json --create-table
  batchctl kinds
  batchctl kind show orders`,
		RunE: func(*cobra.Command, []string) error { return usagef("kind needs a subcommand: add, show or rm") },
	}
	cmd.AddCommand(add, show, rm)
	return cmd
}

func (c *cli) kindAdd(ctx context.Context, path string, o kindAddOptions) error {
	if data, ok := isRecalcFile(path); ok {
		return c.kindAddRecalc(ctx, path, data)
	}
	s, data, err := readSchema(path)
	if err != nil {
		return err
	}
	if err := c.checkBuiltin(ctx, s.Name); err != nil {
		return err
	}
	a, err := c.open(ctx, create)
	if err != nil {
		return err
	}
	defer a.close()
	if _, err := schemakind.Kind(s, 1, a.kinds); err != nil {
		return usagef("the schema does not compile: %v", err)
	}
	if err := c.addColumns(ctx, a, path, s, o); err != nil {
		return err
	}
	if o.createTable {
		err = schemakind.CreateTable(ctx, a.kinds, s)
	} else {
		err = schemakind.CheckTable(ctx, a.kinds, s)
	}
	if err != nil {
		if errors.Is(err, schemakind.ErrTable) && !o.createTable && strings.Contains(err.Error(), "there is no table") {
			return fmt.Errorf("%w\nadd it with: batchctl kind add %s --create-table%s", err, shellQuote(path), c.hint())
		}
		return err
	}
	if cur, err := a.engine.KindGet(ctx, batch.KindGetParams{Name: s.Name}); err == nil && cur.Definition == string(data) {
		return c.printKind(cur, s, "unchanged")
	}
	d, err := a.engine.KindPut(ctx, batch.KindPutParams{Name: s.Name, Definition: string(data)})
	if errors.Is(err, batch.ErrConflict) {
		return fmt.Errorf("another process stored a version of kind %s at the same moment: run the command again", s.Name)
	}
	if err != nil {
		return err
	}
	return c.printKind(d, s, "stored")
}

// addColumns gives an existing table the columns of the schema's new
// fields with --add-columns, and without it refuses the schema, printing
// the statements that would.
func (c *cli) addColumns(ctx context.Context, a *app, path string, s *tableschema.Schema, o kindAddOptions) error {
	stmts, err := schemakind.AddColumns(ctx, a.kinds, s)
	if err != nil || len(stmts) == 0 {
		return err
	}
	if !o.addColumns {
		return fmt.Errorf("%w %s: the schema has fields the table lacks; the table needs:\n  %s;\nrun them with: batchctl kind add %s --add-columns%s",
			schemakind.ErrTable, s.Table, strings.Join(stmts, ";\n  "), shellQuote(path), c.hint())
	}
	if err := schemakind.ApplyColumns(ctx, a.kinds, s, stmts); err != nil {
		return err
	}
	for _, st := range stmts {
		fmt.Fprintf(c.stderr, "%s\n", st)
	}
	return nil
}

// checkBuiltin refuses a schema named as one of the program's kinds.
func (c *cli) checkBuiltin(ctx context.Context, name string) error {
	reg, err := c.registry(ctx)
	if err != nil {
		return err
	}
	if reg.Has(name) || reg.HasExport(name) {
		return usagef("%s is a built-in kind: name the schema's kind otherwise (x-name)", name)
	}
	return nil
}

func (c *cli) printKind(d *batchtype.KindDefinition, s *tableschema.Schema, what string) error {
	if c.global.output == "json" {
		return c.json(map[string]any{"name": d.Name, "version": d.Version, "status": what, "table": s.Table, "mode": s.Mode, "primary_key": s.PrimaryKey})
	}
	fmt.Fprintf(c.stdout, "kind %s %s: schema v%d, %s\n", d.Name, what, d.Version, describeSchema(s))
	return nil
}

func (c *cli) kindShow(ctx context.Context, name string, version int64) error {
	a, err := c.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer a.close()
	d, err := a.engine.KindGet(ctx, batch.KindGetParams{Name: name, Version: version})
	if errors.Is(err, batch.ErrNotFound) {
		if version > 0 {
			return fmt.Errorf("kind %s has no version %d", name, version)
		}
		return fmt.Errorf("no stored kind %s (list them: batchctl kinds%s)", name, c.hint())
	}
	if err != nil {
		return err
	}
	if c.global.output == "json" {
		return c.json(toKindDefinitionJSON(d))
	}
	fmt.Fprint(c.stdout, d.Definition)
	if !strings.HasSuffix(d.Definition, "\n") {
		fmt.Fprintln(c.stdout)
	}
	return nil
}

func (c *cli) kindRemove(ctx context.Context, name string) error {
	a, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer a.close()
	if err := a.engine.KindRemove(ctx, batch.KindRemoveParams{Name: name}); errors.Is(err, batch.ErrNotFound) {
		return fmt.Errorf("no stored kind %s (list them: batchctl kinds%s)", name, c.hint())
	} else if err != nil {
		return err
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"name": name, "removed": true})
	}
	fmt.Fprintf(c.stdout, "kind %s removed; its batches and its table stay\n", name)
	return nil
}

type inferOptions struct {
	table string
	name  string
	out   string
	rows  int
	read  readFlags
}

func (c *cli) schemaCommand() *cobra.Command {
	var o inferOptions
	infer := &cobra.Command{
		Use:   "infer <file>",
		Short: "Draft a Table Schema from a CSV or XLSX file, for you to edit",
		Long: `Draft a Table Schema from a file: each column's type is the narrowest that
reads its values (integer, number, boolean, date, datetime, else string; a
column where a few values do not read, typos, keeps the type and those rows
will be invalid), required where no value is empty, an enum where few
distinct values repeat, the key where a column's values are all present and
unique (preferring id, *_id, code, email, sku). Numeric dates that read both
ways (01/02/2025) are drafted as text with a note: say x-date-order once
you know the order. It opens no database.

The draft goes to standard output (or -f); standard error says how many of
the file's rows the draft would reject, and the first reasons.`,
		Example: `  batchctl schema infer orders.csv --table orders > orders.schema.json
  batchctl schema infer clients.xlsx --sheet 2 --table clients -f clients.schema.json`,
		Args: args(1, "<file>"),
		RunE: func(cmd *cobra.Command, a []string) error { return c.schemaInfer(cmd.Context(), a[0], o) },
	}
	f := infer.Flags()
	f.StringVar(&o.table, "table", "", "the table the rows go into (x-table; default: from the file's name)")
	f.StringVar(&o.name, "name", "", "the kind's name (x-name; default: the table's)")
	f.StringVarP(&o.out, "file", "f", "", "write the draft to this file (default: standard output)")
	f.IntVar(&o.rows, "rows", 100_000, "read at most this many rows")
	o.read.add(f)
	// There is no kind yet whose columns would find the header.
	f.Lookup("header-row").Usage = "1-based row of the header (default: the first row that is not empty)"
	cmd := &cobra.Command{
		Use:     "schema",
		Short:   "Table Schema tools: infer",
		Long:    `Tools for Table Schema files, which define kinds without Go (batchctl kind add).`,
		Example: `  batchctl schema infer orders.csv --table orders`,
		RunE:    func(*cobra.Command, []string) error { return usagef("schema needs a subcommand: infer") },
	}
	cmd.AddCommand(infer)
	return cmd
}

func (c *cli) schemaInfer(ctx context.Context, path string, o inferOptions) error {
	if o.table == "" {
		base := path[strings.LastIndexAny(path, `/\`)+1:]
		if i := strings.IndexByte(base, '.'); i > 0 {
			base = base[:i]
		}
		o.table = columnLike(base)
	}
	p := batch.ImportParams{SourceName: path}
	if err := o.read.apply(&p); err != nil {
		return err
	}
	f, err := openInput(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := batch.OpenReader(bufio.NewReader(f), p)
	if err != nil {
		return err
	}
	d, err := tableschema.Infer(r, tableschema.InferOptions{Table: o.table, Name: o.name, MaxRows: o.rows,
		DecimalComma: p.Conventions.Number.Decimal == ','})
	r.Close()
	if err != nil {
		return err
	}
	for _, n := range d.Notes {
		fmt.Fprintf(c.stderr, "note: %s\n", n)
	}
	data, err := tableschema.Marshal(d.Schema)
	if err != nil {
		return err
	}
	// The draft must read back as the schema it is.
	s, err := tableschema.Parse(data, "the draft")
	if err != nil {
		return fmt.Errorf("the drafted schema does not parse (a bug): %w", err)
	}
	w, commit, abort, err := c.outputFile(o.out)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		abort()
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	return c.previewDraft(ctx, path, f, s, p)
}

// previewDraft dry-runs the file under the draft and says how many rows
// it would reject.
func (c *cli) previewDraft(ctx context.Context, path string, f *os.File, s *tableschema.Schema, p batch.ImportParams) error {
	reg := batch.NewRegistry()
	if err := schemakind.Register(reg, s, 0, schemakind.Config{}); err != nil {
		return err
	}
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	p.Kind, p.Source = s.Name, f
	res, err := reg.DryRun(ctx, p)
	if err != nil {
		fmt.Fprintf(c.stderr, "the draft does not read %s: %v\n", path, err)
		return nil
	}
	total := res.Counts.Total()
	fmt.Fprintf(c.stderr, "the draft reads %d rows of %s: %d valid, %d invalid\n", total, path, res.Counts[rows.StateValid], res.Counts[rows.StateInvalid])
	for i, fe := range res.Errors {
		if i == 5 {
			break
		}
		fmt.Fprintf(c.stderr, "  %s\n", fieldErrorText(fe))
	}
	return nil
}

// columnLike makes a file name a table name.
func columnLike(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "_")
	if out == "" || (out[0] >= '0' && out[0] <= '9') {
		out = "t_" + out
	}
	return out
}
