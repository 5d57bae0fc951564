package xlsxfile

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rowfate/rowfate/rows"
)

// This file decides what a Reader reads: the sheet (pickSheet, or the
// search among sheets chooseSheet makes with Options.HeaderFunc) and the
// header row within it (readHeader), holding back the rows read while
// looking that turn out to be data.

// chooseSheet opens the sheet to read and reads its header. With no Sheet
// named, a HeaderFunc and several visible worksheets, that is the first
// sheet whose header HeaderFunc accepts: each is tried in tab order on the
// workbook already spooled, inspected and opened, with every guard of the
// sheet scanner in force, and one with no such header is closed again.
func (x *Reader) chooseSheet() error {
	var candidates []xlsxSheetInfo
	if strings.TrimSpace(x.o.Sheet) == "" && x.o.HeaderFunc != nil {
		for _, s := range x.pkg.sheets {
			if !s.Hidden && s.Part != "" {
				candidates = append(candidates, s)
			}
		}
	}
	if len(candidates) < 2 {
		// A named sheet, no rule, or nothing to choose between: the
		// default sheet, whose mapping says what its header lacks.
		s, err := x.pickSheet()
		if err != nil {
			return err
		}
		if err := x.openSheet(s); err != nil {
			return err
		}
		return x.readHeader(false)
	}
	names := make([]string, 0, len(candidates))
	for _, s := range candidates {
		if err := x.openSheet(s); err != nil {
			return err
		}
		err := x.readHeader(true)
		if !errors.Is(err, errXLSXNoMatch) {
			return err // nil: found
		}
		names = append(names, strconv.Quote(s.Name))
		if err := x.closeSheet(); err != nil {
			return err
		}
	}
	what := "the header looked for"
	if h := strings.TrimSpace(x.o.HeaderHint); h != "" {
		what = "a header with " + h
	}
	where := fmt.Sprintf("in its first %d rows", rows.HeaderScanRows)
	if x.o.HeaderRow > 0 {
		where = fmt.Sprintf("on row %d", x.o.HeaderRow)
	}
	return fmt.Errorf("no sheet has %s %s (sheets tried: %s); name the sheet to read to see what its header lacks",
		what, where, strings.Join(names, ", "))
}

// errXLSXNoMatch is readHeader's answer for a sheet whose header
// HeaderFunc does not accept, when the sheet is one of several tried.
var errXLSXNoMatch = errors.New("no header accepted")

// openSheet starts reading sheet s.
func (x *Reader) openSheet(s xlsxSheetInfo) error {
	x.sheet = s
	part := x.pkg.part(s.Part)
	if part == nil {
		return fmt.Errorf("the sheet %q has no data part (%s)", s.Name, s.Part)
	}
	var err error
	x.scan, err = newXLSXSheetScanner(part, x.pkg.sst)
	if err != nil {
		return fmt.Errorf("the sheet %q cannot be read: %v", s.Name, err)
	}
	return nil
}

// closeSheet ends the reading of a sheet passed over, so that the next
// starts from its first row.
func (x *Reader) closeSheet() error {
	var errs []error
	if x.scan != nil {
		errs = append(errs, x.scan.close())
		x.scan = nil
	}
	x.pending = nil
	return errors.Join(errs...)
}

// pickSheet resolves Options.Sheet.
func (x *Reader) pickSheet() (xlsxSheetInfo, error) {
	sheets := x.pkg.sheets
	want := strings.TrimSpace(x.o.Sheet)
	if want == "" {
		for _, s := range sheets {
			if !s.Hidden && s.Part != "" {
				return s, nil
			}
		}
		return xlsxSheetInfo{}, errors.New("the workbook has no visible worksheet")
	}
	for _, s := range sheets {
		if strings.EqualFold(s.Name, want) {
			if s.Part == "" {
				return s, fmt.Errorf("the sheet %q is not a worksheet (a chart?)", s.Name)
			}
			return s, nil
		}
	}
	if i, err := strconv.Atoi(want); err == nil && i >= 1 && i <= len(sheets) {
		s := sheets[i-1]
		if s.Part == "" {
			return s, fmt.Errorf("sheet %d (%q) is not a worksheet (a chart?)", i, s.Name)
		}
		return s, nil
	}
	names := make([]string, len(sheets))
	for i, s := range sheets {
		names[i] = strconv.Quote(s.Name)
	}
	return xlsxSheetInfo{}, fmt.Errorf("the workbook has no sheet %q; its sheets are %s", want, strings.Join(names, ", "))
}

// readHeader finds the header row and reads it. With require, a sheet
// whose header HeaderFunc does not accept is errXLSXNoMatch, and so is a
// sheet with no header at all: it is one of several tried.
func (x *Reader) readHeader(require bool) error {
	// Merged ranges are listed after the rows: reading them costs a pass
	// over the packed sheet without an XML parse, a small part of reading
	// the rows themselves. Only ranges near the top can touch the header.
	maxRow := x.o.HeaderRow
	if maxRow <= 0 {
		maxRow = 1000
	}
	merges, err := xlsxScanMerges(x.pkg.part(x.sheet.Part), maxRow, 100_000)
	if err != nil {
		return fmt.Errorf("sheet %q: reading merged cells: %v", x.sheet.Name, err)
	}
	row, err := x.findHeader(merges, require)
	if err != nil {
		return err
	}
	x.header = xlsxHeaderCells(row, merges, x.o.MaxColumns)
	x.hdrRow = row.n
	x.width = len(x.header)
	x.lastRow = row.n
	// Rows above the header are not data; they are not counted as skipped.
	return nil
}

// nextRow returns the next row as read: a row held back first, else the
// sheet's next, allowed up to limit columns.
func (x *Reader) nextRow(limit int) (*xlsxRow, error) {
	if len(x.pending) > 0 {
		r := x.pending[0]
		x.pending = x.pending[1:]
		if n := len(r.meta); n > 0 && r.meta[n-1].col > limit {
			// Read while the limit was the header scan's: the scanner's
			// check, made again at the width the header allows.
			return nil, x.tooWide(&errXLSXTooWide{row: r.n, col: r.meta[n-1].col})
		}
		return r, nil
	}
	return x.step(limit)
}

// headerLook is a row as the header search sees it, typed on a copy so
// that the row as read can still be held back and typed as data later.
type headerLook struct {
	raw   *xlsxRow
	typed *xlsxRow
	blank bool // no value and no row error: nothing Next would return
	empty bool // no value: not a header candidate
	lone  int  // index of the only non-blank cell; -1 when not one
}

// look types a copy of r and sees what the header search needs of it.
func (x *Reader) look(r *xlsxRow) headerLook {
	t := &xlsxRow{n: r.n, values: append([]string(nil), r.values...), meta: r.meta}
	errs := x.typed(t)
	l := headerLook{raw: r, typed: t, lone: -1}
	l.empty = xlsxBlank(t.values)
	l.blank = l.empty && len(errs) == 0
	if cells := xlsxNonBlank(t.values); len(cells) == 1 {
		l.lone = cells[0]
	}
	return l
}

// hold keeps the row l looked at, read while looking for the header, for
// Next. A blank row is kept as its number alone (no cells), and one that
// follows a blank row replaces it: Next counts a run of blank rows by its
// last row number, so a sheet of a million blank rows holds one. Any other
// row has cells, so the two never mix.
func hold(held []*xlsxRow, l headerLook) []*xlsxRow {
	if l.blank {
		r := &xlsxRow{n: l.raw.n}
		if n := len(held); n > 0 && len(held[n-1].meta) == 0 {
			held[n-1] = r
			return held
		}
		return append(held, r)
	}
	return append(held, l.raw)
}

// findHeader reads the sheet down to its header row and returns it typed:
// the row HeaderRow names; else the first HeaderFunc accepts among the
// first rows.HeaderScanRows non-empty rows; else, unless require, by the
// default rule (byRule) over the rows read and on.
func (x *Reader) findHeader(merges []xlsxMerge, require bool) (*xlsxRow, error) {
	if x.o.HeaderRow > 0 {
		row, err := x.headerAt(x.o.HeaderRow)
		switch {
		case !require:
			return row, err
		case err == nil && !x.o.HeaderFunc(x.headerOf(row, merges)), isNoHeader(err):
			return nil, errXLSXNoMatch
		}
		return row, err
	}
	if x.o.HeaderFunc != nil {
		var (
			held     []*xlsxRow
			titles   []string
			seen     int64
			nonEmpty int
		)
		for nonEmpty < rows.HeaderScanRows {
			r, err := x.nextRow(x.o.MaxColumns)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			seen++
			l := x.look(r)
			if !l.empty {
				nonEmpty++
				if x.o.HeaderFunc(x.headerOf(l.typed, merges)) {
					x.titles = titles // the rows held are above it
					return l.typed, nil
				}
				titles = append(titles, rows.TitleOf(l.typed.values))
			}
			held = hold(held, l)
		}
		if require {
			if err := x.noHeader(seen, nonEmpty > 0); seen == 0 && !isNoHeader(err) {
				return nil, err // a sheet that hides something is no empty one
			}
			return nil, errXLSXNoMatch
		}
		x.pending = append(held, x.pending...)
	}
	return x.byRule(merges)
}

// headerOf returns the header a typed row would make, for HeaderFunc, on
// a copy: xlsxHeaderCells names merged columns in place.
func (x *Reader) headerOf(typed *xlsxRow, merges []xlsxMerge) []string {
	c := &xlsxRow{n: typed.n, values: append([]string(nil), typed.values...)}
	return xlsxHeaderCells(c, merges, x.o.MaxColumns)
}

// xlsxNoHeaderError is the error of a sheet without the header row looked
// for (empty, only a title, no such row), as opposed to a damaged one:
// among several sheets tried, it only means "not this one".
type xlsxNoHeaderError struct{ err error }

func (e *xlsxNoHeaderError) Error() string { return e.err.Error() }

func noHeaderf(format string, args ...any) error {
	return &xlsxNoHeaderError{fmt.Errorf(format, args...)}
}

func isNoHeader(err error) bool {
	var nh *xlsxNoHeaderError
	return errors.As(err, &nh)
}

// headerAt reads down to row n, the header the caller named.
func (x *Reader) headerAt(n int64) (*xlsxRow, error) {
	var seen int64
	for {
		r, err := x.nextRow(x.o.MaxColumns)
		if errors.Is(err, io.EOF) {
			return nil, x.noHeader(seen, false)
		}
		if err != nil {
			return nil, err
		}
		seen++
		if r.n < n {
			continue
		}
		l := x.look(r)
		if r.n > n || l.empty {
			return nil, noHeaderf("sheet %q: the header row %d is empty", x.sheet.Name, n)
		}
		return l.typed, nil
	}
}

// byRule finds the header by the default rule: the first non-empty row
// that is not a title. A lone cell merged across columns is a title; so is
// a lone cell followed, within rows.HeaderScanRows non-empty rows, by a row
// of two cells or more, the header then, with any lone cells between also
// titles. When no wider row comes, the first lone cell is the header (a
// sheet of one column) and the rows read after it are held for Next.
func (x *Reader) byRule(merges []xlsxMerge) (*xlsxRow, error) {
	var (
		seen     int64
		nonEmpty bool
		held     []*xlsxRow // from the first unmerged lone cell on
		first    *xlsxRow   // that cell's row, typed
		lookedAt int        // non-empty rows since it, itself included
	)
	for first == nil || lookedAt < rows.HeaderScanRows {
		r, err := x.nextRow(x.o.MaxColumns)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		seen++
		l := x.look(r)
		if first != nil {
			held = hold(held, l)
		}
		if l.empty {
			continue
		}
		nonEmpty = true
		if first != nil {
			lookedAt++
		}
		if l.lone < 0 {
			return l.typed, nil // two cells or more: the header
		}
		if first == nil && !xlsxMergedAcross(merges, r.n, l.lone+1) {
			first, lookedAt = l.typed, 1
		}
	}
	if first != nil {
		x.pending = append(held, x.pending...)
		return first, nil
	}
	return nil, x.noHeader(seen, nonEmpty)
}

// noHeader explains why a sheet that ended after seen rows has no header
// row.
func (x *Reader) noHeader(seen int64, nonEmpty bool) error {
	switch {
	case x.o.HeaderRow > 0:
		return noHeaderf("sheet %q has no row %d", x.sheet.Name, x.o.HeaderRow)
	case nonEmpty:
		return noHeaderf("sheet %q has only a title, no header row", x.sheet.Name)
	case seen > 0:
		return noHeaderf("no header row: every row of sheet %q is empty", x.sheet.Name)
	}
	part := x.pkg.part(x.sheet.Part)
	if part.UncompressedSize64 > 64<<10 {
		// Not an empty sheet but one that hides something: an error even
		// among sheets tried.
		return fmt.Errorf("sheet %q yields no rows from %d bytes of XML (damaged, or not written by a spreadsheet program)",
			x.sheet.Name, part.UncompressedSize64)
	}
	return noHeaderf("no header row: sheet %q is empty", x.sheet.Name)
}

// xlsxHeaderCells returns the header that row spells: without trailing
// empty columns, except those a merged last cell covers, and with the
// columns a merged cell covers named after it.
func xlsxHeaderCells(row *xlsxRow, merges []xlsxMerge, maxColumns int) []string {
	header := row.values
	for len(header) > 0 && strings.TrimSpace(header[len(header)-1]) == "" {
		header = header[:len(header)-1]
	}
	for _, mg := range merges {
		// A last header cell merged across empty columns covers them.
		if mg.row1 == row.n && mg.col1 <= len(header) && mg.col2 > len(header) && mg.col2 <= maxColumns {
			header = append(header, make([]string, mg.col2-len(header))...)
		}
	}
	// A header cell merged across columns names the first; the columns it
	// covers are named after it ("Address (2)", ...) so that they are
	// columns the kind does not know, rather than nameless ones.
	for i := range header {
		if strings.TrimSpace(header[i]) != "" {
			continue
		}
		for _, mg := range merges {
			if mg.row1 <= row.n && row.n <= mg.row2 && mg.col1 <= i+1 && i+1 <= mg.col2 && mg.col1 < i+1 {
				if first := strings.TrimSpace(header[mg.col1-1]); first != "" && mg.row1 == row.n {
					header[i] = fmt.Sprintf("%s (%d)", first, i+2-mg.col1)
				}
			}
		}
	}
	return header
}

func xlsxNonBlank(values []string) []int {
	var out []int
	for i, v := range values {
		if strings.TrimSpace(v) != "" {
			out = append(out, i)
		}
	}
	return out
}

func xlsxMergedAcross(merges []xlsxMerge, row int64, col int) bool {
	for _, m := range merges {
		if m.row1 == row && m.col1 == col && m.col2 > m.col1 {
			return true
		}
	}
	return false
}
