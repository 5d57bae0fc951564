package csvfile

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"unicode/utf8"

	"github.com/rowfate/rowfate/rows"
)

// Delimiters are the field delimiters SniffDelimiter chooses among, in the
// order that breaks ties.
var Delimiters = []rune{',', ';', '\t', '|'}

// sniffLines is how many non-blank lines of the prefix the sniffer weighs.
const sniffLines = 20

// SniffDelimiter guesses the field delimiter of CSV text from its start
// (UTF-8, at most a few KiB are needed). It counts each candidate of
// Delimiters outside quotes on each of the first non-blank lines; a
// candidate must occur in the first line (the header), and the one whose
// count is the same as the header's on the most lines wins, ties going to
// the earlier candidate. Without any candidate in the header (a file of one
// column) it returns ','.
//
// atEOF says whether text is the whole file; when it is not, the last,
// possibly cut, line is ignored.
func SniffDelimiter(text []byte, atEOF bool) rune {
	lines := splitRecords(text, atEOF, sniffLines)
	if len(lines) == 0 {
		return ','
	}
	best, bestScore := ',', 0
	for _, d := range Delimiters {
		head := countOutsideQuotes(lines[0], byte(d))
		if head == 0 {
			continue
		}
		score := 0
		for _, l := range lines {
			if countOutsideQuotes(l, byte(d)) == head {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = d, score
		}
	}
	return best
}

// splitRecords splits text into at most max non-blank records at line ends
// outside quotes.
func splitRecords(text []byte, atEOF bool, max int) [][]byte {
	var (
		out     [][]byte
		start   int
		inQuote bool
	)
	for i := 0; i < len(text) && len(out) < max; i++ {
		switch text[i] {
		case '"':
			inQuote = !inQuote
		case '\n':
			if !inQuote {
				if l := bytes.TrimSpace(text[start:i]); len(l) > 0 {
					out = append(out, l)
				}
				start = i + 1
			}
		}
	}
	if atEOF && len(out) < max && start < len(text) {
		if l := bytes.TrimSpace(text[start:]); len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

func countOutsideQuotes(line []byte, d byte) int {
	n, inQuote := 0, false
	for _, c := range line {
		switch {
		case c == '"':
			inQuote = !inQuote
		case c == d && !inQuote:
			n++
		}
	}
	return n
}

// ParseDelimiter reads a delimiter as users type it on a command line: one
// character, or a name (comma, semicolon, tab, pipe, \t). "" is 0: sniff.
func ParseDelimiter(s string) (rune, error) {
	switch s {
	case "":
		return 0, nil
	case "comma":
		return ',', nil
	case "semicolon":
		return ';', nil
	case "tab", `\t`:
		return '\t', nil
	case "pipe":
		return '|', nil
	}
	r, size := utf8.DecodeRuneInString(s)
	if size != len(s) || !validDelim(r) {
		return 0, fmt.Errorf("bad delimiter %q: want one character such as , ; | or tab", s)
	}
	return r, nil
}

func validDelim(r rune) bool {
	return r != 0 && r != '"' && r != '\r' && r != '\n' && r != utf8.RuneError
}

// DelimiterName names a delimiter for people: "," or "tab".
func DelimiterName(r rune) string {
	if r == '\t' {
		return "tab"
	}
	return string(r)
}

// sepLine reads the "sep=;" line Excel writes as the first line of a CSV
// file to name its delimiter (and reads as such when it opens the file).
// text is the start of the file, decoded, without its byte order mark;
// atEOF says whether it is the whole file. ok reports whether the first
// line is "sep=" (in any case) and one character. A character that cannot
// be a delimiter (a quote) is an error rather than a header named
// "sep=\"": the file says what it means and it cannot be honoured, and
// the line cannot be read past either (its quote never closes), whatever
// delimiter is declared.
func sepLine(text []byte, atEOF bool) (d rune, ok bool, err error) {
	const prefix = "sep="
	if len(text) < len(prefix) || !bytes.EqualFold(text[:len(prefix)], []byte(prefix)) {
		return 0, false, nil
	}
	rest := text[len(prefix):]
	line := rest
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		line = rest[:i]
	} else if !atEOF {
		return 0, false, nil // a line longer than the prefix read: not one
	}
	line = bytes.TrimSuffix(line, []byte{'\r'})
	r, size := utf8.DecodeRune(line)
	if size == 0 || size != len(line) {
		return 0, false, nil // "sep=" alone or "sep=ab": not Excel's line
	}
	if !validDelim(r) {
		return 0, true, fmt.Errorf("the first line %q names %q as the delimiter, which cannot be one: remove the line", "sep="+string(line), r)
	}
	return r, true, nil
}

// sniffWithHeader is SniffDelimiter for a file whose header the caller
// recognises with accept. Title rows above a header make SniffDelimiter
// read a title as the header ("Customer list" has no delimiter, so a
// semicolon file reads as comma-separated); so when the sniffed delimiter
// splits none of the first rows.HeaderScanRows records of text into a
// header accept recognises, and exactly one other candidate does, that
// one is the delimiter. In every other case (the sniffed one works, or
// none does, or several do) the sniffed one stays.
func sniffWithHeader(text []byte, atEOF bool, accept func([]string) bool) rune {
	sniffed := SniffDelimiter(text, atEOF)
	lines := splitRecords(text, atEOF, rows.HeaderScanRows)
	finds := func(d rune) bool {
		for _, l := range lines {
			r := csv.NewReader(bytes.NewReader(l))
			r.Comma = d
			r.FieldsPerRecord = -1
			if rec, err := r.Read(); err == nil && accept(rec) {
				return true
			}
		}
		return false
	}
	if finds(sniffed) {
		return sniffed
	}
	found := rune(0)
	for _, d := range Delimiters {
		if d == sniffed || !finds(d) {
			continue
		}
		if found != 0 {
			return sniffed
		}
		found = d
	}
	if found != 0 {
		return found
	}
	return sniffed
}
