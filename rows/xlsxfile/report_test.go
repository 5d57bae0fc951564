package xlsxfile

import (
	"bytes"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/rowfate/rowfate/rows"
)

func TestWriteErrorReportXLSX(t *testing.T) {
	t.Parallel()
	header := []string{"email", "name", "amount"}
	report := []rows.ReportRow{
		{Row: 3, Values: []string{"not-an-email", "=Ann", "-5"}, Errors: []rows.FieldError{
			{Row: 3, Column: "email", Code: "email", Message: "must be a valid email"},
			{Row: 3, Column: "amount", Code: "gte", Message: "must be ≥ 0"},
		}},
		{Row: 9, Values: []string{"b@x.io", "Bob\x01", "1"}, Errors: []rows.FieldError{
			{Row: 9, Code: "duplicate_key", Message: "repeats row 3"},
		}},
	}
	src := func(yield func(rows.ReportRow, error) bool) {
		for _, r := range report {
			if !yield(r, nil) {
				return
			}
		}
	}
	var buf bytes.Buffer
	n, err := writeErrorReport(&buf, rows.ReportTitle(7, "customers"), header, src, &WriterOptions{TmpDir: t.TempDir()})
	if err != nil || n != 2 {
		t.Fatalf("wrote %d rows: %v", n, err)
	}
	f, err := excelize.OpenReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p, err := f.GetDocProps(); err != nil || p.Subject != rows.ReportTitle(7, "customers") {
		t.Fatalf("subject = %+v, %v", p, err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), "errors.xlsx", &Options{TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := rows.ParseReportTitle(r.Info().Subject); !ok || id != 7 {
		t.Fatalf("read back, the subject names batch %d, %v (%+v)", id, ok, r.Info())
	}
	r.Close()
	cells := map[string]string{
		"A1": "email", "D1": "row", "E1": "error",
		"A2": "not-an-email", "B2": "=Ann", "C2": "-5", "D2": "3",
		"E2": "email: must be a valid email; amount: must be ≥ 0",
		"B3": "Bob\uFFFD", "E3": "repeats row 3",
	}
	for ref, want := range cells {
		if got, _ := f.GetCellValue("Errors", ref, excelize.Options{RawCellValue: true}); got != want {
			t.Errorf("%s = %q, want %q", ref, got, want)
		}
	}
	comments, err := f.GetComments("Errors")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range comments {
		var text string
		for _, p := range c.Paragraph {
			text += p.Text
		}
		got[c.Cell] = text
	}
	want := map[string]string{"A2": "must be a valid email", "C2": "must be ≥ 0", "E3": "repeats row 3"}
	if len(got) != len(want) {
		t.Errorf("comments %v, want %v", got, want)
	}
	for ref, w := range want {
		if !strings.Contains(got[ref], w) {
			t.Errorf("comment on %s = %q, want %q", ref, got[ref], w)
		}
	}
	// Bad cells are filled; the others are not.
	fill := func(ref string) bool {
		id, _ := f.GetCellStyle("Errors", ref)
		st, err := f.GetStyle(id)
		return err == nil && len(st.Fill.Color) > 0 && st.Fill.Color[0] == "FFC7CE"
	}
	for ref, want := range map[string]bool{"A2": true, "B2": false, "C2": true, "E3": true, "A3": false} {
		if fill(ref) != want {
			t.Errorf("%s filled = %v, want %v", ref, !want, want)
		}
	}
	if p, err := f.GetPanes("Errors"); err != nil || !p.Freeze || p.YSplit != 1 {
		t.Errorf("panes %+v %v", p, err)
	}

	// The report reads back as the values it was written from.
	xr, recs, err := readXLSX(t, bytes.NewReader(buf.Bytes()), "report.xlsx", &Options{TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(xr.Header(), "|") != "email|name|amount|row|error" || len(recs) != 2 || strings.Join(recs[0].Values[:3], "|") != "not-an-email|=Ann|-5" {
		t.Errorf("read back %q %v", xr.Header(), recs)
	}

	// A source error ends the report.
	broken := iter.Seq2[rows.ReportRow, error](func(yield func(rows.ReportRow, error) bool) { yield(rows.ReportRow{}, errors.New("db gone")) })
	if _, err := WriteErrorReport(&bytes.Buffer{}, "", header, broken); err == nil || err.Error() != "db gone" {
		t.Errorf("broken source: %v", err)
	}
}

func TestWriteTemplateXLSX(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	cols := []rows.TemplateColumn{
		{Name: "email", Example: "ann@example.com", Required: true},
		{Name: "tier", Example: "pro", Enum: []string{"free", "pro", "enterprise"}},
		{Name: "amount", Example: "-1.50", Note: "A number, with a dot for decimals."},
	}
	if err := WriteTemplate(&buf, cols, ""); err != nil {
		t.Fatal(err)
	}
	f, err := excelize.OpenReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.GetRows("Template")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || strings.Join(rows[0], "|") != "email|tier|amount" || strings.Join(rows[1], "|") != "ann@example.com|pro|-1.50|← example row: not imported" {
		t.Errorf("rows %q", rows)
	}
	dvs, err := f.GetDataValidations("Template")
	if err != nil || len(dvs) != 1 || dvs[0].Sqref != "B2:B1048576" || dvs[0].Formula1 != `"free,pro,enterprise"` {
		t.Errorf("data validations %+v, %v", dvs, err)
	}
	if p, err := f.GetPanes("Template"); err != nil || !p.Freeze {
		t.Errorf("panes %+v %v", p, err)
	}
	comments, _ := f.GetComments("Template")
	if len(comments) != 3 {
		t.Errorf("%d comments, want 3 (required, enum, note)", len(comments))
	}
}
