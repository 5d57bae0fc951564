// Package fileformat is the one place that knows which file formats exist
// and decides which one a file is: by its content, then its name, to read
// it (Detect, Open); by its name to write it (ForName); by the name a user
// typed (Lookup). Each format is a sibling package of rows (csvfile,
// xlsxfile) whose Format value implements Format here, so the engine and
// the command line read and write every format through package rows'
// vocabulary and never name a format's package.
//
// Adding a format is a new sibling package and one line in known. The
// architecture is described in ARCHITECTURE.md at the repository root.
package fileformat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/csvfile"
	"github.com/rowfate/rowfate/rows/xlsxfile"
)

// The names of the formats, as Format.Name returns them, --format takes
// them and a batch records them.
const (
	CSV  = csvfile.Name
	XLSX = xlsxfile.Name
)

// Format is one file format: how to recognise a file of it, and how to
// read, write, report and template in it.
type Format interface {
	// Name is the format's name: "csv", "xlsx".
	Name() string
	// Extensions are the lower-case name endings, with the dot, read as
	// this format when no format claims the content. The first is what a
	// file written in the format is named, and the only one ForName goes
	// by.
	Extensions() []string
	// Sniff reports whether head, the start of a file (at most HeadBytes),
	// is this format's by its content.
	Sniff(head []byte) bool
	// NewReader reads r, naming it name in errors, with what of o applies
	// to the format. The header is read; a rejected file is a
	// *rows.FileError.
	NewReader(r io.Reader, name string, o rows.ReadOptions) (rows.Reader, error)
	// NewWriter writes header to w and returns the writer of the rows.
	NewWriter(w io.Writer, header []string, o rows.WriteOptions) (rows.Writer, error)
	// WriteErrorReport writes an import's problem rows as a file to fix
	// and import again: header, then a row and an error column; title
	// (rows.ReportTitle, when not "") names the batch the report came
	// from, where a reader finds it again (SourceInfo.Titles or Subject).
	// It returns the number of rows written.
	WriteErrorReport(w io.Writer, title string, header []string, src iter.Seq2[rows.ReportRow, error]) (int64, error)
	// WriteTemplate writes an empty file with the columns' header and the
	// example row; sheet names a workbook's sheet.
	WriteTemplate(w io.Writer, cols []rows.TemplateColumn, sheet string) error
}

// known lists the formats, in the order Detect asks them. A function, not a
// variable, so that no package state can be changed under the engine.
func known() []Format {
	return []Format{
		xlsxfile.Format{},
		csvfile.Format{},
	}
}

// HeadBytes is how much of the start of a file Detect needs to tell the
// formats apart by content.
const HeadBytes = 512

// ErrUnknown is wrapped by Lookup's error for a name no format has.
var ErrUnknown = errors.New("unknown format")

// Default returns the format of a file nothing else claims: CSV.
func Default() Format { return csvfile.Format{} }

// Detect decides the format of a file to read: the first format whose
// Sniff claims head (the start of the file, HeadBytes are enough), else
// the first whose Extensions hold the name's extension (case-insensitive),
// else Default. Content comes first so that a workbook uploaded under any
// name is read, or refused with what it really is (an .xls, an .ods), as a
// workbook rather than as garbled text.
func Detect(head []byte, name string) Format {
	formats := known()
	for _, f := range formats {
		if f.Sniff(head) {
			return f
		}
	}
	ext := strings.ToLower(filepath.Ext(name))
	for _, f := range formats {
		if slices.Contains(f.Extensions(), ext) {
			return f
		}
	}
	return Default()
}

// ForName decides the format of a file to write from its name: the format
// whose files are named so (.xlsx is XLSX; case-insensitive), else
// Default, which is also what standard output ("" or "-") gets.
func ForName(name string) Format {
	ext := strings.ToLower(filepath.Ext(name))
	for _, f := range known() {
		if exts := f.Extensions(); len(exts) > 0 && exts[0] == ext {
			return f
		}
	}
	return Default()
}

// Lookup returns the format named name, case-insensitively. An unknown name
// is an error wrapping ErrUnknown that lists the known ones.
func Lookup(name string) (Format, error) {
	for _, f := range known() {
		if strings.EqualFold(f.Name(), name) {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%w %q: the formats are %s", ErrUnknown, name, strings.Join(Names(), ", "))
}

// Names lists the formats' names, sorted.
func Names() []string {
	var out []string
	for _, f := range known() {
		out = append(out, f.Name())
	}
	slices.Sort(out)
	return out
}

// Open returns the reader of src in the named format or, when format is
// "", in the format Detect decides from the start of src (peeked, not
// consumed) and name. An unknown format is an error wrapping ErrUnknown;
// a file the format's reader rejects is a *rows.FileError. Close the
// reader when done: a workbook reader holds temporary files.
func Open(src *bufio.Reader, name string, format string, o rows.ReadOptions) (rows.Reader, error) {
	var f Format
	if format == "" {
		head, _ := src.Peek(HeadBytes) // a short file peeks short; its errors resurface on Read
		f = Detect(head, name)
	} else {
		var err error
		if f, err = Lookup(format); err != nil {
			return nil, err
		}
	}
	return f.NewReader(src, name, o)
}

// Delimiter reads a CSV delimiter as users type it: one character, or a
// name (comma, semicolon, tab, pipe, \t); "" is 0, detect it. The engine
// checks its read options here, where the formats are known, not in a
// format's package.
func Delimiter(s string) (rune, error) { return csvfile.ParseDelimiter(s) }

// Encoding checks a character set's name as users type it and returns
// its canonical name; "" is "", detect it.
func Encoding(name string) (string, error) { return csvfile.CanonicalEncoding(name) }
