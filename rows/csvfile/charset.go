package csvfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// The encodings a Reader reads, as Options.Encoding names them and as
// Reader.Encoding reports them.
const (
	EncodingUTF8        = "utf-8"
	EncodingUTF16LE     = "utf-16le"
	EncodingUTF16BE     = "utf-16be"
	EncodingWindows1252 = "windows-1252"
)

// sniffBytes is how much of the start of a file decides its encoding and
// its delimiter. 64 KiB is hundreds of rows of a typical file, and a
// bounded prefix keeps the decision (and its memory) independent of the
// file's size.
const sniffBytes = 64 << 10

// CanonicalEncoding maps the names users type to the encodings above, ""
// to "" (detect). "utf-16" means: decided by the byte order mark,
// little-endian without one (what Windows writes).
func CanonicalEncoding(name string) (string, error) {
	switch strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "_", "-")) {
	case "":
		return "", nil
	case "utf-8", "utf8":
		return EncodingUTF8, nil
	case "utf-16", "utf16":
		return "utf-16", nil
	case "utf-16le", "utf16le":
		return EncodingUTF16LE, nil
	case "utf-16be", "utf16be":
		return EncodingUTF16BE, nil
	case "windows-1252", "cp1252", "win1252", "latin1", "latin-1", "iso-8859-1":
		// Every ISO-8859-1 byte a real file holds decodes the same under
		// Windows-1252 except 0x80-0x9F, which are control characters in
		// ISO-8859-1 and nobody means them: read both as Windows-1252, as
		// browsers do.
		return EncodingWindows1252, nil
	}
	return "", fmt.Errorf("unknown encoding %q (want utf-8, utf-16, utf-16le, utf-16be or windows-1252)", name)
}

// decodeSource decides the encoding of src and returns a reader of its text
// as UTF-8, with any byte order mark removed.
//
// The rule: a byte order mark wins (UTF-8, UTF-16 LE, UTF-16 BE) over
// detection and over a declared UTF-8 or UTF-16; a declared Windows-1252
// is used as declared. Otherwise a declared encoding is used as declared. Otherwise the first 64 KiB
// decide: valid UTF-8 is UTF-8; invalid UTF-8 that decodes cleanly as
// Windows-1252 (no byte 1252 leaves undefined, no NUL or other control
// character but tab, CR and LF) is Windows-1252 for the whole file;
// anything else is read as UTF-8 and its bad bytes become bad_encoding row
// errors. Invalid UTF-8 after the first 64 KiB of a file detected as UTF-8
// is a row error too: the decision is never revisited.
func decodeSource(src io.Reader, declared string) (io.Reader, string, error) {
	enc, err := CanonicalEncoding(declared)
	if err != nil {
		return nil, "", err
	}
	br := bufio.NewReaderSize(src, sniffBytes)
	head, _ := br.Peek(sniffBytes) // a short read means a short file; errors resurface on Read
	switch {
	case bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}) && enc != EncodingWindows1252:
		_, _ = br.Discard(3)
		return br, EncodingUTF8, nil
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}) && enc != EncodingWindows1252:
		return utf16Reader(br, unicode.LittleEndian), EncodingUTF16LE, nil
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}) && enc != EncodingWindows1252:
		return utf16Reader(br, unicode.BigEndian), EncodingUTF16BE, nil
	}
	switch enc {
	case EncodingUTF8:
		return br, EncodingUTF8, nil
	case "utf-16", EncodingUTF16LE:
		return utf16Reader(br, unicode.LittleEndian), EncodingUTF16LE, nil
	case EncodingUTF16BE:
		return utf16Reader(br, unicode.BigEndian), EncodingUTF16BE, nil
	case EncodingWindows1252:
		return transform.NewReader(br, charmap.Windows1252.NewDecoder()), EncodingWindows1252, nil
	}
	if len(head) == sniffBytes {
		head = trimPartialRune(head)
	}
	if !utf8.Valid(head) && cleanWindows1252(head) {
		return transform.NewReader(br, charmap.Windows1252.NewDecoder()), EncodingWindows1252, nil
	}
	return br, EncodingUTF8, nil
}

func utf16Reader(r io.Reader, order unicode.Endianness) io.Reader {
	// IgnoreBOM keeps a leading BOM in the output, ExpectBOM fails without
	// one; UseBOM strips one when present and falls back to order.
	return transform.NewReader(r, unicode.UTF16(order, unicode.UseBOM).NewDecoder())
}

// trimPartialRune drops an incomplete UTF-8 sequence that a prefix cut in
// the middle of, so that the cut does not look like invalid UTF-8.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return b // ASCII: nothing cut
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// cleanWindows1252 reports whether b reads as Windows-1252 text: none of the
// five bytes the code page leaves undefined, and no control character but
// tab, CR and LF. Binary data (images, spreadsheets under the wrong name)
// fails this, and is left to be rejected as not text.
func cleanWindows1252(b []byte) bool {
	for _, c := range b {
		switch {
		case c == '\t' || c == '\r' || c == '\n':
		case c < 0x20 || c == 0x7F:
			return false
		case c == 0x81 || c == 0x8D || c == 0x8F || c == 0x90 || c == 0x9D:
			return false
		}
	}
	return true
}
