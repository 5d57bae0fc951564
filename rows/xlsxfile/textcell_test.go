package xlsxfile

import (
	"archive/zip"
	"bytes"
	"io"
	"iter"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/rowfate/rowfate/rows"
)

// TestXLSXTextCellsWithoutApostrophe: a workbook's text cell is never
// evaluated, so the export, the error report and the template write
// = + - @ values as they are — no apostrophe for a spreadsheet to show
// ('=1+1, '-42) — as text cells, never formulas; and they read back as
// written (issue 27, item 3).
func TestXLSXTextCellsWithoutApostrophe(t *testing.T) {
	t.Parallel()
	values := []string{"=1+1", "-42", "+44 20", "@home", "plain"}
	header := []string{"a", "b", "c", "d", "e"}

	var export bytes.Buffer
	w, err := NewWriter(&export, header, &WriterOptions{Sheet: "Export", TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cells := make([]rows.Cell, len(values))
	for i, v := range values {
		cells[i] = rows.Cell{Text: v}
	}
	if err := w.WriteRow(cells); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	var report bytes.Buffer
	src := func(yield func(rows.ReportRow, error) bool) {
		yield(rows.ReportRow{Row: 2, Values: values, Errors: []rows.FieldError{{Column: "a", Message: "-bad"}}}, nil)
	}
	if _, err := writeErrorReport(&report, "", header, iter.Seq2[rows.ReportRow, error](src), &WriterOptions{TmpDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}

	var tmpl bytes.Buffer
	if err := WriteTemplate(&tmpl, []rows.TemplateColumn{{Name: "amount", Example: "-1.50"}, {Name: "=x", Example: "@y"}}, ""); err != nil {
		t.Fatal(err)
	}

	// What a spreadsheet shows: the values.
	shown := values
	for _, tt := range []struct {
		name, sheet string
		file        []byte
		row         int
		want        []string
	}{
		{"export", "Export", export.Bytes(), 2, shown},
		{"report", "Errors", report.Bytes(), 2, append(append([]string(nil), shown...), "2", "a: -bad")},
		{"template header", "Template", tmpl.Bytes(), 1, []string{"amount", "=x"}},
		{"template example", "Template", tmpl.Bytes(), 2, []string{"-1.50", "@y"}},
	} {
		f, err := excelize.OpenReader(bytes.NewReader(tt.file))
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range tt.want {
			ref, _ := excelize.CoordinatesToCellName(i+1, tt.row)
			got, _ := f.GetCellValue(tt.sheet, ref, excelize.Options{RawCellValue: true})
			if got != want {
				t.Errorf("%s: %s shows %q, want %q", tt.name, ref, got, want)
			}
			if formula, _ := f.GetCellFormula(tt.sheet, ref); formula != "" {
				t.Errorf("%s: %s is the formula %q, want text", tt.name, ref, formula)
			}
		}
		f.Close()
		if strings.Contains(sheetXML(t, tt.file), "<f>") {
			t.Errorf("%s: the sheet holds a formula", tt.name)
		}
	}

	// Read back, the values are the ones written.
	for name, file := range map[string][]byte{"export": export.Bytes(), "report": report.Bytes()} {
		r, err := NewReader(bytes.NewReader(file), name+".xlsx", &Options{TmpDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := r.Next()
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(rec.Values[:len(values)], "|"); got != strings.Join(values, "|") {
			t.Errorf("%s read back as %q, want %q", name, got, strings.Join(values, "|"))
		}
	}
}

// sheetXML returns the first worksheet's XML of a workbook.
func sheetXML(t *testing.T, file []byte) string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if strings.HasPrefix(f.Name, "xl/worksheets/sheet") {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatal("no worksheet")
	return ""
}
