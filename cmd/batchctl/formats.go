package main

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// readFlags are what a user can tell the reader about a file: --encoding
// and --delimiter (CSV), --sheet and --header-row (XLSX).
type readFlags struct {
	encoding  string
	delimiter string
	sheet     string
	headerRow int64
}

func (f *readFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.encoding, "encoding", "", "CSV character set: utf-8, utf-16, utf-16le, utf-16be, windows-1252 (default: detect)")
	fs.StringVar(&f.delimiter, "delimiter", "", "CSV field delimiter: , ; tab | or any one character (default: sniff)")
	fs.StringVar(&f.sheet, "sheet", "", "XLSX sheet name or 1-based position (default: the first visible sheet)")
	fs.Int64Var(&f.headerRow, "header-row", 0, "XLSX 1-based row of the header (default: the first non-empty row that is not a title)")
}

// declared reports whether the user declared the encoding and delimiter,
// for the preview's "as given" or "detected".
func (f *readFlags) declared() (encoding, delimiter bool) {
	return f.encoding != "", f.delimiter != ""
}

// apply checks the flags and sets them on p.
func (f *readFlags) apply(p *batch.ImportParams) error {
	d, err := rows.ParseDelimiter(f.delimiter)
	if err != nil {
		return usagef("--delimiter: %v", err)
	}
	if _, err := rows.CanonicalEncoding(f.encoding); err != nil {
		return usagef("--encoding: %v", err)
	}
	if f.headerRow < 0 {
		return usagef("--header-row must be 1 or more, not %d", f.headerRow)
	}
	p.CSV = &rows.CSVOptions{Encoding: f.encoding, Comma: d}
	p.XLSX = &rows.XLSXOptions{Sheet: f.sheet, HeaderRow: f.headerRow}
	return nil
}

// fileFormat is the format of a file to write: --format when given, else
// from the file's name (.xlsx is XLSX), else CSV.
func fileFormat(flag, file string) (batch.Format, error) {
	switch f := batch.Format(strings.ToLower(flag)); {
	case f == batch.FormatCSV || f == batch.FormatXLSX:
		return f, nil
	case f != "":
		return "", usagef("--format must be csv or xlsx, not %q", flag)
	}
	if strings.EqualFold(filepath.Ext(file), ".xlsx") {
		return batch.FormatXLSX, nil
	}
	return batch.FormatCSV, nil
}

// writeTemplate writes a kind's import template in a format.
func writeTemplate(w io.Writer, reg *batch.Registry, kind string, format batch.Format) error {
	if format == batch.FormatXLSX {
		cols, err := reg.TemplateColumns(kind)
		if err != nil {
			return err
		}
		return rows.WriteTemplateXLSX(w, cols, kind)
	}
	header, example, err := reg.Template(kind)
	if err != nil {
		return err
	}
	cw, err := rows.NewCSVWriter(w, nil)
	if err != nil {
		return err
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	if example != nil {
		if err := cw.Write(example); err != nil {
			return err
		}
	}
	return cw.Flush()
}
