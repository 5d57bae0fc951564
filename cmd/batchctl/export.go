package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/fileformat"
)

// exportFunc runs one export kind on a wired app.
type exportFunc func(ctx context.Context, a *app, p batch.ExportParams) (*batch.Batch, error)

// exportKinds are the export kinds batchctl knows, by name.
func exportKinds() map[string]exportFunc {
	return map[string]exportFunc{
		customers.Name: func(ctx context.Context, a *app, p batch.ExportParams) (*batch.Batch, error) {
			return batch.Export(ctx, a.engine, customers.ExportKind(a.db), p)
		},
	}
}

// cmdExport writes a kind's rows to a CSV or XLSX file and records the
// export as a batch with one outcome per row.
//
// -o names the file, as for errors and template; its extension picks the
// format (.xlsx, else CSV) unless --format says. Without -o (or with -o -)
// the file goes to standard output and the summary to standard error.
func cmdExport(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	format := fs.String("format", "", "csv or xlsx (default: from the -o file's extension, else csv)")
	sheet := fs.String("sheet", "", "XLSX sheet name (default: the kind's name)")
	e.outPath = true
	pos, err := e.parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, usagef("export needs <kind>, got %d arguments", len(pos))
	}
	if e.output == "text" || e.output == "json" {
		return 0, usagef("for export, -o names the output file (out.xlsx, out.csv), not a format")
	}
	kind := pos[0]
	exports := exportKinds()
	run, ok := exports[kind]
	if !ok {
		names := make([]string, 0, len(exports))
		for n := range exports {
			names = append(names, n)
		}
		sort.Strings(names)
		return 0, usagef("unknown export kind %q; known kinds: %s", kind, strings.Join(names, ", "))
	}
	f := fileformat.ForName(e.output)
	if *format != "" {
		if f, err = fileformat.Lookup(*format); err != nil {
			return 0, usagef("--format must be %s, not %q", orList(fileformat.Names()), *format)
		}
	}
	toStdout := e.output == "" || e.output == "-"
	if !toStdout {
		// Fail on a bad destination before opening the database.
		if st, err := os.Stat(dirOf(e.output)); err != nil || !st.IsDir() {
			return 0, fmt.Errorf("export to %s: no such folder %s", e.output, dirOf(e.output))
		}
	}

	a, err := e.open(ctx, true)
	if err != nil {
		return 0, err
	}
	defer a.close()
	w, commit, abort, err := e.outputFile()
	if err != nil {
		return 0, err
	}
	name := e.output
	if toStdout {
		name = "-"
	}
	b, err := run(ctx, a, batch.ExportParams{TenantID: e.tenant, DestName: name, Dest: w, Format: f.Name(), Write: rows.WriteOptions{Sheet: *sheet}})
	if err != nil {
		abort()
		return 0, err
	}
	if err := commit(); err != nil {
		return 0, err
	}
	if toStdout {
		e.stdout = e.stderr // the file took standard output
	}
	if err := e.printBatch(b, true); err != nil {
		return 0, err
	}
	return batchExit(b), nil
}

// orList joins names for a message: "csv or xlsx", "csv, ods or xlsx".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
