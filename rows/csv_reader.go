package rows

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// CSVOptions tunes a CSVReader. The zero value is usable.
type CSVOptions struct {
	// Comma is the field delimiter. Defaults to ','.
	Comma rune
	// MaxColumns caps the number of header columns. Defaults to 1024.
	MaxColumns int
	// MaxCellBytes caps the size of one cell; a longer cell is a row error.
	// Defaults to 64 KiB.
	MaxCellBytes int
	// MaxRows caps the number of data rows; more is a file error.
	// Defaults to 10,000,000.
	MaxRows int64
}

func (o *CSVOptions) withDefaults() CSVOptions {
	var c CSVOptions
	if o != nil {
		c = *o
	}
	if c.Comma == 0 {
		c.Comma = ','
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
	return c
}

// CSVReader reads a CSV file one record at a time. It strips one leading
// UTF-8 byte order mark, reads the first non-empty row as the header, and
// numbers rows the way a spreadsheet program shows them.
type CSVReader struct {
	name   string
	opts   CSVOptions
	r      *csv.Reader
	lines  *lineCounter
	header []string

	row      int64 // spreadsheet row of the last record returned or skipped
	nextLine int64 // physical line right after the last record read
	rows     int64
	skipped  int64
}

var _ Reader = (*CSVReader)(nil)

// NewCSVReader reads the header of r and returns a reader positioned at the
// first data row. name is used in errors only. A file with no header (empty,
// or only blank lines) is a *FileError.
func NewCSVReader(r io.Reader, name string, opts *CSVOptions) (*CSVReader, error) {
	o := opts.withDefaults()
	lc := &lineCounter{r: r}
	br := bufio.NewReaderSize(lc, 64<<10)
	if bom, err := br.Peek(3); err == nil && bytes.Equal(bom, []byte{0xEF, 0xBB, 0xBF}) {
		_, _ = br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.Comma = o.Comma
	cr.FieldsPerRecord = -1 // ragged rows are row errors, checked below
	cr.ReuseRecord = false
	c := &CSVReader{name: name, opts: o, r: cr, lines: lc, nextLine: 1}

	// Blank and whitespace-only rows before the header still count as rows.
	var (
		rec  []string
		line int64
	)
	for {
		var err error
		rec, line, err = c.read()
		if errors.Is(err, io.EOF) {
			return nil, &FileError{File: name, Err: errors.New("no header row: the file is empty")}
		}
		if err != nil {
			return nil, err
		}
		c.row++
		if !isEmpty(rec) {
			break
		}
		c.skipped++
	}
	if len(rec) > o.MaxColumns {
		return nil, &FileError{File: name, Line: line, Err: fmt.Errorf("header has %d columns, more than the limit of %d", len(rec), o.MaxColumns)}
	}
	for _, h := range rec {
		// Until charsets are decoded, a header that is not UTF-8 text is
		// most likely not a CSV file at all (an image, a spreadsheet saved
		// under the wrong name): say so rather than "missing columns".
		if strings.ContainsRune(h, 0) || !utf8.ValidString(h) {
			return nil, &FileError{File: name, Line: line, Err: errors.New("the header row is not UTF-8 text: is this a CSV file?")}
		}
	}
	c.header = rec
	return c, nil
}

// read returns the next physical record and the line it starts on.
func (c *CSVReader) read() ([]string, int64, error) {
	rec, err := c.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			// encoding/csv skips blank lines at the end too, with no next
			// record to measure the gap from: count them from the source.
			if gap := c.lines.count() + 1 - c.nextLine; gap > 0 {
				c.row += gap
				c.skipped += gap
				c.nextLine += gap
			}
			return nil, 0, io.EOF
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, 0, &FileError{File: c.name, Line: int64(pe.StartLine), Err: pe.Err}
		}
		return nil, 0, &FileError{File: c.name, Err: err}
	}
	line, _ := c.r.FieldPos(0)
	start := int64(line)
	// encoding/csv skips blank lines without telling; the gap between where
	// the previous record ended and where this one starts is those lines.
	if gap := start - c.nextLine; gap > 0 {
		c.row += gap
		c.skipped += gap
	}
	span := int64(1)
	for _, v := range rec {
		span += int64(strings.Count(v, "\n"))
	}
	c.nextLine = start + span
	return rec, start, nil
}

// Header returns the header row as the file spells it.
func (c *CSVReader) Header() []string { return c.header }

// SkippedEmpty returns how many blank rows were skipped so far.
func (c *CSVReader) SkippedEmpty() int64 { return c.skipped }

// Next returns the next non-empty record, or io.EOF.
func (c *CSVReader) Next() (Record, error) {
	for {
		rec, line, err := c.read()
		if err != nil {
			return Record{}, err
		}
		c.row++
		if isEmpty(rec) {
			c.skipped++
			continue
		}
		c.rows++
		if c.rows > c.opts.MaxRows {
			return Record{}, &FileError{File: c.name, Line: line, Err: fmt.Errorf("more than %d data rows", c.opts.MaxRows)}
		}
		out := Record{Row: c.row, Line: line, Values: rec}
		if len(rec) != len(c.header) {
			out.Errors = append(out.Errors, FieldError{
				Row: c.row, Code: CodeRaggedRow,
				Message: fmt.Sprintf("row has %d cells, the header has %d", len(rec), len(c.header)),
			})
		}
		for i, v := range rec {
			if len(v) > c.opts.MaxCellBytes {
				out.Errors = append(out.Errors, FieldError{
					Row: c.row, Column: c.column(i), Code: CodeCellTooLong,
					Message: fmt.Sprintf("cell is %d bytes, more than the limit of %d", len(v), c.opts.MaxCellBytes),
				})
				rec[i] = "" // don't carry an oversized cell into the store
			}
		}
		return out, nil
	}
}

func (c *CSVReader) column(i int) string {
	if i < len(c.header) {
		return strings.TrimSpace(c.header[i]) // as Mapping names it
	}
	return fmt.Sprintf("#%d", i+1)
}

// lineCounter counts the physical lines read through it, the way
// encoding/csv counts them: by '\n', plus a last line without one.
type lineCounter struct {
	r        io.Reader
	newlines int64
	partial  bool // the last byte read was not '\n'
}

func (l *lineCounter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.newlines += int64(bytes.Count(p[:n], []byte{'\n'}))
		l.partial = p[n-1] != '\n'
	}
	return n, err
}

// count returns the number of lines read so far.
func (l *lineCounter) count() int64 {
	if l.partial {
		return l.newlines + 1
	}
	return l.newlines
}

// isEmpty reports whether every cell of rec is blank.
func isEmpty(rec []string) bool {
	for _, v := range rec {
		if strings.TrimSpace(v) != "" {
			return false
		}
	}
	return true
}
