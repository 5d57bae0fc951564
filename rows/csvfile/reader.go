package csvfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/rowfate/rowfate/rows"
)

// Options tunes a Reader. The zero value is usable: it detects the
// encoding and the delimiter and applies safe limits.
type Options struct {
	// Encoding is the file's character set: utf-8, utf-16 (by byte order
	// mark, little-endian without one), utf-16le, utf-16be or windows-1252
	// (latin1 and cp1252 are accepted as names for it). A byte order mark
	// overrides a declared UTF-8 or UTF-16. Defaults to detection: see
	// Reader.Encoding.
	Encoding string
	// Comma is the field delimiter. Defaults to sniffing among , ; tab and
	// | (see SniffDelimiter).
	Comma rune
	// Quote is the character that quotes a cell: " or '. A quote inside a
	// quoted cell is doubled, or escaped with Escape. Defaults to ".
	Quote rune
	// Escape, when set, escapes the next character inside a quoted cell
	// (\" for a quote, \\ for itself), as MySQL and some exports write.
	// Defaults to none: quotes are doubled, as RFC 4180 has it.
	Escape rune
	// MaxLineBytes caps one record as read: a physical line, or all the
	// lines of a record whose quoted cell spans several. A longer record
	// is a file error, which bounds the memory a hostile file (or one
	// unbalanced quote) can take. Defaults to 4 MiB.
	MaxLineBytes int
	// MaxColumns caps the number of header columns. Defaults to 1024.
	MaxColumns int
	// MaxCellBytes caps the size of one cell; a longer cell is a row error.
	// Defaults to 64 KiB.
	MaxCellBytes int
	// MaxRows caps the number of data rows; more is a file error.
	// Defaults to 10,000,000.
	MaxRows int64
	// KeepFormulaQuote keeps a leading apostrophe that guards a formula
	// character. By default one is removed: rows.SafeCell adds it when a report
	// is written ("'=SUM(A1)", "'-1"), and a report fixed and uploaded
	// again must read as the values it was written from. An apostrophe in
	// front of anything else is always kept.
	KeepFormulaQuote bool
	// HeaderRow is the row of the header, counted as Record.Row counts rows
	// (blank lines and a sep= line count). The rows above it are not data:
	// blank ones count as skipped empty rows, the others are passed over.
	// A HeaderRow past the end of the file, or on a blank row, is a
	// *rows.FileError naming the row. It wins over HeaderFunc. Defaults to
	// the first non-empty row.
	HeaderRow int64
	// HeaderFunc, when set, recognises the header among the first
	// rows.HeaderScanRows non-empty records: the first it accepts is the
	// header, and the records above it are titles, passed over. When it
	// accepts none, the first non-empty record is the header and the
	// records after it are data, as without it. See
	// rows.ReadOptions.HeaderFunc.
	HeaderFunc func(cells []string) bool
	// HeaderHint describes what HeaderFunc looks for. A CSV file has no
	// error that needs it (a file whose rows HeaderFunc never accepts falls
	// back to its first non-empty row, and the caller's mapping says what
	// that header lacks); it is carried so that both readers take the same
	// options.
	HeaderHint string
}

// OptionsFrom returns the options a user's rows.ReadOptions ask of a CSV
// reader: encoding, delimiter, the header row or the rule that recognises
// it, the formula quote and the two size limits. What only workbooks have
// (the sheet, a temporary folder) does not apply.
func OptionsFrom(o rows.ReadOptions) *Options {
	return &Options{
		Encoding:         o.Encoding,
		Comma:            o.Delimiter,
		Quote:            o.Quote,
		Escape:           o.Escape,
		MaxLineBytes:     o.MaxLineBytes,
		MaxCellBytes:     o.MaxCellBytes,
		KeepFormulaQuote: o.KeepFormulaQuote,
		HeaderRow:        o.HeaderRow,
		HeaderFunc:       o.HeaderFunc,
		HeaderHint:       o.HeaderHint,
	}
}

func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Comma != 0 && !validDelim(c.Comma) {
		return c, fmt.Errorf("bad delimiter %q", c.Comma)
	}
	if c.Quote != 0 && (!validQuote(c.Quote) || c.Quote == c.Comma) {
		return c, fmt.Errorf("bad quote %q: want \" or '", c.Quote)
	}
	if c.Escape == c.Quote || c.Quote == 0 && c.Escape == '"' {
		c.Escape = 0 // a doubled quote is the default already
	}
	if c.Escape != 0 && (c.Escape >= utf8.RuneSelf || c.Escape == c.Comma || c.Escape == '\r' || c.Escape == '\n') {
		return c, fmt.Errorf("bad escape character %q: want one such as \\", c.Escape)
	}
	if c.HeaderRow < 0 {
		return c, fmt.Errorf("bad header row %d: rows are counted from 1", c.HeaderRow)
	}
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = 4 << 20
	}
	if c.MaxColumns <= 0 {
		c.MaxColumns = 1024
	}
	if c.MaxCellBytes <= 0 {
		c.MaxCellBytes = 64 << 10
	}
	if c.MaxRows <= 0 {
		c.MaxRows = 10_000_000
	}
	return c, nil
}

// Reader reads a CSV file one record at a time. It decodes the file's
// character set to UTF-8 (dropping one byte order mark), honours the
// "sep=;" line Excel writes at the top of a file (the delimiter it names,
// unless one is declared; the line itself is never data), finds the
// delimiter otherwise, finds the header (Options.HeaderRow, else the first
// record Options.HeaderFunc accepts, else the first non-empty record), and
// numbers rows the way a spreadsheet program shows them.
//
// Problems of one row (ragged, NUL bytes, invalid UTF-8, an over-long cell,
// a line that cannot be read as CSV: see splitter) are Record.Errors and
// the file goes on; problems that make the rest of the file unreadable (a
// line over MaxLineBytes, more than MaxRows rows, an unreadable header)
// are a *rows.FileError with the line. A file whose lines end with a bare
// CR is read when its first 64 KiB have no LF.
type Reader struct {
	name     string
	opts     Options
	sp       *splitter
	header   []string
	hdrRow   int64 // the header's row
	encoding string
	sepLine  bool // the file began with a sep= line

	row     int64 // spreadsheet row of the last record read, returned or skipped
	rows    int64
	skipped int64
	// above counts the non-empty rows above the header that are not data:
	// a sep= line and title rows. They are neither records nor skipped
	// empty rows; the count lets a test account for every line.
	above int64
	// titles are the non-empty rows above the header, as
	// rows.SourceInfo.Titles keeps them.
	titles []string
	// pending are records read while looking for the header that turned
	// out to be data (HeaderFunc accepted none), or to see whether a
	// second table starts; Next returns them first.
	pending []pendingRecord
	table   tableState
}

// pendingRecord is a record read ahead, with where it was and, when it
// cannot be read, why.
type pendingRecord struct {
	values    []string
	row, line int64
	bad       string
	blank     bool // blank rows came right before it
	drops     []droppedCell
}

var _ rows.Reader = (*Reader)(nil)

// NewReader reads the header of r and returns a reader positioned at the
// first data row. name is used in errors only. A file with no header (empty,
// or only blank lines) is a *rows.FileError, and so are options that cannot
// apply (an unknown encoding, a bad delimiter) and a HeaderRow the file
// does not have.
func NewReader(r io.Reader, name string, opts *Options) (*Reader, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, &rows.FileError{File: name, Err: err}
	}
	text, enc, err := decodeSource(r, o.Encoding)
	if err != nil {
		return nil, &rows.FileError{File: name, Err: err}
	}
	br := bufio.NewReaderSize(text, sniffBytes)
	head, peekErr := br.Peek(sniffBytes)
	atEOF := peekErr != nil
	term := byte('\n')
	if bytes.IndexByte(head, '\n') < 0 && bytes.IndexByte(head, '\r') >= 0 {
		// Classic Mac line ends: with no LF to compete, a bare CR ends a
		// line without doubt.
		term = '\r'
		head = bytes.ReplaceAll(head, []byte{'\r'}, []byte{'\n'})
	}
	sep, hasSep, err := sepLine(head, atEOF)
	if err != nil {
		return nil, &rows.FileError{File: name, Line: 1, Err: err}
	}
	switch {
	case o.Comma != 0:
		// A declared delimiter wins over the file's sep= line: the user
		// has seen the file, the line may be left over from another export.
	case hasSep:
		o.Comma = sep
	case o.HeaderFunc != nil && o.HeaderRow == 0:
		o.Comma = sniffWithHeader(head, atEOF, o.HeaderFunc)
	default:
		o.Comma = SniffDelimiter(head, atEOF)
	}
	delim := utf8.AppendRune(nil, o.Comma)
	switch {
	case o.Quote == 0 && o.Escape == 0:
		q, e := detectQuoting(head, atEOF, delim, '\n') // head ends its lines with LF, even in a CR file
		o.Quote, o.Escape = rune(q), rune(e)
	case o.Quote == 0:
		o.Quote = '"'
	}
	sp := &splitter{br: br, delim: delim, quote: byte(o.Quote), escape: byte(o.Escape), term: term, max: o.MaxLineBytes}
	c := &Reader{name: name, opts: o, sp: sp, encoding: enc, sepLine: hasSep}

	if hasSep {
		// The sep= line counts as row 1, as a text editor shows it (Excel,
		// which obeys the line, does not show it); whatever the delimiter,
		// it reads as one record.
		if _, err := c.read(); err != nil {
			return nil, err
		}
		c.row++
		c.above++
	}
	var (
		rec  []string
		line int64
	)
	switch {
	case o.HeaderRow > 0:
		rec, line, err = c.headerAt(o.HeaderRow)
	case o.HeaderFunc != nil:
		rec, line, err = c.headerBy(o.HeaderFunc)
	default:
		rec, line, err = c.firstNonEmpty()
	}
	if err != nil {
		return nil, err
	}
	if len(rec) > o.MaxColumns {
		return nil, &rows.FileError{File: name, Line: line, Err: fmt.Errorf("header has %d columns, more than the limit of %d", len(rec), o.MaxColumns)}
	}
	if notText(rec) {
		return nil, &rows.FileError{File: name, Line: line, Err: errors.New("the header row is not UTF-8 text: is this a CSV file?")}
	}
	c.header = rec
	sp.width = len(rec)
	return c, nil
}

// errEmpty is the error of a file without a header row.
var errEmpty = errors.New("no header row: the file is empty")

// firstNonEmpty reads to the first non-empty record, the header by
// default; it sets hdrRow. Blank and whitespace-only rows before it still
// count as rows, and as skipped.
func (c *Reader) firstNonEmpty() ([]string, int64, error) {
	for {
		r, err := c.read()
		if errors.Is(err, io.EOF) {
			return nil, 0, &rows.FileError{File: c.name, Err: errEmpty}
		}
		if err != nil {
			return nil, 0, err
		}
		c.row++
		if r.bad != "" {
			return nil, 0, c.badHeader(r)
		}
		if !isEmpty(r.cells) {
			c.hdrRow = c.row
			return r.cells, r.line, nil
		}
		c.skipped++
	}
}

// badHeader is the error of a header line that cannot be read.
func (c *Reader) badHeader(r record) error {
	return &rows.FileError{File: c.name, Line: r.line, Err: fmt.Errorf("the header cannot be read as CSV: %s", r.bad)}
}

// headerAt reads to row n, the header the caller named. The rows above it
// are passed over: blank ones are skipped empty rows, as before any
// header, the others titles.
func (c *Reader) headerAt(n int64) ([]string, int64, error) {
	if c.row >= n {
		// Only the sep= line can be behind us.
		return nil, 0, &rows.FileError{File: c.name, Line: n, Err: fmt.Errorf("the header row %d is the sep= line that names the delimiter, not a header", n)}
	}
	for {
		r, err := c.read()
		if errors.Is(err, io.EOF) {
			return nil, 0, &rows.FileError{File: c.name, Err: fmt.Errorf("the header row %d is past the end of the file, whose last row is %d", n, c.row)}
		}
		if err != nil {
			return nil, 0, err
		}
		c.row++
		rec, line := r.cells, r.line
		switch {
		case c.row == n && r.bad != "":
			return nil, 0, c.badHeader(r)
		case c.row == n && isEmpty(rec):
			return nil, 0, &rows.FileError{File: c.name, Line: line, Err: fmt.Errorf("the header row %d is empty", n)}
		case c.row == n:
			c.hdrRow = n
			return rec, line, nil
		case isEmpty(rec):
			c.skipped++
		default:
			c.above++
			c.titles = append(c.titles, rows.TitleOf(rec))
		}
	}
}

// headerBy looks for the header among the first rows.HeaderScanRows
// non-empty records: the first that accept returns true for is the header,
// and the records above it are titles. When it takes none, the first record is the
// header and the others are kept for Next, as if they had been read after
// it. What is held back is bounded by the count and, so that 20 records of
// MaxLineBytes cannot pile up, by MaxLineBytes in all: the scan stops
// there, and the same fallback applies.
func (c *Reader) headerBy(accept func([]string) bool) ([]string, int64, error) {
	var (
		held []pendingRecord
		size int
	)
	for len(held) < rows.HeaderScanRows && size <= c.opts.MaxLineBytes {
		r, err := c.read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		c.row++
		rec, line := r.cells, r.line
		if r.bad != "" {
			held = append(held, pendingRecord{values: rec, row: c.row, line: line, bad: r.bad})
			size += len(rec[0])
			continue
		}
		if isEmpty(rec) {
			c.skipped++
			continue
		}
		if len(held) == 0 && notText(rec) {
			// Not a CSV file at all: say so at its first row, before
			// reading on for a header finds some other fault.
			c.hdrRow = c.row
			return rec, line, nil
		}
		if accept(rec) {
			c.hdrRow = c.row
			c.above += int64(len(held))
			for _, h := range held {
				c.titles = append(c.titles, rows.TitleOf(h.values))
			}
			return rec, line, nil
		}
		held = append(held, pendingRecord{values: rec, row: c.row, line: line})
		for _, v := range rec {
			size += len(v)
		}
	}
	if len(held) == 0 {
		return nil, 0, &rows.FileError{File: c.name, Err: errEmpty}
	}
	if held[0].bad != "" {
		return nil, 0, c.badHeader(record{line: held[0].line, bad: held[0].bad})
	}
	c.hdrRow = held[0].row
	c.pending = held[1:]
	return held[0].values, held[0].line, nil
}

// notText reports whether a row is not UTF-8 text. Until charsets are
// decoded, a header like that is most likely not a CSV file at all (an
// image, a spreadsheet saved under the wrong name): say so rather than
// "missing columns".
func notText(rec []string) bool {
	for _, h := range rec {
		if strings.ContainsRune(h, 0) || !utf8.ValidString(h) {
			return true
		}
	}
	return false
}

// read returns the next record: a blank line is one empty cell.
func (c *Reader) read() (record, error) {
	r, err := c.sp.next()
	if err == nil {
		if r.bad != "" && isEmpty(r.cells) {
			// Blanks around a stray CR: a blank row, nothing to read.
			r.cells, r.bad = []string{""}, ""
		}
		return r, nil
	}
	if errors.Is(err, io.EOF) {
		return record{}, io.EOF
	}
	var ge *guardError
	if errors.As(err, &ge) {
		return record{}, &rows.FileError{File: c.name, Line: ge.line, Err: ge.err}
	}
	return record{}, &rows.FileError{File: c.name, Err: err}
}

// Header returns the header row as the file spells it.
func (c *Reader) Header() []string { return c.header }

// Encoding returns the character set the file is read in: utf-8,
// utf-16le, utf-16be or windows-1252. Unless Options.Encoding declares
// it, a byte order mark decides, and without one the first 64 KiB: valid
// UTF-8 is UTF-8, and invalid UTF-8 that decodes cleanly as Windows-1252
// (no undefined byte, no control character but tab, CR and LF) is
// Windows-1252.
func (c *Reader) Encoding() string { return c.encoding }

// Comma returns the field delimiter, declared or sniffed.
func (c *Reader) Comma() rune { return c.opts.Comma }

// SkippedEmpty returns how many blank rows were skipped so far.
func (c *Reader) SkippedEmpty() int64 { return c.skipped }

// HeaderRow returns the row of the header, counted as Record.Row counts
// rows: 1 for a plain file.
func (c *Reader) HeaderRow() int64 { return c.hdrRow }

// Info describes the file as read: format "csv", its encoding, its
// delimiter as DelimiterName spells it, its quote and escape characters
// when they are not RFC 4180's, whether it began with a sep= line, and
// the row of its header.
func (c *Reader) Info() rows.SourceInfo {
	info := rows.SourceInfo{Format: Name, Encoding: c.encoding, Delimiter: DelimiterName(c.opts.Comma),
		SepLine: c.sepLine, HeaderRow: c.hdrRow, Titles: c.titles}
	if c.opts.Quote != '"' {
		info.Quote = string(c.opts.Quote)
	}
	if c.opts.Escape != 0 {
		info.Escape = string(c.opts.Escape)
	}
	return info
}

// Close does nothing: a CSV reader holds nothing but its source, which
// the caller closes. It is there so that every rows.Reader can be closed.
func (c *Reader) Close() error { return nil }

// Next returns the next non-empty record, or io.EOF.
func (c *Reader) Next() (rows.Record, error) {
	p, err := c.nextRecord()
	if err != nil {
		return rows.Record{}, err
	}
	if p.bad != "" {
		return c.unreadable(p.values[0], p.bad, p.row, p.line)
	}
	return c.record(p)
}

// nextRecord returns the next non-empty record, held back or read.
func (c *Reader) nextRecord() (pendingRecord, error) {
	if len(c.pending) > 0 {
		p := c.pending[0]
		c.pending = c.pending[1:]
		return p, nil
	}
	if err := c.table.peekErr; err != nil {
		return pendingRecord{}, err
	}
	blank := false
	for {
		r, err := c.read()
		if err != nil {
			return pendingRecord{}, err
		}
		c.row++
		if r.bad == "" && blankFrom(r.cells, r.drops, 0) {
			c.skipped++
			blank = true
			continue
		}
		return pendingRecord{values: r.cells, row: c.row, line: r.line, bad: r.bad, blank: blank, drops: r.drops}, nil
	}
}

// unreadable is the record of a line that cannot be read as CSV: an
// invalid row whose one cell is the line's raw text, as the file has it
// (bad bytes made valid, cut at MaxCellBytes), for the error report and
// for the person who fixes it.
func (c *Reader) unreadable(raw, why string, row, line int64) (rows.Record, error) {
	c.rows++
	if c.rows > c.opts.MaxRows {
		return rows.Record{}, &rows.FileError{File: c.name, Line: line, Err: fmt.Errorf("more than %d data rows", c.opts.MaxRows)}
	}
	raw = strings.ToValidUTF8(strings.ReplaceAll(raw, "\x00", "\uFFFD"), "\uFFFD")
	cut := ""
	if len(raw) > c.opts.MaxCellBytes {
		n := c.opts.MaxCellBytes
		for n > 0 && !utf8.RuneStart(raw[n]) {
			n--
		}
		raw = raw[:n]
		cut = fmt.Sprintf(" (its first %d bytes)", n)
	}
	return rows.Record{Row: row, Line: line, Values: []string{raw}, Errors: []rows.FieldError{{
		Row: row, Code: rows.CodeUnreadableLine,
		Message: fmt.Sprintf("line %d cannot be read as CSV: %s; its text is kept%s in the first cell", line, why, cut),
	}}}, nil
}

// record checks the non-empty record rec of the given row and line.
func (c *Reader) record(p pendingRecord) (rows.Record, error) {
	rec, row, line := p.values, p.row, p.line
	c.rows++
	if c.rows > c.opts.MaxRows {
		return rows.Record{}, &rows.FileError{File: c.name, Line: line, Err: fmt.Errorf("more than %d data rows", c.opts.MaxRows)}
	}
	// Cells past the header that hold nothing lose nothing: a spreadsheet
	// program pads every row to its widest (a template's example row and
	// its marker, a note beside the table), as the XLSX reader allows.
	if len(rec) > len(c.header) && blankFrom(rec, p.drops, len(c.header)) {
		rec = rec[:len(c.header)]
	}
	out := rows.Record{Row: row, Line: line, Values: rec, Trimmed: p.drops != nil}
	if fe := c.shape(rec, row, line, p.blank); fe != nil {
		out.Errors = append(out.Errors, *fe)
	} else if len(rec) != len(c.header) {
		out.Errors = append(out.Errors, rows.FieldError{
			Row: row, Code: rows.CodeRaggedRow,
			Message: fmt.Sprintf("row has %d cells, the header has %d", len(rec), len(c.header)),
		})
	}
	drops := p.drops
	for i, v := range rec {
		if len(drops) > 0 && drops[0].col == i {
			out.Errors = c.checkDropped(row, drops[0], out.Errors)
			drops = drops[1:]
			continue
		}
		rec[i], out.Errors = c.checkCell(row, i, v, out.Errors)
	}
	return out, nil
}

// checkDropped adds the problems checkCell would find in a cell a
// projection dropped: a row is invalid for the same cells, kept or not.
func (c *Reader) checkDropped(row int64, d droppedCell, errs []rows.FieldError) []rows.FieldError {
	if d.size > c.opts.MaxCellBytes {
		return append(errs, rows.FieldError{
			Row: row, Column: c.column(d.col), Code: rows.CodeCellTooLong,
			Message: fmt.Sprintf("cell is %d bytes, more than the limit of %d", d.size, c.opts.MaxCellBytes),
		})
	}
	if d.nul {
		errs = append(errs, rows.FieldError{
			Row: row, Column: c.column(d.col), Code: rows.CodeNulByte,
			Message: nulMessage,
		})
	}
	if d.invalid {
		errs = append(errs, rows.FieldError{
			Row: row, Column: c.column(d.col), Code: rows.CodeBadEncoding,
			Message: badEncodingMessage,
		})
	}
	return errs
}

// Project makes the reader copy out of each record only the cells of the
// columns keep accepts whenever the others hold more than maxUnread bytes
// together: those are returned empty, the record is Trimmed, and their
// problems (too long, a NUL, bad bytes) are still the row's errors. An
// import calls it once the header is mapped, for the columns its kind
// reads.
func (c *Reader) Project(keep func(col int) bool, maxUnread int) {
	c.sp.keep, c.sp.maxUnread = keep, maxUnread
}

// Transient makes the records Next returns views of the reader's own
// buffers, valid only until the next call to Next: their cells are not
// copied. For a pass that looks at each record and keeps nothing of it
// (an import's first pass, which settles the conventions), where the
// copies were most of what the pass allocated.
func (c *Reader) Transient() {
	c.sp.transient = true
}

// blankFrom reports whether the cells of a record from column i on are
// blank, those a projection dropped included.
func blankFrom(cells []string, drops []droppedCell, i int) bool {
	for _, d := range drops {
		if d.col >= i && !d.blank {
			return false
		}
	}
	return i >= len(cells) || isEmpty(cells[i:])
}

// checkCell returns what of cell i of row is kept, with the cell's problems
// added to errs. A cell that cannot be stored as it is (too long; a NUL or
// bad bytes, which PostgreSQL text refuses) is a row error, and what is kept
// is emptied or made valid so that the row can still be stored and
// reported.
func (c *Reader) checkCell(row int64, i int, v string, errs []rows.FieldError) (string, []rows.FieldError) {
	if len(v) > c.opts.MaxCellBytes {
		errs = append(errs, rows.FieldError{
			Row: row, Column: c.column(i), Code: rows.CodeCellTooLong,
			Message: fmt.Sprintf("cell is %d bytes, more than the limit of %d", len(v), c.opts.MaxCellBytes),
		})
		return "", errs // don't carry an oversized cell into the store
	}
	if strings.IndexByte(v, 0) >= 0 {
		errs = append(errs, rows.FieldError{
			Row: row, Column: c.column(i), Code: rows.CodeNulByte,
			Message: nulMessage,
		})
		v = strings.ReplaceAll(v, "\x00", "\uFFFD")
	}
	if !utf8.ValidString(v) {
		errs = append(errs, rows.FieldError{
			Row: row, Column: c.column(i), Code: rows.CodeBadEncoding,
			Message: badEncodingMessage,
		})
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	if !c.opts.KeepFormulaQuote {
		v = rows.UnquoteFormula(v)
	}
	// Each bad byte became a three-byte U+FFFD above, so a cell just under
	// the limit can grow past it (found by FuzzCSVReader): keep the cap a
	// cap on what is stored, too.
	if len(v) > c.opts.MaxCellBytes {
		errs = append(errs, rows.FieldError{
			Row: row, Column: c.column(i), Code: rows.CodeCellTooLong,
			Message: fmt.Sprintf("cell is %d bytes once its bad bytes are replaced, more than the limit of %d", len(v), c.opts.MaxCellBytes),
		})
		return "", errs
	}
	return v, errs
}

const (
	nulMessage         = "cell contains a NUL byte (shown as \uFFFD): is this a binary file, or UTF-16 without a byte order mark?"
	badEncodingMessage = "cell is not valid UTF-8 (bad bytes shown as \uFFFD): save the file as UTF-8, or declare its encoding"
)

func (c *Reader) column(i int) string {
	if i < len(c.header) {
		return strings.TrimSpace(c.header[i]) // as Mapping names it
	}
	return fmt.Sprintf("#%d", i+1)
}

// guardError is a problem lineGuard found; it carries the line.
type guardError struct {
	line int64
	err  error
}

func (e *guardError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }

// isEmpty reports whether every cell of rec is blank. A cell that is only
// a formula quote before blanks ("'\t", as the writer protects a cell
// starting with a tab) is blank too: a spreadsheet shows nothing there, and
// once the quote is removed the row would be a blank row handed on (found
// by FuzzCSVReader).
func isEmpty(rec []string) bool {
	for _, v := range rec {
		if strings.TrimSpace(rows.UnquoteFormula(v)) != "" {
			return false
		}
	}
	return true
}
