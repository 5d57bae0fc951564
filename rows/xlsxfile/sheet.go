package xlsxfile

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// Excel's sheet limits.
const (
	xlsxMaxRows = 1_048_576
	xlsxMaxCols = 16_384
)

// xlsxCellMeta is what a cell's element says besides its value: its
// column, type (t) and style (s), and whether it is a formula with no
// cached value.
type xlsxCellMeta struct {
	col   int
	typ   string
	style int
	// uncalculated is set for a formula (<f>) without a cached value: no
	// <v> (nor inline text), or an empty <v> where only a text result
	// (t="str", Excel's cached "") can be empty. Libraries write formulas
	// so; reading such a cell as "" or as the formula's text would be data
	// the file does not hold.
	uncalculated bool
}

// xlsxSheetScanner reads a worksheet's XML a row at a time: the row
// numbers, the cells' attributes and their values, shared strings looked
// up in the table. It checks what a spreadsheet program never writes
// (rows out of order, cells out of order, a row wider than the caller
// allows, XML that ends early) as it goes, so a row is refused before it
// is held in memory.
type xlsxSheetScanner struct {
	rc    io.ReadCloser
	x     *xlsxXML
	row   int64 // number of the last row element read
	rows  int64 // row elements read
	cells []xlsxCellMeta
	done  bool
	// pending is the next row's number and whether its element is empty
	// (<row r="7"/>), read ahead.
	pending      int64
	pendingEmpty bool
	// sst is the shared strings table, to look up t="s" cells.
	sst *xlsxSST
	// The current row's values: the texts read (arena) and, per cell
	// with a value, where its text is (spans).
	arena []byte
	spans []xlsxSpan
	// Per cell scratch: the text of <v> and of <is>.
	vbuf, isbuf []byte
}

// xlsxSpan is one cell's value: a shared string, or arena[start:end].
type xlsxSpan struct {
	col        int
	shared     string
	start, end int
	isShared   bool
}

func newXLSXSheetScanner(f *zip.File, sst *xlsxSST) (*xlsxSheetScanner, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	return xlsxScannerOf(rc, sst), nil
}

// xlsxScannerOf returns a scanner of the sheet XML rc reads.
func xlsxScannerOf(rc io.ReadCloser, sst *xlsxSST) *xlsxSheetScanner {
	return &xlsxSheetScanner{rc: rc, x: newXLSXXML(rc), sst: sst}
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

// next reads the next row element: its number, its values by column (up
// to the last cell with a value or a formula, as excelize's iterator reads
// a row) and its cells' attributes; the attributes' slice is reused by
// the next call. A cell past column limit stops the scan with
// *errXLSXTooWide before any more of the row is read. It then reads on to
// the next row's start tag and checks its number, so that a row out of
// order fails the row before it (as it did when excelize's iterator read
// the sheet), not after it was used. At the end of the sheet data it returns io.EOF.
func (s *xlsxSheetScanner) next(limit int) (int64, []string, []xlsxCellMeta, error) {
	if s.done {
		return 0, nil, nil, io.EOF
	}
	s.cells, s.arena, s.spans = s.cells[:0], s.arena[:0], s.spans[:0]
	n, empty := s.pending, s.pendingEmpty
	s.pending = 0
	if n == 0 {
		var (
			ok  bool
			err error
		)
		n, empty, ok, err = s.findRow()
		if err != nil {
			return 0, nil, nil, err
		}
		if !ok {
			s.done = true
			return 0, nil, nil, io.EOF
		}
	}
	s.row, s.rows = n, s.rows+1
	if !empty {
		if err := s.readCells(limit); err != nil {
			return 0, nil, nil, err
		}
	}
	next, nextEmpty, ok, err := s.findRow()
	if err != nil {
		return 0, nil, nil, err
	}
	if !ok {
		s.done = true
	} else {
		s.pending, s.pendingEmpty = next, nextEmpty
	}
	return n, s.values(), s.cells, nil
}

// values returns the row's values by column: one string holds the row's
// texts, each value a slice of it (or a shared string), so that a row
// costs two allocations whatever its width.
func (s *xlsxSheetScanner) values() []string {
	if len(s.spans) == 0 {
		return nil
	}
	text := string(s.arena)
	out := make([]string, s.spans[len(s.spans)-1].col)
	for _, sp := range s.spans {
		if sp.isShared {
			out[sp.col-1] = sp.shared
		} else {
			out[sp.col-1] = text[sp.start:sp.end]
		}
	}
	return out
}

// findRow reads to the next <row> start tag and returns its number,
// checked, and whether the element is empty; ok is false at the end of
// the sheet data.
func (s *xlsxSheetScanner) findRow() (n int64, empty, ok bool, err error) {
	for {
		if err := s.x.next(); err != nil {
			return 0, false, false, s.tokenErr(err)
		}
		switch s.x.kind {
		case xlsxTokEOF:
			if s.rows == 0 {
				return 0, false, false, nil // no sheetData at all
			}
			return 0, false, false, s.tokenErr(io.ErrUnexpectedEOF)
		case xlsxTokStart:
			if string(s.x.name) == "row" {
				n, err := s.number()
				return n, s.x.selfClose, err == nil, err
			}
		case xlsxTokEnd:
			if string(s.x.name) == "sheetData" {
				return 0, false, false, nil
			}
		}
	}
}

// number returns the row number of the row start tag just read, checked:
// within Excel's limit and after the current row.
func (s *xlsxSheetScanner) number() (int64, error) {
	n := s.row + 1
	for _, a := range s.x.attrs {
		if string(a.name) != "r" {
			continue
		}
		raw, err := xlsxUnescapeAttr(a.value)
		if err != nil {
			return 0, s.tokenErr(err)
		}
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || v < 1 {
			return 0, fmt.Errorf("after row %d, a row has the number %q", s.row, a.value)
		}
		n = v
		break
	}
	if n > xlsxMaxRows {
		return 0, fmt.Errorf("after row %d, a row has the number %d, past Excel's last row (%d)", s.row, n, xlsxMaxRows)
	}
	if n <= s.row {
		return 0, fmt.Errorf("row %d comes after row %d: the rows are out of order", n, s.row)
	}
	return n, nil
}

// readCells reads the cells of the current row up to its end tag: every
// <c> inside the row counts, and a cell ends at its own end tag.
func (s *xlsxSheetScanner) readCells(limit int) error {
	col := 0
	for {
		if err := s.x.next(); err != nil {
			return s.tokenErr(err)
		}
		switch s.x.kind {
		case xlsxTokEOF:
			return s.tokenErr(io.ErrUnexpectedEOF)
		case xlsxTokEnd:
			switch string(s.x.name) {
			case "row":
				return nil
			case "sheetData":
				return fmt.Errorf("row %d is not closed", s.row)
			}
		case xlsxTokStart:
			switch string(s.x.name) {
			case "row":
				return fmt.Errorf("row %d holds another row", s.row)
			case "c":
				c, err := s.cellAttrs(col)
				if err != nil {
					return err
				}
				if c.col <= col {
					return fmt.Errorf("row %d: cell %s comes after column %s: the cells are out of order", s.row, xlsxColName(c.col), xlsxColName(col))
				}
				if c.col > limit {
					return &errXLSXTooWide{row: s.row, col: c.col}
				}
				col = c.col
				if err := s.readCell(&c); err != nil {
					return err
				}
			}
		}
	}
}

// cellAttrs reads the attributes of the <c> start tag just read.
func (s *xlsxSheetScanner) cellAttrs(col int) (xlsxCellMeta, error) {
	c := xlsxCellMeta{col: col + 1}
	for _, a := range s.x.attrs {
		var err error
		if a.value, err = xlsxUnescapeAttr(a.value); err != nil {
			return c, s.tokenErr(err)
		}
		switch string(a.name) {
		case "r":
			cc, ok := xlsxRefCol(a.value)
			if !ok {
				return c, fmt.Errorf("row %d has a cell named %q", s.row, a.value)
			}
			c.col = cc
		case "t":
			c.typ = xlsxCellType(a.value)
		case "s":
			if v, err := strconv.Atoi(string(a.value)); err == nil && v >= 0 {
				c.style = v
			}
		}
	}
	return c, nil
}

// xlsxCellType returns a cell's type attribute without allocating for the
// types the format defines.
func xlsxCellType(t []byte) string {
	switch string(t) {
	case "s":
		return "s"
	case "n":
		return "n"
	case "str":
		return "str"
	case "inlineStr":
		return "inlineStr"
	case "b":
		return "b"
	case "e":
		return "e"
	case "d":
		return "d"
	}
	return string(t)
}

// xlsxCellKids is what readCell saw inside a cell element: a formula
// (<f>), a value (<v>) and whether it held only blanks, inline text (<is>).
type xlsxCellKids struct {
	formula, value, emptyValue, inline bool
}

// readCell reads the rest of the cell whose start tag was just read, and
// notes its value and its attributes.
func (s *xlsxSheetScanner) readCell(c *xlsxCellMeta) error {
	s.vbuf, s.isbuf = s.vbuf[:0], s.isbuf[:0]
	var kids xlsxCellKids
	if !s.x.selfClose {
		var err error
		if kids, err = s.cellKids(); err != nil {
			return err
		}
	}
	if kids.formula {
		// A cached "" is only a text result's (Excel writes <v></v> for
		// =IF(A1,"","x")); an empty number or boolean is none.
		c.uncalculated = !kids.value && !kids.inline ||
			kids.value && kids.emptyValue && c.typ != "str" && c.typ != "inlineStr"
	}
	s.cells = append(s.cells, *c)
	sp := xlsxSpan{col: c.col}
	val := s.vbuf
	switch {
	case c.typ == "s" && len(s.vbuf) > 0:
		v := s.vbuf[:min(len(s.vbuf), 64)]
		i, ok := xlsxIndex(bytes.TrimSpace(v))
		if !ok || i >= s.sst.len() {
			return fmt.Errorf("row %d: cell %s%d refers to shared string %q, but the table has %d", s.row, xlsxColName(c.col), s.row, v, s.sst.len())
		}
		str, err := s.sst.get(i)
		if err != nil {
			return fmt.Errorf("row %d: cell %s%d: %w", s.row, xlsxColName(c.col), s.row, err)
		}
		if str == "" && !kids.formula {
			return nil
		}
		sp.shared, sp.isShared = str, true
		s.spans = append(s.spans, sp)
		return nil
	case c.typ == "inlineStr" && kids.inline:
		val = xlsxBstr(s.isbuf)
	}
	if len(val) == 0 && !kids.formula {
		return nil
	}
	if !utf8.Valid(val) {
		return fmt.Errorf("the sheet's XML is malformed after row %d: invalid UTF-8", s.row)
	}
	sp.start = len(s.arena)
	s.arena = append(s.arena, val...)
	sp.end = len(s.arena)
	s.spans = append(s.spans, sp)
	return nil
}

// cellKids reads a cell's children up to its end tag: the text of its
// <v> into s.vbuf, that of its inline string (<is>: <t>, or the <t> of
// each rich text run <r>, phonetic runs <rPh> left out) into s.isbuf.
func (s *xlsxSheetScanner) cellKids() (xlsxCellKids, error) {
	var (
		kids xlsxCellKids
		// path is the names of the open elements inside the cell, as
		// one letter each: v, f, i(s), r, t, or o for any other.
		path  [8]byte
		depth int
	)
	for {
		var err error
		collect := depth > 0 && (path[0] == 'v' ||
			path[0] == 'i' && (depth == 2 && path[1] == 't' || depth == 3 && path[1] == 'r' && path[2] == 't'))
		switch {
		case collect && path[0] == 'v':
			err = s.x.nextText(&s.vbuf)
		case collect:
			err = s.x.nextText(&s.isbuf)
		default:
			err = s.x.next()
		}
		if err != nil {
			return kids, s.tokenErr(err)
		}
		switch s.x.kind {
		case xlsxTokEOF:
			return kids, s.tokenErr(io.ErrUnexpectedEOF)
		case xlsxTokStart:
			code := byte('o')
			switch string(s.x.name) {
			case "v":
				code = 'v'
			case "f":
				code = 'f'
			case "is":
				code = 'i'
			case "r":
				code = 'r'
			case "t":
				code = 't'
			}
			if depth == 0 {
				switch code {
				case 'f':
					kids.formula = true
				case 'v':
					kids.value, kids.emptyValue = true, true
				case 'i':
					kids.inline = true
				}
			}
			if s.x.selfClose {
				continue
			}
			if depth < len(path) {
				path[depth] = code
			}
			depth++
		case xlsxTokEnd:
			if depth == 0 {
				if string(s.x.name) != "c" {
					return kids, fmt.Errorf("row %d: a cell's XML is malformed", s.row)
				}
				if kids.value && len(bytes.TrimSpace(s.vbuf)) > 0 {
					kids.emptyValue = false
				}
				return kids, nil
			}
			depth--
		}
	}
}

func (s *xlsxSheetScanner) tokenErr(err error) error {
	var se *xlsxSyntaxError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the sheet's XML ends early, after row %d (truncated?)", s.row)
	case errors.As(err, &se):
		return fmt.Errorf("the sheet's XML is malformed after row %d: %v", s.row, se.msg)
	case errors.Is(err, errXLSXDoctype):
		return err
	}
	return fmt.Errorf("reading the sheet after row %d: %w", s.row, err)
}

// xlsxIndex parses a shared string's index: decimal digits, at most 9.
func xlsxIndex(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// xlsxRefCol returns the column of a cell reference such as "AB12" (or
// "$AB$12"), checked as xlsxParseRef checks it.
func xlsxRefCol(ref []byte) (int, bool) {
	i, col := 0, 0
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
		return 0, false
	}
	if i < len(ref) && ref[i] == '$' {
		i++
	}
	if i == len(ref) {
		return col, true // a whole-column reference
	}
	var n int64
	for _, c := range ref[i:] {
		if c < '0' || c > '9' || n > xlsxMaxRows {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n < 1 || n > xlsxMaxRows {
		return 0, false
	}
	return col, true
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
