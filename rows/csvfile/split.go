package csvfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// splitter cuts decoded CSV text into records: RFC 4180, read so that one
// malformed line costs that line, never the file. encoding/csv cannot do
// that (after a quote error it cannot say where the next record starts),
// so the reader has its own:
//
//   - A quote inside an unquoted cell is a literal character: there is
//     nothing to guess (Jo"hn, 5" disk).
//   - A quote that is neither doubled nor the end of its quoted cell, a
//     quoted cell that never closes, and a bare carriage return in the
//     middle of a line of a file whose lines end with LF make the record
//     unreadable: it is returned as its first physical line's raw text,
//     with the reason, and reading goes on at the next line.
//   - A quoted cell may span lines, as RFC 4180 allows, when the record
//     it makes closes cleanly and, once the header is known, has the
//     header's width (cells past it empty). Anything else is the likelier
//     story of a stray quote that opened a cell by mistake: the first line
//     is unreadable and the lines after it are read again as records, so
//     the rows a stray quote would have swallowed import as they are.
//   - Lines end with LF (CRLF too), or with a bare CR in a file whose
//     start has no LF at all (classic Mac), which is unambiguous.
//
// Memory is flat: a record is held while it is read, bounded by max
// bytes; so are the lines read again after a stray quote.
type splitter struct {
	br     *bufio.Reader
	delim  []byte // UTF-8 of the delimiter
	quote  byte
	escape byte // 0: quotes are escaped by doubling them only
	term   byte // '\n', or '\r' in a file of bare CR line ends
	max    int
	// width is the header's number of cells, once known: a record whose
	// quoted cell spans lines must have it. 0 takes any.
	width int

	line    int64  // physical lines consumed
	ahead   []byte // raw lines to read again before br, after a stray quote
	spare   []byte // the buffer ahead does not use, to build the next one in
	raw     []byte // the raw lines of a record that spans several
	long    []byte // a physical line longer than br's buffer
	buf     []byte // the cells' bytes
	ends    []int  // where each cell ends in buf
	fileErr error
	// needed is set, while sniffing only (track), when a quoted cell held
	// the delimiter, a quote or a line end: quoting was needed.
	track, needed bool
	// keep, when set (Reader.Project), names the columns whose cells a
	// record copies out when the others hold more than maxUnread bytes
	// together: those are left empty, only summed up (droppedCell).
	keep      func(col int) bool
	maxUnread int
	// transient (Reader.Transient) makes a record's cells views of buf,
	// in a slice reused as strs: valid until the next record is split.
	transient bool
	strs      []string
}

// record is one record as split: its cells, the line it starts on, and,
// when it cannot be read, why (cells is then the first line's raw text).
type record struct {
	cells []string
	line  int64
	bad   string
	lines int64 // physical lines it spans
	// drops are the cells left empty by a projection, in column order.
	drops []droppedCell
}

// droppedCell is what the reader still needs to know of a cell a
// projection left empty: enough for the checks a kept cell gets, and to
// tell a row whose only content was dropped from a blank one.
type droppedCell struct {
	col          int
	size         int
	blank        bool
	nul, invalid bool
}

// errLineTooLong is a physical line over the limit: its text cannot be
// kept as a row, so it still rejects the file.
type errLineTooLong struct{ max int }

func (e errLineTooLong) Error() string {
	return fmt.Sprintf("line is longer than the limit of %d bytes", e.max)
}

// readPhys returns the next physical line with its terminator (none at
// the end of the text), or io.EOF.
func (s *splitter) readPhys() ([]byte, error) {
	if len(s.ahead) > 0 {
		var l []byte
		if i := bytes.IndexByte(s.ahead, s.term); i >= 0 {
			l, s.ahead = s.ahead[:i+1], s.ahead[i+1:]
		} else {
			l, s.ahead = s.ahead, nil
		}
		return l, nil
	}
	l, err := s.br.ReadSlice(s.term)
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], l...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.long) > s.max {
				return nil, errLineTooLong{s.max}
			}
			l, err = s.br.ReadSlice(s.term)
			s.long = append(s.long, l...)
		}
		l = s.long
	}
	if len(l) > s.max && len(s.content(l)) > s.max { // the line end does not count
		return nil, errLineTooLong{s.max}
	}
	if len(l) > 0 && errors.Is(err, io.EOF) {
		err = nil
	}
	return l, err
}

// content strips a line's terminator: LF or CRLF, or the bare CR of a
// CR file; a CR that ends the text is dropped too, as encoding/csv does.
func (s *splitter) content(l []byte) []byte {
	n := len(l)
	if n > 0 && l[n-1] == s.term {
		n--
	}
	if n > 0 && l[n-1] == '\r' {
		n--
	}
	return l[:n]
}

// next returns the next record; a blank line is a record of one empty
// cell. The error is io.EOF, or a line over the limit, or the source's.
func (s *splitter) next() (record, error) {
	if s.fileErr != nil {
		return record{}, s.fileErr
	}
	l, err := s.readPhys()
	if err != nil {
		return record{}, s.fail(err)
	}
	s.line++
	start := s.line
	s.buf, s.ends = s.buf[:0], s.ends[:0]
	more, bad := s.parse(s.content(l), false)
	if bad != "" {
		return record{cells: []string{string(s.content(l))}, line: start, bad: bad, lines: 1}, nil
	}
	if !more {
		cells, drops := s.cells()
		return record{cells: cells, line: start, lines: 1, drops: drops}, nil
	}
	return s.spanning(l, start)
}

// spanning reads on a record whose quoted cell runs past its first line
// l, and returns it, or the first line as unreadable when the record does
// not read as one row (see splitter).
func (s *splitter) spanning(first []byte, start int64) (record, error) {
	s.raw = append(s.raw[:0], first...)
	firstLen := len(first)
	for {
		l, err := s.readPhys()
		if err != nil && !errors.Is(err, io.EOF) {
			return record{}, s.fail(err)
		}
		if errors.Is(err, io.EOF) || len(s.raw)+len(l) > s.max {
			return s.unspan(firstLen, start, "a quoted cell opens on this line and never closes"), nil
		}
		s.raw = append(s.raw, l...)
		s.line++
		more, bad := s.parse(s.content(l), true)
		switch {
		case bad != "":
			return s.unspan(firstLen, start, "a quoted cell opens on this line and does not close as a cell should"), nil
		case more:
			continue
		case !s.fits():
			return s.unspan(firstLen, start, fmt.Sprintf("a quoted cell opens on this line and, read across the next lines, makes a row of %d cells, not %d", len(s.ends), s.width)), nil
		}
		cells, drops := s.cells()
		return record{cells: cells, line: start, lines: s.line - start + 1, drops: drops}, nil
	}
}

// unspan gives up on a record that spanned lines: its first line is
// unreadable, and the lines after it are read again.
func (s *splitter) unspan(firstLen int, start int64, why string) record {
	rest := s.raw[firstLen:]
	next := append(append(s.spare[:0], rest...), s.ahead...)
	s.spare, s.ahead = s.ahead[:0], next
	if len(s.ahead) == 0 {
		s.ahead = nil
	}
	s.line = start
	return record{cells: []string{string(s.content(s.raw[:firstLen]))}, line: start, bad: why, lines: 1}
}

// fits reports whether a record that spanned lines has the header's
// width, cells past it empty.
func (s *splitter) fits() bool {
	if s.width == 0 || len(s.ends) == s.width {
		return true
	}
	if len(s.ends) < s.width {
		return false
	}
	return s.ends[s.width-1] == len(s.buf)
}

func (s *splitter) fail(err error) error {
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	var tl errLineTooLong
	if errors.As(err, &tl) {
		err = &guardError{line: s.line + 1, err: err}
	}
	s.fileErr = err
	return err
}

// cells returns the record's cells: one string holds them all. Under a
// projection, a record whose unkept cells hold more than maxUnread bytes
// copies out its kept cells only, and the rest are drops: a file whose
// rows carry a megabyte in columns nobody reads allocated that megabyte
// for every row, twice an import (the cells were cut after they were
// made), and under CPU pressure the collector fell behind far enough to
// take the import past its memory bound.
func (s *splitter) cells() ([]string, []droppedCell) {
	if s.keep != nil {
		if out, drops := s.projected(); out != nil {
			return out, drops
		}
	}
	if s.transient {
		return s.views(), nil
	}
	str := string(s.buf)
	out := make([]string, len(s.ends))
	prev := 0
	for i, e := range s.ends {
		out[i] = str[prev:e]
		prev = e
	}
	return out, nil
}

// views returns the record's cells as views of buf, in strs: nothing is
// copied, and the next record split overwrites both.
func (s *splitter) views() []string {
	var str string
	if len(s.buf) > 0 {
		str = unsafe.String(&s.buf[0], len(s.buf))
	}
	out := s.strs[:0]
	prev := 0
	for _, e := range s.ends {
		out = append(out, str[prev:e])
		prev = e
	}
	s.strs = out
	return out
}

// detach leaves buf and strs to the record split last, which a view
// still holds, and splits the next one into arrays of its own.
func (s *splitter) detach() {
	s.buf, s.strs = nil, nil
}

// projected returns the kept cells and the drops, or nil when the unkept
// cells are small enough to keep.
func (s *splitter) projected() ([]string, []droppedCell) {
	unread, kept, prev := 0, 0, 0
	for i, e := range s.ends {
		if s.keep(i) {
			kept += e - prev
		} else {
			unread += e - prev
		}
		prev = e
	}
	if unread <= s.maxUnread {
		return nil, nil
	}
	var b strings.Builder
	b.Grow(kept)
	bounds := make([]int, len(s.ends))
	var drops []droppedCell
	prev = 0
	for i, e := range s.ends {
		cell := s.buf[prev:e]
		prev = e
		if s.keep(i) {
			b.Write(cell)
		} else if len(cell) > 0 {
			drops = append(drops, droppedCell{col: i, size: len(cell),
				blank: len(bytes.TrimSpace(cell)) == 0,
				nul:   bytes.IndexByte(cell, 0) >= 0, invalid: !utf8.Valid(cell)})
		}
		bounds[i] = b.Len()
	}
	str := b.String()
	out := make([]string, len(s.ends))
	start := 0
	for i, e := range bounds {
		out[i] = str[start:e]
		start = e
	}
	return out, drops
}

// parse splits one line's content into cells, appended to buf and ends.
// inQuote says the line continues a quoted cell. more reports that the
// line ends inside a quoted cell; bad, that the line cannot be read.
func (s *splitter) parse(line []byte, inQuote bool) (more bool, bad string) {
	hasCR := s.term == '\n' && bytes.IndexByte(line, '\r') >= 0
	pos := 0
	for {
		if !inQuote {
			if pos < len(line) && line[pos] == s.quote {
				pos++
				inQuote = true
			} else {
				i := s.indexDelim(line[pos:])
				field := line[pos:]
				if i >= 0 {
					field = line[pos : pos+i]
				}
				if hasCR && bytes.IndexByte(field, '\r') >= 0 {
					return false, "a carriage return (CR) in the middle of the line: is it a line end?"
				}
				s.buf = append(s.buf, field...)
				s.ends = append(s.ends, len(s.buf))
				if i < 0 {
					return false, ""
				}
				pos += i + len(s.delim)
				continue
			}
		}
		// In a quoted cell.
		i := s.indexQuote(line[pos:])
		if s.track {
			end := len(line)
			if i >= 0 {
				end = pos + i
			}
			s.needed = s.needed || i < 0 || s.indexDelim(line[pos:end]) >= 0
		}
		if i < 0 {
			s.buf = append(s.buf, line[pos:]...)
			s.buf = append(s.buf, '\n')
			return true, ""
		}
		s.buf = append(s.buf, line[pos:pos+i]...)
		pos += i
		if s.track {
			s.needed = s.needed || line[pos] != s.quote || pos+1 < len(line) && line[pos+1] == s.quote
		}
		if line[pos] != s.quote { // the escape character
			if pos+1 == len(line) {
				s.buf = append(s.buf, '\n') // it escapes the line end
				return true, ""
			}
			s.buf = append(s.buf, line[pos+1])
			pos += 2
			continue
		}
		pos++
		switch {
		case pos < len(line) && line[pos] == s.quote:
			s.buf = append(s.buf, s.quote)
			pos++
		case pos == len(line):
			s.ends = append(s.ends, len(s.buf))
			return false, ""
		case s.isDelim(line[pos:]):
			s.ends = append(s.ends, len(s.buf))
			pos += len(s.delim)
			inQuote = false
		default:
			return false, fmt.Sprintf("a quote in cell %d is neither doubled nor the end of its quoted cell", len(s.ends)+1)
		}
	}
}

func (s *splitter) indexDelim(b []byte) int {
	if len(s.delim) == 1 {
		return bytes.IndexByte(b, s.delim[0])
	}
	return bytes.Index(b, s.delim)
}

func (s *splitter) isDelim(b []byte) bool {
	if len(s.delim) == 1 {
		return b[0] == s.delim[0]
	}
	return bytes.HasPrefix(b, s.delim)
}

// indexQuote finds the next quote, or escape character, in b.
func (s *splitter) indexQuote(b []byte) int {
	i := bytes.IndexByte(b, s.quote)
	if s.escape == 0 {
		return i
	}
	lim := b
	if i >= 0 {
		lim = b[:i]
	}
	if j := bytes.IndexByte(lim, s.escape); j >= 0 {
		return j
	}
	return i
}

// validQuote reports whether r can quote cells: an ASCII character that
// is not a line end, a space or a letter or digit.
func validQuote(r rune) bool {
	return r > ' ' && r < utf8.RuneSelf && r != 0x7F &&
		!('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
}
