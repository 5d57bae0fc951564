package rows

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Mapping is a header matched against a Binder under a file's
// Conventions: which cell feeds which field, and how each column writes
// its values.
type Mapping struct {
	b *Binder
	// cell[i] is the field index for header cell i, or -1 when unknown.
	cell []int
	// conv[i] is how column i writes its values.
	conv []cellConv
	// header as the file spells it, used to name columns in errors.
	header []string
	// Unknown lists header cells that match no field; they are ignored.
	Unknown []string
	// Missing lists declared columns absent from the header.
	Missing []string
	// Unnamed lists the 0-based positions of header cells with no name.
	// Whether such a column may be ignored depends on its values, which
	// the caller sees and Map does not.
	Unnamed []int
	// Suggestions pair unknown header cells with missing columns they
	// look like ("Amount (EUR)" and amount); a cell the conventions
	// ignore (Conventions.Ignore) is in Unknown, but has none.
	Suggestions []Suggestion
}

// Suggestion is an unknown header cell that looks like a missing column.
type Suggestion struct {
	Header string `json:"header"` // as the file spells it
	Column string `json:"column"` // as the kind declares it
}

// String says what to do about it.
func (s Suggestion) String() string {
	return fmt.Sprintf("%q looks like %q: map it onto that column", s.Header, s.Column)
}

// Hint is the mapping that would settle it.
func (s Suggestion) Hint() Hint {
	return Hint{Option: OptionMap, Values: []string{s.Header + "=" + s.Column}}
}

// Hints are the options that settle it, either of which will: map the
// column onto the kind's, or ignore it.
func (s Suggestion) Hints() []Hint {
	return []Hint{s.Hint(), {Option: OptionIgnore, Values: []string{s.Header}}}
}

// ErrBadHeader is wrapped by every header problem returned by Map.
var ErrBadHeader = errors.New("bad header")

// Map matches a header row against the binder's columns with the default
// conventions. A duplicate header cell is an error wrapping ErrBadHeader.
func (b *Binder) Map(header []string) (*Mapping, error) {
	return b.MapFile(header, Conventions{})
}

// MapFile matches a header row against the binder's columns under a
// file's conventions: its renames (--map) apply first, and its number
// format and date order go with every column. A duplicate header cell, or
// a rename naming a column the file or the kind does not have, is an error
// wrapping ErrBadHeader.
func (b *Binder) MapFile(header []string, conv Conventions) (*Mapping, error) {
	m := &Mapping{b: b, cell: make([]int, len(header)), conv: make([]cellConv, len(header)), header: header}
	renames, err := b.renames(header, conv.Renames)
	if err != nil {
		return nil, err
	}
	used := make([]bool, len(b.fields))
	byKey := map[string]int{}
	seen := map[string]int{}
	for i, h := range header {
		m.cell[i] = -1
		m.conv[i] = cellConv{number: conv.Number, order: conv.DateOrder, date: conv.DateFormat}
		k := NormalizeHeader(h)
		if k == "" {
			// A column without a name is the kind's only when the kind
			// names its position ("#13"), as a drafted schema does.
			if k = "#" + strconv.Itoa(i+1); b.fieldOf(k) < 0 {
				m.Unnamed = append(m.Unnamed, i)
				continue
			}
		}
		seen[k]++
		if n := seen[k]; n > 1 {
			// The second column of a name is the kind's column aliased
			// "Name#2": the kind says which is which, nothing is guessed.
			if nth := k + "#" + strconv.Itoa(n); b.fieldOf(nth) >= 0 {
				k = nth
			} else {
				return nil, fmt.Errorf("%w: columns %d and %d are both named %q (a kind may name the second one %q in its aliases)",
					ErrBadHeader, byKey[k]+1, i+1, strings.TrimSpace(h), strings.TrimSpace(h)+"#"+strconv.Itoa(n))
			}
		}
		byKey[k] = i
		fi, ok := renames[i]
		if !ok {
			fi = b.fieldOf(k)
		}
		if fi >= 0 {
			if used[fi] {
				return nil, fmt.Errorf("%w: column %q and another column both map to %s", ErrBadHeader, strings.TrimSpace(h), b.fields[fi].column)
			}
			used[fi] = true
			m.cell[i] = fi
			m.conv[i].commas = slices.ContainsFunc(conv.CommaColumns, func(c string) bool { return NormalizeHeader(c) == k })
			if m.conv[i].order == DateOrderUnknown {
				m.conv[i].order = b.fields[fi].opts.order
			}
			continue
		}
		m.Unknown = append(m.Unknown, strings.TrimSpace(h))
	}
	for fi, f := range b.fields {
		if !used[fi] {
			m.Missing = append(m.Missing, f.column)
		}
	}
	m.Suggestions = b.suggest(m.Unknown, used)
	m.Suggestions = slices.DeleteFunc(m.Suggestions, func(s Suggestion) bool {
		return slices.ContainsFunc(conv.Ignore, func(c string) bool { return NormalizeHeader(c) == NormalizeHeader(s.Header) })
	})
	return m, nil
}

// fieldOf returns the field a normalised header key names, or -1.
func (b *Binder) fieldOf(key string) int {
	for fi, f := range b.fields {
		if slices.Contains(f.keys, key) {
			return fi
		}
	}
	return -1
}

// renames resolves --map pairs to header positions and fields.
func (b *Binder) renames(header []string, rs []Rename) (map[int]int, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	out := map[int]int{}
	for _, r := range rs {
		pos := slices.IndexFunc(header, func(h string) bool { return NormalizeHeader(h) == NormalizeHeader(r.From) })
		if pos < 0 {
			return nil, fmt.Errorf("%w: the mapping %q: the file has no column %q (its columns: %s)", ErrBadHeader, r.From+"="+r.To, r.From, quoteJoin(header))
		}
		fi := b.fieldOf(NormalizeHeader(r.To))
		if fi < 0 {
			cols := make([]string, len(b.fields))
			for i, f := range b.fields {
				cols[i] = f.column
			}
			return nil, fmt.Errorf("%w: the mapping %q: the kind has no column %q (its columns: %s)", ErrBadHeader, r.From+"="+r.To, r.To, quoteJoin(cols))
		}
		out[pos] = fi
	}
	return out, nil
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(strings.TrimSpace(s))
	}
	return strings.Join(q, ", ")
}

// suggest pairs unknown header cells with unused columns whose names they
// nearly spell: the same letters and digits once case, punctuation and a
// bracketed or short unit suffix are set aside ("Amount (EUR)", "amount
// eur" and "amount"), or within an edit or two of each other ("adress",
// "countyr"), or the column's name as a word of a header of two or three
// words ("Total amount"). Each cell gets the nearest column, if any is
// near.
func (b *Binder) suggest(unknown []string, used []bool) []Suggestion {
	var out []Suggestion
	for _, h := range unknown {
		lh, words := looseName(h), looseWords(h)
		best, bestScore := -1, 100
		for fi, f := range b.fields {
			if used[fi] {
				continue
			}
			for _, name := range append([]string{f.column}, f.keys...) {
				ln := looseName(name)
				if score, ok := nearName(lh, ln); ok && score < bestScore {
					best, bestScore = fi, score
				}
				if len(ln) >= 4 && len(words) <= 3 && slices.Contains(words, ln) && bestScore > 4 {
					best, bestScore = fi, 4
				}
			}
		}
		if best >= 0 {
			out = append(out, Suggestion{Header: strings.TrimSpace(h), Column: b.fields[best].column})
		}
	}
	return out
}

// looseName keeps the lower-case letters and digits of a name, without a
// bracketed part: "Amount (EUR)" is "amount".
func looseName(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range strings.ToLower(norm.NFC.String(s)) {
		switch {
		case r == '(' || r == '[':
			depth++
		case (r == ')' || r == ']') && depth > 0:
			depth--
		case depth > 0:
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// looseWords are the words of a name as looseName keeps them: "Total
// amount (EUR)" is total, amount.
func looseWords(s string) []string {
	var bracket bool
	words := strings.FieldsFunc(strings.ToLower(norm.NFC.String(s)), func(r rune) bool {
		switch {
		case r == '(' || r == '[':
			bracket = true
		case r == ')' || r == ']':
			bracket = false
			return true
		}
		return bracket || !(unicode.IsLetter(r) || unicode.IsDigit(r))
	})
	return words
}

// nearName reports whether a header's loose name a is near a column's b,
// and how near (lower is nearer): equal (0), within one edit (two for
// names of eight letters or more; a swap of neighbours is one), or b plus a
// unit of up to three letters ("amounteur", "weightkg": 3).
func nearName(a, b string) (int, bool) {
	switch {
	case a == "" || b == "":
		return 0, false
	case a == b:
		return 0, true
	case len(b) < 4:
		return 0, false
	}
	limit := 1
	if min(len(a), len(b)) >= 8 {
		limit = 2
	}
	if d := editDistance(a, b); d <= limit {
		return d, true
	}
	if strings.HasPrefix(a, b) && len(a)-len(b) <= 3 {
		return 3, true
	}
	return 0, false
}

// editDistance is the optimal string alignment distance of two short
// strings: insertions, deletions, substitutions and swaps of neighbours
// each count one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// ColumnName returns the column for a Go field name as the file spells it,
// falling back to the declared name when the file lacks the column.
func (m *Mapping) ColumnName(field string) string {
	for i, fi := range m.cell {
		if fi >= 0 && m.b.fields[fi].name == field {
			return strings.TrimSpace(m.header[i])
		}
	}
	c, _ := m.b.ColumnOf(field)
	return c
}

// Position returns the header position of the cell that feeds a column
// (named as the kind declares it), or -1 when the file lacks it.
func (m *Mapping) Position(column string) int {
	for i, fi := range m.cell {
		if fi >= 0 && m.b.fields[fi].column == column {
			return i
		}
	}
	return -1
}

// ColumnKind returns what header cell i feeds: a number, a date, or text
// (also for an unknown column).
func (m *Mapping) ColumnKind(i int) string {
	if i >= len(m.cell) || m.cell[i] < 0 {
		return KindText
	}
	return m.b.fields[m.cell[i]].kind
}

// MappedColumn is one header cell that feeds a field.
type MappedColumn struct {
	Header string `json:"header"` // as the file spells it, trimmed
	Column string `json:"column"` // as the kind declares it
	Field  string `json:"field"`  // Go field name
}

// Feeds reports whether header cell i (0-based) feeds a field: whether
// the kind reads that column. A cell past the header feeds none.
func (m *Mapping) Feeds(i int) bool { return i >= 0 && i < len(m.cell) && m.cell[i] >= 0 }

// Matched lists the header cells that feed a field, in header order.
func (m *Mapping) Matched() []MappedColumn {
	var out []MappedColumn
	for i, fi := range m.cell {
		if fi >= 0 {
			f := &m.b.fields[fi]
			out = append(out, MappedColumn{Header: strings.TrimSpace(m.header[i]), Column: f.column, Field: f.name})
		}
	}
	return out
}
