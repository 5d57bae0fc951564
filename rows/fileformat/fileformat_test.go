package fileformat

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows"
)

// TestIsXLSX pins the rule that decides a file to read is a workbook: its
// first bytes are a zip's or an OLE compound file's, or else its name ends
// in one of Excel's extensions; anything else is CSV.
func TestIsXLSX(t *testing.T) {
	t.Parallel()
	ole := []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}
	tests := []struct {
		head []byte
		name string
		want bool
	}{
		{[]byte("PK\x03\x04rest"), "upload.csv", true},
		{ole, "upload.bin", true},
		{[]byte("email,name"), "a.xlsx", true},
		{[]byte("email,name"), "A.XLSM", true},
		{[]byte("email,name"), "old.xls", true},
		{[]byte("email,name"), "a.xltx", true},
		{[]byte("email,name"), "a.csv", false},
		{[]byte("email,name"), "a.ods", false},
		{[]byte("PK"), "a.txt", false}, // a cut signature is not one
		{nil, "", false},
	}
	for _, tt := range tests {
		if got := Detect(tt.head, tt.name).Name() == XLSX; got != tt.want {
			t.Errorf("Detect(%q, %q) is XLSX: %v, want %v", tt.head, tt.name, got, tt.want)
		}
	}
}

func TestForName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"out.xlsx": XLSX, "OUT.XLSX": XLSX, "dir.v2/out.xlsx": XLSX,
		"out.csv": CSV, "out.xlsm": CSV, "out.xls": CSV, "out": CSV, "-": CSV, "": CSV,
	} {
		if got := ForName(name).Name(); got != want {
			t.Errorf("ForName(%q) = %s, want %s", name, got, want)
		}
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"csv": CSV, "XLSX": XLSX, "Csv": CSV} {
		f, err := Lookup(name)
		if err != nil || f.Name() != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", name, f, err, want)
		}
	}
	for _, name := range []string{"", "ods", "xls"} {
		_, err := Lookup(name)
		if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "csv, xlsx") {
			t.Errorf("Lookup(%q) error %v, want ErrUnknown listing csv, xlsx", name, err)
		}
	}
	if got := strings.Join(Names(), ","); got != "csv,xlsx" {
		t.Errorf("Names() = %s", got)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	open := func(body, name, format string) (rows.Reader, error) {
		return Open(bufio.NewReader(strings.NewReader(body)), name, format, rows.ReadOptions{TmpDir: t.TempDir()})
	}
	r, err := open("email;name\na@x;A\n", "people.txt", "")
	if err != nil {
		t.Fatal(err)
	}
	if info := r.Info(); info.Format != CSV || info.Delimiter != ";" || info.Encoding != "utf-8" || info.HeaderRow != 1 {
		t.Errorf("Info() = %+v", info)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	// A declared format wins over the name; a workbook reader refuses
	// text that is no workbook as a file error.
	_, err = open("email,name\n", "people.csv", "XLSX")
	var fe *rows.FileError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "does not start like a zip archive") {
		t.Errorf("declared xlsx: %v", err)
	}
	// Detection peeks, and the reader still reads from the first byte.
	_, err = open("PK\x03\x04 not really a zip", "people.csv", "")
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "not a readable zip archive") {
		t.Errorf("detected xlsx: %v", err)
	}
	if _, err := open("a\n1\n", "x.csv", "ods"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown format: %v", err)
	}
	// The options reach the reader.
	r, err = open("a|b\n1|2\n", "x.csv", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Info().Delimiter; d != "|" {
		t.Errorf("sniffed delimiter %q", d)
	}
	r, err = Open(bufio.NewReader(strings.NewReader("a|b;c\n1|2;3\n")), "x.csv", "", rows.ReadOptions{Delimiter: ';'})
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); len(h) != 2 || h[0] != "a|b" {
		t.Errorf("declared delimiter: header %q", h)
	}
}

// TestFormatsWrite writes the same rows through every format's Writer and
// reads them back through its reader: the header and the text of each cell
// survive, formula protection included.
func TestFormatsWrite(t *testing.T) {
	t.Parallel()
	header := []string{"name", "amount", "phone"}
	cells := [][]rows.Cell{
		{{Text: "=Ann"}, {Type: rows.CellNumber, Text: "-5"}, {Text: "+44 20", Raw: true}},
		{{Text: "Bob"}, {Type: rows.CellNumber, Text: "12.5"}, {Text: ""}},
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			w, err := f.NewWriter(&buf, header, rows.WriteOptions{Sheet: "Out", TmpDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cells {
				if err := w.WriteRow(c); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := Open(bufio.NewReader(&buf), "out", "", rows.ReadOptions{TmpDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Info().Format != name || strings.Join(r.Header(), "|") != "name|amount|phone" {
				t.Fatalf("read back as %+v with header %q", r.Info(), r.Header())
			}
			for _, want := range []string{"=Ann|-5|+44 20", "Bob|12.5|"} {
				rec, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(rec.Values, "|"); got != want {
					t.Errorf("row %d = %q, want %q", rec.Row, got, want)
				}
			}
		})
	}
}
