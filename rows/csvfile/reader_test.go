package csvfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rowfate/rowfate/rows"
)

// readAll reads every record of input. It stops at the first error and
// returns it, io.EOF excluded.
func readAll(t *testing.T, input string, opts *Options) (*Reader, []rows.Record, error) {
	t.Helper()
	r, err := NewReader(strings.NewReader(input), "test.csv", opts)
	if err != nil {
		return nil, nil, err
	}
	var recs []rows.Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r, recs, nil
		}
		if err != nil {
			return r, recs, err
		}
		recs = append(recs, rec)
	}
}

func TestCSVReaderRowNumbers(t *testing.T) {
	t.Parallel()

	type rec struct {
		row, line int64
		values    []string
	}
	tests := []struct {
		name    string
		input   string
		header  []string
		want    []rec
		skipped int64
	}{
		{
			name:   "plain",
			input:  "email,name\na@x,A\nb@x,B\n",
			header: []string{"email", "name"},
			want:   []rec{{2, 2, []string{"a@x", "A"}}, {3, 3, []string{"b@x", "B"}}},
		},
		{
			name:   "no trailing newline",
			input:  "email,name\na@x,A",
			header: []string{"email", "name"},
			want:   []rec{{2, 2, []string{"a@x", "A"}}},
		},
		{
			name:    "blank lines count as rows",
			input:   "email,name\na@x,A\n\n\nb@x,B\n",
			header:  []string{"email", "name"},
			want:    []rec{{2, 2, []string{"a@x", "A"}}, {5, 5, []string{"b@x", "B"}}},
			skipped: 2,
		},
		{
			name:    "blank lines before the header",
			input:   "\n\nemail,name\na@x,A\n",
			header:  []string{"email", "name"},
			want:    []rec{{4, 4, []string{"a@x", "A"}}},
			skipped: 2,
		},
		{
			name:    "whitespace-only rows are blank",
			input:   "email,name\n,,,\n  ,  \n\t\na@x,A\n",
			header:  []string{"email", "name"},
			want:    []rec{{5, 5, []string{"a@x", "A"}}},
			skipped: 3,
		},
		{
			name:    "whitespace-only rows before the header",
			input:   " \n,,\nemail,name\na@x,A\n",
			header:  []string{"email", "name"},
			want:    []rec{{4, 4, []string{"a@x", "A"}}},
			skipped: 2,
		},
		{
			name:    "trailing blank lines",
			input:   "email,name\na@x,A\n\n\n",
			header:  []string{"email", "name"},
			want:    []rec{{2, 2, []string{"a@x", "A"}}},
			skipped: 2,
		},
		{
			name:    "trailing whitespace-only lines",
			input:   "email,name\na@x,A\n \n,",
			header:  []string{"email", "name"},
			want:    []rec{{2, 2, []string{"a@x", "A"}}},
			skipped: 2,
		},
		{
			name:   "quoted cell spanning two lines is one row",
			input:  "email,note\na@x,\"line one\nline two\"\nb@x,B\n",
			header: []string{"email", "note"},
			want:   []rec{{2, 2, []string{"a@x", "line one\nline two"}}, {3, 4, []string{"b@x", "B"}}},
		},
		{
			name:    "multi-line cell then a blank line",
			input:   "email,note\na@x,\"x\n\ny\"\n\nb@x,B\n",
			header:  []string{"email", "note"},
			want:    []rec{{2, 2, []string{"a@x", "x\n\ny"}}, {4, 6, []string{"b@x", "B"}}},
			skipped: 1,
		},
		{
			name:   "multi-line header",
			input:  "\"e\nmail\",name\na@x,A\n",
			header: []string{"e\nmail", "name"},
			want:   []rec{{2, 3, []string{"a@x", "A"}}},
		},
		{
			name:    "CRLF",
			input:   "email,name\r\na@x,A\r\n\r\nb@x,\"B\r\nB\"\r\nc@x,C\r\n",
			header:  []string{"email", "name"},
			want:    []rec{{2, 2, []string{"a@x", "A"}}, {4, 4, []string{"b@x", "B\nB"}}, {5, 6, []string{"c@x", "C"}}},
			skipped: 1,
		},
		{
			name:   "quoted cells keep their spaces and commas",
			input:  "email,name\n\" a@x \",\"Doe, Jane\"\n",
			header: []string{"email", "name"},
			want:   []rec{{2, 2, []string{" a@x ", "Doe, Jane"}}},
		},
		{
			name:   "header only",
			input:  "email,name\n",
			header: []string{"email", "name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, recs, err := readAll(t, tt.input, nil)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if !slices.Equal(r.Header(), tt.header) {
				t.Errorf("Header() = %q, want %q", r.Header(), tt.header)
			}
			if len(recs) != len(tt.want) {
				t.Fatalf("got %d records, want %d: %+v", len(recs), len(tt.want), recs)
			}
			for i, w := range tt.want {
				got := recs[i]
				if got.Row != w.row || got.Line != w.line {
					t.Errorf("record %d: Row %d Line %d, want Row %d Line %d", i, got.Row, got.Line, w.row, w.line)
				}
				if !slices.Equal(got.Values, w.values) {
					t.Errorf("record %d: Values %q, want %q", i, got.Values, w.values)
				}
				if len(got.Errors) != 0 {
					t.Errorf("record %d: unexpected errors %v", i, got.Errors)
				}
			}
			if got := r.SkippedEmpty(); got != tt.skipped {
				t.Errorf("SkippedEmpty() = %d, want %d", got, tt.skipped)
			}
		})
	}
}

func TestCSVReaderBOM(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		input  string
		header []string
		row    int64
	}{
		{"stripped", "\ufeffemail,name\na@x,A\n", []string{"email", "name"}, 2},
		{"stripped before a blank line", "\ufeff\nemail,name\na@x,A\n", []string{"email", "name"}, 3},
		{"only one is stripped", "\ufeff\ufeffemail,name\na@x,A\n", []string{"\ufeffemail", "name"}, 2},
		{"not at the start is kept", "email,\ufeffname\na@x,A\n", []string{"email", "\ufeffname"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, recs, err := readAll(t, tt.input, nil)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if !slices.Equal(r.Header(), tt.header) {
				t.Errorf("Header() = %q, want %q", r.Header(), tt.header)
			}
			if len(recs) != 1 || recs[0].Row != tt.row {
				t.Errorf("records = %+v, want one at row %d", recs, tt.row)
			}
		})
	}
}

func TestCSVReaderNoHeader(t *testing.T) {
	t.Parallel()

	for name, input := range map[string]string{
		"empty":             "",
		"blank lines":       "\n\n\n",
		"CRLF blank lines":  "\r\n\r\n",
		"BOM only":          "\ufeff",
		"BOM and blanks":    "\ufeff\n\n",
		"whitespace only":   " \n,,,\n  ,  \n",
		"single whitespace": "   ",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, err := NewReader(strings.NewReader(input), "empty.csv", nil)
			if err == nil {
				t.Fatalf("NewReader = header %q, want an error", r.Header())
			}
			var fe *rows.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *rows.FileError", err, err)
			}
			if fe.File != "empty.csv" {
				t.Errorf("rows.FileError.File = %q, want empty.csv", fe.File)
			}
			if !strings.Contains(err.Error(), "no header") {
				t.Errorf("error %q does not mention the missing header", err)
			}
		})
	}
}

func TestCSVReaderFileErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		input    string
		opts     *Options
		line     int64 // want rows.FileError.Line
		contains string
		records  int // records read before the error
	}{
		{
			name:     "unbalanced quote in the header",
			input:    "\"email,name\na@x,A\n",
			line:     1,
			contains: "quote",
			records:  -1, // NewReader fails
		},
		{
			name:     "too many rows",
			input:    "email\na\nb\n\nc\n",
			opts:     &Options{MaxRows: 2},
			line:     5,
			contains: "more than 2 data rows",
			records:  2,
		},
		{
			name:     "too many header columns",
			input:    "a,b,c\n1,2,3\n",
			opts:     &Options{MaxColumns: 2},
			line:     1,
			contains: "3 columns",
			records:  -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, recs, err := readAll(t, tt.input, tt.opts)
			var fe *rows.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *rows.FileError", err, err)
			}
			if fe.Line != tt.line {
				t.Errorf("rows.FileError.Line = %d, want %d (%v)", fe.Line, tt.line, err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
			if tt.records >= 0 && len(recs) != tt.records {
				t.Errorf("read %d records before the error, want %d", len(recs), tt.records)
			}
		})
	}
}

func TestCSVReaderMaxRowsCountsDataRowsOnly(t *testing.T) {
	t.Parallel()

	// Two data rows and many blank ones: the cap is on data rows.
	_, recs, err := readAll(t, "email\n\n\na\n ,\nb\n\n", &Options{MaxRows: 2})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(recs) != 2 {
		t.Errorf("got %d records, want 2", len(recs))
	}
}

// errAfter returns data and then fails, like a dropped connection.
type errAfter struct {
	data []byte
	err  error
}

func (r *errAfter) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestCSVReaderSourceError(t *testing.T) {
	t.Parallel()

	cause := errors.New("connection reset")
	r, err := NewReader(&errAfter{data: []byte("email\na\n"), err: cause}, "remote.csv", nil)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	if rec, err := r.Next(); err != nil || rec.Values[0] != "a" {
		t.Fatalf("Next = %+v, %v; want the record a", rec, err)
	}
	_, err = r.Next()
	var fe *rows.FileError
	if !errors.As(err, &fe) || !errors.Is(err, cause) {
		t.Fatalf("Next error = %v (%T), want a *rows.FileError wrapping %v", err, err, cause)
	}
}

func TestCSVReaderRaggedRows(t *testing.T) {
	t.Parallel()

	r, recs, err := readAll(t, "email,name\na@x\nb@x,B,extra\nc@x,C\n", nil)
	if err != nil {
		t.Fatalf("ragged rows must not reject the file: %v", err)
	}
	if len(recs) != 3 {
		t.Fatalf("got %d records, want 3", len(recs))
	}
	for i, want := range []struct {
		row    int64
		values []string
		ragged bool
	}{
		{2, []string{"a@x"}, true},
		{3, []string{"b@x", "B", "extra"}, true},
		{4, []string{"c@x", "C"}, false},
	} {
		got := recs[i]
		if got.Row != want.row || !slices.Equal(got.Values, want.values) {
			t.Errorf("record %d = row %d %q, want row %d %q", i, got.Row, got.Values, want.row, want.values)
		}
		if !want.ragged {
			if len(got.Errors) != 0 {
				t.Errorf("record %d: unexpected errors %v", i, got.Errors)
			}
			continue
		}
		if len(got.Errors) != 1 {
			t.Fatalf("record %d: errors %v, want one ragged_row", i, got.Errors)
		}
		fe := got.Errors[0]
		if fe.Code != rows.CodeRaggedRow || fe.Row != want.row || fe.Column != "" {
			t.Errorf("record %d: error %+v, want ragged_row at row %d for the whole row", i, fe, want.row)
		}
	}
	if r.SkippedEmpty() != 0 {
		t.Errorf("SkippedEmpty() = %d, want 0", r.SkippedEmpty())
	}
}

func TestCSVReaderCellTooLong(t *testing.T) {
	t.Parallel()

	input := " email ,name\n" +
		"12345678,ok\n" + // exactly the limit: fine
		"123456789,ok\n" + // one byte over
		"short,ok,123456789\n" // over, in a column the header lacks
	_, recs, err := readAll(t, input, &Options{MaxCellBytes: 8})
	if err != nil {
		t.Fatalf("a long cell must not reject the file: %v", err)
	}
	if len(recs) != 3 {
		t.Fatalf("got %d records, want 3", len(recs))
	}

	if len(recs[0].Errors) != 0 || recs[0].Values[0] != "12345678" {
		t.Errorf("record at the limit = %+v, want it untouched", recs[0])
	}

	got := recs[1]
	if len(got.Errors) != 1 {
		t.Fatalf("errors %v, want one cell_too_long", got.Errors)
	}
	if fe := got.Errors[0]; fe.Code != rows.CodeCellTooLong || fe.Row != 3 || fe.Column != "email" {
		t.Errorf("error %+v, want cell_too_long at row 3, column email", fe)
	}
	if got.Values[0] != "" || got.Values[1] != "ok" {
		t.Errorf("Values = %q, want the long cell emptied and the rest kept", got.Values)
	}

	got = recs[2]
	codes := []rows.Code{}
	for _, fe := range got.Errors {
		codes = append(codes, fe.Code)
	}
	if !slices.Equal(codes, []rows.Code{rows.CodeRaggedRow, rows.CodeCellTooLong}) {
		t.Fatalf("codes %v, want [ragged_row cell_too_long]", codes)
	}
	if fe := got.Errors[1]; fe.Column != "#3" {
		t.Errorf("column of a cell beyond the header = %q, want #3", fe.Column)
	}
	if got.Values[2] != "" {
		t.Errorf("long cell beyond the header kept: %q", got.Values[2])
	}
}

func TestCSVReaderSemicolon(t *testing.T) {
	t.Parallel()

	r, recs, err := readAll(t, "email;name;amount\na@x;Doe, Jane;1,50\n", &Options{Comma: ';'})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if want := []string{"email", "name", "amount"}; !slices.Equal(r.Header(), want) {
		t.Errorf("Header() = %q, want %q", r.Header(), want)
	}
	if len(recs) != 1 {
		t.Fatalf("got %d records, want 1", len(recs))
	}
	if want := []string{"a@x", "Doe, Jane", "1,50"}; !slices.Equal(recs[0].Values, want) {
		t.Errorf("Values = %q, want %q", recs[0].Values, want)
	}
	if len(recs[0].Errors) != 0 {
		t.Errorf("unexpected errors %v", recs[0].Errors)
	}
}

func TestCSVReaderSepLine(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		input   string
		opts    *Options
		comma   rune
		sepLine bool
		header  []string
		rows    []int64
		fileErr string
	}{
		{name: "semicolon", input: "sep=;\nemail;name\na@x;A\n", comma: ';', sepLine: true, header: []string{"email", "name"}, rows: []int64{3}},
		{name: "BOM and CRLF", input: "\ufeffsep=;\r\nemail;name\r\na@x;A\r\n", comma: ';', sepLine: true, header: []string{"email", "name"}, rows: []int64{3}},
		{name: "upper case", input: "SEP=|\nemail|name\na@x|A\n", comma: '|', sepLine: true, header: []string{"email", "name"}, rows: []int64{3}},
		{name: "tab", input: "sep=\t\nemail\tname\na@x\tA\n", comma: '\t', sepLine: true, header: []string{"email", "name"}, rows: []int64{3}},
		{name: "comma", input: "sep=,\nemail,name\na@x,A\n", comma: ',', sepLine: true, header: []string{"email", "name"}, rows: []int64{3}},
		{
			// Sniffing alone breaks the tie for the comma.
			name: "names what sniffing would miss", input: "sep=;\nname;city, country\nA;Paris, FR\n", comma: ';', sepLine: true,
			header: []string{"name", "city, country"}, rows: []int64{3},
		},
		{
			name: "declared delimiter wins, the line is still skipped", input: "sep=;\nemail,name\na@x,A\n", opts: &Options{Comma: ','},
			comma: ',', sepLine: true, header: []string{"email", "name"}, rows: []int64{3},
		},
		{name: "blank lines after it", input: "sep=;\n\nemail;name\na@x;A\n", comma: ';', sepLine: true, header: []string{"email", "name"}, rows: []int64{4}},
		{name: "UTF-16", input: "\xff\xfes\x00e\x00p\x00=\x00;\x00\n\x00a\x00;\x00b\x00\n\x001\x00;\x002\x00\n\x00", comma: ';', sepLine: true, header: []string{"a", "b"}, rows: []int64{3}},
		{name: "not on the first line", input: "\nsep=;\nemail;name\n", comma: ';', header: []string{"sep=", ""}, rows: []int64{3}},
		{name: "no character", input: "sep=\nemail,name\n", comma: ',', header: []string{"sep="}, rows: []int64{2}},
		{name: "two characters", input: "sep=;;\nemail;name\n", comma: ';', header: []string{"sep=", "", ""}, rows: []int64{2}},
		{name: "a quote", input: "sep=\"\nemail,name\n", fileErr: "line 1: the first line \"sep=\\\"\" names '\"' as the delimiter, which cannot be one: remove the line"},
		{name: "a quote, the delimiter declared", input: "sep=\"\nemail,name\n", opts: &Options{Comma: ','}, fileErr: "which cannot be one: remove the line"},
		{name: "and nothing else", input: "sep=;\r\n", fileErr: "no header row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, recs, err := readAll(t, tt.input, tt.opts)
			if tt.fileErr != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.fileErr) {
					t.Fatalf("error %v, want a *rows.FileError containing %q", err, tt.fileErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Comma() != tt.comma || r.Info().SepLine != tt.sepLine || !slices.Equal(r.Header(), tt.header) {
				t.Errorf("comma %q, sep line %v, header %q; want %q, %v, %q", r.Comma(), r.Info().SepLine, r.Header(), tt.comma, tt.sepLine, tt.header)
			}
			var got []int64
			for _, rec := range recs {
				got = append(got, rec.Row)
				if rec.Line != rec.Row {
					t.Errorf("row %d on line %d", rec.Row, rec.Line)
				}
			}
			if !slices.Equal(got, tt.rows) {
				t.Errorf("rows %v, want %v", got, tt.rows)
			}
			// Every case has its data right under the header.
			if want := tt.rows[0] - 1; r.HeaderRow() != want {
				t.Errorf("header row %d, want %d", r.HeaderRow(), want)
			}
		})
	}
}

// hasColumns returns a header rule that wants the given columns.
func hasColumns(cols ...string) func([]string) bool {
	return func(cells []string) bool {
		for _, c := range cols {
			if !slices.ContainsFunc(cells, func(v string) bool { return strings.EqualFold(strings.TrimSpace(v), c) }) {
				return false
			}
		}
		return true
	}
}

func TestCSVReaderHeaderFunc(t *testing.T) {
	t.Parallel()

	rule := hasColumns("email", "name")
	tests := []struct {
		name    string
		input   string
		opts    Options
		comma   rune
		header  string
		hdrRow  int64
		rows    []int64
		codes   map[int64]rows.Code
		skipped int64
		above   int64
	}{
		{
			name:  "titles, ragged and padded, and blank lines",
			input: "Report\n\nFrom: Sales, Inc.\n\"Exported, today\",,,\n\nEMAIL,Name\na@x,A\n\nb@x,B\n",
			comma: ',', header: "EMAIL|Name", hdrRow: 6, rows: []int64{7, 9}, skipped: 3, above: 3,
		},
		{name: "header first", input: "email,name\na@x,A\n", comma: ',', header: "email|name", hdrRow: 1, rows: []int64{2}},
		{
			// Without a match, the first non-empty row is the header and
			// what was read after it is data, checked as data.
			name: "no match: the default", input: "\nid,label\n1,a\n\n2,b,extra\n3,c\n", comma: ',', header: "id|label", hdrRow: 2,
			rows: []int64{3, 5, 6}, codes: map[int64]rows.Code{5: rows.CodeRaggedRow}, skipped: 2,
		},
		{
			name: "a header past the first 20 non-empty rows is not looked for", input: strings.Repeat("note\n\n", 20) + "email,name\na@x,A\n",
			comma: ',', header: "note", hdrRow: 1, rows: append(rowsFrom(3, 2, 19), 41, 42), skipped: 20,
			// It is a second table, under the header the first row is.
			codes: map[int64]rows.Code{41: rows.CodeSecondTable, 42: rows.CodeSecondTable},
		},
		{
			name: "the 20th non-empty row is", input: strings.Repeat("note\n", 19) + "email,name\na@x,A\n",
			comma: ',', header: "email|name", hdrRow: 20, rows: []int64{21}, above: 19,
		},
		{
			// "Customers" has no delimiter: sniffing alone reads the file
			// as comma-separated, the rule finds the semicolon.
			name: "semicolons under a title", input: "Customers\nemail;name;amount\na@x;A;1,5\n",
			comma: ';', header: "email|name|amount", hdrRow: 2, rows: []int64{3}, above: 1,
		},
		{
			name: "declared delimiter", input: "Customers\nemail;name\na@x;A\n", opts: Options{Comma: ';'},
			comma: ';', header: "email|name", hdrRow: 2, rows: []int64{3}, above: 1,
		},
		{
			// What is held back is bounded: past MaxLineBytes of records,
			// the scan stops and the first record is the header.
			name: "held back within MaxLineBytes", input: "t1 " + strings.Repeat("x", 40) + "\nt2 " + strings.Repeat("y", 40) + "\nemail,name\na@x,A\n",
			opts: Options{MaxLineBytes: 64}, comma: ',', header: "t1 " + strings.Repeat("x", 40), hdrRow: 1, rows: []int64{2, 3, 4},
			codes: map[int64]rows.Code{3: rows.CodeRaggedRow, 4: rows.CodeRaggedRow},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.HeaderFunc = rule
			r, recs, err := readAll(t, tt.input, &opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Comma() != tt.comma || strings.Join(r.Header(), "|") != tt.header || r.Info().HeaderRow != tt.hdrRow {
				t.Errorf("comma %q, header %q on row %d; want %q, %q on row %d", r.Comma(), r.Header(), r.Info().HeaderRow, tt.comma, tt.header, tt.hdrRow)
			}
			var got []int64
			for _, rec := range recs {
				got = append(got, rec.Row)
				var code rows.Code
				if len(rec.Errors) > 0 {
					code = rec.Errors[0].Code
				}
				if code != tt.codes[rec.Row] {
					t.Errorf("row %d: errors %v, want %q", rec.Row, rec.Errors, tt.codes[rec.Row])
				}
			}
			if !slices.Equal(got, tt.rows) || r.SkippedEmpty() != tt.skipped || r.above != tt.above {
				t.Errorf("rows %v, %d skipped, %d above; want %v, %d, %d", got, r.SkippedEmpty(), r.above, tt.rows, tt.skipped, tt.above)
			}
		})
	}
}

// rowsFrom returns n row numbers from first, step apart.
func rowsFrom(first, step int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)*step
	}
	return out
}

func TestCSVReaderHeaderRow(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		input   string
		row     int64
		header  string
		rows    []int64
		skipped int64
		fileErr string
		line    int64
	}{
		{name: "row 1", input: "email\na\n", row: 1, header: "email", rows: []int64{2}},
		{name: "under titles and a blank line", input: "Title\n\nemail\na\n", row: 3, header: "email", rows: []int64{4}, skipped: 1},
		{name: "under a cell spanning lines", input: "\"a\nb\"\nemail\nx\n", row: 2, header: "email", rows: []int64{3}},
		{name: "on a blank line", input: "Title\n\n\nemail\n", row: 2, fileErr: "the header row 2 is empty", line: 2},
		{name: "on the second of two blank lines", input: "Title\n\n\nemail\n", row: 3, fileErr: "the header row 3 is empty", line: 3},
		{name: "on a whitespace row", input: "Title\n , \nemail\n", row: 2, fileErr: "the header row 2 is empty", line: 2},
		{name: "on a trailing blank line", input: "Title\n\n", row: 2, fileErr: "the header row 2 is empty", line: 2},
		{name: "past the end", input: "a\nb\n", row: 3, fileErr: "the header row 3 is past the end of the file, whose last row is 2"},
		{name: "empty file", input: "", row: 1, fileErr: "the header row 1 is past the end of the file, whose last row is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, recs, err := readAll(t, tt.input, &Options{HeaderRow: tt.row})
			if tt.fileErr != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || fe.Line != tt.line || !strings.Contains(err.Error(), tt.fileErr) {
					t.Fatalf("error %v, want a *rows.FileError at line %d containing %q", err, tt.line, tt.fileErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, rec := range recs {
				got = append(got, rec.Row)
			}
			if strings.Join(r.Header(), "|") != tt.header || r.HeaderRow() != tt.row || !slices.Equal(got, tt.rows) || r.SkippedEmpty() != tt.skipped {
				t.Errorf("header %q on row %d, rows %v, %d skipped; want %q on row %d, %v, %d",
					r.Header(), r.HeaderRow(), got, r.SkippedEmpty(), tt.header, tt.row, tt.rows, tt.skipped)
			}
		})
	}
	if _, err := NewReader(strings.NewReader("a\n"), "x.csv", &Options{HeaderRow: -1}); err == nil {
		t.Error("a negative header row is accepted")
	}
}

// csvGen produces a large CSV file lazily, one row at a time, so that the
// test itself never holds the file in memory.
type csvGen struct {
	target  int64 // stop after the row that crosses this many bytes
	written int64
	rows    int64 // data rows produced
	pending []byte
	scratch []byte
}

func (g *csvGen) Read(p []byte) (int, error) {
	if len(g.pending) == 0 {
		switch {
		case g.written == 0:
			g.pending = append(g.scratch[:0], "email,name,amount,signup_date,note\n"...)
		case g.written >= g.target:
			return 0, io.EOF
		default:
			g.rows++
			g.pending = fmt.Appendf(g.scratch[:0], "user%d@example.com,Customer %d,%d.%02d,2024-01-%02d,\"a note, with a comma\"\n",
				g.rows, g.rows, g.rows%10000, g.rows%100, g.rows%28+1)
		}
		g.scratch = g.pending
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	g.written += int64(n)
	return n, nil
}

func TestCSVReaderMemoryStaysFlat(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("streams 60 MB")
	}

	const (
		fileSize = 60 << 20
		maxHeap  = 32 << 20 // about half the file: buffering it would blow this
		every    = 50_000
	)
	gen := &csvGen{target: fileSize}
	r, err := NewReader(gen, "big.csv", nil)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	var (
		n, peak uint64
		ms      runtime.MemStats
		last    int64 = 1 // the header
	)
	sample := func() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		if ms.HeapInuse > maxHeap {
			t.Fatalf("after %d rows the heap in use is %d MiB, more than %d MiB", n, ms.HeapInuse>>20, maxHeap>>20)
		}
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next after %d rows: %v", n, err)
		}
		if rec.Row != last+1 || len(rec.Errors) != 0 || len(rec.Values) != 5 {
			t.Fatalf("bad record after row %d: %+v", last, rec)
		}
		last = rec.Row
		n++
		if n%every == 0 {
			sample()
		}
	}
	sample()
	if gen.written < fileSize {
		t.Fatalf("generated %d bytes, want at least %d", gen.written, fileSize)
	}
	if int64(n) != gen.rows || last != gen.rows+1 {
		t.Fatalf("read %d records ending at row %d, generated %d rows", n, last, gen.rows)
	}
	t.Logf("%d rows, %d MiB streamed, peak heap in use %d KiB", n, gen.written>>20, peak>>10)
}

func FuzzCSVReader(f *testing.F) {
	for _, seed := range []string{
		"",
		"email,name\na@x,A\n",
		"\ufeffemail,name\na@x,A\n",
		"\ufeff",
		"email,name\r\na@x,A\r\n\r\nb@x,B\r\n",
		"email,name\ra@x,A\rb@x,B\r",
		"email,name\na@x,\"multi\nline\"\nb,B\n",
		"email,name\na@x,\"unterminated\n",
		"email,name\na@x,Jo\"hn\n",
		"email,name\na\x00b,A\n",
		"email,name\na\nb,B,C\n,,,\n\n",
		"\n\n  \n,,\n",
		"\"\"\"\",\"\"\n\"\n\"\n",
		"email;name\na;b\n",
		"a,b\n\xff\xfe,\xc3\n",
		"\xff\xfea\x00,\x00b\x00\n\x001\x00,\x002\x00\n\x00", // UTF-16 LE
		"\xfe\xff\x00a\x00,\x00b\x00\n\x001\x00,\x002\x00\n", // UTF-16 BE
		"\xff\xfea\x00\n\x00\x00\xd8\n\x00",                  // lone surrogate
		"name,city\nM\xfcller,K\xf6ln\n",                     // Windows-1252
		"a\tb\n1\t2\n",                                       // tabs
		"a|b\n1|2\n",                                         // pipes
		"a;b\n1,5;2\n",                                       // semicolons, decimal commas
		"a,b\r\n1,2\r3,4\r\n",                                // a bare CR
		"a,b\n'=1,'-2\n''=x,'\n",                             // formula quotes
		"a,b\n1,\"" + strings.Repeat("x\n", 200) + "\n",      // quote swallowing the file
		"a,b\n" + strings.Repeat("y", 300) + "\n",            // over MaxLineBytes
		"a,b\n\x00\x00,\x00\n",                               // NUL only
		"a,b\n" + strings.Repeat(" ", 20) + ",\"x\"y\n1,2\n", // unreadable, its kept start blank
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte("email;name\na@x;A\n"), true)
	for _, seed := range []string{
		"sep=;\nemail;name\na@x;A\n",
		"\ufeffSEP=|\r\nemail|name\r\n",
		"sep=\"\na\n",
		"sep=\n",
		"Title\n\nx,\"y, z\"\nemail,name\na@x,A\n",
		"Title\nemail;name\na@x;A\n",
	} {
		f.Add([]byte(seed), false)
	}
	// The fixtures whose header is not their first line.
	for _, name := range []string{"sep_line.csv", "title_rows.csv", "header_row3.csv"} {
		b, err := os.ReadFile(filepath.Join("../../fixtures/csv", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}

	f.Fuzz(func(t *testing.T, data []byte, semicolon bool) {
		// Without semicolon the delimiter is sniffed and the encoding
		// detected; MaxLineBytes is small enough for the fuzzer to reach.
		opts := &Options{MaxCellBytes: 16, MaxColumns: 64, MaxLineBytes: 256}
		if semicolon {
			opts.Comma = ';'
		}
		fuzzCSV(t, data, opts)
		sameTransient(t, data, opts)
		// And with a header rule, which holds rows back while it looks.
		opts.HeaderFunc = hasColumns("email", "name")
		fuzzCSV(t, data, opts)
		sameTransient(t, data, opts)
	})
}

// fuzzCSV reads data with opts and checks what FuzzCSVReader promises.
func fuzzCSV(t *testing.T, data []byte, opts *Options) {
	t.Helper()
	newlines := int64(bytes.Count(data, []byte{'\n'}))
	if newlines == 0 {
		newlines = int64(bytes.Count(data, []byte{'\r'})) // classic Mac line ends
	}

	r, err := NewReader(bytes.NewReader(data), "fuzz.csv", opts)
	if err != nil {
		var fe *rows.FileError
		if !errors.As(err, &fe) {
			t.Fatalf("NewReader error %v (%T) is not a *rows.FileError", err, err)
		}
		return
	}
	if len(r.Header()) == 0 {
		t.Fatal("empty header accepted")
	}

	var (
		records        int64
		prevRow, prevL int64 = r.HeaderRow(), 0
	)
	if r.HeaderRow() < 1 || r.HeaderRow() > newlines+1 {
		t.Fatalf("header on row %d of %d lines", r.HeaderRow(), newlines+1)
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var fe *rows.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Next error %v (%T) is neither io.EOF nor a *rows.FileError", err, err)
			}
			return
		}
		records++
		if records > newlines+1 {
			t.Fatalf("%d records from %d lines", records, newlines+1)
		}
		if rec.Row < 2 || rec.Row <= prevRow {
			t.Fatalf("record Row %d after row %d", rec.Row, prevRow)
		}
		if rec.Line <= prevL || rec.Line < rec.Row {
			t.Fatalf("record Line %d (Row %d) after line %d", rec.Line, rec.Row, prevL)
		}
		prevRow, prevL = rec.Row, rec.Line
		// A blank record is skipped, never returned; one may look blank
		// only because the reader emptied its over-long cells, or kept
		// only the blank start of an unreadable line's text.
		if isEmpty(rec.Values) && !slices.ContainsFunc(rec.Errors, func(fe rows.FieldError) bool {
			return fe.Code == rows.CodeCellTooLong || fe.Code == rows.CodeUnreadableLine && strings.Contains(fe.Message, "its first")
		}) {
			t.Fatalf("blank record returned: %q", rec.Values)
		}
		for _, fe := range rec.Errors {
			if fe.Row != rec.Row {
				t.Fatalf("error row %d in record row %d", fe.Row, rec.Row)
			}
			switch fe.Code {
			case rows.CodeRaggedRow, rows.CodeCellTooLong, rows.CodeNulByte, rows.CodeBadEncoding, rows.CodeSecondTable:
			case rows.CodeUnreadableLine:
				if len(rec.Values) != 1 || len(rec.Errors) != 1 {
					t.Fatalf("unreadable line with %d cells and errors %v", len(rec.Values), rec.Errors)
				}
			default:
				t.Fatalf("unexpected code %q", fe.Code)
			}
		}
		for _, v := range rec.Values {
			if len(v) > opts.MaxCellBytes {
				t.Fatalf("cell of %d bytes kept", len(v))
			}
			// What is kept must be storable as PostgreSQL text.
			if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
				t.Fatalf("cell %q kept with a NUL or bad bytes", v)
			}
		}
	}

	// Every physical line is the header, a record, a skipped blank row,
	// a sep= line or title above the header or, inside quotes only,
	// part of a multi-line cell.
	if r.above > 0 && opts.HeaderFunc == nil && !r.sepLine {
		t.Fatalf("%d rows above the header without a rule or a sep= line", r.above)
	}
	if r.above > 1 && opts.HeaderFunc == nil {
		t.Fatalf("%d rows above the header without a rule", r.above)
	}
	rowsSeen := 1 + records + r.SkippedEmpty() + r.above
	if rowsSeen > newlines+1 {
		t.Fatalf("%d rows (%d records, %d blank) from %d lines", rowsSeen, records, r.SkippedEmpty(), newlines+1)
	}
	// (Without quotes: none of ", and ' not detected as the quote.)
	if !bytes.ContainsRune(data, '"') && r.Info().Quote == "" && r.Encoding() != EncodingUTF16LE && r.Encoding() != EncodingUTF16BE {
		lines := newlines
		if last := data[len(data)-1]; last != '\n' && (last != '\r' || bytes.IndexByte(data, '\n') >= 0) {
			lines++
		}
		if rowsSeen != lines {
			t.Fatalf("%d rows (%d records, %d blank, %d above the header) from %d lines without quotes", rowsSeen, records, r.SkippedEmpty(), r.above, lines)
		}
	}
}
