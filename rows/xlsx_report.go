package rows

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"
)

// ReportRow is one row of an error report: its cells as the file had them,
// its row number there, and why it was not accepted.
type ReportRow struct {
	Row    int64
	Values []string
	Errors []FieldError
}

// xlsxMaxComments caps the cell comments of a report: excelize keeps
// comments in memory until the file is written. Past the cap, bad cells are
// still highlighted and the error column still says why.
const xlsxMaxComments = 20_000

// The columns WriteErrorReportXLSX adds after the file's own.
const (
	ReportXLSXRowColumn   = "row"
	ReportXLSXErrorColumn = "error"
)

// WriteErrorReportXLSX writes an import's problem rows as a workbook a user
// can fix and upload again: the file's columns (header), then "row" (the
// row number in the original file) and "error" (every message of the row).
// The header is bold and frozen; each cell an error names is filled red and
// carries a comment with its message (the first 20,000; the rest are only
// filled); an error of the whole row marks the error cell. Text goes through
// SafeCell, which the readers undo, so the fixed file imports as typed.
// The sheet is written streaming. It returns the number of rows written.
func WriteErrorReportXLSX(w io.Writer, header []string, src iter.Seq2[ReportRow, error], opts *XLSXWriterOptions) (int64, error) {
	var o XLSXWriterOptions
	if opts != nil {
		o = *opts
	}
	if o.Sheet == "" {
		o.Sheet = "Errors"
	}
	full := append(append([]string(nil), header...), ReportXLSXRowColumn, ReportXLSXErrorColumn)
	xw, err := NewXLSXWriter(w, full, &o)
	if err != nil {
		return 0, err
	}
	bad, err := xw.f.NewStyle(&excelize.Style{
		Fill: excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"FFC7CE"}},
		Font: &excelize.Font{Color: "9C0006"},
	})
	if err != nil {
		xw.Abort()
		return 0, fmt.Errorf("xlsx report: %w", err)
	}
	colOf := make(map[string]int, len(header))
	for i, h := range header {
		colOf[NormalizeHeader(h)] = i
	}
	var (
		n        int64
		comments int
		cells    = make([]any, len(full))
	)
	for r, err := range src {
		if err != nil {
			xw.Abort()
			return n, err
		}
		if xw.row >= xlsxMaxRows {
			xw.Abort()
			return n, errors.New("xlsx report: more rows than a sheet holds")
		}
		notes := map[int][]string{}
		var msgs []string
		for _, fe := range r.Errors {
			msg := fe.Message
			if fe.Column != "" {
				msg = fe.Column + ": " + fe.Message
			}
			msgs = append(msgs, msg)
			i, ok := colOf[NormalizeHeader(fe.Column)]
			if fe.Column == "" || !ok {
				i = len(full) - 1 // the whole row's: on the error cell
			}
			notes[i] = append(notes[i], fe.Message)
		}
		for i := range cells {
			cells[i] = nil
		}
		for i := range header {
			v := ""
			if i < len(r.Values) {
				v = r.Values[i]
			}
			if xlsxCheckText(SafeCell(v)) != nil {
				v = xlsxFitText(v) // keep the row; the cell shows what it can
			}
			c := excelize.Cell{Value: SafeCell(v)}
			if _, ok := notes[i]; ok {
				c.StyleID = bad
			}
			cells[i] = c
		}
		cells[len(header)] = excelize.Cell{Value: r.Row}
		errCell := excelize.Cell{Value: SafeCell(strings.Join(msgs, "; "))}
		if _, ok := notes[len(full)-1]; ok {
			errCell.StyleID = bad
		}
		cells[len(full)-1] = errCell
		xw.row++
		if err := xw.sw.SetRow("A"+strconv.Itoa(xw.row), cells); err != nil {
			xw.Abort()
			return n, fmt.Errorf("xlsx report: row %d: %w", xw.row, err)
		}
		for i, ms := range notes {
			if comments >= xlsxMaxComments {
				break
			}
			ref, _ := excelize.CoordinatesToCellName(i+1, xw.row)
			text := strings.Join(ms, "\n")
			if len(text) > 2000 {
				text = text[:2000] + "…"
			}
			if err := xw.f.AddComment(xw.sheet, excelize.Comment{Cell: ref, Author: "rowfate",
				Paragraph: []excelize.RichTextRun{{Text: text}}}); err != nil {
				xw.Abort()
				return n, fmt.Errorf("xlsx report: comment on %s: %w", ref, err)
			}
			comments++
		}
		n++
	}
	return n, xw.Close()
}

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

// WriteTemplateXLSX writes an import template: the header (bold, frozen,
// required columns noted in a comment), one example row, and for columns
// with fixed values a dropdown over the whole column.
func WriteTemplateXLSX(w io.Writer, cols []TemplateColumn, sheet string) error {
	if len(cols) == 0 {
		return errors.New("xlsx template: no columns")
	}
	if sheet == "" {
		sheet = "Template"
	}
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetSheetName("Sheet1", sheet); err != nil {
		return fmt.Errorf("xlsx template: %w", err)
	}
	head, err := f.NewStyle(xlsxHeaderStyle())
	if err != nil {
		return fmt.Errorf("xlsx template: %w", err)
	}
	header := make([]any, len(cols))
	example := make([]any, len(cols))
	for i, c := range cols {
		header[i] = SafeCell(c.Name)
		example[i] = SafeCell(c.Example)
	}
	if err := f.SetSheetRow(sheet, "A1", &header); err != nil {
		return fmt.Errorf("xlsx template: %w", err)
	}
	if err := f.SetSheetRow(sheet, "A2", &example); err != nil {
		return fmt.Errorf("xlsx template: %w", err)
	}
	last, _ := excelize.CoordinatesToCellName(len(cols), 1)
	if err := f.SetCellStyle(sheet, "A1", last, head); err != nil {
		return fmt.Errorf("xlsx template: %w", err)
	}
	if err := f.SetPanes(sheet, &excelize.Panes{Freeze: true, YSplit: 1, TopLeftCell: "A2", ActivePane: "bottomLeft"}); err != nil {
		return fmt.Errorf("xlsx template: %w", err)
	}
	for i, c := range cols {
		col, _ := excelize.ColumnNumberToName(i + 1)
		width := float64(max(len(c.Name), len(c.Example))) + 4
		if err := f.SetColWidth(sheet, col, col, min(max(width, 12), 60)); err != nil {
			return fmt.Errorf("xlsx template: %w", err)
		}
		var note []string
		if c.Required {
			note = append(note, "Required.")
		}
		if c.Note != "" {
			note = append(note, c.Note)
		}
		if len(c.Enum) > 0 {
			note = append(note, "One of: "+strings.Join(c.Enum, ", ")+".")
			dv := excelize.NewDataValidation(true)
			dv.Sqref = fmt.Sprintf("%s2:%s%d", col, col, xlsxMaxRows)
			if err := dv.SetDropList(c.Enum); err != nil {
				// A list longer than Excel's 255 characters cannot be a
				// dropdown; the comment still lists the values.
				note = append(note, "(Too many values for a dropdown.)")
			} else if err := f.AddDataValidation(sheet, dv); err != nil {
				return fmt.Errorf("xlsx template: %w", err)
			}
		}
		if len(note) > 0 {
			if err := f.AddComment(sheet, excelize.Comment{Cell: col + "1", Author: "rowfate",
				Paragraph: []excelize.RichTextRun{{Text: strings.Join(note, " ")}}}); err != nil {
				return fmt.Errorf("xlsx template: %w", err)
			}
		}
	}
	if err := writeWorkbook(f, w); err != nil {
		return fmt.Errorf("xlsx template: %w", err)
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
		if n+w > xlsxMaxCellChars-2 { // room for SafeCell's apostrophe and "…"
			b.WriteRune('…')
			break
		}
		n += w
		b.WriteRune(r)
	}
	return b.String()
}
