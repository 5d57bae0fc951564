package xlsxfile

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Excel's sheet limits.
const (
	xlsxMaxRows = 1_048_576
	xlsxMaxCols = 16_384
)

// xlsxCellMeta is what excelize's streaming API does not tell about a cell:
// its column, type (t) and style (s), and whether it is a formula with no
// cached value.
type xlsxCellMeta struct {
	col   int
	typ   string
	style int
	// uncalculated is set for a formula (<f>) without a cached value: no
	// <v> (nor inline text), or an empty <v> where only a text result
	// (t="str", Excel's cached "") can be empty. Libraries write formulas
	// so; excelize reads such a cell as "" or as the formula's text, and
	// either would be data the file does not hold.
	uncalculated bool
}

// xlsxSheetScanner walks a worksheet's XML a row ahead of excelize's Rows
// iterator and reads only the row numbers and the cells' attributes. Being
// ahead, it sees a row's width before excelize allocates the row, and it
// checks what excelize passes over silently (rows out of order, XML that
// ends early).
type xlsxSheetScanner struct {
	rc    io.ReadCloser
	d     *xml.Decoder
	row   int64 // number of the last row element read
	rows  int64 // row elements read
	cells []xlsxCellMeta
	done  bool
	// pending is the next row's start tag, read ahead.
	pending *xml.StartElement
	// sst is the number of shared strings, to check the index of a t="s"
	// cell: excelize reads a bad one as an empty cell.
	sst int
}

func newXLSXSheetScanner(f *zip.File) (*xlsxSheetScanner, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	d := xml.NewDecoder(bufio.NewReaderSize(&xlsxRunGuard{r: rc, max: xlsxMaxRun}, 64<<10))
	return &xlsxSheetScanner{rc: rc, d: d}, nil
}

// xlsxMaxRun caps a run of XML bytes without a '<': the text of one cell,
// escaped, or the inside of one tag. The longest cell Excel makes is 32,767
// characters (at most about 650 KB escaped).
const xlsxMaxRun = 1 << 20

// xlsxRunGuard fails a read as soon as the XML it passes has a run of more
// than max bytes without a '<'. encoding/xml (and excelize) hold a whole
// text or tag in memory, so one 1 GB cell, or a sheet of nothing but
// whitespace, would otherwise be read into memory whole; the guard sits
// under the scanner, which reads ahead of excelize, so excelize never meets
// such a run.
type xlsxRunGuard struct {
	r   io.Reader
	max int
	run int // bytes since the last '<'
}

// errXLSXRun is the guard's error.
var errXLSXRun = fmt.Errorf("the XML has a run of more than %d bytes without markup (a giant cell, or padding)", xlsxMaxRun)

func (g *xlsxRunGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '<')
		if i < 0 {
			g.run += len(b)
			break
		}
		if g.run+i > g.max {
			g.run += i
			break
		}
		g.run = 0
		b = b[i+1:]
	}
	if g.run > g.max {
		return 0, errXLSXRun
	}
	return n, err
}

// xlsxCheckSST reads the shared strings part without an XML parse: it
// refuses a run longer than xlsxMaxRun (excelize decodes one string at a
// time into memory) and counts the strings (<si> tags), so that a cell's
// index into the table can be checked.
func xlsxCheckSST(f *zip.File) (int, error) {
	rc, err := f.Open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	count, run := 0, 0
	for {
		chunk, err := br.ReadSlice('<')
		run += len(chunk)
		if run > xlsxMaxRun {
			return 0, errXLSXRun
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return count, nil
			}
			return 0, err
		}
		run = 0
		head, _ := br.Peek(24)
		if i := bytes.IndexByte(head, ':'); i >= 0 && !bytes.ContainsAny(head[:i], " \t\r\n/>") {
			head = head[i+1:] // a prefix: <x:si>
		}
		if len(head) >= 3 && head[0] == 's' && head[1] == 'i' && strings.IndexByte(">/ \t\r\n", head[2]) >= 0 {
			count++
		}
	}
}

func (s *xlsxSheetScanner) close() error { return s.rc.Close() }

// errXLSXTooWide is returned by next when a row has a cell past the limit.
type errXLSXTooWide struct {
	row int64
	col int
}

func (e *errXLSXTooWide) Error() string {
	return fmt.Sprintf("row %d has a cell in column %s", e.row, xlsxColName(e.col))
}

// next reads the next row element: its number and its cells' attributes.
// A cell past column limit stops the scan with *errXLSXTooWide before any
// more of the row is read. It then reads on to the next row's start tag and
// checks its number: excelize's iterator reads that tag while it reads this
// row, and would take a row out of order into this one or fail this row
// for the next one's bad number. At the end of the sheet data it returns
// io.EOF.
func (s *xlsxSheetScanner) next(limit int) (int64, []xlsxCellMeta, error) {
	if s.done {
		return 0, nil, io.EOF
	}
	s.cells = s.cells[:0]
	start := s.pending
	s.pending = nil
	if start == nil {
		st, err := s.findRow()
		if err != nil {
			return 0, nil, err
		}
		if st == nil {
			s.done = true
			return 0, nil, io.EOF
		}
		start = st
	}
	n, err := s.number(start)
	if err != nil {
		return 0, nil, err
	}
	s.row, s.rows = n, s.rows+1
	if err := s.readCells(start.Name, limit); err != nil {
		return 0, nil, err
	}
	st, err := s.findRow()
	if err != nil {
		return 0, nil, err
	}
	if st == nil {
		s.done = true
	} else {
		if _, err := s.number(st); err != nil {
			return 0, nil, err
		}
		s.pending = st
	}
	return n, s.cells, nil
}

// findRow reads to the next <row> start tag; nil at the end of the sheet
// data.
func (s *xlsxSheetScanner) findRow() (*xml.StartElement, error) {
	for {
		tok, err := s.d.RawToken()
		if err != nil {
			if errors.Is(err, io.EOF) && s.rows == 0 {
				return nil, nil // no sheetData at all
			}
			return nil, s.tokenErr(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "row" {
				st := xml.CopyToken(t).(xml.StartElement)
				return &st, nil
			}
		case xml.EndElement:
			if t.Name.Local == "sheetData" {
				return nil, nil
			}
		case xml.Directive:
			return nil, errors.New("the sheet declares a DOCTYPE")
		}
	}
}

// number returns the row number of a row start tag, checked: within
// Excel's limit and after the current row.
func (s *xlsxSheetScanner) number(t *xml.StartElement) (int64, error) {
	n := s.row + 1
	if r, ok := xlsxAttr(t.Attr, "r"); ok {
		v, err := strconv.ParseInt(r, 10, 64)
		if err != nil || v < 1 {
			return 0, fmt.Errorf("after row %d, a row has the number %q", s.row, r)
		}
		n = v
	}
	if n > xlsxMaxRows {
		return 0, fmt.Errorf("after row %d, a row has the number %d, past Excel's last row (%d)", s.row, n, xlsxMaxRows)
	}
	if n <= s.row {
		return 0, fmt.Errorf("row %d comes after row %d: the rows are out of order", n, s.row)
	}
	return n, nil
}

// readCells reads the cells of the current row up to its end tag, the way
// excelize's row iterator walks them: every <c> inside the row counts, and
// a cell ends at its own end tag.
func (s *xlsxSheetScanner) readCells(rowName xml.Name, limit int) error {
	col := 0
	for {
		tok, err := s.d.RawToken()
		if err != nil {
			return s.tokenErr(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "row" {
				return fmt.Errorf("row %d holds another row", s.row)
			}
			if t.Name.Local != "c" {
				continue
			}
			c := xlsxCellMeta{col: col + 1}
			for _, a := range t.Attr {
				switch a.Name.Local {
				case "r":
					cc, _, ok := xlsxParseRef(a.Value)
					if !ok {
						return fmt.Errorf("row %d has a cell named %q", s.row, a.Value)
					}
					c.col = cc
				case "t":
					c.typ = a.Value
				case "s":
					if v, err := strconv.Atoi(a.Value); err == nil && v >= 0 {
						c.style = v
					}
				}
			}
			if c.col <= col {
				return fmt.Errorf("row %d: cell %s comes after column %s: the cells are out of order", s.row, xlsxColName(c.col), xlsxColName(col))
			}
			if c.col > limit {
				return &errXLSXTooWide{row: s.row, col: c.col}
			}
			col = c.col
			v, kids, err := s.skipCell(t.Name, c.typ == "s")
			if err != nil {
				return err
			}
			if kids.formula {
				// A cached "" is only a text result's (Excel writes
				// <v></v> for =IF(A1,"","x")); an empty number or
				// boolean is none.
				c.uncalculated = !kids.value && !kids.inline ||
					kids.value && kids.emptyValue && c.typ != "str" && c.typ != "inlineStr"
			}
			s.cells = append(s.cells, c)
			if c.typ == "s" && v != "" {
				i, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || i < 0 || i >= s.sst {
					return fmt.Errorf("row %d: cell %s%d refers to shared string %q, but the table has %d", s.row, xlsxColName(c.col), s.row, v, s.sst)
				}
			}
		case xml.EndElement:
			if t.Name == rowName {
				return nil
			}
			if t.Name.Local == "sheetData" {
				return fmt.Errorf("row %d is not closed", s.row)
			}
		case xml.Directive:
			return errors.New("the sheet declares a DOCTYPE")
		}
	}
}

// xlsxCellKids is what skipCell saw inside a cell element: a formula
// (<f>), a value (<v>) and whether it held only blanks, inline text (<is>).
type xlsxCellKids struct {
	formula, value, emptyValue, inline bool
}

// skipCell reads past the rest of a cell element, noting which child
// elements it has, and, when value is set, returns the text of its <v>.
func (s *xlsxSheetScanner) skipCell(name xml.Name, value bool) (string, xlsxCellKids, error) {
	depth := 0
	inV := false
	var (
		v    []byte
		kids xlsxCellKids
	)
	for {
		tok, err := s.d.RawToken()
		if err != nil {
			return "", kids, s.tokenErr(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			inV = depth == 1 && t.Name.Local == "v"
			if depth == 1 {
				switch t.Name.Local {
				case "f":
					kids.formula = true
				case "v":
					kids.value, kids.emptyValue = true, true
				case "is":
					kids.inline = true
				}
			}
		case xml.CharData:
			if inV && len(bytes.TrimSpace(t)) > 0 {
				kids.emptyValue = false
			}
			if value && inV && len(v) < 64 {
				v = append(v, t...)
			}
		case xml.EndElement:
			inV = false
			if depth == 0 {
				if t.Name != name {
					return "", kids, fmt.Errorf("row %d: a cell's XML is malformed", s.row)
				}
				return string(v), kids, nil
			}
			depth--
		case xml.Directive:
			return "", kids, errors.New("the sheet declares a DOCTYPE")
		}
	}
}

func (s *xlsxSheetScanner) tokenErr(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("the sheet's XML ends early, after row %d (truncated?)", s.row)
	}
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("the sheet's XML is malformed after row %d: %v", s.row, se.Msg)
	}
	return fmt.Errorf("reading the sheet after row %d: %v", s.row, err)
}

func xlsxAttr(attrs []xml.Attr, local string) (string, bool) {
	for _, a := range attrs {
		if a.Name.Local == local {
			return a.Value, true
		}
	}
	return "", false
}

// xlsxParseRef parses a cell reference such as "AB12" (or "$AB$12") into a
// 1-based column and row.
func xlsxParseRef(ref string) (col int, row int64, ok bool) {
	i := 0
	if i < len(ref) && ref[i] == '$' {
		i++
	}
	start := i
	for i < len(ref) && i-start < 4 {
		c := ref[i] | 0x20
		if c < 'a' || c > 'z' {
			break
		}
		col = col*26 + int(c-'a'+1)
		i++
	}
	if i == start || col > xlsxMaxCols {
		return 0, 0, false
	}
	if i < len(ref) && ref[i] == '$' {
		i++
	}
	if i == len(ref) {
		return col, 0, true // a whole-column reference
	}
	n, err := strconv.ParseInt(ref[i:], 10, 64)
	if err != nil || n < 1 || n > xlsxMaxRows {
		return 0, 0, false
	}
	return col, n, true
}

// xlsxColName returns the letters of a 1-based column: 1 is A, 28 is AB.
func xlsxColName(col int) string {
	if col < 1 {
		return "?"
	}
	var b []byte
	for col > 0 {
		col--
		b = append([]byte{byte('A' + col%26)}, b...)
		col /= 26
	}
	return string(b)
}

// xlsxMerge is a merged range of cells.
type xlsxMerge struct {
	col1, col2 int
	row1, row2 int64
}

// xlsxScanMerges finds the merged ranges of a sheet that start at or above
// row maxRow. Merges are listed after the sheet's rows, so this reads the
// part to its end; it looks only for <mergeCell ref="..."> tags, without
// an XML parse, and keeps at most limit ranges.
func xlsxScanMerges(f *zip.File, maxRow int64, limit int) ([]xlsxMerge, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	const tail = 512 // long enough for a whole <mergeCell .../> tag
	buf := make([]byte, 256<<10)
	carry := 0
	var out []xlsxMerge
	for {
		n, err := io.ReadFull(rc, buf[carry:])
		data := buf[:carry+n]
		end := len(data)
		if err == nil && end > tail {
			end -= tail // leave a tag cut at the end for the next round
		}
		for off := 0; off < end; {
			i := bytes.Index(data[off:end], []byte("mergeCell "))
			if i < 0 {
				break
			}
			i += off
			off = i + len("mergeCell ")
			if i == 0 || (data[i-1] != '<' && data[i-1] != ':') {
				continue
			}
			rest := data[off:min(len(data), off+tail)]
			j := bytes.Index(rest, []byte(`ref="`))
			k := bytes.IndexByte(rest, '>')
			if j < 0 || (k >= 0 && k < j) {
				continue
			}
			ref := rest[j+5:]
			q := bytes.IndexByte(ref, '"')
			if q < 0 {
				continue
			}
			a, b, ok := bytes.Cut(ref[:q], []byte(":"))
			if !ok {
				continue
			}
			c1, r1, ok1 := xlsxParseRef(string(a))
			c2, r2, ok2 := xlsxParseRef(string(b))
			if !ok1 || !ok2 || r1 < 1 || r2 < r1 || c2 < c1 || r1 > maxRow {
				continue
			}
			out = append(out, xlsxMerge{col1: c1, col2: c2, row1: r1, row2: r2})
			if len(out) >= limit {
				return out, nil
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return out, nil
			}
			return out, err
		}
		carry = copy(buf, data[end:])
	}
}
