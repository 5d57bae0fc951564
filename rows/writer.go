package rows

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CellType is how a Cell's value is meant: it decides the cell type a
// workbook stores. Text formats have only text.
type CellType uint8

// The cell types.
const (
	CellText     CellType = iota // text; formula-protected by SafeCell unless Raw
	CellNumber                   // Text is a number in Go syntax (strconv)
	CellBool                     // Text is "true" or "false"
	CellDate                     // Time, shown as a date
	CellDateTime                 // Time, shown as date and time
)

// Cell is one value to write. Text is the value as text: what a CSV file
// holds and what a batch stores; a workbook writer stores it typed.
type Cell struct {
	Type CellType
	Text string
	// Time is the value of a CellDate or CellDateTime; the zero time is an
	// empty cell. The wall clock is written: workbook times have no zone.
	Time time.Time
	// Raw writes a text cell as it is, without SafeCell's apostrophe: for
	// columns whose values are known to be data (a phone number "+44 ...").
	Raw bool
}

// Safe returns the cell's text as a file should hold it: through SafeCell
// unless the cell is Raw or not text (a number or date formatted by Go can
// not be a formula).
func (c Cell) Safe() string {
	if c.Type != CellText || c.Raw {
		return c.Text
	}
	return SafeCell(c.Text)
}

// Writer writes one file of rows under a header given when it is made.
// Every format's writer implements it, so that an export writes a file
// without knowing its format.
type Writer interface {
	// WriteRow writes one row. A *FieldError is a row the format cannot
	// hold (a cell too long for it, a full sheet): the row is not written,
	// the file stays good and the next row can be written. Any other error
	// is the writer's and ends the file.
	WriteRow(cells []Cell) error
	// Close finishes the file and flushes it to its destination.
	Close() error
	// Abort discards the file and removes its temporary files; the
	// destination may hold a partial file.
	Abort()
}

// WriteOptions is what a user can tell the writer of any format; each
// field applies to the formats that have the notion. The zero value writes
// what spreadsheet programs open correctly and safely.
type WriteOptions struct {
	// Sheet names a workbook's sheet. Defaults to the format's ("Sheet1").
	Sheet string
	// TmpDir is where a writer that spills (a workbook's sheet) writes its
	// temporary files. Defaults to os.TempDir().
	TmpDir string
	// Comma is a delimited text file's field delimiter. Defaults to ','.
	Comma rune
	// NoBOM leaves out the UTF-8 byte order mark of a text file. By default
	// one is written: without it Excel reads UTF-8 as the machine's code
	// page and "Zoë" becomes "ZoÃ«".
	NoBOM bool
}

// The columns an error report adds after the file's own: the row number in
// the original file and every message of the row.
const (
	ReportRowColumn   = "row"
	ReportErrorColumn = "error"
)

// ReportTitle is the line an error report carries above its header (CSV)
// or as its document's subject (XLSX): it names the batch the report came
// from, so that importing the fixed report re-runs that batch instead of
// starting an unrelated one (see ParseReportTitle).
func ReportTitle(batchID int64, kind string) string {
	return fmt.Sprintf("%s%d (%s): fix the rows below and import this file again to re-run the batch", reportTitlePrefix, batchID, kind)
}

const reportTitlePrefix = "rowfate error report of batch "

// ParseReportTitle returns the batch a report title names.
func ParseReportTitle(title string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(title), reportTitlePrefix)
	if !ok {
		return 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end <= 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(rest[:end], 10, 64)
	return id, err == nil && id > 0
}

// ReportRow is one row of an error report: its cells as the file had them,
// its row number there, and why it was not accepted.
type ReportRow struct {
	Row    int64
	Values []string
	Errors []FieldError
}

// ExampleMarker is the cell a template writes just past the last column of
// its example row. An import leaves out a row only when it repeats the
// kind's example row and carries this cell: the file is the template. A
// data row that happens to equal the examples (a schema's example values
// are often a real row) is imported like any other.
const ExampleMarker = "← example row: not imported"

// TemplateColumn is one column of an import template.
type TemplateColumn struct {
	// Name is the header as the kind declares it.
	Name string
	// Example is the example row's cell.
	Example string
	// Required marks the header cell and notes it in a comment.
	Required bool
	// Enum, when set, is the list a dropdown offers in the column's cells.
	Enum []string
	// Note is added to the header cell's comment (a format, a range).
	Note string
}
