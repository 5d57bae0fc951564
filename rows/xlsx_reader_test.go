package rows

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// workbook builds an XLSX file with excelize: sheets in order, each a list
// of rows from A1, and merged ranges per sheet.
func workbook(t *testing.T, sheets []string, data map[string][][]any, merges map[string][]string) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for i, s := range sheets {
		if i == 0 {
			if err := f.SetSheetName("Sheet1", s); err != nil {
				t.Fatal(err)
			}
		} else if _, err := f.NewSheet(s); err != nil {
			t.Fatal(err)
		}
		for r, row := range data[s] {
			cell, _ := excelize.CoordinatesToCellName(1, r+1)
			if err := f.SetSheetRow(s, cell, &row); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range merges[s] {
			a, b, _ := strings.Cut(m, ":")
			if err := f.MergeCell(s, a, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestXLSXReaderOptions(t *testing.T) {
	t.Parallel()
	data := map[string][][]any{
		"First":  {{"email", "name"}, {"a@x.io", "A"}},
		"Second": {{"report", nil, nil}, {nil}, {"id", "Address", nil, "zip"}, {"1", "Main St", "Springfield", "12345"}},
	}
	merges := map[string][]string{"Second": {"A1:C1", "B3:C3"}}
	b := workbook(t, []string{"First", "Second"}, data, merges)

	tests := []struct {
		name    string
		opts    XLSXOptions
		sheet   string
		header  string
		row     int64
		values  string
		fileErr string
	}{
		{name: "default is the first sheet", sheet: "First", header: "email|name", row: 1, values: "a@x.io|A"},
		{name: "by name, any case", opts: XLSXOptions{Sheet: "second"}, sheet: "Second",
			// The merged title of row 1 is passed over; the merged header
			// cell names the column it covers after itself.
			header: "id|Address|Address (2)|zip", row: 3, values: "1|Main St|Springfield|12345"},
		{name: "by position", opts: XLSXOptions{Sheet: "2", HeaderRow: 3}, sheet: "Second", header: "id|Address|Address (2)|zip", row: 3},
		{name: "header row chosen", opts: XLSXOptions{Sheet: "Second", HeaderRow: 1}, sheet: "Second", header: "report|report (2)|report (3)", row: 1},
		{name: "empty header row", opts: XLSXOptions{Sheet: "Second", HeaderRow: 2}, fileErr: "the header row 2 is empty"},
		{name: "no such row", opts: XLSXOptions{HeaderRow: 9}, fileErr: `sheet "First" has no row 9`},
		{name: "no such sheet", opts: XLSXOptions{Sheet: "Third"}, fileErr: `no sheet "Third"; its sheets are "First", "Second"`},
		{name: "too large", opts: XLSXOptions{MaxFileBytes: 100}, fileErr: "larger than the limit of 100 bytes"},
		{name: "unzip limit", opts: XLSXOptions{MaxUnzipBytes: 1000}, fileErr: "unpacks to more than 1000 bytes"},
		{name: "shared strings limit", opts: XLSXOptions{MaxSharedStrings: 3}, fileErr: "has 12 distinct texts (shared strings), more than the limit of 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.TmpDir = t.TempDir()
			xr, recs, err := readXLSX(t, bytes.NewReader(b), "book.xlsx", &opts)
			if tt.fileErr != "" {
				var fe *FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.fileErr) {
					t.Fatalf("want a FileError with %q, got %v", tt.fileErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if xr.Sheet() != tt.sheet || strings.Join(xr.Header(), "|") != tt.header || xr.HeaderRow() != tt.row {
				t.Fatalf("sheet %q header %q row %d", xr.Sheet(), xr.Header(), xr.HeaderRow())
			}
			if tt.values != "" && (len(recs) != 1 || strings.Join(recs[0].Values, "|") != tt.values) {
				t.Fatalf("records %v", recs)
			}
		})
	}
}

// TestXLSXReaderHiddenSheet: the default skips hidden sheets.
func TestXLSXReaderHiddenSheet(t *testing.T) {
	t.Parallel()
	f := excelize.NewFile()
	defer f.Close()
	f.SetSheetRow("Sheet1", "A1", &[]any{"secret"})
	f.NewSheet("Visible")
	f.SetSheetRow("Visible", "A1", &[]any{"email"})
	f.SetSheetRow("Visible", "A2", &[]any{"a@x.io"})
	f.SetActiveSheet(1)
	if err := f.SetSheetVisible("Sheet1", false); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	f.Write(&buf)
	xr, recs, err := readXLSX(t, &buf, "h.xlsx", &XLSXOptions{TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if xr.Sheet() != "Visible" || len(recs) != 1 {
		t.Fatalf("sheet %q, %d records", xr.Sheet(), len(recs))
	}
}

// TestXLSXWriterRoundTrip writes every cell type and reads it back.
func TestXLSXWriterRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	header := []string{"text", "number", "flag", "day", "stamp", "raw", "big"}
	w, err := NewXLSXWriter(&buf, header, &XLSXWriterOptions{Sheet: "Export", TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2020, 1, 3, 0, 0, 0, 0, time.UTC)
	stamp := time.Date(1999, 12, 31, 23, 59, 58, 0, time.UTC)
	rowsIn := [][]Cell{
		{{Text: "=HYPERLINK(\"x\")"}, {Type: CellNumber, Text: "-12.5"}, {Type: CellBool, Text: "true"},
			{Type: CellDate, Text: "2020-01-03", Time: day}, {Type: CellDateTime, Time: stamp}, {Text: "+44 20", Raw: true},
			{Type: CellNumber, Text: "1234567890123456789"}},
		{{Text: "plain"}, {Type: CellNumber, Text: "0.30000000000000004"}, {Type: CellBool, Text: "false"},
			{Type: CellDate}, {Type: CellDateTime}, {Text: "@home"}, {Type: CellNumber, Text: "12.50"}},
	}
	for _, r := range rowsIn {
		if err := w.WriteRow(r); err != nil {
			t.Fatal(err)
		}
	}
	// Rows a cell cannot hold are refused, and the file goes on.
	for _, bad := range []struct {
		cells []Cell
		code  Code
	}{
		{[]Cell{{Text: "bell\a"}}, CodeBadCharacter},
		{[]Cell{{Text: strings.Repeat("x", 32768)}}, CodeCellTooLong},
	} {
		err := w.WriteRow(bad.cells)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Code != bad.code || fe.Column != "text" {
			t.Errorf("want a %s FieldError of column text, got %v", bad.code, err)
		}
	}
	if w.Rows() != 2 {
		t.Errorf("Rows() = %d", w.Rows())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()

	// What the file holds: the apostrophe against formulas, except in the
	// raw column and for numbers; a frozen, bold header.
	f, err := excelize.OpenReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for cell, want := range map[string]string{"A2": `'=HYPERLINK("x")`, "F2": "+44 20", "F3": "'@home", "B2": "-12.5"} {
		if got, _ := f.GetCellValue("Export", cell, excelize.Options{RawCellValue: true}); got != want {
			t.Errorf("%s holds %q, want %q", cell, got, want)
		}
	}
	if typ, _ := f.GetCellType("Export", "G2"); typ != excelize.CellTypeInlineString {
		t.Errorf("a 19-digit number is stored as %v, want text", typ)
	}
	panes, err := f.GetPanes("Export")
	if err != nil || !panes.Freeze || panes.YSplit != 1 {
		t.Errorf("panes %+v, %v", panes, err)
	}
	sid, _ := f.GetCellStyle("Export", "A1")
	if st, err := f.GetStyle(sid); err != nil || st.Font == nil || !st.Font.Bold {
		t.Errorf("header style %+v, %v", st, err)
	}

	xr, recs, err := readXLSX(t, bytes.NewReader(raw), "export.xlsx", &XLSXOptions{TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(xr.Header(), "|") != strings.Join(header, "|") {
		t.Errorf("header %q", xr.Header())
	}
	want := []string{
		`=HYPERLINK("x")|-12.5|true|2020-01-03|1999-12-31 23:59:58|+44 20|1234567890123456789`,
		"plain|0.30000000000000004|false|||@home|12.5",
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		if got := strings.Join(r.Values, "|"); got != want[i] {
			t.Errorf("row %d = %q, want %q", r.Row, got, want[i])
		}
	}
}

func TestXLSXSerialText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		kind xlsxDateKind
		d04  bool
		want string
		ok   bool
	}{
		{"43833", xlsxDate, false, "2020-01-03", true},
		{"43833.99999999", xlsxDate, false, "2020-01-03", true},
		{"43833.999999999", xlsxDateTime, false, "2020-01-04 00:00:00", true}, // rounds to the next day
		{"60", xlsxDate, false, "1900-02-29", true},
		{"0", xlsxDate, false, "1900-01-00", true},
		{"0", xlsxDate, true, "1904-01-01", true},
		{"2958465", xlsxDate, false, "9999-12-31", true},
		{"2958467", xlsxDate, false, "", false},
		{"-1", xlsxDate, false, "", false},
		{"NaN", xlsxDate, false, "", false},
		{"x", xlsxDate, false, "", false},
	}
	for _, tt := range tests {
		got, ok := xlsxSerialText(tt.raw, tt.kind, tt.d04)
		if got != tt.want || ok != tt.ok {
			t.Errorf("xlsxSerialText(%q, %d, %v) = %q, %v; want %q, %v", tt.raw, tt.kind, tt.d04, got, ok, tt.want, tt.ok)
		}
	}
}

func TestXLSXFormatKind(t *testing.T) {
	t.Parallel()
	tests := map[string]xlsxDateKind{
		"General":             xlsxNumber,
		"#,##0.00":            xlsxNumber,
		"0.00E+00":            xlsxNumber,
		`0.0 "days"`:          xlsxNumber,
		"[Red]#,##0;[Blue]-0": xlsxNumber,
		"yyyy-mm-dd":          xlsxDate,
		`[$-409]d\-mmm\-yy;@`: xlsxDate,
		"dd/mm/yyyy hh:mm":    xlsxDateTime,
		"h:mm AM/PM":          xlsxTime,
		"[h]:mm:ss":           xlsxTime,
		"mm:ss":               xlsxTime,
		"mmm yyyy":            xlsxDate,
		`"Total: "0;"m"0`:     xlsxNumber,
		"[$€-2] #,##0.00":     xlsxNumber,
	}
	for code, want := range tests {
		if got := xlsxFormatKind(code); got != want {
			t.Errorf("xlsxFormatKind(%q) = %d, want %d", code, got, want)
		}
	}
	for id, want := range map[int]xlsxDateKind{0: xlsxNumber, 4: xlsxNumber, 14: xlsxDate, 20: xlsxTime, 22: xlsxDateTime, 49: xlsxNumber} {
		if got := xlsxBuiltinKind(id); got != want {
			t.Errorf("xlsxBuiltinKind(%d) = %d, want %d", id, got, want)
		}
	}
}

func TestIsXLSX(t *testing.T) {
	t.Parallel()
	tests := []struct {
		head []byte
		name string
		want bool
	}{
		{[]byte("PK\x03\x04rest"), "upload.csv", true},
		{xlsxOLEMagic, "upload.bin", true},
		{[]byte("email,name"), "a.xlsx", true},
		{[]byte("email,name"), "a.csv", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		if got := IsXLSX(tt.head, tt.name); got != tt.want {
			t.Errorf("IsXLSX(%q, %q) = %v", tt.head, tt.name, got)
		}
	}
}

func TestXLSXNumberText(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"702.39": "702.39", "20.000": "20", "1E-3": "0.001", "1.5E+3": "1500", "-0": "-0",
		"12345678901234567890": "12345678901234567890", "Version 2.10": "Version 2.10", "": "",
	} {
		if got := xlsxNumberText(raw); got != want {
			t.Errorf("xlsxNumberText(%q) = %q, want %q", raw, got, want)
		}
	}
}
