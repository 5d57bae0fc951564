package csvfile

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows"
)

// TestCSVReaderUnreadableLines reads polluted files: a line that cannot be
// read with certainty is an invalid row of its raw text, and every other
// row reads as it would without it.
func TestCSVReaderUnreadableLines(t *testing.T) {
	t.Parallel()

	// got is a record as the table spells it: row, line, cells, and the
	// raw text when the line is unreadable.
	type got struct {
		row, line int64
		values    []string
		bad       bool
	}
	tests := []struct {
		name  string
		input string
		opts  *Options
		want  []got
	}{
		{
			name:  "a stray quote inside a quoted cell",
			input: "email,name\na@x,\"Doe, \"Jane\"\"\nb@x,B\n",
			want:  []got{{2, 2, []string{`a@x,"Doe, "Jane""`}, true}, {3, 3, []string{"b@x", "B"}, false}},
		},
		{
			name:  "a bare quote in an unquoted cell is a character",
			input: "email,name\na@x,Jo\"hn\nb@x,5\" disk\n",
			want:  []got{{2, 2, []string{"a@x", `Jo"hn`}, false}, {3, 3, []string{"b@x", `5" disk`}, false}},
		},
		{
			name:  "a quote that never closes costs its line only",
			input: "a,b\n1,2\n3,\"open\n4,5\n\n6,7\n",
			want: []got{{2, 2, []string{"1", "2"}, false}, {3, 3, []string{`3,"open`}, true},
				{4, 4, []string{"4", "5"}, false}, {6, 6, []string{"6", "7"}, false}},
		},
		{
			name:  "a quote that closes lines later, in a row of another width",
			input: "a,b\n1,\"x\n2,5\",z\n3,4\n",
			want: []got{{2, 2, []string{`1,"x`}, true}, {3, 3, []string{"2", `5"`, "z"}, false},
				{4, 4, []string{"3", "4"}, false}},
		},
		{
			name:  "a quoted cell over two lines is one row",
			input: "a,b\n1,\"x\ny\"\n2,3\n",
			want:  []got{{2, 2, []string{"1", "x\ny"}, false}, {3, 4, []string{"2", "3"}, false}},
		},
		{
			name:  "a quoted cell over lines that goes wrong",
			input: "a,b\n1,\"x\ny \"z\" w\"\n2,3\n",
			want: []got{{2, 2, []string{`1,"x`}, true}, {3, 3, []string{`y "z" w"`}, false},
				{4, 4, []string{"2", "3"}, false}},
		},
		{
			name:  "a row written with another delimiter and quotes",
			input: "a,b\n\"1\";\"2\"\n3,4\n",
			want:  []got{{2, 2, []string{`"1";"2"`}, true}, {3, 3, []string{"3", "4"}, false}},
		},
		{
			name:  "a bare CR in the middle of an LF line",
			input: "a,b\n1,2\r3,4\n5,6\n",
			want:  []got{{2, 2, []string{"1,2\r3,4"}, true}, {3, 3, []string{"5", "6"}, false}},
		},
		{
			name:  "a CR inside quotes is data",
			input: "a,b\n1,\"x\ry\"\n",
			want:  []got{{2, 2, []string{"1", "x\ry"}, false}},
		},
		{
			name:  "classic Mac line ends",
			input: "a,b\r1,2\r\r3,\"x\ry\"\r",
			want:  []got{{2, 2, []string{"1", "2"}, false}, {4, 4, []string{"3", "x\ny"}, false}},
		},
		{
			name:  "quotes escaped with a backslash, when declared",
			input: "a,b\n1,\"say \\\"hi\\\", \\\\o/\"\n",
			opts:  &Options{Escape: '\\'},
			want:  []got{{2, 2, []string{"1", `say "hi", \o/`}, false}},
		},
		{
			name:  "quoting with an apostrophe, when declared",
			input: "a,b\n1,'x, y'\n2,'it''s'\n",
			opts:  &Options{Quote: '\''},
			want:  []got{{2, 2, []string{"1", "x, y"}, false}, {3, 3, []string{"2", "it's"}, false}},
		},
		{
			name:  "quoting with an apostrophe, detected",
			input: "a,b\n1,'x, y'\n2,'it''s'\n3,z\n",
			want:  []got{{2, 2, []string{"1", "x, y"}, false}, {3, 3, []string{"2", "it's"}, false}, {4, 4, []string{"3", "z"}, false}},
		},
		{
			name:  "apostrophes that quote nothing are characters (a formula quote is taken off)",
			input: "a,b\n'=1,O'Brien\n'x',y\n",
			want:  []got{{2, 2, []string{"=1", "O'Brien"}, false}, {3, 3, []string{"'x'", "y"}, false}},
		},
		{
			name:  "quotes escaped with a backslash, detected",
			input: "a,b\n1,\"say \\\"hi\\\", ok\"\n2,plain\n",
			want:  []got{{2, 2, []string{"1", `say "hi", ok`}, false}, {3, 3, []string{"2", "plain"}, false}},
		},
		{
			name:  "a backslash before a closing quote is no escape",
			input: "a,b\n1,\"C:\\dir\\\"\n",
			want:  []got{{2, 2, []string{"1", `C:\dir\`}, false}},
		},
		{
			name:  "an unreadable line over the cell limit keeps its start",
			input: "a,b\n1,\"" + strings.Repeat("é", 20) + "\"x\n",
			opts:  &Options{MaxCellBytes: 10},
			want:  []got{{2, 2, []string{`1,"ééé`}, true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, recs, err := readAll(t, tt.input, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var out []got
			for _, r := range recs {
				bad := slices.ContainsFunc(r.Errors, func(fe rows.FieldError) bool { return fe.Code == rows.CodeUnreadableLine })
				if bad && (len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Message, "cannot be read as CSV")) {
					t.Errorf("row %d: errors %v", r.Row, r.Errors)
				}
				out = append(out, got{r.Row, r.Line, r.Values, bad})
			}
			if len(out) != len(tt.want) {
				t.Fatalf("records %+v, want %+v", out, tt.want)
			}
			for i := range out {
				if out[i].row != tt.want[i].row || out[i].line != tt.want[i].line || out[i].bad != tt.want[i].bad || !slices.Equal(out[i].values, tt.want[i].values) {
					t.Errorf("record %d = %+v, want %+v", i, out[i], tt.want[i])
				}
			}
		})
	}
}

// BenchmarkSplit compares the record splitter with encoding/csv on the same
// clean file (customers-like rows, one quoted cell each), records only: no
// decoding, no checks. One op is the whole file.
//
//	go test -run '^$' -bench Split -benchmem -count 6 ./rows/csvfile
func BenchmarkSplit(b *testing.B) {
	data, err := io.ReadAll(&csvGen{target: 4 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("rowfate", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			s := &splitter{br: bufio.NewReaderSize(bytes.NewReader(data), sniffBytes), delim: []byte{','}, quote: '"', term: '\n', max: 4 << 20}
			for {
				r, err := s.next()
				if err != nil {
					break
				}
				if r.bad != "" || len(r.cells) != 5 {
					b.Fatalf("line %d: %q %s", r.line, r.cells, r.bad)
				}
			}
		}
	})
	b.Run("encoding-csv", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			r := csv.NewReader(bufio.NewReaderSize(bytes.NewReader(data), sniffBytes))
			r.FieldsPerRecord = -1
			for {
				rec, err := r.Read()
				if err != nil {
					break
				}
				if len(rec) != 5 {
					b.Fatalf("%q", rec)
				}
			}
		}
	})
}

// TestCSVReaderSecondTable: a second table further down the file is
// flagged naming its line, and its rows are not read as data.
func TestCSVReaderSecondTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		codes map[int64]rows.Code // by row; rows not listed have no error
		rows  []int64
	}{
		{"the header repeated", "a,b\n1,2\nA, b\n3,4\n", map[int64]rows.Code{3: rows.CodeSecondTable}, []int64{2, 3, 4}},
		{"another shape after a blank line", "a,b,c\n1,2,3\n\nid,total\n1,5\n2,6\n\n4,5,6\n",
			map[int64]rows.Code{4: rows.CodeSecondTable, 5: rows.CodeSecondTable, 6: rows.CodeSecondTable}, []int64{2, 4, 5, 6, 8}},
		{"a ragged row after a blank line is ragged", "a,b,c\n1,2,3\n\n4,5\n6,7,8\n", map[int64]rows.Code{4: rows.CodeRaggedRow}, []int64{2, 4, 5}},
		{"a table at the end", "a,b,c\n1,2,3\n\nx,y\n", map[int64]rows.Code{4: rows.CodeRaggedRow}, []int64{2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, recs, err := readAll(t, tt.input, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range recs {
				got = append(got, r.Row)
				var code rows.Code
				if len(r.Errors) > 0 {
					code = r.Errors[0].Code
				}
				if code != tt.codes[r.Row] {
					t.Errorf("row %d: errors %v, want %q", r.Row, r.Errors, tt.codes[r.Row])
				}
			}
			if !slices.Equal(got, tt.rows) {
				t.Errorf("rows %v, want %v", got, tt.rows)
			}
		})
	}
	_, recs, _ := readAll(t, "a,b,c\n1,2,3\n\nid,total\n1,5\n", nil)
	if msg := recs[1].Errors[0].Message; !strings.Contains(msg, "line 4 starts a second table") {
		t.Errorf("message %q", msg)
	}
	if msg := recs[2].Errors[0].Message; !strings.Contains(msg, "second table, which starts at line 4") {
		t.Errorf("message %q", msg)
	}
}
