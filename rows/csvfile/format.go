package csvfile

import (
	"io"
	"iter"

	"github.com/rowfate/rowfate/rows"
)

// Name is the format's name: what --format takes and what a batch records
// as its source's format.
const Name = "csv"

// Format is the CSV format as package fileformat lists it. Its methods
// adapt this package's functions to the format-neutral vocabulary of rows.
type Format struct{}

// Name returns "csv".
func (Format) Name() string { return Name }

// Extensions are the names written and read as CSV: ".csv". CSV is also
// what a file no format claims is read as, whatever its name.
func (Format) Extensions() []string { return []string{".csv"} }

// Sniff reports false: CSV text has no signature, so it never claims a
// file by its content.
func (Format) Sniff(head []byte) bool { return false }

// NewReader returns a Reader of r with the options o asks of text.
func (Format) NewReader(r io.Reader, name string, o rows.ReadOptions) (rows.Reader, error) {
	cr, err := NewReader(r, name, OptionsFrom(o))
	if err != nil {
		return nil, err
	}
	return cr, nil
}

// NewWriter returns a CellWriter that has written the header.
func (Format) NewWriter(w io.Writer, header []string, o rows.WriteOptions) (rows.Writer, error) {
	cw, err := NewCellWriter(w, header, o)
	if err != nil {
		return nil, err
	}
	return cw, nil
}

// WriteErrorReport is the package's WriteErrorReport.
func (Format) WriteErrorReport(w io.Writer, title string, header []string, src iter.Seq2[rows.ReportRow, error]) (int64, error) {
	return WriteErrorReport(w, title, header, src)
}

// WriteTemplate is the package's WriteTemplate.
func (Format) WriteTemplate(w io.Writer, cols []rows.TemplateColumn, sheet string) error {
	return WriteTemplate(w, cols, sheet)
}
