package batch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// source is a file prepared for an import or a dry run. It is read twice:
// a first pass settles what no single cell can say (the order of day and
// month, the decimal separator of each number column, whether columns
// without a name hold anything, the widest row), and a second pass checks
// and stores the rows under those conventions. Deciding from the whole
// file is what lets 13/02/2025 in row 900 settle 01/02/2025 in row 2, and
// what keeps an import from guessing when nothing settles it.
//
// A seekable source (a file) is read in place; any other is spooled to a
// temporary file first, so memory stays flat. A workbook is parsed once:
// the first pass records its records, and the second replays them
// (replay.go).
type source struct {
	p        ImportParams
	k        rowReader
	rs       io.ReadSeeker
	start    int64
	cleanup  func()
	digest   string
	conv     rows.Conventions
	warnings []batchtype.Warning
	// width is the most cells any row has: an error report keeps the
	// cells of a row longer than the header.
	width int
	// rowCount is how many records the first pass read: what the key
	// filter is sized for.
	rowCount int64
	// examples are the rows that repeat the kind's example row, as a
	// template has it: never imported.
	examples map[int64]bool
	// track, for an import, counts the rows and bytes read.
	track *ingestTracker
	// replay, when set, is the first pass's records, which the second
	// pass reads instead of the file.
	replay *replay
}

// prepare reads the source once and settles its conventions. A file that
// must be rejected as a whole returns a *rows.FileError.
func prepare(ctx context.Context, k rowReader, p ImportParams) (*source, error) {
	return prepareTracked(ctx, k, p, nil)
}

// prepareTracked is prepare, with the bytes and rows read counted by
// track (nil: not counted).
func prepareTracked(ctx context.Context, k rowReader, p ImportParams, track *ingestTracker) (*source, error) {
	p.Conventions = k.conventions(p.Conventions)
	// The kind's own number format (a schema's x-decimal-comma) is the
	// file's too: a workbook's typed number cells are written in it.
	p.Read.Number = p.Conventions.Number
	s := &source{p: p, k: k, cleanup: func() {}, track: track}
	if err := s.seekable(); err != nil {
		return nil, err
	}
	if track != nil {
		if end, err := s.rs.Seek(0, io.SeekEnd); err == nil {
			track.size.Store(end - s.start)
		}
	}
	if err := s.profile(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// seekable makes s.rs the source's bytes, readable from the start again.
func (s *source) seekable() error {
	if rs, ok := s.p.Source.(io.ReadSeeker); ok {
		if pos, err := rs.Seek(0, io.SeekCurrent); err == nil {
			s.rs, s.start = rs, pos
			return nil
		}
	}
	f, err := os.CreateTemp(s.p.Read.TmpDir, "rowfate-import-*")
	if err != nil {
		return fmt.Errorf("import %s: spool: %w", s.p.SourceName, err)
	}
	s.cleanup = func() { f.Close(); os.Remove(f.Name()) }
	if _, err := io.Copy(f, s.p.Source); err != nil {
		s.cleanup()
		return fmt.Errorf("import %s: spool: %w", s.p.SourceName, err)
	}
	s.rs = f
	return nil
}

func (s *source) close() {
	if s.replay != nil {
		s.replay.close()
		s.replay = nil
	}
	s.cleanup()
}

// records reads r's records for an import, a dry run or a re-run, in
// file order, leaving out the rows that repeat the kind's example row (a
// template's). A read error, or ctx ending, is yielded once, last.
func (s *source) records(ctx context.Context, r rows.Reader) iter.Seq2[rows.Record, error] {
	return func(yield func(rows.Record, error) bool) {
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				yield(rows.Record{}, err)
				return
			}
			if s.examples[rec.Row] {
				continue
			}
			if !yield(rec, nil) {
				return
			}
		}
	}
}

// open returns a reader from the start of the source, with the header
// found by the kind's columns; tee, when set, sees every byte read.
func (s *source) open(tee io.Writer) (rows.Reader, error) {
	if s.replay != nil && tee == nil {
		if s.track != nil {
			s.track.bytes.Store(s.track.size.Load()) // read whole by the first pass
		}
		return s.replay.open(), nil
	}
	if _, err := s.rs.Seek(s.start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("import %s: rewind: %w", s.p.SourceName, err)
	}
	var src io.Reader = s.rs
	if s.track != nil {
		src = countingReader{r: src, n: &s.track.bytes}
	}
	if tee != nil {
		src = io.TeeReader(s.rs, tee)
	}
	p := s.p
	p.Read.HeaderFunc, p.Read.HeaderHint = s.headerFunc()
	return openReader(bufio.NewReader(src), p)
}

// headerFunc recognises the kind's header: a row whose cells map onto
// every required column (after the user's renames), so title and note
// rows above it are passed over.
func (s *source) headerFunc() (func([]string) bool, string) {
	required := s.k.info().Required
	f := func(cells []string) bool {
		_, err := s.k.mapHeader(cells, s.p.Conventions)
		return err == nil
	}
	return f, "the columns " + strings.Join(required, ", ")
}

// mapping maps the header of a reader under the settled conventions.
func (s *source) mapping(r rows.Reader) (*rows.Mapping, error) {
	m, err := s.k.mapHeader(r.Header(), s.conv)
	if err != nil {
		return nil, &rows.FileError{File: s.p.SourceName, Line: headerLine(r), Err: err}
	}
	return m, nil
}

// project has r, when it can, leave out the cells of the columns the kind
// does not read whenever a row's hold more than an import keeps of them
// (see keptCells): they are then not even copied. The cell past the
// header, where a template's example row has its marker, is read.
func project(r rows.Reader, m *rows.Mapping) {
	p, ok := r.(rows.Projector)
	if !ok {
		return
	}
	width := len(r.Header())
	p.Project(func(i int) bool { return m.Feeds(i) || i == width }, unreadCellsKept)
}

// transientReader is a reader that can hand out records that are views
// of its buffers, valid until the next (csvfile.Reader.Transient).
type transientReader interface {
	Transient()
}

// evidence is what the first pass learns from the values.
type evidence struct {
	// dayFirst and monthFirst are the first rows whose numeric date reads
	// only one way; 0 when none.
	dayFirst, monthFirst int64
	// commas counts, per number column, values only a decimal comma reads.
	commas map[int]int64
	// filled is, per column without a name, the first row with a value.
	filled map[int]int64
}

// profile is the first pass: it takes the digest, maps the header with the
// declared conventions, checks the whole-file rules and gathers the
// evidence the conventions are settled from.
func (s *source) profile(ctx context.Context) error {
	h := sha256.New()
	r, err := s.open(h)
	if err != nil {
		return err
	}
	defer r.Close()
	var rec *recorder
	if r.Info().Format == replayFormat {
		if rec, err = newRecorder(r, s.p.Read.TmpDir); err != nil {
			return fmt.Errorf("import %s: %w", s.p.SourceName, err)
		}
		defer func() {
			if s.replay == nil {
				rec.discard()
			}
		}()
		r = rec
	}
	s.conv = s.p.Conventions
	m, err := s.mapping(r)
	if err != nil {
		return err
	}
	project(r, m)
	if t, ok := r.(transientReader); ok {
		t.Transient() // the loop below keeps nothing of a record
	}
	if err := s.strict(r, m); err != nil {
		return err
	}
	if err := s.nearMisses(r, m); err != nil {
		return err
	}
	ev := evidence{commas: map[int]int64{}, filled: map[int]int64{}}
	example := s.k.example()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		s.width = max(s.width, len(rec.Values))
		s.rowCount++
		if s.track != nil {
			s.track.rows.Add(1)
		}
		if isExample(m, len(r.Header()), rec.Values, example) {
			if s.examples == nil {
				s.examples = map[int64]bool{}
			}
			s.examples[rec.Row] = true
			continue
		}
		if rec.Unreadable() {
			continue // its raw text is no evidence of any column's convention
		}
		ev.note(m, rec)
	}
	// Drain what the reader left unread (trailing bytes) so the digest
	// covers the whole source.
	if _, err := io.Copy(h, s.rs); err != nil {
		return fmt.Errorf("import %s: %w", s.p.SourceName, err)
	}
	s.digest = hex.EncodeToString(h.Sum(nil))
	if rec != nil {
		s.replay = rec.replay()
	}
	return s.settle(r, m, ev)
}

func (ev *evidence) note(m *rows.Mapping, rec rows.Record) {
	for i, v := range rec.Values {
		if v == "" {
			continue
		}
		if slices.Contains(m.Unnamed, i) {
			if _, seen := ev.filled[i]; !seen && strings.TrimSpace(v) != "" {
				ev.filled[i] = rec.Row
			}
			continue
		}
		switch m.ColumnKind(i) {
		case rows.KindNumber:
			if rows.NumberClueOf(v) == rows.ClueDecimalComma {
				ev.commas[i]++
			}
		case rows.KindDate:
			switch rows.DateClueOf(v) {
			case rows.DateClueDayFirst:
				if ev.dayFirst == 0 {
					ev.dayFirst = rec.Row
				}
			case rows.DateClueMonthFirst:
				if ev.monthFirst == 0 {
					ev.monthFirst = rec.Row
				}
			}
		}
	}
}

// settle decides the conventions the declaration left open, from the
// evidence, and says what it decided and what it found.
func (s *source) settle(r rows.Reader, m *rows.Mapping, ev evidence) error {
	header := r.Header()
	for _, i := range m.Unnamed {
		if row, ok := ev.filled[i]; ok {
			return &rows.FileError{File: s.p.SourceName, Line: headerLine(r),
				Err: fmt.Errorf("%w: column %d has no name, but row %d has a value in it: name the column, or delete it", rows.ErrBadHeader, i+1, row)}
		}
	}
	if n := len(m.Unnamed); n > 0 {
		s.warn("%d empty columns without a name were ignored", n)
	}
	if s.conv.DateOrder == rows.DateOrderUnknown {
		switch {
		case ev.dayFirst > 0 && ev.monthFirst > 0:
			s.warnHints([]rows.Hint{{Option: rows.OptionDateOrder, Values: []string{string(rows.DMY), string(rows.MDY)}}},
				"dates are written both day first (row %d) and month first (row %d); dates that read both ways are invalid: import with the date order dmy or mdy", ev.dayFirst, ev.monthFirst)
		case ev.dayFirst > 0:
			s.conv.DateOrder, s.conv.DateOrderRow = rows.DMY, ev.dayFirst
		case ev.monthFirst > 0:
			s.conv.DateOrder, s.conv.DateOrderRow = rows.MDY, ev.monthFirst
		}
	}
	if s.conv.Number.Decimal != ',' {
		for i, n := range ev.commas {
			s.conv.CommaColumns = append(s.conv.CommaColumns, strings.TrimSpace(header[i]))
			s.warnHints([]rows.Hint{{Option: rows.OptionDecimalComma}, {Option: rows.OptionLocale, Values: []string{"de", "fr"}}},
				"column %q has %d values written with a decimal comma: they are invalid; import with a decimal comma (or a locale that writes one) to read them", strings.TrimSpace(header[i]), n)
		}
		slices.Sort(s.conv.CommaColumns)
	}
	if len(m.Unknown) > 0 {
		s.warnings = append(s.warnings, unknownColumnsWarning(m.Unknown))
	}
	if n := len(s.examples); n > 0 {
		rowsList := make([]int64, 0, n)
		for row := range s.examples {
			rowsList = append(rowsList, row)
		}
		slices.Sort(rowsList)
		s.warn("row %d is the template's example row and was not imported", rowsList[0])
	}
	return nil
}

// strict rejects, when the import is strict, a file with a column the
// kind does not know or without one of its optional columns.
func (s *source) strict(r rows.Reader, m *rows.Mapping) error {
	if !s.p.Strict || (len(m.Unknown) == 0 && len(m.Missing) == 0) {
		return nil
	}
	var parts []string
	if len(m.Unknown) > 0 {
		parts = append(parts, "unknown columns "+joinQuoted(m.Unknown))
	}
	if len(m.Missing) > 0 {
		parts = append(parts, "missing optional columns "+joinQuoted(m.Missing))
	}
	msg := "strict import: " + strings.Join(parts, "; ")
	var hints []rows.Hint
	for _, sg := range m.Suggestions {
		msg += "; " + sg.String()
		hints = append(hints, sg.Hint())
	}
	return &rows.FileError{File: s.p.SourceName, Line: headerLine(r), Err: rows.WithHints(fmt.Errorf("%w: %s", rows.ErrBadHeader, msg), hints...)}
}

// nearMisses rejects a file with a column that looks like a column of the
// kind the file lacks ("Amount (EUR)" beside the others, amount missing):
// imported, its values would be dropped and the rows succeed without
// them. The user settles it either way: maps the column onto the kind's,
// or says to ignore it. A column to ignore must be one of the file's.
func (s *source) nearMisses(r rows.Reader, m *rows.Mapping) error {
	header := r.Header()
	for _, c := range s.conv.Ignore {
		if !slices.ContainsFunc(header, func(h string) bool { return rows.NormalizeHeader(h) == rows.NormalizeHeader(c) }) {
			return &rows.FileError{File: s.p.SourceName, Line: headerLine(r),
				Err: fmt.Errorf("%w: the column to ignore %q is not one of the file's (its columns: %s)", rows.ErrBadHeader, c, joinQuoted(header))}
		}
	}
	if len(m.Suggestions) == 0 {
		return nil
	}
	var (
		msgs  []string
		hints []rows.Hint
	)
	for _, sg := range m.Suggestions {
		msgs = append(msgs, fmt.Sprintf("column %q looks like the kind's column %q, which the file lacks", sg.Header, sg.Column))
		hints = append(hints, sg.Hints()...)
	}
	msg := strings.Join(msgs, "; ") + ": map it onto that column, or ignore it"
	return &rows.FileError{File: s.p.SourceName, Line: headerLine(r), Err: rows.WithHints(fmt.Errorf("%w: %s", rows.ErrBadHeader, msg), hints...)}
}

// unknownColumnsWarning is the warning of a header's unknown columns,
// which a re-run with another mapping replaces (rerunWarnings).
func unknownColumnsWarning(unknown []string) batchtype.Warning {
	return batchtype.Warning{Message: unknownColumnsPrefix + joinQuoted(unknown)}
}

const unknownColumnsPrefix = "unknown columns ignored: "

func (s *source) warn(format string, args ...any) {
	s.warnHints(nil, format, args...)
}

// warnHints warns with the options that would settle the warning.
func (s *source) warnHints(hints []rows.Hint, format string, args ...any) {
	s.warnings = append(s.warnings, batchtype.Warning{Message: fmt.Sprintf(format, args...), Hints: hints})
}

// isExample reports whether a row is a template's example row: it carries
// the template's marker just past the header's last column and repeats the
// kind's example row, cell for cell, in every column the file and the
// example share. Examples alone never drop a row: they document columns,
// and a file's real rows may match them.
func isExample(m *rows.Mapping, width int, values []string, example map[string]string) bool {
	if example == nil || len(values) != width+1 || strings.TrimSpace(values[width]) != rows.ExampleMarker {
		return false
	}
	matched := 0
	for _, mc := range m.Matched() {
		want, ok := example[mc.Column]
		if !ok {
			continue
		}
		i := m.Position(mc.Column)
		got := ""
		if i >= 0 && i < len(values) {
			got = strings.TrimSpace(values[i])
		}
		if got != want {
			return false
		}
		if want != "" {
			matched++
		}
	}
	return matched > 0
}
