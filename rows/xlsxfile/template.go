package xlsxfile

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/xuri/excelize/v2"

	"github.com/rowfate/rowfate/rows"
)

// WriteTemplate writes an import template: the header (bold, frozen,
// required columns noted in a comment), one example row, and for columns
// with fixed values a dropdown over the whole column.
func WriteTemplate(w io.Writer, cols []rows.TemplateColumn, sheet string) error {
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
	example := make([]any, len(cols), len(cols)+1)
	hasExample := false
	for i, c := range cols {
		header[i] = c.Name
		example[i] = c.Example
		hasExample = hasExample || c.Example != ""
	}
	if hasExample {
		example = append(example, rows.ExampleMarker)
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
