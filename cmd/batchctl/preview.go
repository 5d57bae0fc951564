package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/csvfile"
)

// readFlags adds the reader's flags to an import-like command
// (--encoding and --delimiter for CSV, --sheet and --header-row for XLSX)
// and returns a function that turns them into read options once the flags
// are parsed.
func readFlags(fs *flag.FlagSet) func() (rows.ReadOptions, error) {
	enc := fs.String("encoding", "", "character set: utf-8, utf-16, utf-16le, utf-16be, windows-1252 (default: detect)")
	delim := fs.String("delimiter", "", "field delimiter: , ; tab | or any one character (default: sniff)")
	var o rows.ReadOptions
	fs.StringVar(&o.Sheet, "sheet", "", "XLSX: sheet name or 1-based position (default: the first visible sheet)")
	fs.Int64Var(&o.HeaderRow, "header-row", 0, "XLSX: 1-based row of the header (default: the first non-empty row that is not a title)")
	return func() (rows.ReadOptions, error) {
		d, err := csvfile.ParseDelimiter(*delim)
		if err != nil {
			return rows.ReadOptions{}, usagef("--delimiter: %v", err)
		}
		if _, err := csvfile.CanonicalEncoding(*enc); err != nil {
			return rows.ReadOptions{}, usagef("--encoding: %v", err)
		}
		o.Encoding, o.Delimiter = *enc, d
		return o, nil
	}
}

// openInput opens a file to read, as a *rows.FileError when it cannot be.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &rows.FileError{File: path, Err: unwrapPath(err)}
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, &rows.FileError{File: path, Err: errors.New("is a directory, not a file")}
	}
	return f, nil
}

// previewResult is what `batchctl preview` shows, also as JSON.
type previewResult struct {
	File string `json:"file"`
	rows.SourceInfo
	Header []string      `json:"header"`
	Rows   []rows.Record `json:"rows"`
	Kind   *previewKind  `json:"kind,omitempty"`
}

type previewKind struct {
	Name    string              `json:"name"`
	Matched []rows.MappedColumn `json:"matched"`
	Unknown []string            `json:"unknown"`
	Missing []previewMissing    `json:"missing"`
	// Error is a header the kind rejects (duplicate or empty names).
	Error string `json:"error,omitempty"`
}

type previewMissing struct {
	Column   string `json:"column"`
	Required bool   `json:"required"`
}

// cmdPreview shows what the engine sees in a file before anything is
// written; it opens no database.
func cmdPreview(_ context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("preview", flag.ContinueOnError)
	kind := fs.String("kind", "", "also show how the header maps onto this kind's columns")
	n := fs.Int("rows", 5, "show this many data rows")
	readOpts := readFlags(fs)
	pos, err := e.parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, usagef("preview needs <file>, got %d arguments", len(pos))
	}
	if *n < 0 {
		return 0, usagef("--rows must be 0 or more, not %d", *n)
	}
	reg, err := registry(nil, customers.SQLite)
	if err != nil {
		return 0, err
	}
	if *kind != "" && !reg.Has(*kind) {
		return 0, usagef("unknown kind %q; known kinds: %s", *kind, kindNames(reg))
	}
	opts, err := readOpts()
	if err != nil {
		return 0, err
	}
	path := pos[0]
	f, err := openInput(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := batch.OpenReader(bufio.NewReader(f), batch.ImportParams{SourceName: path, Read: opts})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	res := previewResult{File: path, SourceInfo: r.Info(), Header: r.Header(), Rows: []rows.Record{}}
	for len(res.Rows) < *n {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		res.Rows = append(res.Rows, rec)
	}
	if *kind != "" {
		res.Kind = previewMapping(reg, *kind, r.Header())
	}
	if e.output == "json" {
		return exitOK, e.json(res)
	}
	e.printPreview(&res, opts)
	return exitOK, nil
}

func previewMapping(reg *batch.Registry, kind string, header []string) *previewKind {
	pk := &previewKind{Name: kind, Matched: []rows.MappedColumn{}, Unknown: []string{}, Missing: []previewMissing{}}
	m, err := reg.MapHeader(kind, header)
	if err != nil {
		pk.Error = err.Error()
		return pk
	}
	var required []string
	for _, k := range reg.Kinds() {
		if k.Name == kind {
			required = k.Required
		}
	}
	pk.Matched = append(pk.Matched, m.Matched()...)
	pk.Unknown = append(pk.Unknown, m.Unknown...)
	for _, c := range m.Missing {
		pk.Missing = append(pk.Missing, previewMissing{Column: c, Required: slices.Contains(required, c)})
	}
	return pk
}

func (e *env) printPreview(res *previewResult, opts rows.ReadOptions) {
	how := func(declared bool, detected string) string {
		if declared {
			return "as given"
		}
		return detected
	}
	w := e.stdout
	fmt.Fprintf(w, "file       %s (%s)\n", res.File, res.Format)
	if res.Format == batch.FormatXLSX {
		fmt.Fprintf(w, "sheets     %s\n", strings.Join(quoteAll(res.Sheets), ", "))
		fmt.Fprintf(w, "sheet      %q, header on row %d\n", res.Sheet, res.HeaderRow)
	} else {
		fmt.Fprintf(w, "encoding   %s (%s)\n", res.Encoding, how(opts.Encoding != "", "detected"))
		fmt.Fprintf(w, "delimiter  %s (%s)\n", res.Delimiter, how(opts.Delimiter != 0, "sniffed"))
	}
	fmt.Fprintf(w, "header     %s\n", strings.Join(quoteAll(res.Header), " | "))
	if len(res.Rows) == 0 {
		fmt.Fprintln(w, "no data rows")
	}
	for _, rec := range res.Rows {
		fmt.Fprintf(w, "row %-6d %s\n", rec.Row, strings.Join(quoteAll(rec.Values), " | "))
		for _, fe := range rec.Errors {
			fmt.Fprintf(w, "           ! %s\n", fe.Error())
		}
	}
	if res.Kind == nil {
		return
	}
	k := res.Kind
	fmt.Fprintf(w, "kind %s\n", k.Name)
	if k.Error != "" {
		fmt.Fprintf(w, "  the header is rejected: %s\n", k.Error)
		return
	}
	for _, mc := range k.Matched {
		fmt.Fprintf(w, "  matched  %q -> %s\n", mc.Header, mc.Column)
	}
	for _, u := range k.Unknown {
		fmt.Fprintf(w, "  unknown  %q (ignored)\n", u)
	}
	for _, m := range k.Missing {
		if m.Required {
			fmt.Fprintf(w, "  missing  %s (required: the file would be rejected)\n", m.Column)
		} else {
			fmt.Fprintf(w, "  missing  %s (optional)\n", m.Column)
		}
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// printDryRun reports a dry run; the exit code is what the import would
// have given after validation (3 when rows are invalid).
func (e *env) printDryRun(res *batch.DryRunResult) (int, error) {
	code := exitOK
	if res.Counts[rows.StateInvalid] > 0 {
		code = exitRows
	}
	if e.output == "json" {
		return code, e.json(res)
	}
	w := e.stdout
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
		fmt.Fprintf(w, "  warning: %s\n", wn)
	}
	if len(res.Errors) > 0 {
		fmt.Fprintf(w, "first errors:\n")
		for _, fe := range res.Errors {
			fmt.Fprintf(w, "  %s\n", fe.Error())
		}
	}
	return code, nil
}
