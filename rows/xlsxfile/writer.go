package xlsxfile

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"

	"github.com/rowfate/rowfate/rows"
)

// Codes of the rows the XLSX writer cannot put in a file. The file stays
// good; the row is left out and its outcome is the error. Like every code,
// they are persisted and never renamed.
const (
	CodeBadCharacter rows.Code = "bad_character"
	CodeSheetFull    rows.Code = "sheet_full"
)

// xlsxMaxCellChars is the longest text an XLSX cell holds, in UTF-16 units.
const xlsxMaxCellChars = 32_767

// WriterOptions tunes a Writer. The zero value is usable.
type WriterOptions struct {
	// Sheet names the sheet. Defaults to "Sheet1".
	Sheet string
	// TmpDir is where excelize spills the sheet while it is written.
	// Defaults to os.TempDir().
	TmpDir string
}

// Writer writes one sheet of an XLSX workbook streaming (excelize's
// StreamWriter): a header row in bold, frozen so it stays in view, then
// one row per WriteRow, typed (numbers, booleans, dates) and with text cells
// as they are: a workbook never evaluates a text cell (a formula is a cell
// of another kind), so they need none of the apostrophe rows.SafeCell puts
// in front of = + - @ for CSV, which a spreadsheet would show ('-42).
// Memory stays flat: the sheet
// spills to TmpDir as it grows, and the workbook is zipped to the
// destination by Close.
type Writer struct {
	w      io.Writer
	f      *excelize.File
	sw     *excelize.StreamWriter
	sheet  string
	header []string
	cols   int
	row    int // last row written
	date   int // style ids
	stamp  int
	buf    []any
	cells  []excelize.Cell
	done   bool
}

// NewWriter starts a workbook with header as its first row.
func NewWriter(w io.Writer, header []string, opts *WriterOptions) (*Writer, error) {
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	if o.Sheet == "" {
		o.Sheet = "Sheet1"
	}
	if len(header) == 0 || len(header) > xlsxMaxCols {
		return nil, fmt.Errorf("xlsx writer: %d columns", len(header))
	}
	f := excelize.NewFile(excelize.Options{TmpDir: o.TmpDir})
	x := &Writer{w: w, f: f, sheet: o.Sheet, header: header, cols: len(header)}
	if err := x.start(header); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("xlsx writer: %w", err)
	}
	return x, nil
}

func (x *Writer) start(header []string) error {
	if x.sheet != "Sheet1" {
		if err := x.f.SetSheetName("Sheet1", x.sheet); err != nil {
			return err
		}
	}
	var err error
	dateFmt, stampFmt := "yyyy-mm-dd", "yyyy-mm-dd hh:mm:ss"
	if x.date, err = x.f.NewStyle(&excelize.Style{CustomNumFmt: &dateFmt}); err != nil {
		return err
	}
	if x.stamp, err = x.f.NewStyle(&excelize.Style{CustomNumFmt: &stampFmt}); err != nil {
		return err
	}
	head, err := x.f.NewStyle(xlsxHeaderStyle())
	if err != nil {
		return err
	}
	if x.sw, err = x.f.NewStreamWriter(x.sheet); err != nil {
		return err
	}
	if err := x.sw.SetPanes(&excelize.Panes{Freeze: true, YSplit: 1, TopLeftCell: "A2", ActivePane: "bottomLeft",
		Selection: []excelize.Selection{{SQRef: "A2", ActiveCell: "A2", Pane: "bottomLeft"}}}); err != nil {
		return err
	}
	for i, h := range header {
		width := float64(utf8.RuneCountInString(h)) + 4
		if err := x.sw.SetColWidth(i+1, i+1, min(max(width, 12), 60)); err != nil {
			return err
		}
	}
	cells := make([]any, len(header))
	for i, h := range header {
		cells[i] = excelize.Cell{StyleID: head, Value: h}
	}
	x.row = 1
	return x.sw.SetRow("A1", cells, excelize.RowOpts{StyleID: head})
}

// xlsxHeaderStyle is the header row's look: bold on light grey with a
// rule below.
func xlsxHeaderStyle() *excelize.Style {
	return &excelize.Style{
		Font:      &excelize.Font{Bold: true},
		Fill:      excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"D9D9D9"}},
		Border:    []excelize.Border{{Type: "bottom", Color: "808080", Style: 1}},
		Alignment: &excelize.Alignment{Vertical: "center"},
	}
}

// Rows returns the number of data rows written.
func (x *Writer) Rows() int64 { return int64(x.row - 1) }

// WriteRow writes one row. A row the format cannot hold (a cell longer than
// 32,767 characters, a control character, a full sheet) is not written and
// is returned as a *rows.FieldError naming the column; the file stays good and
// the next row can be written. Any other error is the writer's and ends
// the file.
func (x *Writer) WriteRow(cells []rows.Cell) error {
	if x.done {
		return errors.New("xlsx writer: closed")
	}
	if x.row >= xlsxMaxRows {
		return &rows.FieldError{Code: CodeSheetFull, Message: fmt.Sprintf("an XLSX sheet holds at most %d rows", xlsxMaxRows)}
	}
	if len(cells) > x.cols {
		return fmt.Errorf("xlsx writer: %d cells for %d columns", len(cells), x.cols)
	}
	name := func(i int) string {
		if i < len(x.header) {
			return x.header[i]
		}
		return xlsxColName(i + 1)
	}
	x.buf = x.buf[:0]
	x.cells = x.cells[:0]
	for i, c := range cells {
		var v excelize.Cell
		switch c.Type {
		case rows.CellNumber:
			if f, ok := xlsxExactFloat(c.Text); ok {
				v.Value = f
			} else {
				v.Value = c.Text // more digits than a double keeps: text loses none
			}
		case rows.CellBool:
			v.Value = c.Text == "true"
		case rows.CellDate, rows.CellDateTime:
			if c.Time.IsZero() {
				break
			}
			v.Value, v.StyleID = c.Time, x.date
			if c.Type == rows.CellDateTime {
				v.StyleID = x.stamp
			}
		default:
			s := c.Text
			if s == "" {
				break
			}
			if err := xlsxCheckText(s); err != nil {
				err.Column = name(i)
				return err
			}
			v.Value = s
		}
		x.cells = append(x.cells, v)
	}
	for i := range x.cells {
		if x.cells[i].Value == nil {
			x.buf = append(x.buf, nil)
			continue
		}
		x.buf = append(x.buf, x.cells[i])
	}
	x.row++
	if err := x.sw.SetRow("A"+strconv.Itoa(x.row), x.buf); err != nil {
		return fmt.Errorf("xlsx writer: row %d: %w", x.row, err)
	}
	return nil
}

// xlsxCheckText refuses text an XLSX cell cannot hold as it is: excelize
// would cut it at 32,767 characters or turn control characters into U+FFFD,
// silently.
func xlsxCheckText(s string) *rows.FieldError {
	if !utf8.ValidString(s) {
		return &rows.FieldError{Code: rows.CodeBadEncoding, Message: "is not valid UTF-8"}
	}
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++ // a surrogate pair in UTF-16
		}
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0xFFFE || r == 0xFFFF || utf16.IsSurrogate(r) {
			return &rows.FieldError{Code: CodeBadCharacter, Message: fmt.Sprintf("holds the control character %U, which an XLSX cell cannot store", r)}
		}
	}
	if n > xlsxMaxCellChars {
		return &rows.FieldError{Code: rows.CodeCellTooLong, Message: fmt.Sprintf("is %d characters, more than an XLSX cell holds (%d)", n, xlsxMaxCellChars)}
	}
	return nil
}

// xlsxExactFloat parses a number to store as a number cell: one of at most
// 15 significant digits, which Excel (and excelize, which cuts the rest)
// keeps exactly. A number with more (an int64 id, a float's noise digits,
// a long decimal) is better stored as text than rounded: it reads back
// as written.
func xlsxExactFloat(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	mant, _, _ := strings.Cut(strings.ToLower(s), "e")
	digits := strings.Trim(strings.NewReplacer("-", "", "+", "", ".", "").Replace(mant), "0")
	if !strings.Contains(mant, ".") {
		digits = strings.TrimRight(strings.TrimLeft(mant, "+-0"), "0") // 1200 has 2
	}
	return f, len(digits) <= 15
}

// Close finishes the sheet, zips the workbook to the destination and
// removes the temporary files.
func (x *Writer) Close() error {
	if x.done {
		return nil
	}
	x.done = true
	defer x.f.Close()
	if err := x.sw.Flush(); err != nil {
		return fmt.Errorf("xlsx writer: %w", err)
	}
	if err := writeWorkbook(x.f, x.w); err != nil {
		return fmt.Errorf("xlsx writer: %w", err)
	}
	return nil
}

// writeWorkbook zips f straight into w. excelize's File.Write builds the
// whole zip in a bytes.Buffer first (WriteTo calls WriteToBuffer), which
// made a 1M-row export's peak RSS grow with the file (75 MiB at 100k rows,
// 119 MiB at 1M). Its documented SetZipWriter hook lets the zip writer
// point at w instead, so the buffer excelize fills stays empty.
func writeWorkbook(f *excelize.File, w io.Writer) error {
	var zw *zip.Writer
	f.SetZipWriter(func(io.Writer) excelize.ZipWriter {
		zw = zip.NewWriter(w)
		return zw
	})
	buf, err := f.WriteToBuffer()
	if err != nil {
		return err
	}
	if zw == nil || buf.Len() != 0 {
		return fmt.Errorf("excelize did not write through the zip writer hook (%d bytes buffered)", buf.Len())
	}
	return nil
}

// Abort discards the workbook and removes the temporary files.
func (x *Writer) Abort() {
	if !x.done {
		x.done = true
		_ = x.f.Close()
	}
}
