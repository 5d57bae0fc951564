package xlsxfile

import (
	"bytes"
	"io"
	"iter"

	"github.com/rowfate/rowfate/rows"
)

// Name is the format's name: what --format takes and what a batch records
// as its source's format.
const Name = "xlsx"

// Format is the XLSX format as package fileformat lists it. Its methods
// adapt this package's functions to the format-neutral vocabulary of rows.
type Format struct{}

// Name returns "xlsx".
func (Format) Name() string { return Name }

// Extensions are the names read as a workbook when the content does not
// decide: Excel's workbooks and templates, and .xls, so that a legacy
// workbook is named as such rather than read as text. A file written as
// XLSX is named .xlsx, the first.
func (Format) Extensions() []string { return []string{".xlsx", ".xlsm", ".xls", ".xltx", ".xltm"} }

// Sniff reports whether head, the start of a file, is a zip's or an OLE
// compound file's: the XLSX reader takes both, and names what an OLE file
// (an .xls, an encrypted workbook) or a zip that is no workbook (.ods,
// .xlsb) really is, rather than have it read as garbled text. 8 bytes are
// enough.
func (Format) Sniff(head []byte) bool {
	return bytes.HasPrefix(head, xlsxZipMagic) || bytes.HasPrefix(head, xlsxOLEMagic)
}

// NewReader returns a Reader of r with the options o asks of a workbook.
func (Format) NewReader(r io.Reader, name string, o rows.ReadOptions) (rows.Reader, error) {
	xr, err := NewReader(r, name, OptionsFrom(o))
	if err != nil {
		return nil, err
	}
	return xr, nil
}

// NewWriter returns a Writer of one sheet named o.Sheet (default "Sheet1")
// spilling to o.TmpDir, with header as its first row.
func (Format) NewWriter(w io.Writer, header []string, o rows.WriteOptions) (rows.Writer, error) {
	xw, err := NewWriter(w, header, &WriterOptions{Sheet: o.Sheet, TmpDir: o.TmpDir})
	if err != nil {
		return nil, err
	}
	return xw, nil
}

// WriteErrorReport is the package's WriteErrorReport.
func (Format) WriteErrorReport(w io.Writer, title string, header []string, src iter.Seq2[rows.ReportRow, error]) (int64, error) {
	return WriteErrorReport(w, title, header, src)
}

// WriteTemplate is the package's WriteTemplate.
func (Format) WriteTemplate(w io.Writer, cols []rows.TemplateColumn, sheet string) error {
	return WriteTemplate(w, cols, sheet)
}
