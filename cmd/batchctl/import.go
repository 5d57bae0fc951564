package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
)

func cmdImport(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	workers := fs.Int("workers", 2, "concurrent workers")
	noWork := fs.Bool("no-work", false, "only ingest; leave the valid rows for `batchctl worker`")
	dryRun := fs.Bool("dry-run", false, "validate every row and report; create no batch, run no processor")
	readOpts := readFlags(fs)
	pos, err := e.parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 2 {
		return 0, usagef("import needs <kind> <file>, got %d arguments", len(pos))
	}
	kind, path := pos[0], pos[1]
	known, err := registry(nil, customers.SQLite)
	if err != nil {
		return 0, err
	}
	if !known.Has(kind) {
		return 0, usagef("unknown kind %q; known kinds: %s", kind, kindNames(known))
	}
	opts, err := readOpts()
	if err != nil {
		return 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, &rows.FileError{File: path, Err: unwrapPath(err)}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return 0, &rows.FileError{File: path, Err: errors.New("is a directory, not a file")}
	}
	if *dryRun {
		// No database: a dry run must not even create one.
		res, err := known.DryRun(ctx, batch.ImportParams{TenantID: e.tenant, Kind: kind, SourceName: path, Source: f, Read: opts})
		if err != nil {
			return 0, err
		}
		return e.printDryRun(res)
	}

	a, err := e.open(ctx, true)
	if err != nil {
		return 0, err
	}
	defer a.close()
	b, err := a.engine.Import(ctx, batch.ImportParams{TenantID: e.tenant, Kind: kind, SourceName: path, Source: f, Read: opts})
	if err != nil {
		return 0, err
	}
	for _, w := range b.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s: %s\n", path, w)
	}
	if !*noWork {
		if _, err := a.engine.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{e.tenant}, Workers: *workers, UntilDone: true}); err != nil {
			return 0, err
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("interrupted; batch %d goes on with `batchctl worker`: %w", b.ID, ctx.Err())
		}
		if b, err = a.store.BatchGet(ctx, batch.BatchGetParams{TenantID: e.tenant, ID: b.ID}); err != nil {
			return 0, err
		}
	}
	if err := e.printBatch(b, true); err != nil {
		return 0, err
	}
	return batchExit(b), nil
}

// batchExit is the exit code a batch's outcome maps to.
func batchExit(b *batch.Batch) int {
	c := b.Counts
	if c[rows.StateInvalid]+c[rows.StateFailed]+c[rows.StateDead]+c[rows.StateUnknown] > 0 {
		return exitRows
	}
	return exitOK
}

// unwrapPath drops the *PathError wrapper: the FileError names the file.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func kindNames(r *batch.Registry) string {
	s := ""
	for i, k := range r.Kinds() {
		if i > 0 {
			s += ", "
		}
		s += k.Name
	}
	return s
}
