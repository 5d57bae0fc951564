package csvfile

import (
	"encoding/csv"
	"fmt"
	"io"

	"github.com/rowfate/rowfate/rows"
)

// WriterOptions tunes a Writer. The zero value writes what spreadsheet
// programs open correctly and safely.
type WriterOptions struct {
	// Comma is the field delimiter. Defaults to ','.
	Comma rune
	// NoBOM leaves out the UTF-8 byte order mark. By default one is
	// written: without it Excel reads UTF-8 as the machine's code page
	// and "Zoë" becomes "ZoÃ«".
	NoBOM bool
	// Unsafe writes cells as they are. By default every cell goes through
	// rows.SafeCell against formula injection; Reader removes that
	// apostrophe again on reading (see Options.KeepFormulaQuote).
	Unsafe bool
}

// Writer writes records as CSV with CRLF line ends, for people who open
// it in a spreadsheet program and for Reader, which reads it back.
type Writer struct {
	w      *csv.Writer
	unsafe bool
	buf    []string
}

// NewWriter writes the byte order mark (unless NoBOM) and returns a
// writer. Call Flush when done.
func NewWriter(w io.Writer, opts *WriterOptions) (*Writer, error) {
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	if o.Comma == 0 {
		o.Comma = ','
	}
	if !validDelim(o.Comma) {
		return nil, fmt.Errorf("csv writer: bad delimiter %q", o.Comma)
	}
	if !o.NoBOM {
		if _, err := io.WriteString(w, "\ufeff"); err != nil {
			return nil, fmt.Errorf("csv writer: %w", err)
		}
	}
	cw := csv.NewWriter(w)
	cw.Comma = o.Comma
	cw.UseCRLF = true
	return &Writer{w: cw, unsafe: o.Unsafe}, nil
}

// Write writes one record, each cell through rows.SafeCell unless Unsafe.
func (w *Writer) Write(record []string) error {
	if !w.unsafe {
		w.buf = w.buf[:0]
		for _, c := range record {
			w.buf = append(w.buf, rows.SafeCell(c))
		}
		record = w.buf
	}
	if err := w.w.Write(record); err != nil {
		return fmt.Errorf("csv writer: %w", err)
	}
	return nil
}

// Flush writes any buffered data and returns the first error of any
// write.
func (w *Writer) Flush() error {
	w.w.Flush()
	if err := w.w.Error(); err != nil {
		return fmt.Errorf("csv writer: %w", err)
	}
	return nil
}

// CellWriter is the rows.Writer of a CSV file: it writes typed cells as
// their text, each through Cell.Safe, so that a column opts out of formula
// protection cell by cell (Cell.Raw) rather than for the whole file. CSV
// holds any text, so WriteRow never refuses a row.
type CellWriter struct {
	w   *Writer
	buf []string
}

var _ rows.Writer = (*CellWriter)(nil)

// NewCellWriter writes the byte order mark (unless o.NoBOM) and the header,
// each header cell through rows.SafeCell, and returns the writer of the
// rows below it. o.Sheet and o.TmpDir do not apply to CSV.
func NewCellWriter(w io.Writer, header []string, o rows.WriteOptions) (*CellWriter, error) {
	cw, err := NewWriter(w, &WriterOptions{Comma: o.Comma, NoBOM: o.NoBOM, Unsafe: true})
	if err != nil {
		return nil, err
	}
	safe := make([]string, len(header))
	for i, h := range header {
		safe[i] = rows.SafeCell(h)
	}
	if err := cw.Write(safe); err != nil {
		return nil, err
	}
	return &CellWriter{w: cw}, nil
}

// WriteRow writes one row of cells, each as Cell.Safe gives it.
func (w *CellWriter) WriteRow(cells []rows.Cell) error {
	w.buf = w.buf[:0]
	for _, c := range cells {
		w.buf = append(w.buf, c.Safe())
	}
	return w.w.Write(w.buf)
}

// Close flushes what is buffered to the destination.
func (w *CellWriter) Close() error { return w.w.Flush() }

// Abort does nothing: a CSV writer holds no temporary file, and what it
// buffered is dropped with it.
func (w *CellWriter) Abort() {}
