package batchctl

import (
	"errors"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/fileformat"
)

// readFlags are what a user can tell the engine about a file: --encoding
// and --delimiter (CSV), --sheet, --header-row, and how it writes numbers
// and dates and names its columns (--locale, --decimal-comma, --date-order,
// --map).
type readFlags struct {
	encoding     string
	delimiter    string
	quote        string
	escape       string
	sheet        string
	headerRow    int64
	locale       string
	decimalComma bool
	dateOrder    string
	dateFormat   string
	renames      []string
	ignore       []string
}

func (f *readFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.encoding, "encoding", "", "CSV character set: utf-8, utf-16, utf-16le, utf-16be, windows-1252 (default: detect)")
	fs.StringVar(&f.delimiter, "delimiter", "", "CSV field delimiter: , ; tab | or any one character (default: sniff)")
	fs.StringVar(&f.quote, "quote", "", `CSV quote character: " or ' (default: ")`)
	fs.StringVar(&f.escape, "escape", "", `CSV character that escapes a quote inside a quoted cell, such as \ (default: none, quotes are doubled)`)
	fs.StringVar(&f.sheet, "sheet", "", "XLSX sheet name or 1-based position (default: the first visible sheet)")
	fs.Int64Var(&f.headerRow, "header-row", 0, "1-based row of the header (default: the first of the first 20 rows with the kind's required columns)")
	fs.StringVar(&f.locale, "locale", "", "number format of the file: en (1,234.56), de (1.234,56), fr (1 234,56), ch (1'234.56), or a language-region such as de-AT")
	fs.BoolVar(&f.decimalComma, "decimal-comma", false, "numbers are written with a decimal comma (0,5; 1.234,56; 1 234,56)")
	fs.StringVar(&f.dateOrder, "date-order", "", "order of day and month in dates such as 01/02/2025: dmy or mdy (default: settled by the file's dates; never guessed)")
	fs.StringVar(&f.dateFormat, "date-format", "", "what dates written as digits only mean (070125, 20250107): ddmmyy, yymmdd, mmddyy, ddmmyyyy, yyyymmdd, mmddyyyy, serial (Excel serial numbers), or a pattern such as %d.%m.%Y; a two-digit year 69-99 is 19yy, 00-68 20yy (default: six or eight digits are refused, never guessed)")
	fs.StringArrayVar(&f.renames, "map", nil, "map a file column to the kind's column: --map 'Amount (EUR)=amount' (repeatable)")
	fs.StringArrayVar(&f.ignore, "ignore", nil, "a file column the kind does not read, although its name looks like one of the kind's columns (which stops the import): --ignore 'Amount (EUR)' (repeatable)")
}

// declared reports whether the user declared the encoding and delimiter,
// for the preview's "as given" or "detected".
func (f *readFlags) declared() (encoding, delimiter bool) {
	return f.encoding != "", f.delimiter != ""
}

// apply checks the flags and sets them on p.
func (f *readFlags) apply(p *batch.ImportParams) error {
	o := batch.FileOptions{Encoding: f.encoding, Delimiter: f.delimiter, Quote: f.quote, Escape: f.escape, Sheet: f.sheet, HeaderRow: f.headerRow,
		Locale: f.locale, DecimalComma: f.decimalComma, DateOrder: f.dateOrder, DateFormat: f.dateFormat}
	for _, m := range f.renames {
		from, to, ok := strings.Cut(m, "=")
		if !ok || strings.TrimSpace(from) == "" || strings.TrimSpace(to) == "" {
			return usagef("--map %q: want 'file column=kind column', as in --map 'Amount (EUR)=amount'", m)
		}
		o.Renames = append(o.Renames, rows.Rename{From: strings.TrimSpace(from), To: strings.TrimSpace(to)})
	}
	o.Ignore = f.ignore
	err := o.Apply(p)
	var oe *batch.OptionError
	if errors.As(err, &oe) {
		if oe.Option == "locale" && f.locale != "" && f.decimalComma {
			return usagef("--locale and --decimal-comma both say how numbers are written: give one")
		}
		return usagef("--%s: %v", strings.ReplaceAll(oe.Option, "_", "-"), oe.Err)
	}
	return err
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
