package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// Exit codes. They are part of the CLI's contract: scripts rely on them.
const (
	exitOK       = 0 // every row succeeded (or the command did its job)
	exitError    = 1 // operational error: database, I/O, interrupted
	exitUsage    = 2 // bad command line
	exitRows     = 3 // the batch finished with invalid, failed, dead or unknown rows
	exitRejected = 4 // the file was rejected as a whole; nothing was written
)

const usage = `batchctl: batches with per-row outcomes

Usage:
  batchctl import <kind> <file.csv>   import a file, work its rows, print the summary
                                      (--dry-run: validate only, write nothing;
                                       --encoding E, --delimiter D: override detection)
  batchctl import <kind> <file.xlsx>  the same from a workbook (found by its content);
                                      --sheet NAME|N picks the sheet (default the first
                                      visible), --header-row N the header's row
  batchctl preview <file> [--kind K]  show what the engine sees: encoding, delimiter,
                                      header, first rows and the header-to-field mapping
  batchctl status <batch>             show a batch and its counts by state
  batchctl rows <batch> [--state S]   list a batch's rows (with their errors)
  batchctl errors <batch> [-o FILE]   write the invalid, failed, dead and unknown rows
                                      to fix and import again: CSV, or a workbook with
                                      the bad cells marked when FILE ends in .xlsx
                                      (stdout without -o)
  batchctl template <kind> [-o FILE]  write an empty file with the kind's header and an
                                      example row (.xlsx: frozen header, dropdowns for
                                      columns with fixed values)
  batchctl export <kind> [-o FILE]    write the kind's rows to FILE (.xlsx: a workbook,
                                      else CSV; --format csv|xlsx overrides; stdout
                                      without -o) and record the export as a batch;
                                      text cells get a ' before = + - @ (formula
                                      injection) unless the column is tagged raw
  batchctl batches                    list recent batches
  batchctl worker [--batch N]         work open batches (--until-done to exit when idle)
  batchctl migrate                    create or update the database schema
  batchctl kinds                      list the kinds that can be imported

Common flags (before or after the arguments):
  --database URL   postgres://... for PostgreSQL, or a SQLite file path.
                   Defaults to $DATABASE_URL, then ./rowfate.db (SQLite).
  --tenant ID      tenant that owns the batches (default "default")
  -o text|json     output format (default text); for errors, template and
                   export, -o names the output file instead
  -v               verbose logs on stderr

Exit codes: 0 all rows succeeded; 1 operational error; 2 usage error;
3 the batch finished with invalid, failed, dead or unknown rows;
4 the file was rejected as a whole (nothing was written).
`

// env is what a subcommand gets: parsed common flags and the streams.
type env struct {
	stdout, stderr io.Writer
	database       string
	tenant         string
	output         string
	verbose        bool
	logger         *slog.Logger
	// outPath makes -o name an output file rather than a format, for
	// commands whose output is a file (errors, template); "" or "-" is
	// standard output.
	outPath bool
}

// usageError is a bad command line; it maps to exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Run is batchctl's testable entry point: it returns the exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmds := map[string]func(context.Context, *env, []string) (int, error){
		"import":   cmdImport,
		"status":   cmdStatus,
		"rows":     cmdRows,
		"batches":  cmdBatches,
		"migrate":  cmdMigrate,
		"worker":   cmdWorker,
		"kinds":    cmdKinds,
		"preview":  cmdPreview,
		"errors":   cmdErrors,
		"template": cmdTemplate,
		"export":   cmdExport,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "batchctl: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	e := &env{stdout: stdout, stderr: stderr}
	code, err := cmd(ctx, e, args[1:])
	if err == nil {
		return code
	}
	var ue *usageError
	var fe *rows.FileError
	if errors.As(err, &fe) {
		// A FileError names the file and line itself; the wrapping around it
		// ("import <file>: ") would name the file twice.
		err = fe
	}
	fmt.Fprintf(stderr, "batchctl %s: %v\n", args[0], err)
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "run `batchctl help` for usage")
		return exitUsage
	case errors.As(err, &fe):
		fmt.Fprintln(stderr, "the file was rejected; nothing was written")
		return exitRejected
	case errors.Is(err, batch.ErrUnknownKind):
		return exitUsage
	}
	return exitError
}

// parse parses flags that may come before, between or after positional
// arguments (`rows 7 --state invalid`), and returns the positionals.
func (e *env) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.StringVar(&e.database, "database", "", "database URL or SQLite path")
	fs.StringVar(&e.tenant, "tenant", "default", "tenant id")
	if e.outPath {
		fs.StringVar(&e.output, "o", "", "output file (default: standard output)")
	} else {
		fs.StringVar(&e.output, "o", "text", "output format: text or json")
	}
	fs.BoolVar(&e.verbose, "v", false, "verbose logs")
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if !e.outPath && e.output != "text" && e.output != "json" {
		return nil, usagef("-o must be text or json, not %q", e.output)
	}
	if e.database == "" {
		e.database = os.Getenv("DATABASE_URL")
	}
	if e.database == "" {
		e.database = "rowfate.db"
	}
	level := slog.LevelWarn
	if e.verbose {
		level = slog.LevelDebug
	}
	e.logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	return pos, nil
}

func (e *env) json(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// isPostgres reports whether a --database value names a PostgreSQL server.
func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}
