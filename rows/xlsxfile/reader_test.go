package xlsxfile

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/rowfate/rowfate/rows"
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
		opts    Options
		sheet   string
		header  string
		row     int64
		values  string
		fileErr string
	}{
		{name: "default is the first sheet", sheet: "First", header: "email|name", row: 1, values: "a@x.io|A"},
		{name: "by name, any case", opts: Options{Sheet: "second"}, sheet: "Second",
			// The merged title of row 1 is passed over; the merged header
			// cell names the column it covers after itself.
			header: "id|Address|Address (2)|zip", row: 3, values: "1|Main St|Springfield|12345"},
		{name: "by position", opts: Options{Sheet: "2", HeaderRow: 3}, sheet: "Second", header: "id|Address|Address (2)|zip", row: 3},
		{name: "header row chosen", opts: Options{Sheet: "Second", HeaderRow: 1}, sheet: "Second", header: "report|report (2)|report (3)", row: 1},
		{name: "empty header row", opts: Options{Sheet: "Second", HeaderRow: 2}, fileErr: "the header row 2 is empty"},
		{name: "no such row", opts: Options{HeaderRow: 9}, fileErr: `sheet "First" has no row 9`},
		{name: "no such sheet", opts: Options{Sheet: "Third"}, fileErr: `no sheet "Third"; its sheets are "First", "Second"`},
		{name: "too large", opts: Options{MaxFileBytes: 100}, fileErr: "larger than the limit of 100 bytes"},
		{name: "unzip limit", opts: Options{MaxUnzipBytes: 1000}, fileErr: "unpacks to more than 1000 bytes"},
		{name: "shared strings limit", opts: Options{MaxSharedStrings: 3}, fileErr: "has 12 distinct texts (shared strings), more than the limit of 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.TmpDir = t.TempDir()
			xr, recs, err := readXLSX(t, bytes.NewReader(b), "book.xlsx", &opts)
			if tt.fileErr != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.fileErr) {
					t.Fatalf("want a rows.FileError with %q, got %v", tt.fileErr, err)
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

// TestXLSXReaderTitles: a lone cell is a title when a wider row follows
// within rows.HeaderScanRows non-empty rows, merged or not; a sheet of
// one column has its first row for a header, and the rows read while
// looking are data, numbered and counted as without the look.
func TestXLSXReaderTitles(t *testing.T) {
	t.Parallel()
	oneColumn := [][]any{{"email"}}
	for i := 0; i < 25; i++ {
		if i%5 == 4 {
			oneColumn = append(oneColumn, []any{""}) // a blank row element
			continue
		}
		oneColumn = append(oneColumn, []any{"a@x.io"})
	}
	tests := []struct {
		name    string
		rows    [][]any
		opts    Options
		header  string
		hdrRow  int64
		first   int64 // the first data row
		records int
		skipped int64
		fileErr string
	}{
		{name: "two titles and a blank row", rows: [][]any{{"Customers"}, {"exported today"}, {nil}, {"email", "name"}, {"a@x.io", "A"}},
			header: "email|name", hdrRow: 4, first: 5, records: 1},
		{name: "one column", rows: oneColumn, header: "email", hdrRow: 1, first: 2, records: 20, skipped: 5},
		{name: "one column with a rule", rows: oneColumn, opts: Options{HeaderFunc: func(c []string) bool { return false }},
			header: "email", hdrRow: 1, first: 2, records: 20, skipped: 5},
		{
			// The wider row comes past the window: the lone cell is the
			// header, the rows under it data (the wide one ragged).
			name: "wider row too far", rows: append(append([][]any{{"email"}}, oneColumn[1:25]...), []any{"b@x.io", "note"}),
			header: "email", hdrRow: 1, first: 2, records: 21, skipped: 4,
		},
		{
			// Held back at the header scan's limit, checked at the
			// header's when it comes out as data.
			name: "held row too wide", rows: [][]any{{"email"}, append(make([]any, 99), "far")},
			fileErr: "row 2 has a cell in column CV, more than 64 columns past the header's last column A",
		},
		{name: "only titles", rows: [][]any{{"Customers"}}, header: "Customers", hdrRow: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := workbook(t, []string{"S"}, map[string][][]any{"S": tt.rows}, nil)
			opts := tt.opts
			opts.TmpDir = t.TempDir()
			xr, recs, err := readXLSX(t, bytes.NewReader(b), "t.xlsx", &opts)
			if tt.fileErr != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.fileErr) {
					t.Fatalf("want a rows.FileError with %q, got %v", tt.fileErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(xr.Header(), "|") != tt.header || xr.HeaderRow() != tt.hdrRow || len(recs) != tt.records || xr.SkippedEmpty() != tt.skipped {
				t.Fatalf("header %q on row %d, %d records, %d skipped; want %q on row %d, %d, %d",
					xr.Header(), xr.HeaderRow(), len(recs), xr.SkippedEmpty(), tt.header, tt.hdrRow, tt.records, tt.skipped)
			}
			if len(recs) > 0 && recs[0].Row != tt.first {
				t.Errorf("first data row %d, want %d", recs[0].Row, tt.first)
			}
			for i := 1; i < len(recs); i++ {
				if recs[i].Row <= recs[i-1].Row {
					t.Errorf("row %d after row %d", recs[i].Row, recs[i-1].Row)
				}
			}
		})
	}
}

// TestXLSXReaderHeldErrorRow: a row with no value but a row error (a
// formula excelize wrote and nothing calculated), read while looking for
// the header, comes out as data with its error, not as a blank row.
func TestXLSXReaderHeldErrorRow(t *testing.T) {
	t.Parallel()
	f := excelize.NewFile()
	defer f.Close()
	f.SetSheetRow("Sheet1", "A1", &[]any{"email"})
	if err := f.SetCellFormula("Sheet1", "A2", "1+1"); err != nil {
		t.Fatal(err)
	}
	f.SetSheetRow("Sheet1", "A3", &[]any{""})
	f.SetSheetRow("Sheet1", "A4", &[]any{"a@x.io"})
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	xr, recs, err := readXLSX(t, &buf, "e.xlsx", &Options{TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if xr.HeaderRow() != 1 || len(recs) != 2 || recs[0].Row != 2 || recs[1].Row != 4 || xr.SkippedEmpty() != 1 {
		t.Fatalf("header row %d, records %+v, %d skipped", xr.HeaderRow(), recs, xr.SkippedEmpty())
	}
	if e := recs[0].Errors; len(e) != 1 || e[0].Code != CodeFormulaNotCalculated || e[0].Column != "email" ||
		e[0].Message != "cell A2 has a formula that was never calculated: open the file in Excel and save it again" {
		t.Fatalf("row 2 errors %+v", e)
	}
}

// TestXLSXReaderHeaderFunc: the rule looks at the first
// rows.HeaderScanRows non-empty rows of a sheet, with the cells a header
// would have, and chooses among visible sheets only.
func TestXLSXReaderHeaderFunc(t *testing.T) {
	t.Parallel()
	notes := make([][]any, 0, 21)
	for i := 0; i < 20; i++ {
		notes = append(notes, []any{"note", "more"})
	}
	far := append(notes, []any{"email", "name"}, []any{"a@x.io", "A"})
	rule := func(cells []string) bool {
		return slices.Contains(cells, "email") && slices.Contains(cells, "Address (2)")
	}

	t.Run("past the first 20 non-empty rows", func(t *testing.T) {
		t.Parallel()
		b := workbook(t, []string{"S"}, map[string][][]any{"S": far}, nil)
		xr, recs, err := readXLSX(t, bytes.NewReader(b), "f.xlsx", &Options{TmpDir: t.TempDir(), HeaderFunc: customersHeaderOf("email", "name")})
		if err != nil {
			t.Fatal(err)
		}
		// Not found: the default rule, and every row after it is data.
		if xr.HeaderRow() != 1 || len(recs) != 21 || recs[0].Row != 2 {
			t.Fatalf("header row %d, %d records from row %d", xr.HeaderRow(), len(recs), recs[0].Row)
		}
	})
	t.Run("merged header cells", func(t *testing.T) {
		t.Parallel()
		b := workbook(t, []string{"S"}, map[string][][]any{"S": {{"Title"}, {"email", "Address", nil}, {"a@x.io", "1 Main St", "Springfield"}}},
			map[string][]string{"S": {"B2:C2"}})
		xr, recs, err := readXLSX(t, bytes.NewReader(b), "m.xlsx", &Options{TmpDir: t.TempDir(), HeaderFunc: rule})
		if err != nil {
			t.Fatal(err)
		}
		if xr.HeaderRow() != 2 || len(recs) != 1 {
			t.Fatalf("header row %d, %d records", xr.HeaderRow(), len(recs))
		}
	})
	t.Run("hidden and empty sheets", func(t *testing.T) {
		t.Parallel()
		f := excelize.NewFile()
		defer f.Close()
		f.SetSheetRow("Sheet1", "A1", &[]any{"email", "name"}) // hidden: never tried
		f.NewSheet("Empty")
		f.NewSheet("Data")
		f.SetSheetRow("Data", "A1", &[]any{"email", "name"})
		f.SetSheetRow("Data", "A2", &[]any{"a@x.io", "A"})
		f.SetActiveSheet(2)
		if err := f.SetSheetVisible("Sheet1", false); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		f.Write(&buf)
		raw := buf.Bytes()
		xr, recs, err := readXLSX(t, bytes.NewReader(raw), "h.xlsx", &Options{TmpDir: t.TempDir(), HeaderFunc: customersHeaderOf("email", "name")})
		if err != nil {
			t.Fatal(err)
		}
		if xr.Sheet() != "Data" || len(recs) != 1 {
			t.Fatalf("sheet %q, %d records", xr.Sheet(), len(recs))
		}
		_, _, err = readXLSX(t, bytes.NewReader(raw), "h.xlsx", &Options{TmpDir: t.TempDir(), HeaderFunc: customersHeaderOf("id")})
		if want := `no sheet has the header looked for in its first 20 rows (sheets tried: "Empty", "Data")`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want one with %q", err, want)
		}
	})
}

// TestXLSXReaderSearchGuards: every sheet tried for its header is read
// with every guard of the sheet scanner; a hostile sheet after a sheet
// passed over is refused, not skipped.
func TestXLSXReaderSearchGuards(t *testing.T) {
	t.Parallel()
	b := workbook(t, []string{"Instructions", "Data"}, map[string][][]any{
		"Instructions": {{"Fill in the Data sheet."}},
		"Data":         {{"email", "name"}},
	}, nil)
	const head = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`
	for name, tt := range map[string]struct{ sheet, want string }{
		"giant cell":    {head + `<row r="1"><c r="A1" t="inlineStr"><is><t>` + strings.Repeat("x", 2<<20) + `</t></is></c></row></sheetData></worksheet>`, "without markup"},
		"out of order":  {head + `<row r="2"><c r="A2"><v>1</v></c></row><row r="1"><c r="A1"><v>1</v></c></row></sheetData></worksheet>`, "row 1 comes after row 2"},
		"too wide":      {head + `<row r="1"><c r="A1"><v>1</v></c><c r="AMK1"><v>1</v></c></row></sheetData></worksheet>`, "past the limit of 1024 columns"},
		"bad sst index": {head + `<row r="1"><c r="A1" t="s"><v>99</v></c></row></sheetData></worksheet>`, `refers to shared string "99"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw := replacePart(t, b, "xl/worksheets/sheet2.xml", tt.sheet)
			// The ratio check would refuse the giant cell first: leave it
			// to the sheet scanner.
			opts := &Options{TmpDir: t.TempDir(), HeaderFunc: customersHeaderOf("email"), MaxCompressionRatio: 1 << 30}
			_, _, err := readXLSX(t, bytes.NewReader(raw), "g.xlsx", opts)
			var fe *rows.FileError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), `sheet "Data"`) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want a rows.FileError about sheet \"Data\" with %q, got %v", tt.want, err)
			}
		})
	}
}

// replacePart returns the zip b with the part name's body replaced.
func replacePart(t *testing.T, b []byte, name, body string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		w, err := zw.Create(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name == name {
			_, err = w.Write([]byte(body))
		} else {
			var rc io.ReadCloser
			if rc, err = f.Open(); err == nil {
				_, err = io.Copy(w, rc)
				rc.Close()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// customersHeaderOf returns a header rule that wants the given columns.
func customersHeaderOf(cols ...string) func([]string) bool {
	return func(cells []string) bool {
		for _, c := range cols {
			if !slices.Contains(cells, c) {
				return false
			}
		}
		return true
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
	xr, recs, err := readXLSX(t, &buf, "h.xlsx", &Options{TmpDir: t.TempDir()})
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
	w, err := NewWriter(&buf, header, &WriterOptions{Sheet: "Export", TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2020, 1, 3, 0, 0, 0, 0, time.UTC)
	stamp := time.Date(1999, 12, 31, 23, 59, 58, 0, time.UTC)
	rowsIn := [][]rows.Cell{
		{{Text: "=HYPERLINK(\"x\")"}, {Type: rows.CellNumber, Text: "-12.5"}, {Type: rows.CellBool, Text: "true"},
			{Type: rows.CellDate, Text: "2020-01-03", Time: day}, {Type: rows.CellDateTime, Time: stamp}, {Text: "+44 20", Raw: true},
			{Type: rows.CellNumber, Text: "1234567890123456789"}},
		{{Text: "plain"}, {Type: rows.CellNumber, Text: "0.30000000000000004"}, {Type: rows.CellBool, Text: "false"},
			{Type: rows.CellDate}, {Type: rows.CellDateTime}, {Text: "@home"}, {Type: rows.CellNumber, Text: "12.50"}},
	}
	for _, r := range rowsIn {
		if err := w.WriteRow(r); err != nil {
			t.Fatal(err)
		}
	}
	// Rows a cell cannot hold are refused, and the file goes on.
	for _, bad := range []struct {
		cells []rows.Cell
		code  rows.Code
	}{
		{[]rows.Cell{{Text: "bell\a"}}, CodeBadCharacter},
		{[]rows.Cell{{Text: strings.Repeat("x", 32768)}}, rows.CodeCellTooLong},
	} {
		err := w.WriteRow(bad.cells)
		var fe *rows.FieldError
		if !errors.As(err, &fe) || fe.Code != bad.code || fe.Column != "text" {
			t.Errorf("want a %s rows.FieldError of column text, got %v", bad.code, err)
		}
	}
	if w.Rows() != 2 {
		t.Errorf("Rows() = %d", w.Rows())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()

	// What the file holds: text as text, never with SafeCell's apostrophe
	// (a workbook does not evaluate a text cell); a frozen, bold header.
	f, err := excelize.OpenReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for cell, want := range map[string]string{"A2": `=HYPERLINK("x")`, "F2": "+44 20", "F3": "@home", "B2": "-12.5"} {
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

	xr, recs, err := readXLSX(t, bytes.NewReader(raw), "export.xlsx", &Options{TmpDir: t.TempDir()})
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
		bad  string // the error names this; the cell is a bad_date row error
	}{
		{"43833", xlsxDate, false, "2020-01-03", true, ""},
		{"43833.99999999", xlsxDate, false, "2020-01-03", true, ""},
		{"43833.999999999", xlsxDateTime, false, "2020-01-04 00:00:00", true, ""}, // rounds to the next day
		{"43833.5", xlsxDateTime, false, "2020-01-03 12:00:00", true, ""},
		{"0.5", xlsxTime, false, "12:00:00", true, ""},
		{"0.5", xlsxTime, true, "12:00:00", true, ""},
		{"1", xlsxDate, false, "1900-01-01", true, ""},
		{"59", xlsxDate, false, "1900-02-28", true, ""},
		// Excel shows serial 60 as 1900-02-29 and serial 0 as 1900-01-00:
		// no calendar has either day, so neither becomes a guessed date.
		{"60", xlsxDate, false, "", false, "1900-02-29"},
		{"60.25", xlsxDateTime, false, "", false, "1900-02-29"},
		{"0", xlsxDate, false, "", false, "day 0"},
		{"0.5", xlsxDateTime, false, "", false, "day 0"},
		{"61", xlsxDate, false, "1900-03-01", true, ""},
		{"60", xlsxDate, true, "1904-03-01", true, ""},
		{"0", xlsxDate, true, "1904-01-01", true, ""},
		{"2958465", xlsxDate, false, "9999-12-31", true, ""},
		{"2957003", xlsxDate, true, "9999-12-31", true, ""},
		{"2958466", xlsxDate, false, "", false, ""},
		{"2957004", xlsxDate, true, "", false, ""},
		{"2958467", xlsxDate, false, "", false, ""},
		{"-1", xlsxDate, false, "", false, ""},
		{"-1", xlsxDate, true, "", false, ""},
		{"NaN", xlsxDate, false, "", false, ""},
		{"x", xlsxDate, false, "", false, ""},
	}
	for _, tt := range tests {
		got, ok, err := xlsxSerialText(tt.raw, tt.kind, tt.d04)
		if got != tt.want || ok != tt.ok {
			t.Errorf("xlsxSerialText(%q, %d, %v) = %q, %v; want %q, %v", tt.raw, tt.kind, tt.d04, got, ok, tt.want, tt.ok)
		}
		if (err != nil) != (tt.bad != "") || err != nil && !strings.Contains(err.Error(), tt.bad) {
			t.Errorf("xlsxSerialText(%q, %d, %v) error %v, want one naming %q", tt.raw, tt.kind, tt.d04, err, tt.bad)
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
