package csvfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows"
)

// TestFixturesCorpusReading reads every file of fixtures/csv and checks
// what the reader decides about it: encoding, delimiter, header width and
// the number of records, or the file error and its line. What the
// customers kind makes of the records is batch/fixtures_test.go's job.
func TestFixturesCorpusReading(t *testing.T) {
	t.Parallel()

	type want struct {
		encoding string
		comma    rune
		columns  int
		records  int
		fileErr  string // substring of a *rows.FileError; "" for none
		line     int64
	}
	tests := map[string]want{
		"utf8_bom.csv":          {EncodingUTF8, ',', 5, 3, "", 0},
		"utf16le_bom.csv":       {EncodingUTF16LE, ',', 5, 3, "", 0},
		"utf16be_bom.csv":       {EncodingUTF16BE, ',', 5, 3, "", 0},
		"windows1252.csv":       {EncodingWindows1252, ',', 5, 4, "", 0},
		"semicolon.csv":         {EncodingUTF8, ';', 5, 3, "", 0},
		"tab.csv":               {EncodingUTF8, '\t', 5, 3, "", 0},
		"pipe.csv":              {EncodingUTF8, '|', 5, 3, "", 0},
		"crlf.csv":              {EncodingUTF8, ',', 5, 3, "", 0},
		"quoted_newlines.csv":   {EncodingUTF8, ',', 6, 2, "", 0},
		"ragged.csv":            {EncodingUTF8, ',', 5, 4, "", 0},
		"nul.csv":               {EncodingUTF8, ',', 5, 3, "", 0},
		"bad_utf8.csv":          {EncodingUTF8, ',', 5, 2, "", 0},
		"bare_cr.csv":           {EncodingUTF8, ',', 5, 3, "", 0},
		"huge_cell.csv":         {EncodingUTF8, ',', 5, 3, "", 0},
		"unbalanced_quote.csv":  {EncodingUTF8, ',', 5, 3, "", 0}, // line 3 is an unreadable row
		"duplicate_headers.csv": {EncodingUTF8, ',', 4, 1, "", 0}, // rejected by the kind's mapping, not the reader
		"missing_columns.csv":   {EncodingUTF8, ',', 2, 1, "", 0},
		"unknown_columns.csv":   {EncodingUTF8, ',', 6, 1, "", 0},
		"header_only.csv":       {EncodingUTF8, ',', 5, 0, "", 0},
		"empty.csv":             {"", 0, 0, 0, "no header row", 0},
		"excel_dates.csv":       {EncodingUTF8, ',', 5, 3, "", 0},
		"duplicate_keys.csv":    {EncodingUTF8, ',', 5, 3, "", 0},
		"formula_quotes.csv":    {EncodingUTF8, ',', 5, 2, "", 0},
		"sep_line.csv":          {EncodingUTF8, ';', 5, 3, "", 0},
		// Without a header rule or row, the first non-empty line is the
		// header: the title, and the lines under it are data. See
		// TestFixturesHeaderRules for the same files read as they mean.
		"title_rows.csv":  {EncodingUTF8, ',', 5, 5, "", 0},
		"header_row3.csv": {EncodingUTF8, ',', 1, 5, "", 0},
	}
	files, err := filepath.Glob("../../fixtures/csv/*.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("fixtures/csv has %d files, the table %d: every fixture needs an expectation", len(files), len(tests))
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, ok := tests[name]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := NewReader(f, name, nil)
			var n int
			if err == nil {
				if r.Encoding() != w.encoding || r.Comma() != w.comma || len(r.Header()) != w.columns {
					t.Errorf("encoding %s, comma %q, %d columns; want %s, %q, %d", r.Encoding(), r.Comma(), len(r.Header()), w.encoding, w.comma, w.columns)
				}
				for {
					_, err = r.Next()
					if err != nil {
						break
					}
					n++
				}
				if errors.Is(err, io.EOF) {
					err = nil
				}
			}
			if w.fileErr == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				if n != w.records {
					t.Errorf("%d records, want %d", n, w.records)
				}
				return
			}
			var fe *rows.FileError
			if !errors.As(err, &fe) || fe.Line != w.line || !strings.Contains(err.Error(), w.fileErr) || fe.File != name {
				t.Fatalf("error %v, want a *rows.FileError of %s at line %d containing %q", err, name, w.line, w.fileErr)
			}
			if n != w.records {
				t.Errorf("%d records before the error, want %d", n, w.records)
			}
		})
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

// TestFixturesHeaderRules reads the fixtures whose header is not simply
// their first line with the options that find it: the sep= line, a header
// rule, a declared header row. Rows keep the numbers a spreadsheet shows.
func TestFixturesHeaderRules(t *testing.T) {
	t.Parallel()
	const customers = "email|name|country|signup_date|amount"
	tests := []struct {
		name    string
		file    string
		opts    Options
		comma   rune
		sepLine bool
		header  string
		hdrRow  int64
		rows    []int64
		skipped int64
		fileErr string // substring of a *rows.FileError
		line    int64
	}{
		{name: "sep line", file: "sep_line.csv", comma: ';', sepLine: true, header: customers, hdrRow: 2, rows: []int64{3, 4, 5}},
		{
			// The declaration wins; the sep= line is still no header.
			name: "sep line, other delimiter declared", file: "sep_line.csv", opts: Options{Comma: ','}, comma: ',', sepLine: true,
			header: "email;name;country;signup_date;amount", hdrRow: 2, rows: []int64{3, 4, 5},
		},
		{name: "sep line with a header rule", file: "sep_line.csv", opts: Options{HeaderFunc: customersHeader}, comma: ';', sepLine: true, header: customers, hdrRow: 2, rows: []int64{3, 4, 5}},
		{name: "title rows by rule", file: "title_rows.csv", opts: Options{HeaderFunc: customersHeader}, comma: ',', header: customers, hdrRow: 4, rows: []int64{5, 6, 7}, skipped: 1},
		{name: "title rows by row", file: "title_rows.csv", opts: Options{HeaderRow: 4}, comma: ',', header: customers, hdrRow: 4, rows: []int64{5, 6, 7}, skipped: 1},
		{name: "title rows, header row on the empty line", file: "title_rows.csv", opts: Options{HeaderRow: 3}, fileErr: "the header row 3 is empty", line: 3},
		{
			// No rule: the title is the header and the rest is data.
			name: "title rows without a rule", file: "title_rows.csv", comma: ',', header: "Customer export||||", hdrRow: 1,
			rows: []int64{2, 4, 5, 6, 7}, skipped: 1,
		},
		{name: "header row 3", file: "header_row3.csv", opts: Options{HeaderRow: 3}, comma: ',', header: customers, hdrRow: 3, rows: []int64{4, 5, 6}},
		{name: "header row 3 by rule", file: "header_row3.csv", opts: Options{HeaderFunc: customersHeader}, comma: ',', header: customers, hdrRow: 3, rows: []int64{4, 5, 6}},
		{name: "header row wins over the rule", file: "header_row3.csv", opts: Options{HeaderRow: 2, HeaderFunc: customersHeader}, comma: ',', header: "Prepared by Sales", hdrRow: 2, rows: []int64{3, 4, 5, 6}},
		{name: "header row past the end", file: "header_row3.csv", opts: Options{HeaderRow: 9}, fileErr: "the header row 9 is past the end of the file, whose last row is 6"},
		{name: "header row on the sep line", file: "sep_line.csv", opts: Options{HeaderRow: 1}, fileErr: "the header row 1 is the sep= line", line: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(filepath.Join("../../fixtures/csv", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			opts := tt.opts
			r, err := NewReader(f, tt.file, &opts)
			if tt.fileErr != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || fe.File != tt.file || fe.Line != tt.line || !strings.Contains(err.Error(), tt.fileErr) {
					t.Fatalf("error %v, want a *rows.FileError of %s at line %d containing %q", err, tt.file, tt.line, tt.fileErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			info := r.Info()
			if info.Delimiter != DelimiterName(tt.comma) || info.SepLine != tt.sepLine || info.HeaderRow != tt.hdrRow || strings.Join(r.Header(), "|") != tt.header {
				t.Errorf("Info() = %+v, header %q; want delimiter %q, sep line %v, header row %d, header %q",
					info, r.Header(), DelimiterName(tt.comma), tt.sepLine, tt.hdrRow, tt.header)
			}
			var got []int64
			for {
				rec, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, rec.Row)
			}
			if !slices.Equal(got, tt.rows) || r.SkippedEmpty() != tt.skipped {
				t.Errorf("rows %v, %d skipped; want %v, %d", got, r.SkippedEmpty(), tt.rows, tt.skipped)
			}
		})
	}
}
