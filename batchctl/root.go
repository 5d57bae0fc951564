package batchctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// Exit codes. They are part of the CLI's contract: scripts rely on them.
const (
	exitOK          = 0   // every row succeeded (or the command did its job)
	exitError       = 1   // operational error: database, I/O
	exitUsage       = 2   // bad command line
	exitRows        = 3   // the batch finished with invalid, failed, dead or unknown rows
	exitRejected    = 4   // the file was rejected as a whole; nothing was written
	exitInterrupted = 130 // interrupted (SIGINT/SIGTERM), as shells count it
)

// cli is one run of batchctl: its streams and the options every command
// shares.
type cli struct {
	// register adds the program's kinds to a registry (Run's).
	register       RegisterFunc
	stdin          io.Reader
	stdout, stderr io.Writer
	global         globalOptions
	logger         *slog.Logger
	// lease is the lease duration of this run's engines; 0 is the
	// engine's default.
	lease time.Duration
	// tenantRole is the PostgreSQL role a tenant's requests run as
	// (serve --tenant-role); "" runs them as the connection's user.
	tenantRole string
}

// globalOptions are the flags of every command.
type globalOptions struct {
	database string
	tenant   string
	// schema is the PostgreSQL schema (--pg-schema).
	schema string
	// oldSchema is --schema where a command has no Table Schema file to
	// take: the pre-0.9 spelling of --pg-schema, refused.
	oldSchema string
	output    string
	verbose   bool
	// databaseFlag and schemaFlag record whether the value came from the
	// command line, so that hints repeat exactly what was typed.
	databaseFlag bool
	schemaFlag   bool
}

// usageError is a bad command line; it maps to exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// interruptedError is a command stopped by a signal; msg says what was
// written and what is left.
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return "interrupted; " + e.msg }

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Run runs batchctl with args (without the program's name) and the kinds
// register adds, and returns its exit code. Main calls it with the
// process's arguments and streams; a test calls it with its own.
func Run(ctx context.Context, register RegisterFunc, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The log, the progress display and the worker's goroutines all write
	// to stderr: one lock keeps their lines whole (and a caller's buffer
	// safe).
	stderr = &lockedWriter{w: stderr}
	c := &cli{register: register, stdin: stdin, stdout: stdout, stderr: stderr}
	root := c.rootCommand()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage(root))
		return exitUsage
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var code *exitCode
	if errors.As(err, &code) {
		return code.code
	}
	return c.report(ctx, cmd, err)
}

// exitCode carries a command's non-zero exit code when it has nothing to
// report on stderr (exit 3: the summary said it all).
type exitCode struct{ code int }

func (e *exitCode) Error() string { return fmt.Sprintf("exit %d", e.code) }

// exitWith returns nil for exitOK, else an error that makes Run return code.
func exitWith(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitCode{code}
}

// report prints err for cmd and maps it to the exit code, in one place:
// as lines on stderr, or with -o json as one JSON object on stderr (a
// script reads the same fields whatever went wrong).
func (c *cli) report(ctx context.Context, cmd *cobra.Command, err error) int {
	var (
		ue *usageError
		fe *rows.FileError
		ie *interruptedError
	)
	if errors.As(err, &fe) {
		// A FileError names the file and line itself; the wrapping around it
		// ("import <file>: ") would name the file twice.
		err = fe
	}
	if !errors.As(err, &ie) && ctx.Err() != nil && !errors.As(err, &ue) {
		ie = &interruptedError{msg: "stopped before the command finished"}
		err = ie
	}
	name := "batchctl"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	hints := rows.HintsOf(err)
	var notes []string
	if len(hints) > 0 {
		notes = append(notes, "settle it with "+flagsText(hints))
	}
	if (errors.Is(err, batch.ErrRowLocked) || errors.Is(err, batch.ErrBatchBusy)) && strings.Contains(err.Error(), "unknown outcome") {
		// The engine says what to do in words; the CLI names its command.
		notes = append(notes, "reconcile with `batchctl reconcile BATCH` (see `batchctl reconcile --help`)")
	}
	code := exitError
	switch {
	case ie != nil:
		code = exitInterrupted
	case errors.As(err, &ue):
		notes = append(notes, fmt.Sprintf("run `%s --help` for usage", name))
		code = exitUsage
	case errors.As(err, &fe):
		notes = append(notes, "the file was rejected; nothing was written")
		code = exitRejected
	case errors.Is(err, batch.ErrUnknownKind):
		code = exitUsage
	}
	if c.global.output == "json" {
		out := errorJSON{Command: name, Error: err.Error(), Exit: code, Hints: hints, Notes: notes}
		if fe != nil {
			out.File, out.Line = fe.File, fe.Line
		}
		if jerr := jsonTo(c.stderr, out); jerr == nil {
			return code
		}
	}
	fmt.Fprintf(c.stderr, "%s: %v\n", name, err)
	for _, n := range notes {
		fmt.Fprintln(c.stderr, n)
	}
	return code
}

const rootLong = `batchctl imports CSV and XLSX files into batches with per-row outcomes,
works their valid rows, and reads every row's fate back: valid or invalid
with field errors, then succeeded, failed, retrying, dead or unknown.

The embedded default is the SQLite file ./rowfate.db (no server needed);
--database postgres://... (or $DATABASE_URL) selects PostgreSQL, where any
number of workers on any number of machines share one database.

Exit codes: 0 every row succeeded (or the command did its job);
1 operational error; 2 usage error; 3 the batch finished with invalid,
failed, dead or unknown rows; 4 the file was rejected as a whole (nothing
was written); 130 interrupted.`

func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "batchctl",
		Short: "Batches with per-row outcomes: CSV and XLSX imports, exports, their rows",
		Long:  rootLong,
		Example: `  batchctl import customers customers.csv
  batchctl rows 1 --state invalid
  batchctl errors 1 -f errors.xlsx
  batchctl worker --database postgres://localhost/app --until-done`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// A root with its own Args and RunE turns an unknown command into a
		// usage error of ours instead of cobra's suggestion text.
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(c.stderr, usage(cmd))
			return &exitCode{exitUsage}
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return c.prepare(cmd) },
	}
	// --version prints what batchctl version prints.
	root.Version = buildVersion()
	if schema, err := schemaVersions(); err == nil {
		root.SetVersionTemplate(fmt.Sprintf("batchctl %s (%s)\nschema: sqlite %d, postgres %d\n", buildVersion(), runtimeVersion(), schema["sqlite"], schema["postgres"]))
	}
	f := root.PersistentFlags()
	f.StringVar(&c.global.database, "database", "", "postgres://... or a libpq key=value string for PostgreSQL, or a SQLite file (.db, .sqlite, file:PATH)\n(default $DATABASE_URL, then ./rowfate.db)")
	f.StringVar(&c.global.tenant, "tenant", batch.DefaultTenant, "tenant that owns the batches")
	f.StringVar(&c.global.schema, "pg-schema", "", "PostgreSQL schema of the engine's tables (default $ROWFATE_PG_SCHEMA, then the URL's search_path, then \"rowfate\")")
	// --schema was the PostgreSQL schema before 0.9; it is now a Table
	// Schema file only (import, preview). The old spelling elsewhere is
	// an error naming the new one, never a file read as a database schema.
	f.StringVar(&c.global.oldSchema, "schema", "", "")
	_ = f.MarkHidden("schema")
	f.StringVarP(&c.global.output, "output", "o", "text", "output format: text or json; watch and import also take jsonl (events as JSON lines)")
	f.BoolVarP(&c.global.verbose, "verbose", "v", false, "verbose logs on stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	root.AddGroup(&cobra.Group{ID: "files", Title: "Files in and out:"}, &cobra.Group{ID: "batches", Title: "Batches and their rows:"}, &cobra.Group{ID: "admin", Title: "Running the engine:"})
	for _, cmd := range []*cobra.Command{
		c.importCommand(), c.previewCommand(), c.exportCommand(), c.errorsCommand(), c.templateCommand(), c.recalcCommand(),
	} {
		cmd.GroupID = "files"
		root.AddCommand(cmd)
	}
	for _, cmd := range []*cobra.Command{c.statusCommand(), c.watchCommand(), c.rowsCommand(), c.batchesCommand(),
		c.cancelCommand(), c.pauseCommand(true), c.pauseCommand(false), c.limitCommand(), c.retryCommand(), c.reconcileCommand(),
		c.rerunCommand(), c.rowCommand(), c.historyCommand(), c.purgeCommand()} {
		cmd.GroupID = "batches"
		root.AddCommand(cmd)
	}
	for _, cmd := range []*cobra.Command{c.workerCommand(), c.serveCommand(), c.tokenCommand(), c.workerTokenCommand(), c.migrateCommand(), c.kindsCommand(), c.kindCommand(), c.schemaCommand(), c.versionCommand()} {
		cmd.GroupID = "admin"
		root.AddCommand(cmd)
	}
	root.AddCommand(c.webhookCommand(), c.retentionCommand())
	c.completions(root)
	root.SetHelpCommandGroupID("admin")
	root.SetCompletionCommandGroupID("admin")
	return root
}

// usage is the root's usage text as `batchctl --help` ends with it: with the
// help flag and the help and completion commands cobra adds on execution.
func usage(root *cobra.Command) string {
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	return root.UsageString()
}

// prepare checks the shared flags once they are parsed.
func (c *cli) prepare(cmd *cobra.Command) error {
	streaming := cmd.Annotations[streamsAnnotation] != ""
	switch o := c.global.output; {
	case o == "text", o == "json", o == "jsonl" && streaming:
	case o == "jsonl":
		return usagef("-o jsonl streams a batch's events: only batchctl watch and batchctl import take it; use -o json")
	default:
		formats := "text or json"
		if streaming {
			formats = "text, json or jsonl"
		}
		if strings.Contains(o, ".") {
			// batchctl before 0.3 took -o FILE for errors, template and export.
			return usagef("-o must be %s, not %q: name a file with -f/--file", formats, o)
		}
		return usagef("-o must be %s, not %q", formats, o)
	}
	c.global.databaseFlag = cmd.Flags().Changed("database")
	c.global.schemaFlag = cmd.Flags().Changed("pg-schema")
	if cmd.Flags().Changed("schema") && cmd.LocalNonPersistentFlags().Lookup("schema") == nil {
		return usagef("--schema is a Table Schema file, for import only; the PostgreSQL schema of the engine's tables is --pg-schema %s (or $ROWFATE_PG_SCHEMA)", shellQuote(c.global.oldSchema))
	}
	level := slog.LevelWarn
	if c.global.verbose {
		level = slog.LevelDebug
	}
	c.logger = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))
	return nil
}

func (c *cli) json(v any) error { return jsonTo(c.stdout, v) }

func jsonTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// args returns a cobra.PositionalArgs that wants exactly n arguments,
// named in the message.
func args(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) != n {
			if n == 0 {
				return usagef("%s takes no arguments", cmd.Name())
			}
			return usagef("%s needs %s, got %d arguments", cmd.Name(), what, len(a))
		}
		return nil
	}
}

// hint is the tail of a command line the CLI suggests: the --database,
// --schema and --tenant in force, so that the hint works as printed. A
// database that came from $DATABASE_URL is left out: the next command
// reads the same environment.
func (c *cli) hint() string {
	var b strings.Builder
	if c.global.databaseFlag {
		b.WriteString(" --database " + shellQuote(c.global.database))
	}
	if c.global.schemaFlag {
		b.WriteString(" --pg-schema " + shellQuote(c.global.schema))
	}
	if c.global.tenant != batch.DefaultTenant {
		b.WriteString(" --tenant " + shellQuote(c.global.tenant))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
