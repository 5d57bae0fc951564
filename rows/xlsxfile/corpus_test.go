package xlsxfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows"
)

// xlsxCorpus is fixtures/xlsx seen from this package, made by
// `go run ./fixtures/xlsx/gen`.
const xlsxCorpus = "../../fixtures/xlsx"

// readXLSXFile reads a whole workbook: the header, the records, or the
// first file error (from opening or from Next).
func readXLSXFile(t testing.TB, path string, opts *Options) (*Reader, []rows.Record, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return readXLSX(t, f, filepath.Base(path), opts)
}

func readXLSX(t testing.TB, r io.Reader, name string, opts *Options) (*Reader, []rows.Record, error) {
	t.Helper()
	xr, err := NewReader(r, name, opts)
	if err != nil {
		return nil, nil, err
	}
	defer xr.Close()
	var recs []rows.Record
	for {
		rec, err := xr.Next()
		if errors.Is(err, io.EOF) {
			return xr, recs, nil
		}
		if err != nil {
			return xr, recs, err
		}
		recs = append(recs, rec)
	}
}

// TestXLSXCorpus reads every file of fixtures/xlsx and checks the outcome
// the reader decides: the header and the number of records, or the file
// error (a *rows.FileError naming the file).
func TestXLSXCorpus(t *testing.T) {
	t.Parallel()
	type want struct {
		header  string // joined with |
		records int
		skipped int64
		fileErr string // substring of the *rows.FileError; "" for none
	}
	tests := map[string]want{
		"customers.xlsx":         {"email|name|country|signup_date|amount", 37, 3, ""},
		"dates1900.xlsx":         {"label|value", 24, 0, ""},
		"dates1904.xlsx":         {"label|value", 24, 0, ""},
		"header_only.xlsx":       {"email|name", 0, 0, ""},
		"empty.xlsx":             {fileErr: `no header row: sheet "Sheet1" is empty`},
		"zip_bomb.xlsx":          {fileErr: "inflates 130705 bytes to 134218040 (more than 200 times): a zip bomb?"},
		"wide_row.xlsx":          {fileErr: "row 2 has a cell in column BR, more than 64 columns past the header's last column E"},
		"wide_header.xlsx":       {fileErr: "row 1 has a cell in column AMK, past the limit of 1024 columns"},
		"row_2147483647.xlsx":    {fileErr: "a row has the number 2147483647, past Excel's last row (1048576)"},
		"doctype.xlsx":           {fileErr: "xl/worksheets/sheet1.xml: declares a DOCTYPE"},
		"negative_sst.xlsx":      {fileErr: `row 2: cell A2 refers to shared string "-1", but the table has 1`},
		"truncated.xlsx":         {fileErr: "not a readable zip archive (damaged or truncated?)"},
		"no_rows.xlsx":           {fileErr: `sheet "Sheet1" yields no rows from 917750 bytes of XML`},
		"big_cell.xlsx":          {fileErr: "run of more than 1048576 bytes without markup"},
		"rows_out_of_order.xlsx": {fileErr: "row 2 comes after row 3: the rows are out of order"},
		"ods_renamed.xlsx":       {fileErr: "OpenDocument spreadsheet (.ods)"},
		"xls_renamed.xlsx":       {fileErr: "legacy .xls workbook"},
		"encrypted.xlsx":         {fileErr: "password-protected"},
		"xlsb_renamed.xlsx":      {fileErr: "binary workbook (.xlsb)"},
		"not_a_zip.xlsx":         {fileErr: "does not start like a zip archive"},
		// Without a header rule the first visible sheet is read: its prose
		// is passed over as titles and its table of column meanings is
		// the header. TestXLSXHeaderRule reads these files with one.
		"sheets_info_first.xlsx":    {"Column|Meaning", 2, 0, ""},
		"title_not_merged.xlsx":     {"email|name|country|signup_date|amount", 3, 0, ""},
		"formula_uncalculated.xlsx": {"email|name|country|signup_date|amount", 5, 0, ""},
		"no_matching_sheet.xlsx":    {"order_id|product|qty", 1, 0, ""},
	}
	files, err := filepath.Glob(filepath.Join(xlsxCorpus, "*.xlsx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if _, ok := tests[filepath.Base(path)]; !ok {
			t.Errorf("%s has no expected outcome in this test", path)
		}
	}
	for name, w := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			xr, recs, err := readXLSXFile(t, filepath.Join(xlsxCorpus, name), &Options{TmpDir: tmp})
			// Accepted or not, the reader leaves no temporary file behind.
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("%d temporary files left in TmpDir", len(left))
			}
			if w.fileErr != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || fe.File != name || !strings.Contains(err.Error(), w.fileErr) {
					t.Fatalf("want a rows.FileError of %s with %q, got %T %v", name, w.fileErr, err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(xr.Header(), "|"); got != w.header {
				t.Errorf("header %q, want %q", got, w.header)
			}
			if len(recs) != w.records || xr.SkippedEmpty() != w.skipped {
				t.Errorf("%d records, %d skipped; want %d, %d", len(recs), xr.SkippedEmpty(), w.records, w.skipped)
			}
		})
	}
}

// TestXLSXCustomersFixture checks what the reader makes of a workbook as a
// person would upload it.
func TestXLSXCustomersFixture(t *testing.T) {
	t.Parallel()
	xr, recs, err := readXLSXFile(t, filepath.Join(xlsxCorpus, "customers.xlsx"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The hidden first sheet is passed over; the merged title above the
	// header too.
	if xr.Sheet() != "Customers" || xr.HeaderRow() != 2 || !slices.Equal(xr.Sheets(), []string{"Notes", "Customers"}) {
		t.Fatalf("sheet %q, header row %d, sheets %q", xr.Sheet(), xr.HeaderRow(), xr.Sheets())
	}
	byRow := map[int64]rows.Record{}
	var nums []int64
	for _, r := range recs {
		byRow[r.Row] = r
		nums = append(nums, r.Row)
		if r.Line != r.Row {
			t.Errorf("row %d has line %d", r.Row, r.Line)
		}
	}
	if nums[0] != 3 || nums[len(nums)-1] != 42 || slices.Contains(nums, 18) || slices.Contains(nums, 19) {
		t.Errorf("row numbers %v", nums)
	}
	for row, want := range map[int64]string{
		3:  "customer3@example.com|Customer 3|US|2015-04-22|30.25",
		12: "customer12@example.com|Customer 12|AU|2016-03-20|", // the error is the row's
		14: "customer14@example.com|Customer 14|DE|2020-02-30|140.25",
		16: "customer16@example.com|Customer 16|PT|2016-08-15|-5",
		21: "customer21@example.com|Customer 21|DE|2017-02-16|20",     // formula: its cached value
		23: "customer23@example.com|=1+2|PT|2017-05-01|230.25",        // text, not a formula
		25: "customer25@example.com|Customer 25|PL|2020-01-03|250.25", // [$-409]d-mmm-yy
		27: "customer27@example.com|Customer 27|NL|2020-01-03|270.25", // a date typed as text
		29: "customer29@example.com|Customer 29|FR|2017-12-09|1500",   // 1.5E+3
		40: "customer40@example.com|Customer 40|AU|2019-01-20|400.25|a note outside the table",
	} {
		if got := strings.Join(byRow[row].Values, "|"); got != want {
			t.Errorf("row %d = %q, want %q", row, got, want)
		}
	}
	codes := func(row int64) string {
		var cs []string
		for _, e := range byRow[row].Errors {
			cs = append(cs, e.Column+"/"+string(e.Code))
		}
		return strings.Join(cs, " ")
	}
	for row, want := range map[int64]string{12: "amount/cell_error", 40: "/ragged_row", 3: "", 21: ""} {
		if got := codes(row); got != want {
			t.Errorf("row %d errors %q, want %q", row, got, want)
		}
	}
}

// customersHeader is the rule the engine gives a reader for the customers
// kind, as tests see it: the cells hold the kind's three required columns,
// in any case.
func customersHeader(cells []string) bool {
	found := map[string]bool{}
	for _, c := range cells {
		found[strings.ToLower(strings.TrimSpace(c))] = true
	}
	return found["email"] && found["name"] && found["signup_date"]
}

// TestXLSXHeaderRule reads the fixtures whose sheet or header is not the
// first with the customers kind's header rule: the sheet whose header it
// recognises is read, and a workbook with none is refused naming the
// sheets tried.
func TestXLSXHeaderRule(t *testing.T) {
	t.Parallel()
	const customers = "email|name|country|signup_date|amount"
	tests := []struct {
		name    string
		file    string
		opts    Options
		sheet   string
		header  string
		hdrRow  int64
		rows    []int64
		fileErr string
	}{
		{name: "instructions first", file: "sheets_info_first.xlsx", sheet: "Data", header: customers, hdrRow: 1, rows: []int64{2, 3, 4}},
		{
			// A named sheet is read as named; the rule finds no header
			// there and the default rule applies.
			name: "instructions named", file: "sheets_info_first.xlsx", opts: Options{Sheet: "Instructions"},
			sheet: "Instructions", header: "Column|Meaning", hdrRow: 4, rows: []int64{5, 6},
		},
		{name: "header row and rule choose the sheet", file: "sheets_info_first.xlsx", opts: Options{HeaderRow: 1}, sheet: "Data", header: customers, hdrRow: 1, rows: []int64{2, 3, 4}},
		{name: "title not merged", file: "title_not_merged.xlsx", sheet: "Sheet1", header: customers, hdrRow: 3, rows: []int64{4, 5, 6}},
		{
			// One visible sheet (Notes is hidden): nothing to choose.
			name: "customers", file: "customers.xlsx", sheet: "Customers", header: customers, hdrRow: 2,
		},
		{
			name: "no matching sheet", file: "no_matching_sheet.xlsx",
			fileErr: `no_matching_sheet.xlsx: no sheet has a header with the columns email, name, signup_date in its first 20 rows (sheets tried: "Orders", "Notes")`,
		},
		{
			name: "no matching sheet on the header row", file: "no_matching_sheet.xlsx", opts: Options{HeaderRow: 2},
			fileErr: `no sheet has a header with the columns email, name, signup_date on row 2 (sheets tried: "Orders", "Notes")`,
		},
		{name: "no matching sheet, one named", file: "no_matching_sheet.xlsx", opts: Options{Sheet: "Orders"}, sheet: "Orders", header: "order_id|product|qty", hdrRow: 1, rows: []int64{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			opts := tt.opts
			opts.TmpDir = tmp
			opts.HeaderFunc = customersHeader
			opts.HeaderHint = "the columns email, name, signup_date"
			xr, recs, err := readXLSXFile(t, filepath.Join(xlsxCorpus, tt.file), &opts)
			// Every sheet tried is closed again: nothing is left behind.
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("%d temporary files left in TmpDir", len(left))
			}
			if tt.fileErr != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || fe.File != tt.file || !strings.Contains(err.Error(), tt.fileErr) {
					t.Fatalf("want a rows.FileError of %s with %q, got %T %v", tt.file, tt.fileErr, err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if xr.Sheet() != tt.sheet || strings.Join(xr.Header(), "|") != tt.header || xr.HeaderRow() != tt.hdrRow {
				t.Errorf("sheet %q, header %q on row %d; want %q, %q on row %d", xr.Sheet(), xr.Header(), xr.HeaderRow(), tt.sheet, tt.header, tt.hdrRow)
			}
			if tt.rows == nil {
				return
			}
			var got []int64
			for _, r := range recs {
				got = append(got, r.Row)
			}
			if !slices.Equal(got, tt.rows) || xr.SkippedEmpty() != 0 {
				t.Errorf("rows %v, %d skipped; want %v, 0", got, xr.SkippedEmpty(), tt.rows)
			}
		})
	}
}

// TestXLSXFormulaUncalculated: a formula without a cached value is a row
// error, never 0 or ""; a formula whose cached value is "" (text) is that
// value.
func TestXLSXFormulaUncalculated(t *testing.T) {
	t.Parallel()
	_, recs, err := readXLSXFile(t, filepath.Join(xlsxCorpus, "formula_uncalculated.xlsx"), &Options{TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	byRow := map[int64]rows.Record{}
	for _, r := range recs {
		byRow[r.Row] = r
	}
	for row, want := range map[int64]struct{ values, errors string }{
		2: {"customer2@example.com|Customer 2|FR|2020-01-05|2.5", ""},
		3: {"customer3@example.com|Customer 3|FR|2020-01-06|",
			"amount/formula_not_calculated: cell E3 has a formula that was never calculated: open the file in Excel and save it again"},
		4: {"customer4@example.com|Customer 4|FR|2020-01-07|",
			"amount/formula_not_calculated: cell E4 has a formula that was never calculated: open the file in Excel and save it again"},
		5: {"customer5@example.com|Customer 5||2020-01-08|0", ""}, // Excel's cached ""
		6: {"customer6@example.com|Customer 6|FR|2020-01-09|20", ""},
	} {
		r := byRow[row]
		var errs []string
		for _, e := range r.Errors {
			if e.Row != row {
				t.Errorf("row %d has an error of row %d", row, e.Row)
			}
			errs = append(errs, e.Column+"/"+string(e.Code)+": "+e.Message)
		}
		if got := strings.Join(r.Values, "|"); got != want.values || strings.Join(errs, "; ") != want.errors {
			t.Errorf("row %d = %q %q, want %q %q", row, got, errs, want.values, want.errors)
		}
	}
}

// TestXLSXDates checks serial numbers, formats and cell types in both date
// systems: the 1900 system has a phantom 1900-02-29 (serial 60), which is a
// bad_date row error naming the day rather than a guessed date, and counts
// day 1 as 1900-01-01; the 1904 system counts day 0 as 1904-01-01.
func TestXLSXDates(t *testing.T) {
	t.Parallel()
	common := map[string]string{
		"time": "12:00:00", "hmm": "18:00:00", "negative": "-1", "number": "1234567.5",
		"percent": "0.25", "exponent": "0.001", "true": "true", "false": "false", "error": "",
		"formula_str": "ab", "formula_num": "5", "iso_cell": "2020-01-03",
		"quoted": "=SUM(A1)", "apostrophe": "'tis",
	}
	tests := map[string]map[string]string{
		"dates1900.xlsx": {
			"d1": "1900-01-01", "d59": "1900-02-28", "d60": "", "d61": "1900-03-01",
			"d43833": "2020-01-03", "datetime": "2020-01-03 10:30:00", "second": "2020-01-03 00:00:01",
			"millis": "2020-01-03 12:00:00.501", "custom": "2020-01-03", "iso_fmt": "2020-01-03",
		},
		"dates1904.xlsx": {
			"d1": "1904-01-02", "d59": "1904-02-29", "d60": "1904-03-01", "d61": "1904-03-02",
			"d43833": "2024-01-04", "datetime": "2024-01-04 10:30:00", "second": "2024-01-04 00:00:01",
			"millis": "2024-01-04 12:00:00.501", "custom": "2024-01-04", "iso_fmt": "2024-01-04",
		},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			xr, recs, err := readXLSXFile(t, filepath.Join(xlsxCorpus, name), nil)
			if err != nil {
				t.Fatal(err)
			}
			if xr.Date1904() != (name == "dates1904.xlsx") {
				t.Errorf("Date1904() = %v", xr.Date1904())
			}
			// The cells that are row errors, by label: an error value, and
			// in the 1900 system the day that does not exist.
			wantCodes := map[string]rows.Code{"error": CodeCellError}
			if name == "dates1900.xlsx" {
				wantCodes["d60"] = rows.CodeBadDate
			}
			got := map[string]string{}
			for _, r := range recs {
				got[r.Values[0]] = r.Values[1]
				code, wantErr := wantCodes[r.Values[0]]
				if (len(r.Errors) > 0) != wantErr || wantErr && (r.Errors[0].Code != code || r.Errors[0].Column != "value") {
					t.Errorf("%s: errors %v", r.Values[0], r.Errors)
				}
				if code == rows.CodeBadDate && !strings.Contains(r.Errors[0].Message, "1900-02-29") {
					t.Errorf("%s: message %q does not name 1900-02-29", r.Values[0], r.Errors[0].Message)
				}
			}
			for k, v := range common {
				want[k] = v
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d labels, want %d", len(got), len(want))
			}
		})
	}
}

// TestXLSXCorpusMemory reads every hostile file in a child process and
// checks its peak resident memory (VmHWM) stays under 256 MiB. The zip bomb
// is also read with the ratio check off, so that excelize really inflates
// its 128 MiB sheet: the sheet spills to disk and the run guard refuses the
// padding without holding it.
func TestXLSXCorpusMemory(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("the race detector's shadow memory makes RSS meaningless; run without -race")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc (Linux) to read the peak RSS")
	}
	const limit = 256 << 20
	files, err := filepath.Glob(filepath.Join(xlsxCorpus, "*.xlsx"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	type run struct {
		file  string
		ratio string
		rule  string // "1": read with a header rule, which holds rows back
	}
	runs := []run{{filepath.Join(xlsxCorpus, "zip_bomb.xlsx"), "1000000", ""}}
	for _, f := range files {
		runs = append(runs, run{f, "", ""}, run{f, "", "1"})
	}
	for _, r := range runs {
		name := filepath.Base(r.file) + r.ratio
		if r.rule != "" {
			name += "_rule"
		}
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestXLSXMemoryChild$", "-test.v")
			cmd.Env = append(os.Environ(), "ROWFATE_XLSX_CHILD="+r.file, "ROWFATE_XLSX_RATIO="+r.ratio, "ROWFATE_XLSX_RULE="+r.rule)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var hwm, outcome string
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "VmHWM_KB="); ok {
					hwm = v
				}
				if v, ok := strings.CutPrefix(sc.Text(), "OUTCOME="); ok {
					outcome = v
				}
			}
			kb, err := strconv.ParseInt(hwm, 10, 64)
			if err != nil {
				t.Fatalf("no VmHWM in the child's output:\n%s", out)
			}
			t.Logf("peak RSS %d KiB: %s", kb, outcome)
			if kb*1024 > limit {
				t.Errorf("peak RSS %d KiB, more than %d MiB", kb, limit>>20)
			}
			if r.ratio != "" && !strings.Contains(outcome, "without markup") {
				t.Errorf("the inflated zip bomb: %s", outcome)
			}
		})
	}
}

// TestXLSXMemoryChild is TestXLSXCorpusMemory's child process.
func TestXLSXMemoryChild(t *testing.T) {
	path := os.Getenv("ROWFATE_XLSX_CHILD")
	if path == "" {
		t.Skip("run by TestXLSXCorpusMemory")
	}
	opts := &Options{TmpDir: t.TempDir()}
	if r := os.Getenv("ROWFATE_XLSX_RATIO"); r != "" {
		opts.MaxCompressionRatio, _ = strconv.ParseInt(r, 10, 64)
	}
	if os.Getenv("ROWFATE_XLSX_RULE") != "" {
		opts.HeaderFunc = customersHeader
	}
	_, recs, err := readXLSXFile(t, path, opts)
	fmt.Printf("OUTCOME=%d records, %v\n", len(recs), err)
	status, rerr := os.ReadFile("/proc/self/status")
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Printf("VmHWM_KB=%s\n", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
}

// FuzzXLSXReader feeds the corpus, and what the fuzzer makes of it, to the
// reader: it must never panic, every data row must come out exactly once
// (rows strictly increasing, below Excel's limit) or the file must be
// refused with a *rows.FileError.
func FuzzXLSXReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(xlsxCorpus, "*.xlsx"))
	for _, path := range files {
		if strings.Contains(path, "zip_bomb") || strings.Contains(path, "wide_") || strings.Contains(path, "big_cell") {
			continue // large seeds slow every fuzz iteration down
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	tmp := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := &Options{TmpDir: tmp, MaxFileBytes: 4 << 20, MaxUnzipBytes: 64 << 20}
		fuzzXLSX(t, data, opts)
		// And with a header rule, which may try several sheets and holds
		// rows back while it looks.
		opts.HeaderFunc = customersHeader
		fuzzXLSX(t, data, opts)
	})
}

// fuzzXLSX reads data with opts and checks what FuzzXLSXReader promises.
func fuzzXLSX(t *testing.T, data []byte, opts *Options) {
	t.Helper()
	xr, err := NewReader(bytes.NewReader(data), "fuzz.xlsx", opts)
	if err != nil {
		var fe *rows.FileError
		if !errors.As(err, &fe) {
			t.Fatalf("not a FileError: %T %v", err, err)
		}
		return
	}
	defer xr.Close()
	if len(xr.Header()) == 0 {
		t.Fatal("a reader without a header")
	}
	last := xr.HeaderRow()
	for {
		rec, err := xr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var fe *rows.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("not a FileError: %T %v", err, err)
			}
			if _, again := xr.Next(); again == nil || again.Error() != err.Error() {
				t.Fatalf("after a file error, Next returned %v", again)
			}
			return
		}
		if rec.Row <= last || rec.Row > xlsxMaxRows {
			t.Fatalf("row %d after row %d", rec.Row, last)
		}
		last = rec.Row
		for _, fe := range rec.Errors {
			if fe.Row != rec.Row {
				t.Fatalf("row %d has an error of row %d", rec.Row, fe.Row)
			}
		}
	}
}
