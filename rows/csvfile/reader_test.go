package csvfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
			name:     "unbalanced quote",
			input:    "email,name\na@x,A\nb@x,\"unterminated\nc@x,C\n",
			line:     3,
			contains: "quote",
			records:  1,
		},
		{
			name:     "bare quote in an unquoted cell",
			input:    "email,name\na@x,Jo\"hn\n",
			line:     2,
			contains: "quote",
		},
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
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte("email;name\na@x;A\n"), true)

	f.Fuzz(func(t *testing.T, data []byte, semicolon bool) {
		// Without semicolon the delimiter is sniffed and the encoding
		// detected; MaxLineBytes is small enough for the fuzzer to reach.
		opts := &Options{MaxCellBytes: 16, MaxColumns: 64, MaxLineBytes: 256}
		if semicolon {
			opts.Comma = ';'
		}
		newlines := int64(bytes.Count(data, []byte{'\n'}))

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
			prevRow, prevL int64 = 1, 0
		)
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
			// only because the reader emptied its over-long cells.
			if isEmpty(rec.Values) && !slices.ContainsFunc(rec.Errors, func(fe rows.FieldError) bool { return fe.Code == rows.CodeCellTooLong }) {
				t.Fatalf("blank record returned: %q", rec.Values)
			}
			for _, fe := range rec.Errors {
				if fe.Row != rec.Row {
					t.Fatalf("error row %d in record row %d", fe.Row, rec.Row)
				}
				switch fe.Code {
				case rows.CodeRaggedRow, rows.CodeCellTooLong, rows.CodeNulByte, rows.CodeBadEncoding:
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

		// Every physical line is the header, a record, a skipped blank row
		// or, inside quotes only, part of a multi-line cell.
		rowsSeen := 1 + records + r.SkippedEmpty()
		if rowsSeen > newlines+1 {
			t.Fatalf("%d rows (%d records, %d blank) from %d lines", rowsSeen, records, r.SkippedEmpty(), newlines+1)
		}
		if !bytes.ContainsRune(data, '"') && r.Encoding() != EncodingUTF16LE && r.Encoding() != EncodingUTF16BE {
			lines := newlines
			if len(data) > 0 && data[len(data)-1] != '\n' {
				lines++
			}
			if rowsSeen != lines {
				t.Fatalf("%d rows (%d records, %d blank) from %d lines without quotes", rowsSeen, records, r.SkippedEmpty(), lines)
			}
		}
	})
}
