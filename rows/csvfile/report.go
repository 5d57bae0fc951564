package csvfile

import (
	"io"
	"iter"
	"strconv"

	"github.com/rowfate/rowfate/rows"
)

// WriteErrorReport writes an import's problem rows as a CSV file a user can
// fix and import again: UTF-8 with a byte order mark, the title (when not
// "") alone on the first line, which a reader passes over as a title row
// and keeps in SourceInfo.Titles, the file's columns (header), then rows.ReportRowColumn (the row number in the original file)
// and rows.ReportErrorColumn (every message of the row, as
// rows.FieldErrors joins them). Every cell goes through rows.SafeCell,
// which Reader takes off again, so the fixed file imports as written.
//
// An error from src ends the report and is returned as it is; what was
// written so far stays unflushed. It returns the number of rows written.
func WriteErrorReport(w io.Writer, title string, header []string, src iter.Seq2[rows.ReportRow, error]) (int64, error) {
	cw, err := NewWriter(w, nil)
	if err != nil {
		return 0, err
	}
	if title != "" {
		if err := cw.Write([]string{title}); err != nil {
			return 0, err
		}
	}
	rec := make([]string, 0, len(header)+2)
	rec = append(append(rec, header...), rows.ReportRowColumn, rows.ReportErrorColumn)
	if err := cw.Write(rec); err != nil {
		return 0, err
	}
	var n int64
	for r, err := range src {
		if err != nil {
			return n, err
		}
		rec = append(append(rec[:0], r.Values...), strconv.FormatInt(r.Row, 10), rows.FieldErrors(r.Errors).Error())
		if err := cw.Write(rec); err != nil {
			return n, err
		}
		n++
	}
	return n, cw.Flush()
}

// WriteTemplate writes an import template as CSV: the header, then the
// example row when any column has an example. Every cell goes through
// rows.SafeCell. A CSV file has no sheet, no comments and no dropdowns, so
// sheet, Required, Enum and Note do not apply.
func WriteTemplate(w io.Writer, cols []rows.TemplateColumn, sheet string) error {
	cw, err := NewWriter(w, nil)
	if err != nil {
		return err
	}
	header := make([]string, len(cols))
	example := make([]string, len(cols))
	hasExample := false
	for i, c := range cols {
		header[i], example[i] = c.Name, c.Example
		hasExample = hasExample || c.Example != ""
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	if hasExample {
		if err := cw.Write(append(example, rows.ExampleMarker)); err != nil {
			return err
		}
	}
	return cw.Flush()
}
