package csvfile

import (
	"bufio"
	"bytes"
)

// quoting is what reading the start of a file with one way of quoting
// gives.
type quoting struct {
	records, fits, bad int
	// used reports that a quoted cell held the delimiter, a quote or a
	// line end: the quoting was needed to read it.
	used bool
}

// scanQuoting reads the start of a file (whole records only) with a quote
// and an escape character.
func scanQuoting(head []byte, delim []byte, term, quote, escape byte) quoting {
	sp := &splitter{br: bufio.NewReaderSize(bytes.NewReader(head), len(head)+16), delim: delim, quote: quote, escape: escape, term: term, max: len(head) + 1, track: true}
	var q quoting
	for q.records < sniffLines*5 {
		r, err := sp.next()
		if err != nil {
			break
		}
		if len(r.cells) == 1 && r.cells[0] == "" && r.bad == "" {
			continue // a blank line
		}
		q.records++
		switch {
		case r.bad != "":
			q.bad++
			continue
		case sp.width == 0:
			sp.width = len(r.cells)
		}
		if len(r.cells) == sp.width {
			q.fits++
		}
	}
	q.used = sp.needed
	return q
}

// detectQuoting decides, when the file leaves no doubt, that it quotes
// with an apostrophe or escapes quotes with a backslash; else it returns
// the RFC 4180 way (", doubled). head is the start of the file; atEOF
// says whether it is all of it.
//
//   - An apostrophe quotes when, read with apostrophes, apostrophes were
//     needed to read some cell, nine records in ten or more have the
//     header's width, more than read with double quotes, and no more lines
//     are unreadable.
//   - A backslash escapes when the start holds \" and, read with the
//     escape, fewer lines are unreadable than read the RFC 4180 way, no
//     fewer records have the header's width, and nine in ten or more do.
//
// A polluted line or two does not hide the file's way; a file that reads
// about as well either way keeps RFC 4180's.
func detectQuoting(head []byte, atEOF bool, delim []byte, term byte) (quote, escape byte) {
	if !atEOF {
		i := bytes.LastIndexByte(head, term)
		if i < 0 {
			return '"', 0
		}
		head = head[:i+1]
	}
	if bytes.IndexByte(head, '\'') >= 0 {
		a := scanQuoting(head, delim, term, '\'', 0)
		if a.used && a.mostlyFits() {
			if d := scanQuoting(head, delim, term, '"', 0); a.fits > d.fits && a.bad <= d.bad {
				return '\'', 0
			}
		}
	}
	if bytes.Contains(head, []byte(`\"`)) {
		d := scanQuoting(head, delim, term, '"', 0)
		e := scanQuoting(head, delim, term, '"', '\\')
		if e.bad < d.bad && e.fits >= d.fits && e.mostlyFits() {
			return '"', '\\'
		}
	}
	return '"', 0
}

// mostlyFits reports whether nine records in ten or more, and more than
// the header alone, read with the header's width.
func (q quoting) mostlyFits() bool {
	return q.fits > 1 && q.fits*10 >= q.records*9
}
