package rows

import (
	"encoding/csv"
	"fmt"
	"io"
)

// CSVWriterOptions tunes a CSVWriter. The zero value writes what
// spreadsheet programs open correctly and safely.
type CSVWriterOptions struct {
	// Comma is the field delimiter. Defaults to ','.
	Comma rune
	// NoBOM leaves out the UTF-8 byte order mark. By default one is
	// written: without it Excel reads UTF-8 as the machine's code page
	// and "Zoë" becomes "ZoÃ«".
	NoBOM bool
	// Unsafe writes cells as they are. By default every cell goes through
	// SafeCell against formula injection; CSVReader removes that
	// apostrophe again on reading (see CSVOptions.KeepFormulaQuote).
	Unsafe bool
}

// CSVWriter writes records as CSV with CRLF line ends, for people who open
// it in a spreadsheet program and for CSVReader, which reads it back.
type CSVWriter struct {
	w      *csv.Writer
	unsafe bool
	buf    []string
}

// NewCSVWriter writes the byte order mark (unless NoBOM) and returns a
// writer. Call Flush when done.
func NewCSVWriter(w io.Writer, opts *CSVWriterOptions) (*CSVWriter, error) {
	var o CSVWriterOptions
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
	return &CSVWriter{w: cw, unsafe: o.Unsafe}, nil
}

// Write writes one record, each cell through SafeCell unless Unsafe.
func (w *CSVWriter) Write(record []string) error {
	if !w.unsafe {
		w.buf = w.buf[:0]
		for _, c := range record {
			w.buf = append(w.buf, SafeCell(c))
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
func (w *CSVWriter) Flush() error {
	w.w.Flush()
	if err := w.w.Error(); err != nil {
		return fmt.Errorf("csv writer: %w", err)
	}
	return nil
}
