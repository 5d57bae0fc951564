package csvfile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rowfate/rowfate/rows"
)

// tableState follows the shape of the rows under the header, to tell a
// second table further down the file (two exports pasted into one file)
// from data rows.
type tableState struct {
	// line is where a second table started, 0 while the rows are the
	// header's table; width is its number of cells.
	line  int64
	width int
	// peekErr is what reading ahead for the shape of the next row met: it
	// is returned once the row read ahead is.
	peekErr error
}

// shape returns the error that marks a record as no data row of the
// file's table, or nil. Two signs say a second table:
//
//   - the header again, cell for cell, when it has two cells or more
//     (files appended to each other): that row is not data, the rows
//     under it are;
//   - after a blank line, a row of another width (at least two cells)
//     followed by a row of that same width: a table of another shape, whose
//     rows are not read as data until a blank line or a row of the
//     header's width ends it.
//
// Other rows of another width are ragged, as before.
func (c *Reader) shape(rec []string, row, line int64, blank bool) *rows.FieldError {
	w := len(rec)
	switch {
	case w == len(c.header) && w >= 2 && sameCells(rec, c.header):
		c.table.line = 0
		return &rows.FieldError{Row: row, Code: rows.CodeSecondTable,
			Message: fmt.Sprintf("line %d repeats the header: it is not data (the rows under it are read as data)", line)}
	case c.table.line > 0 && !blank && w == c.table.width:
		return &rows.FieldError{Row: row, Code: rows.CodeSecondTable,
			Message: fmt.Sprintf("the row is part of a second table, which starts at line %d: it is not read as data; split the file", c.table.line)}
	case blank && w != len(c.header) && w >= 2 && c.peekWidth() == w:
		c.table.line, c.table.width = line, w
		return &rows.FieldError{Row: row, Code: rows.CodeSecondTable,
			Message: fmt.Sprintf("line %d starts a second table (after a blank line, %d columns where the header has %d): its rows are not read as data; split the file", line, w, len(c.header))}
	}
	c.table.line = 0
	return nil
}

// peekWidth reads the next non-empty record ahead, holds it back for
// Next, and returns its width: -1 for an unreadable line or the end.
func (c *Reader) peekWidth() int {
	if len(c.pending) == 0 {
		if c.table.peekErr != nil {
			return -1
		}
		if c.sp.transient {
			// The record being read is a view the read ahead must not
			// overwrite.
			c.sp.detach()
		}
		p, err := c.nextRecord()
		if err != nil {
			c.table.peekErr = err
			return -1
		}
		c.pending = append(c.pending, p)
	}
	p := c.pending[0]
	if p.bad != "" || p.blank {
		return -1
	}
	if len(p.values) > len(c.header) && blankFrom(p.values, p.drops, len(c.header)) {
		return len(c.header) // as record counts it
	}
	return len(p.values)
}

// sameCells reports whether a row repeats the header, spaces and case
// aside.
func sameCells(rec, header []string) bool {
	return slices.EqualFunc(rec, header, func(a, b string) bool {
		return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
	})
}
