package batchctl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// previewResult is what `batchctl preview` shows (previewJSON with -o
// json).
type previewResult struct {
	File string
	batch.SourceInfo
	Header []string
	Rows   []rows.Record
	// Kind is how the header maps onto --kind's columns.
	Kind *batch.HeaderMapping
}

type previewOptions struct {
	kind string
	rows int
	read readFlags
}

func (c *cli) previewCommand() *cobra.Command {
	var o previewOptions
	cmd := &cobra.Command{
		Use:   "preview <file>",
		Short: "Show what the engine sees in a file, before anything is written",
		Long: `Show how a file is read: its format, the encoding and delimiter (CSV,
detected or as given) or the sheets and the header's row (XLSX), the
header, the first rows with any reading errors, and, with --kind, how the
header maps onto the kind's columns: matched, unknown (ignored) and
missing. It changes nothing (a kind stored from a Table Schema is read from
the database; the built-in kinds need none).

Exit code 4 when an import of the kind would reject the file's header.`,
		Example: `  batchctl preview customers.csv --kind customers
  batchctl preview export.csv --delimiter ';' --rows 10
  batchctl preview clients.xlsx --sheet 2 -o json`,
		Args: args(1, "<file>"),
		RunE: func(cmd *cobra.Command, a []string) error { return c.preview(cmd.Context(), a[0], o) },
	}
	cmd.Flags().StringVar(&o.kind, "kind", "", "also show how the header maps onto this kind's columns")
	cmd.Flags().IntVar(&o.rows, "rows", 5, "show this many data rows")
	o.read.add(cmd.Flags())
	return cmd
}

func (c *cli) preview(ctx context.Context, path string, o previewOptions) error {
	if o.rows < 0 {
		return usagef("--rows must be 0 or more, not %d", o.rows)
	}
	reg, err := c.registryWith(ctx, o.kind)
	if err != nil {
		return err
	}
	if o.kind != "" && !reg.Has(o.kind) {
		return usagef("unknown kind %q; known kinds: %s", o.kind, kindNames(reg.Kinds()))
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
	p.Kind = o.kind
	r, err := reg.OpenReader(bufio.NewReader(f), p)
	if err != nil {
		return err
	}
	defer r.Close()
	res := previewResult{File: path, SourceInfo: r.Info(), Header: r.Header(), Rows: []rows.Record{}}
	for len(res.Rows) < o.rows {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		res.Rows = append(res.Rows, rec)
	}
	if o.kind != "" {
		res.Kind = previewMapping(reg, o.kind, r.Header(), p.Conventions)
	}
	if c.global.output == "json" {
		if err := c.json(toPreviewJSON(&res)); err != nil {
			return err
		}
	} else {
		c.printPreview(&res, &o.read)
	}
	if res.Kind.Rejected() {
		// The same verdict import would give, so scripts can check a file.
		return exitWith(exitRejected)
	}
	return nil
}

func previewMapping(reg *batch.Registry, kind string, header []string, conv rows.Conventions) *batch.HeaderMapping {
	m, err := reg.HeaderMapping(kind, header, conv)
	if err != nil {
		return &batch.HeaderMapping{Kind: kind, Error: err.Error()}
	}
	return m
}

func (c *cli) printPreview(res *previewResult, read *readFlags) {
	how := func(declared bool, detected string) string {
		if declared {
			return "as given"
		}
		return detected
	}
	encGiven, delimGiven := read.declared()
	w := c.stdout
	fmt.Fprintf(w, "file       %s (%s)\n", res.File, res.Format)
	if res.Format == batch.FormatXLSX {
		fmt.Fprintf(w, "sheets     %s\n", strings.Join(quoteAll(res.Sheets), ", "))
		fmt.Fprintf(w, "sheet      %q, header on row %d\n", res.Sheet, res.HeaderRow)
	} else {
		fmt.Fprintf(w, "encoding   %s (%s)\n", res.Encoding, how(encGiven, "detected"))
		detected := "sniffed"
		if res.SepLine {
			detected = "from the file's sep= line"
		}
		fmt.Fprintf(w, "delimiter  %s (%s)\n", res.Delimiter, how(delimGiven, detected))
		if res.HeaderRow > 1 {
			fmt.Fprintf(w, "header on row %d (the rows above it are not data)\n", res.HeaderRow)
		}
	}
	fmt.Fprintf(w, "header     %s\n", strings.Join(quoteAll(res.Header), " | "))
	if len(res.Rows) == 0 {
		fmt.Fprintln(w, "no data rows")
	}
	for _, rec := range res.Rows {
		fmt.Fprintf(w, "row %-6d %s\n", rec.Row, strings.Join(quoteAll(rec.Values), " | "))
		for _, fe := range rec.Errors {
			fmt.Fprintf(w, "           ! %s\n", fieldErrorText(fe))
		}
	}
	if res.Kind == nil {
		return
	}
	k := res.Kind
	fmt.Fprintf(w, "kind %s\n", k.Kind)
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
	for _, sg := range k.Suggestions {
		fmt.Fprintf(w, "  hint     %s\n", withFlags(fmt.Sprintf("%q looks like %q, which the file lacks: the file would be rejected until it is mapped onto that column or ignored",
			sg.Header, sg.Column), sg.Hints()))
	}
	for _, m := range k.Missing {
		if m.Required {
			fmt.Fprintf(w, "  missing  %s (required: the file would be rejected)\n", m.Column)
		} else {
			fmt.Fprintf(w, "  missing  %s (optional)\n", m.Column)
		}
	}
}
