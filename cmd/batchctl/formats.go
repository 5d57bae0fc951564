package main

import (
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/csvfile"
	"github.com/rowfate/rowfate/rows/fileformat"
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
	d, err := csvfile.ParseDelimiter(f.delimiter)
	if err != nil {
		return usagef("--delimiter: %v", err)
	}
	if _, err := csvfile.CanonicalEncoding(f.encoding); err != nil {
		return usagef("--encoding: %v", err)
	}
	if f.headerRow < 0 {
		return usagef("--header-row must be 1 or more, not %d", f.headerRow)
	}
	p.Read = rows.ReadOptions{Encoding: f.encoding, Delimiter: d, Sheet: f.sheet, HeaderRow: f.headerRow}
	return nil
}

// fileFormat is the format of a file to write: --format when given, else
// from the file's name (.xlsx is XLSX), else CSV.
func fileFormat(flag, file string) (fileformat.Format, error) {
	if flag == "" {
		return fileformat.ForName(file), nil
	}
	f, err := fileformat.Lookup(flag)
	if err != nil {
		return nil, usagef("--format must be %s, not %q", strings.Join(fileformat.Names(), " or "), flag)
	}
	return f, nil
}

// writeTemplate writes a kind's import template in a format.
func writeTemplate(w io.Writer, reg *batch.Registry, kind string, format fileformat.Format) error {
	cols, err := reg.TemplateColumns(kind)
	if err != nil {
		return err
	}
	return format.WriteTemplate(w, cols, kind)
}

// fileFlags name the file a command writes and its format: -f/--file and
// --format.
type fileFlags struct {
	file   string
	format string
}

func (f *fileFlags) add(fs *pflag.FlagSet, what string) {
	fs.StringVarP(&f.file, "file", "f", "", "write the "+what+" to this file (default: standard output)")
	fs.StringVar(&f.format, "format", "", "csv or xlsx (default: from the --file name, else csv)")
}

// toStdout reports whether the file is standard output.
func (f *fileFlags) toStdout() bool { return f.file == "" || f.file == "-" }

// resolve returns the file's format.
func (f *fileFlags) resolve() (fileformat.Format, error) { return fileFormat(f.format, f.file) }
