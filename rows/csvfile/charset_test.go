package csvfile

import (
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"

	"github.com/rowfate/rowfate/rows"
)

func TestCSVReaderEncoding(t *testing.T) {
	t.Parallel()

	latin := func(s string) string {
		b, err := charmap.Windows1252.NewEncoder().String(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// A 1252 byte in the second 64 KiB: the first 64 KiB decided UTF-8.
	late := "name\n" + strings.Repeat("plain ascii row\n", (sniffBytes/16)+1) + latin("Müller") + "\n"

	tests := []struct {
		name     string
		input    string
		declared string
		encoding string
		last     string    // the last record's first cell
		code     rows.Code // the last record's one error code, if any
	}{
		{"utf-8", "name\nZoë\n", "", EncodingUTF8, "Zoë", ""},
		{"utf-8 BOM", "\ufeffname\nZoë\n", "", EncodingUTF8, "Zoë", ""},
		{"utf-8 BOM beats a declared utf-16", "\ufeffname\nZoë\n", "utf-16", EncodingUTF8, "Zoë", ""},
		{"windows-1252 detected", latin("name\nMüller €5\n"), "", EncodingWindows1252, "Müller €5", ""},
		{"windows-1252 declared", latin("name\nMüller\n"), "cp1252", EncodingWindows1252, "Müller", ""},
		{"latin1 is read as windows-1252", latin("name\nGarçon\n"), "latin1", EncodingWindows1252, "Garçon", ""},
		{"declared windows-1252 reads UTF-8 bytes as 1252", "name\nZoë\n", "windows-1252", EncodingWindows1252, "ZoÃ«", ""},
		{"declared utf-8 keeps bad bytes as errors", latin("name\nMüller\n"), "utf-8", EncodingUTF8, "M\uFFFDller", rows.CodeBadEncoding},
		{"undefined 1252 byte is not detected as 1252", "name\nM\x81ller\n", "", EncodingUTF8, "M\uFFFDller", rows.CodeBadEncoding},
		{"control byte is not detected as 1252", "name\nM\xfcller\x01\n", "", EncodingUTF8, "M\uFFFDller\x01", rows.CodeBadEncoding},
		{"a late 1252 byte is a row error", late, "", EncodingUTF8, "M\uFFFDller", rows.CodeBadEncoding},
		{"utf-16le declared without BOM", "n\x00a\x00m\x00e\x00\n\x00Z\x00\xeb\x00\n\x00", "utf-16le", EncodingUTF16LE, "Zë", ""},
		{"utf-16be declared without BOM", "\x00n\x00a\x00m\x00e\x00\n\x00Z\x00\xeb\x00\n", "UTF-16BE", EncodingUTF16BE, "Zë", ""},
		{"utf-16 without BOM is little-endian", "n\x00a\x00m\x00e\x00\n\x00x\x00\n\x00", "utf-16", EncodingUTF16LE, "x", ""},
		{"utf-16le BOM beats a declared utf-8", "\xff\xfen\x00a\x00m\x00e\x00\n\x00x\x00\n\x00", "utf-8", EncodingUTF16LE, "x", ""},
		{"utf-16le BOM", "\xff\xfen\x00a\x00m\x00e\x00\n\x00\x3d\xd8\x00\xde\n\x00", "", EncodingUTF16LE, "😀", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, recs, err := readAll(t, tt.input, &Options{Encoding: tt.declared})
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if r.Encoding() != tt.encoding {
				t.Errorf("Encoding() = %s, want %s", r.Encoding(), tt.encoding)
			}
			if !slices.Equal(r.Header(), []string{"name"}) {
				t.Errorf("Header() = %q", r.Header())
			}
			if len(recs) == 0 {
				t.Fatal("no records")
			}
			last := recs[len(recs)-1]
			if last.Values[0] != tt.last {
				t.Errorf("last cell = %q, want %q", last.Values[0], tt.last)
			}
			var codes []rows.Code
			for _, fe := range last.Errors {
				codes = append(codes, fe.Code)
				if fe.Column != "name" || fe.Row != last.Row {
					t.Errorf("error %+v does not name row %d, column name", fe, last.Row)
				}
			}
			if (tt.code == "" && len(codes) != 0) || (tt.code != "" && !slices.Equal(codes, []rows.Code{tt.code})) {
				t.Errorf("codes %v, want [%s]", codes, tt.code)
			}
		})
	}
}

func TestCSVReaderUnknownEncoding(t *testing.T) {
	t.Parallel()
	_, err := NewReader(strings.NewReader("a\n1\n"), "x.csv", &Options{Encoding: "ebcdic"})
	var fe *rows.FileError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), `unknown encoding "ebcdic"`) {
		t.Fatalf("err = %v, want a *rows.FileError naming the encoding", err)
	}
}

func TestTrimPartialRune(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"abc", "abc"},
		{"ab\xc3", "ab"},             // first byte of ë
		{"ab\xc3\xab", "ab\xc3\xab"}, // whole ë
		{"a\xf0\x9f\x98", "a"},       // 3 of 4 bytes of 😀
		{"a\xf0\x9f\x98\x80", "a\xf0\x9f\x98\x80"},
		{"a\xfc", "a\xfc"}, // not a rune start: left for detection
	} {
		if got := string(trimPartialRune([]byte(tt.in))); got != tt.want {
			t.Errorf("trimPartialRune(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A multi-byte rune cut by the 64 KiB sniffing window must not make a UTF-8
// file look like Windows-1252.
func TestCSVReaderRuneAcrossSniffWindow(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", sniffBytes-len("name\n")-1)
	r, recs, err := readAll(t, "name\n"+pad+"ë\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Encoding() != EncodingUTF8 || len(recs) != 1 || len(recs[0].Errors) != 0 {
		t.Fatalf("encoding %s, records %d, errors %v; want clean UTF-8", r.Encoding(), len(recs), recs)
	}
}

func TestCSVReaderLineGuard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		input    string
		max      int
		line     int64
		contains string
		records  int
	}{
		{"long line", "a,b\n1,2\n" + strings.Repeat("x", 100) + "\n3,4\n", 64, 3, "longer than the limit of 64 bytes", 1},
		{"long header", strings.Repeat("h", 100) + "\n1\n", 64, 1, "longer than the limit", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, recs, err := readAll(t, tt.input, &Options{MaxLineBytes: tt.max})
			var fe *rows.FileError
			if !errors.As(err, &fe) || fe.Line != tt.line || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("err = %v, want a *rows.FileError at line %d containing %q", err, tt.line, tt.contains)
			}
			if tt.records >= 0 && len(recs) != tt.records {
				t.Errorf("%d records before the error, want %d", len(recs), tt.records)
			}
		})
	}

	t.Run("allowed", func(t *testing.T) {
		t.Parallel()
		for _, in := range []string{
			"a,b\n1,\"x\ry\"\n",   // a CR inside quotes is data
			"a,b\r\n1,2\r\n3,4\r", // a last CR at the end of the file
			"a,b\n" + strings.Repeat("y", 63) + "\n",
		} {
			if _, _, err := readAll(t, in, &Options{MaxLineBytes: 64}); err != nil {
				t.Errorf("%q: %v", in, err)
			}
		}
	})
}

// endless is an unbounded source of one byte: one endless line, or one
// endless quoted cell.
type endless struct {
	prefix []byte
	b      byte
	read   int64
}

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.prefix)
	e.prefix = e.prefix[n:]
	for i := n; i < len(p); i++ {
		p[i] = e.b
	}
	e.read += int64(len(p))
	if e.read > 1<<30 {
		return len(p), io.EOF // a failsafe: the guard must stop long before
	}
	return len(p), nil
}

// TestCSVReaderHostileMemory feeds an endless line and an endless quoted
// cell: the reader must give up at MaxLineBytes with a file error, having
// held about that much, not the file.
func TestCSVReaderHostileMemory(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]*endless{
		"endless line":        {prefix: []byte("a,b\n1,"), b: 'x'},
		"endless quoted cell": {prefix: []byte("a,b\n1,\"open"), b: '\n'}, // line 2 is unreadable
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r, err := NewReader(src, "hostile.csv", &Options{MaxLineBytes: 1 << 20})
			var rec rows.Record
			if err == nil {
				rec, err = r.Next()
			}
			runtime.ReadMemStats(&after)
			var fe *rows.FileError
			if name == "endless quoted cell" {
				if err != nil || rec.Line != 2 || rec.Errors[0].Code != rows.CodeUnreadableLine {
					t.Fatalf("err = %v, record %+v; want line 2 unreadable", err, rec)
				}
			} else if !errors.As(err, &fe) || fe.Line != 2 {
				t.Fatalf("err = %v, want a *rows.FileError at line 2", err)
			}
			if src.read > 8<<20 {
				t.Errorf("read %d MiB of the source before giving up, want about 1", src.read>>20)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("allocated %d MiB reading one 1 MiB line", grew>>20)
			}
		})
	}
}

func TestCSVReaderFormulaQuote(t *testing.T) {
	t.Parallel()
	in := "a,b,c,d\n'=SUM(A1),'-1,'plain,''=x\n"
	_, recs, err := readAll(t, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Only an apostrophe in front of a formula character is rows.SafeCell's.
	if want := []string{"=SUM(A1)", "-1", "'plain", "''=x"}; !slices.Equal(recs[0].Values, want) {
		t.Errorf("Values = %q, want %q", recs[0].Values, want)
	}
	_, recs, err = readAll(t, in, &Options{KeepFormulaQuote: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"'=SUM(A1)", "'-1", "'plain", "''=x"}; !slices.Equal(recs[0].Values, want) {
		t.Errorf("KeepFormulaQuote: Values = %q, want %q", recs[0].Values, want)
	}
	// Every value rows.SafeCell guards reads back as itself.
	for _, v := range []string{"=1+2", "+49 30 1234", "-5", "@home", "\tx", "plain", "'quoted", ""} {
		_, recs, err := readAll(t, "h\n\""+strings.ReplaceAll(rows.SafeCell(v), `"`, `""`)+"\"\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		if v == "" {
			continue // a blank row is skipped
		}
		if len(recs) != 1 || recs[0].Values[0] != v {
			t.Errorf("rows.SafeCell(%q) read back as %+v", v, recs)
		}
	}
}

func TestSniffDelimiter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		text  string
		atEOF bool
		want  rune
	}{
		{"comma", "a,b,c\n1,2,3\n", true, ','},
		{"semicolon with decimal commas", "a;b;c\n1,5;2,5;3\n", true, ';'},
		{"tab", "a\tb\n1\t2\n", true, '\t'},
		{"pipe", "a|b\n1|2\n", true, '|'},
		{"one column", "email\na@x\n", true, ','},
		{"empty", "", true, ','},
		{"delimiters inside quotes do not count", "\"a;b\",c\n\"1;2\",3\n", true, ','},
		{"consistent beats frequent", "a,b;c;d\n1,2\n3,4\n", true, ','},
		{"tie goes to comma", "a,b;c\n", true, ','},
		{"quoted newline", "a;b\n\"x\ny;z\";2\n", true, ';'},
		{"blank lines ignored", "\n\na;b\n\n1;2\n", true, ';'},
		{"cut last line ignored", "a;b\n1;2\n3,4,5,6,7", false, ';'},
	}
	for _, tt := range tests {
		if got := SniffDelimiter([]byte(tt.text), tt.atEOF); got != tt.want {
			t.Errorf("%s: SniffDelimiter = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestCSVReaderDelimiterOverride(t *testing.T) {
	t.Parallel()
	// Sniffing would pick ';'; the declared ',' wins.
	r, recs, err := readAll(t, "a;b,c\n1;2,3\n", &Options{Comma: ','})
	if err != nil {
		t.Fatal(err)
	}
	if r.Comma() != ',' || !slices.Equal(r.Header(), []string{"a;b", "c"}) || len(recs) != 1 {
		t.Errorf("comma %q header %q", r.Comma(), r.Header())
	}
	if _, err := NewReader(strings.NewReader("a\n"), "x.csv", &Options{Comma: '"'}); err == nil {
		t.Error("a quote as the delimiter was accepted")
	}
	for in, want := range map[string]rune{"": 0, ",": ',', "tab": '\t', `\t`: '\t', "semicolon": ';', "|": '|'} {
		if got, err := ParseDelimiter(in); err != nil || got != want {
			t.Errorf("ParseDelimiter(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"ab", `"`, "\n"} {
		if _, err := ParseDelimiter(in); err == nil {
			t.Errorf("ParseDelimiter(%q) accepted", in)
		}
	}
}
