package xlsxfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// This file is a small XML tokenizer for the two big parts of a workbook,
// the worksheet and the shared strings. encoding/xml allocates a token (and
// a string per attribute) for every tag, which made the sheet's XML cost
// more than everything else the reader does; the parts a spreadsheet
// program writes need much less: start and end tags with their attributes,
// text with the five named entities and character references, comments,
// processing instructions and CDATA. Names are matched by their local part,
// so a prefixed sheet (<x:row>) reads as a plain one. A DOCTYPE is an
// error, as is any run of more than xlsxMaxRun bytes without markup, so
// that memory stays bounded whatever the part holds.

// xlsxMaxRun caps a run of XML bytes without a '<': the text of one cell,
// escaped, or the inside of one tag. The longest cell Excel makes is 32,767
// characters (at most about 650 KB escaped).
const xlsxMaxRun = 1 << 20

// errXLSXRun is the error of a part with a longer run than xlsxMaxRun.
var errXLSXRun = fmt.Errorf("the XML has a run of more than %d bytes without markup (a giant cell, or padding)", xlsxMaxRun)

// errXLSXDoctype is the error of a DOCTYPE (or any other <!...>
// declaration) inside a part.
var errXLSXDoctype = errors.New("the sheet declares a DOCTYPE")

// xlsxSyntaxError is malformed XML: the scanner's callers add where.
type xlsxSyntaxError struct{ msg string }

func (e *xlsxSyntaxError) Error() string { return e.msg }

func xlsxSyntax(format string, args ...any) error {
	return &xlsxSyntaxError{msg: fmt.Sprintf(format, args...)}
}

// xlsxTokKind is what xlsxXML.next read.
type xlsxTokKind uint8

const (
	xlsxTokText  xlsxTokKind = iota // text before the next tag (possibly none)
	xlsxTokStart                    // a start tag; selfClose for <a/>
	xlsxTokEnd                      // an end tag
	xlsxTokEOF
)

// xlsxAttrSpan is one attribute of the current start tag: its local name
// and its raw (still escaped) value, as slices of the scanner's buffer.
type xlsxAttrSpan struct {
	name, value []byte
}

// xlsxXML reads tokens from r. The slices it returns (names, attributes,
// raw text) point into its buffer and hold until the next call.
type xlsxXML struct {
	r        io.Reader
	buf      []byte
	pos, end int
	rerr     error // the reader's error, once met (io.EOF at the end)

	// The current token.
	kind      xlsxTokKind
	name      []byte // local name of a start or end tag
	selfClose bool
	attrs     []xlsxAttrSpan
}

// xlsxXMLBuf is the scanner's buffer: large enough that a refill costs
// little per row, small enough that it is no memory to speak of. It grows
// (to xlsxMaxRun and a little) only for a tag that long.
const xlsxXMLBuf = 128 << 10

func newXLSXXML(r io.Reader) *xlsxXML {
	return &xlsxXML{r: r, buf: make([]byte, xlsxXMLBuf)}
}

// fill moves the unread bytes to the front of the buffer and reads more.
// It reports false when nothing more can be read (x.rerr says why).
func (x *xlsxXML) fill() bool {
	if x.rerr != nil {
		return false
	}
	if x.pos > 0 {
		x.end = copy(x.buf, x.buf[x.pos:x.end])
		x.pos = 0
	}
	if x.end == len(x.buf) {
		if len(x.buf) >= xlsxMaxRun+xlsxXMLBuf {
			x.rerr = errXLSXRun
			return false
		}
		nb := make([]byte, min(2*len(x.buf), xlsxMaxRun+xlsxXMLBuf))
		copy(nb, x.buf[:x.end])
		x.buf = nb
	}
	for tries := 0; tries < 100; tries++ {
		n, err := x.r.Read(x.buf[x.end:])
		x.end += n
		if err != nil {
			x.rerr = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	x.rerr = io.ErrNoProgress
	return false
}

// readErr is the error of input that ended (or failed) inside a token.
func (x *xlsxXML) readErr() error {
	if x.rerr == nil || errors.Is(x.rerr, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return x.rerr
}

// skipText passes over the text up to the next '<', which it leaves
// unread; io.EOF when the input ends first.
func (x *xlsxXML) skipText() error {
	run := 0
	for {
		if i := bytes.IndexByte(x.buf[x.pos:x.end], '<'); i >= 0 {
			if run+i > xlsxMaxRun {
				return errXLSXRun
			}
			x.pos += i
			return nil
		}
		run += x.end - x.pos
		if run > xlsxMaxRun {
			return errXLSXRun
		}
		x.pos = x.end
		if !x.fill() {
			if errors.Is(x.rerr, io.EOF) {
				return io.EOF
			}
			return x.rerr
		}
	}
}

// appendText appends the text up to the next '<' to dst, unescaped, with
// line ends normalised to \n as XML says; the '<' is left unread. io.EOF
// when the input ends first (dst then holds what was read).
func (x *xlsxXML) appendText(dst []byte) ([]byte, error) {
	run := 0
	for {
		chunk := x.buf[x.pos:x.end]
		i := bytes.IndexByte(chunk, '<')
		stop := i >= 0
		if !stop {
			i = len(chunk)
		}
		if run+i > xlsxMaxRun {
			return dst, errXLSXRun
		}
		seg := chunk[:i]
		if j := bytes.IndexAny(seg, "&\r"); j < 0 {
			dst = append(dst, seg...)
			x.pos += i
			run += i
		} else {
			dst = append(dst, seg[:j]...)
			x.pos += j
			run += j
			var err error
			if dst, err = x.escape(dst); err != nil {
				return dst, err
			}
			continue
		}
		if stop {
			return dst, nil
		}
		if !x.fill() {
			if errors.Is(x.rerr, io.EOF) {
				return dst, io.EOF
			}
			return dst, x.rerr
		}
	}
}

// escape reads the entity or carriage return at x.pos and appends what it
// stands for.
func (x *xlsxXML) escape(dst []byte) ([]byte, error) {
	if x.buf[x.pos] == '\r' {
		if x.pos+1 >= x.end {
			x.fill()
		}
		x.pos++
		if x.pos < x.end && x.buf[x.pos] == '\n' {
			x.pos++
		}
		return append(dst, '\n'), nil
	}
	// An entity is short: the longest valid one is &#x10FFFF; (or a long
	// run of leading zeros, which nothing writes).
	if x.end-x.pos < 16 {
		x.fill()
	}
	window := x.buf[x.pos:min(x.end, x.pos+16)]
	semi := bytes.IndexByte(window, ';')
	if semi < 0 {
		return dst, xlsxSyntax("an & that starts no entity")
	}
	dst, ok := xlsxEntity(dst, window[1:semi])
	if !ok {
		return dst, xlsxSyntax("invalid entity &%s;", window[1:semi])
	}
	x.pos += semi + 1
	return dst, nil
}

// xlsxEntity appends what the entity named ent (without & and ;) stands
// for.
func xlsxEntity(dst, ent []byte) ([]byte, bool) {
	switch string(ent) {
	case "lt":
		return append(dst, '<'), true
	case "gt":
		return append(dst, '>'), true
	case "amp":
		return append(dst, '&'), true
	case "quot":
		return append(dst, '"'), true
	case "apos":
		return append(dst, '\''), true
	}
	if len(ent) < 2 || ent[0] != '#' {
		return dst, false
	}
	var (
		v   uint64
		err error
	)
	if ent[1] == 'x' {
		v, err = strconv.ParseUint(string(ent[2:]), 16, 32)
	} else {
		v, err = strconv.ParseUint(string(ent[1:]), 10, 32)
	}
	if err != nil || !xlsxXMLChar(rune(v)) || v > utf8.MaxRune {
		return dst, false
	}
	return utf8.AppendRune(dst, rune(v)), true
}

// xlsxXMLChar reports whether r may appear in an XML document, as
// encoding/xml decides it for a character reference.
func xlsxXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// xlsxUnescapeAttr returns an attribute's value with its entities replaced.
func xlsxUnescapeAttr(raw []byte) ([]byte, error) {
	if bytes.IndexByte(raw, '&') < 0 {
		return raw, nil
	}
	var out []byte
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '&')
		if i < 0 {
			return append(out, raw...), nil
		}
		out = append(out, raw[:i]...)
		semi := bytes.IndexByte(raw[i:], ';')
		if semi < 0 {
			return nil, xlsxSyntax("an & that starts no entity")
		}
		var ok bool
		if out, ok = xlsxEntity(out, raw[i+1:i+semi]); !ok {
			return nil, xlsxSyntax("invalid entity &%s;", raw[i+1:i+semi])
		}
		raw = raw[i+semi+1:]
	}
	return out, nil
}

// tag reads the markup at x.pos (a '<'). Comments and processing
// instructions are passed over; CDATA is appended to *text when text is
// not nil and passed over otherwise; a declaration is errXLSXDoctype. It
// sets x.kind to xlsxTokStart or xlsxTokEnd, or to xlsxTokText after
// markup that is neither.
func (x *xlsxXML) tag(text *[]byte) error {
	if x.end-x.pos < 9 {
		x.fill()
	}
	rest := x.buf[x.pos:x.end]
	switch {
	case len(rest) < 2:
		return x.readErr()
	case rest[1] == '?':
		x.kind = xlsxTokText
		return x.skipPast("?>")
	case bytes.HasPrefix(rest, []byte("<!--")):
		x.kind = xlsxTokText
		x.pos += 4
		return x.skipPast("-->")
	case bytes.HasPrefix(rest, []byte("<![CDATA[")):
		x.kind = xlsxTokText
		x.pos += 9
		return x.cdata(text)
	case rest[1] == '!':
		return errXLSXDoctype
	case rest[1] == '/':
		return x.endTag()
	}
	return x.startTag()
}

// skipPast reads past the next occurrence of end, within xlsxMaxRun.
func (x *xlsxXML) skipPast(end string) error {
	run := 0
	for {
		if i := bytes.Index(x.buf[x.pos:x.end], []byte(end)); i >= 0 {
			x.pos += i + len(end)
			return nil
		}
		// Keep a tail that may hold the start of end.
		keep := min(len(end)-1, x.end-x.pos)
		run += x.end - x.pos - keep
		if run > xlsxMaxRun {
			return errXLSXRun
		}
		x.pos = x.end - keep
		if !x.fill() {
			return x.readErr()
		}
	}
}

// cdata reads a CDATA section's text up to "]]>".
func (x *xlsxXML) cdata(text *[]byte) error {
	run := 0
	for {
		chunk := x.buf[x.pos:x.end]
		if i := bytes.Index(chunk, []byte("]]>")); i >= 0 {
			if text != nil {
				*text = append(*text, chunk[:i]...)
			}
			x.pos += i + 3
			return nil
		}
		n := max(len(chunk)-2, 0)
		run += n
		if run > xlsxMaxRun {
			return errXLSXRun
		}
		if text != nil {
			*text = append(*text, chunk[:n]...)
		}
		x.pos += n
		if !x.fill() {
			return x.readErr()
		}
	}
}

// tagEnd returns the index in x.buf of the '>' that closes the tag
// starting at x.pos, skipping quoted attribute values; it reads more of
// the input as needed.
func (x *xlsxXML) tagEnd() (int, error) {
	// The usual tag: no quote but pairs of double quotes before the first
	// '>', and no '<'.
	if gt := bytes.IndexByte(x.buf[x.pos+1:x.end], '>'); gt >= 0 {
		seg := x.buf[x.pos+1 : x.pos+1+gt]
		if bytes.Count(seg, []byte{'"'})%2 == 0 && bytes.IndexByte(seg, '\'') < 0 && bytes.IndexByte(seg, '<') < 0 {
			return x.pos + 1 + gt, nil
		}
	}
	i := x.pos + 1
	var quote byte
	for {
		for ; i < x.end; i++ {
			c := x.buf[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				} else if c == '<' {
					return 0, xlsxSyntax("unescaped < in an attribute value")
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '>':
				return i, nil
			case c == '<':
				return 0, xlsxSyntax("unexpected < in a tag")
			}
		}
		off := i - x.pos
		if !x.fill() {
			if errors.Is(x.rerr, errXLSXRun) {
				return 0, errXLSXRun
			}
			return 0, x.readErr()
		}
		i = x.pos + off
	}
}

// endTag reads </name>.
func (x *xlsxXML) endTag() error {
	e, err := x.tagEnd()
	if err != nil {
		return err
	}
	name := x.buf[x.pos+2 : e]
	for len(name) > 0 && xlsxSpace(name[len(name)-1]) {
		name = name[:len(name)-1]
	}
	if !xlsxValidName(name) {
		return xlsxSyntax("invalid end tag")
	}
	x.kind, x.name, x.selfClose = xlsxTokEnd, xlsxLocal(name), false
	x.pos = e + 1
	return nil
}

// startTag reads <name attr="value" ...> or <name .../>.
func (x *xlsxXML) startTag() error {
	e, err := x.tagEnd()
	if err != nil {
		return err
	}
	body := x.buf[x.pos+1 : e]
	x.pos = e + 1
	x.selfClose = len(body) > 0 && body[len(body)-1] == '/'
	if x.selfClose {
		body = body[:len(body)-1]
	}
	i := 0
	for i < len(body) && !xlsxSpace(body[i]) {
		i++
	}
	if !xlsxValidName(body[:i]) {
		return xlsxSyntax("invalid tag name")
	}
	x.kind, x.name = xlsxTokStart, xlsxLocal(body[:i])
	x.attrs = x.attrs[:0]
	for {
		for i < len(body) && xlsxSpace(body[i]) {
			i++
		}
		if i == len(body) {
			return nil
		}
		ns := i
		for i < len(body) && body[i] != '=' && !xlsxSpace(body[i]) {
			i++
		}
		name := body[ns:i]
		for i < len(body) && xlsxSpace(body[i]) {
			i++
		}
		if i == len(body) || body[i] != '=' || !xlsxValidName(name) {
			return xlsxSyntax("an attribute without a value")
		}
		i++
		for i < len(body) && xlsxSpace(body[i]) {
			i++
		}
		if i == len(body) || (body[i] != '"' && body[i] != '\'') {
			return xlsxSyntax("an unquoted attribute value")
		}
		q := bytes.IndexByte(body[i+1:], body[i])
		if q < 0 {
			return xlsxSyntax("a malformed attribute")
		}
		x.attrs = append(x.attrs, xlsxAttrSpan{name: xlsxLocal(name), value: body[i+1 : i+1+q]})
		i += q + 2
		if i < len(body) && !xlsxSpace(body[i]) {
			return xlsxSyntax("attributes without space between them")
		}
	}
}

// next reads the next tag, passing over text, comments and processing
// instructions: x.kind is xlsxTokStart, xlsxTokEnd or xlsxTokEOF.
func (x *xlsxXML) next() error {
	for {
		if err := x.skipText(); err != nil {
			if errors.Is(err, io.EOF) {
				x.kind = xlsxTokEOF
				return nil
			}
			return err
		}
		if err := x.tag(nil); err != nil {
			return err
		}
		if x.kind != xlsxTokText {
			return nil
		}
	}
}

// nextText is next, but appends the text (and CDATA) passed over to
// *text.
func (x *xlsxXML) nextText(text *[]byte) error {
	for {
		var err error
		if *text, err = x.appendText(*text); err != nil {
			if errors.Is(err, io.EOF) {
				x.kind = xlsxTokEOF
				return nil
			}
			return err
		}
		if err := x.tag(text); err != nil {
			return err
		}
		if x.kind != xlsxTokText {
			return nil
		}
	}
}

func xlsxSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// xlsxValidName is a loose check of an XML name: not empty, and none of
// the characters no name may hold.
func xlsxValidName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch b[0] {
	case '-', '.', ':', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return false
	}
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n', '<', '>', '/', '=', '"', '\'', '&':
			return false
		}
	}
	return true
}

// xlsxLocal returns a name without its namespace prefix.
func xlsxLocal(name []byte) []byte {
	if i := bytes.IndexByte(name, ':'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// xlsxBstr decodes the _xHHHH_ escapes of an OOXML string (ECMA-376
// 22.9.2.19), as excelize does: a character XML cannot hold (a control
// character) is written _x0008_, and an underscore that would start such
// an escape is written _x005F_. An escape of a character no string may
// hold (a lone surrogate) is dropped.
func xlsxBstr(b []byte) []byte {
	i := bytes.Index(b, []byte("_x"))
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for {
		if i < 0 || i+7 > len(b) {
			return append(out, b...)
		}
		esc := b[i : i+7]
		v, err := strconv.ParseUint(string(esc[2:6]), 16, 32)
		if esc[6] != '_' || err != nil || !xlsxHex4(esc[2:6]) {
			out = append(out, b[:i+1]...)
			b = b[i+1:]
		} else {
			out = append(out, b[:i]...)
			if r := rune(v); utf8.ValidRune(r) {
				out = utf8.AppendRune(out, r)
			}
			b = b[i+7:]
		}
		i = bytes.Index(b, []byte("_x"))
	}
}

func xlsxHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
