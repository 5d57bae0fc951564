package xlsxfile

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows"
)

const testNS = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"`

// rawWorkbook returns a workbook of one sheet whose sheetData is rows and
// whose shared strings table (when sst is not "") holds the <si> elements
// sst.
func rawWorkbook(t testing.TB, rowsXML, sst string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8"?><workbook ` + testNS + ` xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
		{"xl/styles.xml", `<?xml version="1.0" encoding="UTF-8"?><styleSheet ` + testNS + `><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs></styleSheet>`},
		{"xl/worksheets/sheet1.xml", `<?xml version="1.0" encoding="UTF-8"?><worksheet ` + testNS + `><sheetData>` + rowsXML + `</sheetData></worksheet>`},
	}
	if sst != "" {
		parts = append(parts, [2]string{"xl/sharedStrings.xml", `<?xml version="1.0" encoding="UTF-8"?><sst ` + testNS + `>` + sst + `</sst>`})
	}
	for _, p := range parts {
		w, err := zw.Create(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, p[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestXLSXScannerCells reads the cell forms the hand-written scanner must
// know, under a header row a, b: each case's data row must read as want.
func TestXLSXScannerCells(t *testing.T) {
	t.Parallel()
	const header = `<row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c><c r="B1" t="inlineStr"><is><t>b</t></is></c></row>`
	sst := `<si><t>plain</t></si>` +
		`<si><r><rPr><b/></rPr><t>rich</t></r><r><t xml:space="preserve"> text</t></r><rPh sb="0" eb="1"><t>ふりがな</t></rPh><phoneticPr fontId="1"/></si>` +
		`<si><t>line_x000D_end _x005F_x0041_</t></si>` +
		`<si/>` +
		`<si><t>&lt;tag&gt; &amp; &#233;&#x41;</t></si>`
	for _, tt := range []struct {
		name, row string
		want      []string
		code      rows.Code
	}{
		{"shared plain", `<row r="2"><c r="A2" t="s"><v>0</v></c><c r="B2" t="s"><v> 4 </v></c></row>`, []string{"plain", "<tag> & éA"}, ""},
		{"shared rich text without phonetic runs", `<row r="2"><c r="A2" t="s"><v>1</v></c></row>`, []string{"rich text", ""}, ""},
		{"shared escapes", `<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2" t="s"><v>3</v></c></row>`, []string{"line\rend _x0041_", ""}, ""},
		{"inline rich text", `<row r="2"><c r="A2" t="inlineStr"><is><r><t>Hel</t></r><r><rPr/><t>lo</t></r><rPh><t>x</t></rPh></is></c></row>`, []string{"Hello", ""}, ""},
		{"inline entities and CDATA", `<row r="2"><c r="A2" t="inlineStr"><is><t>a&quot;b&apos;<![CDATA[<c>]]></t></is></c><c r="B2" t="inlineStr"><is><t xml:space="preserve">  x  </t></is></c></row>`, []string{`a"b'<c>`, "  x  "}, ""},
		{"line ends", "<row r=\"2\"><c r=\"A2\" t=\"inlineStr\"><is><t>1\r\n2\r3</t></is></c></row>", []string{"1\n2\n3", ""}, ""},
		{"booleans", `<row r="2"><c r="A2" t="b"><v>1</v></c><c r="B2" t="b"><v>0</v></c></row>`, []string{"true", "false"}, ""},
		{"error value", `<row r="2"><c r="A2" t="e"><v>#DIV/0!</v></c><c r="B2"><v>3</v></c></row>`, []string{"", "3"}, CodeCellError},
		{"date by style", `<row r="2"><c r="A2" s="1"><v>45000</v></c><c r="B2" t="str"><v>x</v></c></row>`, []string{"2023-03-15", "x"}, ""},
		{"no r attributes", `<row><c t="inlineStr"><is><t>p</t></is></c><c><v>2.50</v></c></row>`, []string{"p", "2.5"}, ""},
		{"prefixed names and comments", `<x:row xmlns:x="urn:x" r="2"><!-- c --><x:c r="B2"><?pi?><x:v>7</x:v></x:c></x:row>`, []string{"", "7"}, ""},
		{"self-closing cells", `<row r="2"><c r="A2" s="1"/><c r="B2"><v>1</v></c></row>`, []string{"", "1"}, ""},
		{"formula never calculated", `<row r="2"><c r="A2"><f>B2*2</f></c><c r="B2"><v>1</v></c></row>`, []string{"", "1"}, CodeFormulaNotCalculated},
		{"formula with a cached text", `<row r="2"><c r="A2" t="str"><f>"x"</f><v>x</v></c></row>`, []string{"x", ""}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := rawWorkbook(t, header+tt.row, sst)
			_, recs, err := readXLSX(t, bytes.NewReader(data), "cells.xlsx", &Options{TmpDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(recs), recs)
			}
			if !slices.Equal(recs[0].Values, tt.want) {
				t.Errorf("values %q, want %q", recs[0].Values, tt.want)
			}
			var code rows.Code
			if len(recs[0].Errors) > 0 {
				code = recs[0].Errors[0].Code
			}
			if code != tt.code {
				t.Errorf("errors %v, want code %q", recs[0].Errors, tt.code)
			}
		})
	}
}

// TestXLSXScannerMalformed: XML a spreadsheet program never writes is a
// file error naming what is wrong, never a panic or a guess.
func TestXLSXScannerMalformed(t *testing.T) {
	t.Parallel()
	const header = `<row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c></row>`
	for _, tt := range []struct{ name, row, want string }{
		{"unknown entity", `<row r="2"><c r="A2" t="inlineStr"><is><t>&nbsp;</t></is></c></row>`, "invalid entity &nbsp;"},
		{"unquoted attribute", `<row r=2><c><v>1</v></c></row>`, "an unquoted attribute value"},
		{"cell not closed", `<row r="2"><c r="A2"><v>1</v></row>`, "a cell's XML is malformed"},
		{"row in a row", `<row r="2"><row r="3"/></row>`, "row 2 holds another row"},
		{"cells out of order", `<row r="2"><c r="B2"><v>1</v></c><c r="A2"><v>1</v></c></row>`, "the cells are out of order"},
		{"bad cell name", `<row r="2"><c r="2A"><v>1</v></c></row>`, `row 2 has a cell named "2A"`},
		{"bad shared index", `<row r="2"><c r="A2" t="s"><v>7</v></c></row>`, `refers to shared string "7", but the table has 1`},
		{"declaration", `<!ENTITY x "y"><row r="2"/>`, "DOCTYPE"},
		{"invalid UTF-8", "<row r=\"2\"><c r=\"A2\" t=\"inlineStr\"><is><t>\xff</t></is></c></row>", "invalid UTF-8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := rawWorkbook(t, header+tt.row, `<si><t>s</t></si>`)
			_, _, err := readXLSX(t, bytes.NewReader(data), "bad.xlsx", &Options{TmpDir: t.TempDir()})
			var fe *rows.FileError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a file error with %q", err, tt.want)
			}
		})
	}
}

// TestXLSXSSTSpill reads a shared strings table spilled to disk, in order
// and at random, and checks its file is gone once it is closed.
func TestXLSXSSTSpill(t *testing.T) {
	t.Parallel()
	const n = 5000
	var sst strings.Builder
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("string %d %s", i, strings.Repeat("x", i%50))
		fmt.Fprintf(&sst, "<si><t>%s</t></si>", want[i])
	}
	data := rawWorkbook(t, "", sst.String())
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var part *zip.File
	for _, f := range zr.File {
		if f.Name == "xl/sharedStrings.xml" {
			part = f
		}
	}
	dir := t.TempDir()
	tab, err := xlsxReadSST(part, dir, n, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if tab.file == nil || tab.len() != n {
		t.Fatalf("table of %d strings, spilled: %v", tab.len(), tab.file != nil)
	}
	check := func(i int) {
		got, err := tab.get(i)
		if err != nil || got != want[i] {
			t.Fatalf("string %d: %q, %v; want %q", i, got, err, want[i])
		}
	}
	for i := range n {
		check(i)
	}
	for i := range n {
		check(i * 7919 % n) // at random
		check(n - 1)        // a repeated text, as a column of countries
	}
	if err := tab.close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// FuzzXLSXSheetScanner feeds sheet XML to the scanner alone, seeded with
// the sheets of the fixtures: it must never panic, and every row it
// returns has a number after the last one, within Excel's limit, and no
// more cells than allowed.
func FuzzXLSXSheetScanner(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(xlsxCorpus, "*.xlsx"))
	for _, path := range files {
		zr, err := zip.OpenReader(path)
		if err != nil {
			continue // not a zip: a fixture of another kind
		}
		for _, p := range zr.File {
			if strings.HasPrefix(p.Name, "xl/worksheets/") && p.UncompressedSize64 < 64<<10 {
				if b, err := xlsxReadPart(p, 64<<10); err == nil {
					f.Add(b)
				}
			}
		}
		zr.Close()
	}
	f.Add([]byte(`<worksheet><sheetData><row r="1"><c r="A1" t="s"><v>1</v></c><c t="inlineStr"><is><r><t>a&amp;</t></r><rPh><t>b</t></rPh></is></c></row><row><c><f>1</f></c></row></sheetData></worksheet>`))
	f.Add([]byte("<sheetData><row r=\"3\"><c r=\"C3\" t=\"b\"><v><![CDATA[1]]></v></c></row>\r\n<row r=\"2\"/></sheetData>"))
	tab := &xlsxSST{n: 2, offs: [][]uint32{{0, 1, 3}}, mem: "abc"}
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 100
		s := xlsxScannerOf(io.NopCloser(bytes.NewReader(data)), tab)
		var last int64
		for range 10_000 {
			n, values, meta, err := s.next(limit)
			if err != nil {
				return
			}
			if n <= last || n > xlsxMaxRows {
				t.Fatalf("row %d after row %d", n, last)
			}
			if len(values) > limit || len(meta) > 0 && meta[len(meta)-1].col > limit {
				t.Fatalf("row %d: %d values, %d cells past the limit", n, len(values), len(meta))
			}
			last = n
		}
	})
}
