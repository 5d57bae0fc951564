package xlsxfile

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"

	"github.com/rowfate/rowfate/rows"
)

// xlsxMaxComments caps the cell comments of a report: excelize keeps
// comments in memory until the file is written. Past the cap, bad cells are
// still highlighted and the error column still says why.
const xlsxMaxComments = 20_000

// WriteErrorReport writes an import's problem rows as a workbook a user
// can fix and upload again: the file's columns (header), then
// rows.ReportRowColumn (the row number in the original file) and
// rows.ReportErrorColumn (every message of the row). The header is bold and
// frozen; each cell an error names is filled red and carries a comment with
// its message (the first 20,000; the rest are only filled); an error of the
// whole row marks the error cell. Text is written as text, without
// rows.SafeCell's apostrophe (see Writer), so the fixed file imports as
// typed. The sheet, named
// "Errors", is written streaming. The title (when not "") is the
// document's subject, which Reader returns in SourceInfo.Subject. It
// returns the number of rows written.
func WriteErrorReport(w io.Writer, title string, header []string, src iter.Seq2[rows.ReportRow, error]) (int64, error) {
	return writeErrorReport(w, title, header, src, nil)
}

// writeErrorReport is WriteErrorReport with the writer's options, which
// only tests set (a TmpDir of their own).
func writeErrorReport(w io.Writer, title string, header []string, src iter.Seq2[rows.ReportRow, error], opts *WriterOptions) (int64, error) {
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	if o.Sheet == "" {
		o.Sheet = "Errors"
	}
	full := append(append([]string(nil), header...), rows.ReportRowColumn, rows.ReportErrorColumn)
	xw, err := NewWriter(w, full, &o)
	if err != nil {
		return 0, err
	}
	rs, err := newReportSheet(xw, header)
	if err != nil {
		xw.Abort()
		return 0, fmt.Errorf("xlsx report: %w", err)
	}
	if title != "" {
		if err := xw.f.SetDocProps(&excelize.DocProperties{Subject: title, Title: "Error report"}); err != nil {
			xw.Abort()
			return 0, fmt.Errorf("xlsx report: %w", err)
		}
	}
	var n int64
	for r, err := range src {
		if err != nil {
			xw.Abort()
			return n, err
		}
		if err := rs.write(r); err != nil {
			xw.Abort()
			return n, err
		}
		n++
	}
	return n, xw.Close()
}

// reportSheet writes the rows of an error report below the header that
// NewWriter wrote: the file's cells, the row number, the messages, and
// the marks on the cells the errors name.
type reportSheet struct {
	xw       *Writer
	header   []string       // the file's columns, without row and error
	colOf    map[string]int // normalised column name → index
	bad      int            // style of a cell an error names
	comments int            // comments added so far
	cells    []any
}

func newReportSheet(xw *Writer, header []string) (*reportSheet, error) {
	bad, err := xw.f.NewStyle(&excelize.Style{
		Fill: excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"FFC7CE"}},
		Font: &excelize.Font{Color: "9C0006"},
	})
	if err != nil {
		return nil, err
	}
	colOf := make(map[string]int, len(header))
	for i, h := range header {
		colOf[rows.NormalizeHeader(h)] = i
	}
	return &reportSheet{xw: xw, header: header, colOf: colOf, bad: bad, cells: make([]any, len(header)+2)}, nil
}

// errCol is the index of the error column, where errors of the whole row
// (and of columns the header lacks) are marked.
func (s *reportSheet) errCol() int { return len(s.header) + 1 }

// notes returns the messages of a row's errors by the column they mark,
// and every message as the error column shows it ("column: message").
func (s *reportSheet) notes(errs []rows.FieldError) (map[int][]string, []string) {
	notes := map[int][]string{}
	var msgs []string
	for _, fe := range errs {
		msg := fe.Message
		if fe.Column != "" {
			msg = fe.Column + ": " + fe.Message
		}
		msgs = append(msgs, msg)
		i, ok := s.colOf[rows.NormalizeHeader(fe.Column)]
		if fe.Column == "" || !ok {
			i = s.errCol() // the whole row's: on the error cell
		}
		notes[i] = append(notes[i], fe.Message)
	}
	return notes, msgs
}

// write writes one report row and the comments on its marked cells.
func (s *reportSheet) write(r rows.ReportRow) error {
	xw := s.xw
	if xw.row >= xlsxMaxRows {
		return errors.New("xlsx report: more rows than a sheet holds")
	}
	notes, msgs := s.notes(r.Errors)
	for i := range s.cells {
		s.cells[i] = nil
	}
	for i := range s.header {
		v := ""
		if i < len(r.Values) {
			v = r.Values[i]
		}
		if xlsxCheckText(v) != nil {
			v = xlsxFitText(v) // keep the row; the cell shows what it can
		}
		c := excelize.Cell{Value: v}
		if _, ok := notes[i]; ok {
			c.StyleID = s.bad
		}
		s.cells[i] = c
	}
	s.cells[len(s.header)] = excelize.Cell{Value: r.Row}
	errCell := excelize.Cell{Value: strings.Join(msgs, "; ")}
	if _, ok := notes[s.errCol()]; ok {
		errCell.StyleID = s.bad
	}
	s.cells[s.errCol()] = errCell
	xw.row++
	if err := xw.sw.SetRow("A"+strconv.Itoa(xw.row), s.cells); err != nil {
		return fmt.Errorf("xlsx report: row %d: %w", xw.row, err)
	}
	return s.comment(notes)
}

// comment adds each marked cell's messages of the row just written as a
// comment, up to xlsxMaxComments over the whole report.
func (s *reportSheet) comment(notes map[int][]string) error {
	for i, ms := range notes {
		if s.comments >= xlsxMaxComments {
			break
		}
		ref, _ := excelize.CoordinatesToCellName(i+1, s.xw.row)
		text := strings.Join(ms, "\n")
		if len(text) > 2000 {
			text = text[:2000] + "…"
		}
		if err := s.xw.f.AddComment(s.xw.sheet, excelize.Comment{Cell: ref, Author: "rowfate",
			Paragraph: []excelize.RichTextRun{{Text: text}}}); err != nil {
			return fmt.Errorf("xlsx report: comment on %s: %w", ref, err)
		}
		s.comments++
	}
	return nil
}

// xlsxFitText makes text an XLSX cell can hold: bad bytes and control
// characters become U+FFFD and the text is cut to the cell's limit.
func xlsxFitText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	n := 0
	for _, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0xFFFE || r == 0xFFFF {
			r = '\uFFFD'
		}
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > xlsxMaxCellChars-1 { // room for "…"
			b.WriteRune('…')
			break
		}
		n += w
		b.WriteRune(r)
	}
	return b.String()
}
