package csvfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
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
		"bare_cr.csv":           {EncodingUTF8, ',', 0, 0, "bare carriage return", 1},
		"huge_cell.csv":         {EncodingUTF8, ',', 5, 3, "", 0},
		"unbalanced_quote.csv":  {EncodingUTF8, ',', 5, 1, `extraneous or missing " in quoted-field`, 3},
		"duplicate_headers.csv": {EncodingUTF8, ',', 4, 1, "", 0}, // rejected by the kind's mapping, not the reader
		"missing_columns.csv":   {EncodingUTF8, ',', 2, 1, "", 0},
		"unknown_columns.csv":   {EncodingUTF8, ',', 6, 1, "", 0},
		"header_only.csv":       {EncodingUTF8, ',', 5, 0, "", 0},
		"empty.csv":             {"", 0, 0, 0, "no header row", 0},
		"excel_dates.csv":       {EncodingUTF8, ',', 5, 3, "", 0},
		"duplicate_keys.csv":    {EncodingUTF8, ',', 5, 3, "", 0},
		"formula_quotes.csv":    {EncodingUTF8, ',', 5, 2, "", 0},
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
