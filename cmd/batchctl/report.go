package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/fileformat"
)

// outputFile opens the file -o names for a command whose output is a
// file, or standard output for "" and "-". The file is written to a
// temporary name and renamed on commit, so a failed report never leaves a
// half file behind.
func (e *env) outputFile() (w io.Writer, commit func() error, abort func(), err error) {
	if e.output == "" || e.output == "-" {
		return e.stdout, func() error { return nil }, func() {}, nil
	}
	tmp, err := os.CreateTemp(dirOf(e.output), ".batchctl-*.tmp")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create %s: %w", e.output, err)
	}
	// CreateTemp makes the file private (0600); a report or export is an
	// ordinary file, so give it the mode os.Create would (0666 less umask:
	// Chmod does not apply the umask, so take the common 022 off).
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, nil, nil, fmt.Errorf("create %s: %w", e.output, err)
	}
	commit = func() error {
		if err := tmp.Close(); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", e.output, err)
		}
		if err := os.Rename(tmp.Name(), e.output); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", e.output, err)
		}
		return nil
	}
	abort = func() { tmp.Close(); os.Remove(tmp.Name()) }
	return tmp, commit, abort, nil
}

func dirOf(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[:i+1]
	}
	return "."
}

// cmdErrors writes a batch's problem rows as a CSV to fix and import again.
func cmdErrors(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("errors", flag.ContinueOnError)
	states := fs.String("state", "", "comma-separated states to list (default: invalid,failed,dead,unknown)")
	e.outPath = true
	pos, err := e.parse(fs, args)
	if err != nil {
		return 0, err
	}
	id, err := batchArg(pos)
	if err != nil {
		return 0, err
	}
	var want []rows.State
	if *states != "" {
		for _, s := range strings.Split(*states, ",") {
			st := rows.State(strings.TrimSpace(s))
			if !st.Valid() {
				return 0, usagef("unknown state %q", s)
			}
			want = append(want, st)
		}
	}
	a, err := e.open(ctx, false)
	if err != nil {
		return 0, err
	}
	defer a.close()
	w, commit, abort, err := e.outputFile()
	if err != nil {
		return 0, err
	}
	n, err := a.engine.ErrorReport(ctx, batch.ErrorReportParams{TenantID: e.tenant, BatchID: id, States: want, Format: fileformat.ForName(e.output).Name()}, w)
	if err != nil {
		abort()
		return 0, err
	}
	if err := commit(); err != nil {
		return 0, err
	}
	if e.output != "" && e.output != "-" {
		kind := "<kind>"
		if b, err := a.store.BatchGet(ctx, batch.BatchGetParams{TenantID: e.tenant, ID: id}); err == nil {
			kind = b.Kind
		}
		fmt.Fprintf(e.stderr, "wrote %d rows to %s; fix them and run: batchctl import %s %s%s\n", n, e.output, kind, e.output, e.flagsHint())
	}
	return exitOK, nil
}

// cmdTemplate writes an empty file with a kind's header and example row.
func cmdTemplate(_ context.Context, e *env, args []string) (int, error) {
	e.outPath = true
	pos, err := e.parse(flag.NewFlagSet("template", flag.ContinueOnError), args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, usagef("template needs <kind>, got %d arguments", len(pos))
	}
	reg, err := registry(nil, customers.SQLite)
	if err != nil {
		return 0, err
	}
	if !reg.Has(pos[0]) {
		return 0, usagef("unknown kind %q; known kinds: %s", pos[0], kindNames(reg))
	}
	cols, err := reg.TemplateColumns(pos[0])
	if err != nil {
		return 0, err
	}
	w, commit, abort, err := e.outputFile()
	if err != nil {
		return 0, err
	}
	// The -o file's extension picks the format (.xlsx, else CSV); a
	// template to standard output is CSV.
	if err := fileformat.ForName(e.output).WriteTemplate(w, cols, pos[0]); err != nil {
		abort()
		return 0, err
	}
	return exitOK, commit()
}
