package rows

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// DefaultTimeLayouts are tried, in order, for a time.Time field without a
// `layout` tag.
var DefaultTimeLayouts = []string{"2006-01-02", time.RFC3339, "2006-01-02 15:04:05"}

// Binder binds records to fields of one struct type. Only fields with a
// `col:"name"` tag can be bound, so a header can never reach an internal
// field. Build one per type with NewBinder and reuse it.
//
// Tag syntax:
//
//   - `col:"email,alias=E-mail|mail"`: the column and its aliases.
//   - `layout:"2006-01-02|02/01/2006"` (time.Time): the layouts tried in
//     order; DefaultTimeLayouts without one.
//   - `excel:"1904"` (time.Time): a plain number that no layout parses is
//     an Excel serial date (ExcelSerialTime, as the XLSX reader converts
//     date cells); the 1900 date system (Windows Excel, whose phantom
//     1900-02-29 is a bad_date) is the default, "1904" selects the old Mac
//     system, "off" refuses serial numbers.
//   - `bool:"ja|oui,nein|non"` (bool): more words for true, then after the
//     comma for false, on top of true/false/yes/no/y/n/1/0.
//   - `dateorder:"dmy"` (time.Time): the order of day and month in numeric
//     dates when the file neither declares it (Conventions.DateOrder) nor
//     settles it by a value only one order reads (13/02/2025).
//   - `col:"country,upper"` (text): upper-case (or `lower`) the cell before
//     it is checked and stored.
//
// Dates: a cell no layout reads is tried as a numeric date in the file's
// day/month order (31/12/2025, 12/31/2025, 31.12.2025, 2025/12/31), with an
// English month name (31-Dec-2025, Dec 31, 2025), and as an Excel serial
// in the range Excel's own dates use (a six-digit number such as 250131 is
// a compact date or a mistake, never the year 2584). A numeric date that
// reads two ways and nothing settles is a bad_date error, never a guess.
//
// Numbers (ints, floats, Decimal) are read in the file's NumberFormat;
// the default is a decimal point and no thousands separators, and a value
// in another convention is not_a_number with the option that reads it.
//
// An Optional field is Set only when the file has its column and the cell
// is not empty: a file that leaves a column out changes nothing of it.
//
// Field types: strings, ints, uints, floats, Decimal (exact), bool,
// time.Time, a string type with an Enum() []string method (its allowed
// values, matched case-insensitively and stored as declared), any
// encoding.TextUnmarshaler, and pointers to these (nil when the cell is
// empty).
type Binder struct {
	typ    reflect.Type
	fields []boundField
}

type boundField struct {
	index   []int
	name    string   // Go field name
	kind    string   // KindText, KindNumber or KindDate
	column  string   // canonical column name from the tag
	keys    []string // normalised names that match: column and aliases
	opts    fieldOpts
	convert convertFunc
	// optional is set for an Optional field: what the file does not give
	// is left unset rather than zero.
	optional bool
}

// convertFunc parses a trimmed cell into v under a column's conventions.
type convertFunc func(s string, v reflect.Value, cc *cellConv) error

// cellConv is how one column of one file writes its values.
type cellConv struct {
	number NumberFormat
	order  DateOrder
	// commas: other values of this column have decimal commas although
	// the file's format has a decimal point.
	commas bool
}

// fieldOpts are the per-field binding options read from tags.
type fieldOpts struct {
	layouts   []string
	excel     excelSystem
	trueWords []string // lower-case
	falseWord []string
	// order is the kind's declared day/month order (dateorder tag), used
	// when the file neither declares nor settles one.
	order DateOrder
	// upper and lower change a text cell's case before it is checked:
	// "de" is a country code whose only fault is its case.
	upper, lower bool
}

type excelSystem int

const (
	excel1900 excelSystem = iota
	excel1904
	excelOff
)

// NewBinder inspects typ, a struct type or a pointer to one, once: the
// fields with a col tag, their tags and how each parses a cell. Tag errors
// (an unknown excel system, colliding column names, an unsupported field
// type) are reported here rather than on the first row.
func NewBinder(typ reflect.Type) (*Binder, error) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("bind: %s is not a struct", typ)
	}
	b := &Binder{typ: typ}
	seen := map[string]string{}
	for _, sf := range reflect.VisibleFields(typ) {
		tag, ok := sf.Tag.Lookup("col")
		if !ok || !sf.IsExported() || tag == "-" {
			continue
		}
		if throughPointer(typ, sf.Index) {
			return nil, fmt.Errorf("bind: %s.%s is reached through an embedded pointer, which may be nil: embed the struct by value", typ, sf.Name)
		}
		f := boundField{index: sf.Index, name: sf.Name, kind: valueKind(sf.Type)}
		parts := strings.Split(tag, ",")
		f.column = strings.TrimSpace(parts[0])
		if f.column == "" {
			f.column = sf.Name
		}
		f.keys = []string{NormalizeHeader(f.column)}
		for _, opt := range parts[1:] {
			opt = strings.TrimSpace(opt)
			if alias, ok := strings.CutPrefix(opt, "alias="); ok {
				for _, a := range strings.Split(alias, "|") {
					f.keys = append(f.keys, NormalizeHeader(a))
				}
			}
			f.opts.upper = f.opts.upper || opt == "upper"
			f.opts.lower = f.opts.lower || opt == "lower"
		}
		// A field may spell its own column again among its aliases ("Ref",
		// alias "ref"): that is one key, not a collision.
		keys := f.keys[:0]
		for _, k := range f.keys {
			if other, dup := seen[k]; dup {
				if other == sf.Name {
					continue
				}
				return nil, fmt.Errorf("bind: %s: column name %q of field %s collides with field %s", typ, k, sf.Name, other)
			}
			seen[k] = sf.Name
			keys = append(keys, k)
		}
		f.keys = keys
		if err := f.opts.parse(sf.Tag); err != nil {
			return nil, fmt.Errorf("bind: %s.%s: %w", typ, sf.Name, err)
		}
		ft := sf.Type
		if elem, ok := OptionalElem(ft); ok {
			ft, f.optional = elem, true
		}
		conv, err := converter(ft, &f.opts)
		if err != nil {
			return nil, fmt.Errorf("bind: %s.%s: %w", typ, sf.Name, err)
		}
		if f.optional {
			conv = optionalConverter(conv)
		}
		if f.opts.upper || f.opts.lower {
			conv = casedConverter(conv, f.opts.upper)
		}
		f.convert = conv
		b.fields = append(b.fields, f)
	}
	if len(b.fields) == 0 {
		return nil, fmt.Errorf("bind: %s has no field with a col tag", typ)
	}
	return b, nil
}

func (o *fieldOpts) parse(tag reflect.StructTag) error {
	if l := tag.Get("layout"); l != "" {
		o.layouts = strings.Split(l, "|")
	} else {
		o.layouts = DefaultTimeLayouts
	}
	switch x := tag.Get("excel"); x {
	case "", "1900":
	case "1904":
		o.excel = excel1904
	case "off":
		o.excel = excelOff
	default:
		return fmt.Errorf(`excel tag %q: want "1900", "1904" or "off"`, x)
	}
	if d, ok := tag.Lookup("dateorder"); ok {
		order, err := ParseDateOrder(d)
		if err != nil {
			return fmt.Errorf("dateorder tag: %w", err)
		}
		o.order = order
	}
	if b, ok := tag.Lookup("bool"); ok {
		t, f, ok := strings.Cut(b, ",")
		if !ok {
			return fmt.Errorf(`bool tag %q: want "true words,false words", as in "ja|oui,nein|non"`, b)
		}
		for _, w := range strings.Split(t, "|") {
			if w = strings.ToLower(strings.TrimSpace(w)); w != "" {
				o.trueWords = append(o.trueWords, w)
			}
		}
		for _, w := range strings.Split(f, "|") {
			if w = strings.ToLower(strings.TrimSpace(w)); w != "" {
				if slices.Contains(o.trueWords, w) {
					return fmt.Errorf("bool tag %q: %q is both true and false", b, w)
				}
				o.falseWord = append(o.falseWord, w)
			}
		}
	}
	return nil
}

// throughPointer reports whether the field at index is reached through an
// embedded pointer: Bind would have to dereference it while it is nil.
func throughPointer(typ reflect.Type, index []int) bool {
	for _, i := range index[:len(index)-1] {
		typ = typ.Field(i).Type
		if typ.Kind() == reflect.Pointer {
			return true
		}
	}
	return false
}

// NormalizeHeader is the key under which header cells and column names are
// compared: Unicode NFC (so "é" typed as e and a combining accent matches
// "é"), lower-case, with no spaces.
func NormalizeHeader(s string) string {
	return strings.ToLower(norm.NFC.String(strings.Join(strings.Fields(s), "")))
}

// Column describes one bindable column of a Binder.
type Column struct {
	Name  string `json:"name"`  // as declared in the col tag
	Field string `json:"field"` // Go field name
}

// Columns lists the bindable columns in field order.
func (b *Binder) Columns() []Column {
	out := make([]Column, len(b.fields))
	for i, f := range b.fields {
		out[i] = Column{Name: f.column, Field: f.name}
	}
	return out
}

// ColumnOf returns the column name declared for a Go field name.
func (b *Binder) ColumnOf(field string) (string, bool) {
	for _, f := range b.fields {
		if f.name == field {
			return f.column, true
		}
	}
	return "", false
}

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
	// look like ("Amount (EUR)" and amount).
	Suggestions []Suggestion
}

// Suggestion is an unknown header cell that looks like a missing column.
type Suggestion struct {
	Header string `json:"header"` // as the file spells it
	Column string `json:"column"` // as the kind declares it
}

// String says what to do about it.
func (s Suggestion) String() string {
	return fmt.Sprintf("%q looks like %q: map it with --map '%s=%s'", s.Header, s.Column, strings.ReplaceAll(s.Header, "'", `'\''`), s.Column)
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
	for i, h := range header {
		m.cell[i] = -1
		m.conv[i] = cellConv{number: conv.Number, order: conv.DateOrder}
		k := NormalizeHeader(h)
		if k == "" {
			m.Unnamed = append(m.Unnamed, i)
			continue
		}
		if j, dup := byKey[k]; dup {
			return nil, fmt.Errorf("%w: columns %d and %d are both named %q", ErrBadHeader, j+1, i+1, strings.TrimSpace(h))
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
			return nil, fmt.Errorf("%w: --map %q: the file has no column %q (its columns: %s)", ErrBadHeader, r.From+"="+r.To, r.From, quoteJoin(header))
		}
		fi := b.fieldOf(NormalizeHeader(r.To))
		if fi < 0 {
			cols := make([]string, len(b.fields))
			for i, f := range b.fields {
				cols[i] = f.column
			}
			return nil, fmt.Errorf("%w: --map %q: the kind has no column %q (its columns: %s)", ErrBadHeader, r.From+"="+r.To, r.To, quoteJoin(cols))
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
// "countyr"). Each cell gets the nearest column, if any is near.
func (b *Binder) suggest(unknown []string, used []bool) []Suggestion {
	var out []Suggestion
	for _, h := range unknown {
		lh := looseName(h)
		best, bestScore := -1, 100
		for fi, f := range b.fields {
			if used[fi] {
				continue
			}
			for _, name := range append([]string{f.column}, f.keys...) {
				if score, ok := nearName(lh, looseName(name)); ok && score < bestScore {
					best, bestScore = fi, score
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

// Kinds of values a column holds, for a caller that settles a file's
// conventions from its values (FieldKind).
const (
	KindText   = "text"
	KindNumber = "number"
	KindDate   = "date"
)

// ColumnKind returns what header cell i feeds: a number, a date, or text
// (also for an unknown column).
func (m *Mapping) ColumnKind(i int) string {
	if i >= len(m.cell) || m.cell[i] < 0 {
		return KindText
	}
	return m.b.fields[m.cell[i]].kind
}

// Bind sets the mapped fields of dst (a pointer to the binder's struct) from
// values. It returns one FieldError per cell that cannot be converted; the
// field is then left at its zero value. row is copied into the errors.
func (m *Mapping) Bind(row int64, values []string, dst any) []FieldError {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Type() != m.b.typ {
		panic(fmt.Sprintf("rows: Bind needs *%s, got %T", m.b.typ, dst))
	}
	v = v.Elem()
	var errs []FieldError
	for i, s := range values {
		if i >= len(m.cell) || m.cell[i] < 0 {
			continue
		}
		f := &m.b.fields[m.cell[i]]
		fv := v.FieldByIndex(f.index)
		if err := f.convert(strings.TrimSpace(s), fv, &m.conv[i]); err != nil {
			fe := FieldError{Row: row, Column: strings.TrimSpace(m.header[i]), Field: f.name, Code: CodeInvalid, Message: err.Error()}
			var ce *convError
			if errors.As(err, &ce) {
				fe.Code, fe.Message = ce.code, ce.msg
			}
			errs = append(errs, fe)
		}
	}
	return errs
}

type convError struct {
	code Code
	msg  string
}

func (e *convError) Error() string { return e.msg }

var (
	timeType            = reflect.TypeFor[time.Time]()
	decimalType         = reflect.TypeFor[Decimal]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	enumType            = reflect.TypeFor[Enum]()
)

// Enum is implemented by a string type whose values are a fixed list:
//
//	type Tier string
//	func (Tier) Enum() []string { return []string{"free", "pro", "enterprise"} }
//
// A cell binds when it equals one of them ignoring case and surrounding
// spaces, and the field holds the value as Enum spells it; anything else is
// a oneof error listing them. Enum is called once, when the Binder is made.
type Enum interface {
	Enum() []string
}

// converter returns the function that parses a trimmed cell into a value of
// type t. An empty cell leaves the zero value (nil for pointers), so that
// "required" is the declarative phase's decision, not the binder's.
func converter(t reflect.Type, o *fieldOpts) (convertFunc, error) {
	switch {
	case t.Kind() == reflect.Pointer:
		return pointerConverter(t, o)
	case t == timeType:
		return timeConverter(o), nil
	case t == decimalType:
		return decimalConverter, nil
	case t.Kind() == reflect.String && t.Implements(enumType):
		return enumConverter(t)
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return textConverter, nil
	}
	switch t.Kind() {
	case reflect.String:
		return func(s string, v reflect.Value, _ *cellConv) error { v.SetString(s); return nil }, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return numberConverter(t), nil
	case reflect.Bool:
		return boolConverter(o), nil
	}
	return nil, fmt.Errorf("unsupported field type %s", t)
}

// valueKind classifies a field type for ColumnKind.
func valueKind(t reflect.Type) string {
	if elem, ok := OptionalElem(t); ok {
		t = elem
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return KindDate
	case t == decimalType:
		return KindNumber
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return KindNumber
	}
	return KindText
}

// pointerConverter converts into the pointed-to type; an empty cell is a
// nil pointer, so that a missing value and a zero one stay apart.
func pointerConverter(t reflect.Type, o *fieldOpts) (convertFunc, error) {
	inner, err := converter(t.Elem(), o)
	if err != nil {
		return nil, err
	}
	return func(s string, v reflect.Value, cc *cellConv) error {
		if s == "" {
			v.SetZero()
			return nil
		}
		p := reflect.New(t.Elem())
		if err := inner(s, p.Elem(), cc); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}, nil
}

// optionalConverter fills an Optional: an empty cell leaves it unset.
func optionalConverter(inner convertFunc) convertFunc {
	return func(s string, v reflect.Value, cc *cellConv) error {
		v.SetZero()
		if s == "" {
			return nil
		}
		if err := inner(s, v.Field(0), cc); err != nil {
			return err
		}
		v.Field(1).SetBool(true)
		return nil
	}
}

// casedConverter changes a cell's case before the field's converter sees it.
func casedConverter(inner convertFunc, upper bool) convertFunc {
	return func(s string, v reflect.Value, cc *cellConv) error {
		if upper {
			s = strings.ToUpper(s)
		} else {
			s = strings.ToLower(s)
		}
		return inner(s, v, cc)
	}
}

// maxPlausibleSerial is the largest number read as an Excel serial date:
// 99999 is 2173-10-13. A six-digit number in a date column (250131) is a
// compact date or a mistake, not the year 2584.
const maxPlausibleSerial = 99999

// timeConverter tries the field's layouts in order, then the numeric and
// month-name forms in the file's day/month order, and then, unless the
// excel tag is "off", a plain number as an Excel serial date.
func timeConverter(o *fieldOpts) convertFunc {
	layouts, excel := o.layouts, o.excel
	return func(s string, v reflect.Value, cc *cellConv) error {
		if s == "" {
			return nil
		}
		for _, l := range layouts {
			if tm, err := time.Parse(l, s); err == nil {
				v.Set(reflect.ValueOf(tm))
				return nil
			}
		}
		if tm, ok, err := parseDate(s, cc.order); ok {
			if err != nil {
				return &convError{CodeBadDate, err.Error()}
			}
			v.Set(reflect.ValueOf(tm))
			return nil
		}
		if excel != excelOff && looksSerial(s) {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return &convError{CodeBadDate, fmt.Sprintf("%q: is not an Excel serial date", s)}
			}
			if f > maxPlausibleSerial {
				msg := fmt.Sprintf("%q is not a date: as an Excel serial date it would be past the year 2173", s)
				if tm, err := ExcelSerialTime(f, excel == excel1904); err == nil {
					msg = fmt.Sprintf("%q is not a date: as an Excel serial date it would be in the year %d", s, tm.Year())
				}
				return &convError{CodeBadDate, msg + "; a compact date such as YYMMDD needs its layout declared"}
			}
			tm, err := ExcelSerialTime(f, excel == excel1904)
			if err != nil {
				return &convError{CodeBadDate, fmt.Sprintf("%q: %v", s, err)}
			}
			v.Set(reflect.ValueOf(tm))
			return nil
		}
		return &convError{CodeBadDate, fmt.Sprintf("%q is not a date in the form %s, DD/MM/YYYY or MM/DD/YYYY, or 31-Dec-2025", s, humanLayouts(layouts))}
	}
}

// number rewrites a cell in the column's number format into the plain form
// the parsers read, or explains why it is not a number there.
func (cc *cellConv) plainNumber(s string) (string, error) {
	if cc.commas && cc.number.decimal() == '.' && NumberClueOf(s) == ClueAmbiguous && strings.Contains(s, ".") {
		return "", &convError{CodeNotANumber, fmt.Sprintf("%q is ambiguous: other values in this column are written with a decimal comma, where it would be %s; import with --decimal-comma (or --locale) to say how the file writes numbers", s, strings.ReplaceAll(s, ".", ""))}
	}
	plain, err := cc.number.Normalize(s)
	if err != nil {
		return "", &convError{CodeNotANumber, err.Error()}
	}
	return plain, nil
}

func decimalConverter(s string, v reflect.Value, cc *cellConv) error {
	if s == "" {
		return nil
	}
	plain, err := cc.plainNumber(s)
	if err != nil {
		return err
	}
	d, err := ParseDecimal(plain)
	switch {
	case errors.Is(err, errDecimalRange):
		return &convError{CodeOutOfRange, fmt.Sprintf("%q has more than %d digits", s, maxDecimalDigits)}
	case err != nil:
		return &convError{CodeNotANumber, fmt.Sprintf("%q is not a number (write %s)", s, cc.number.Describe())}
	}
	v.Set(reflect.ValueOf(d))
	return nil
}

// enumConverter matches a cell against the values t's Enum method lists,
// ignoring case, and stores the value as Enum spells it.
func enumConverter(t reflect.Type) (convertFunc, error) {
	allowed := reflect.Zero(t).Interface().(Enum).Enum()
	if len(allowed) == 0 {
		return nil, fmt.Errorf("%s.Enum() lists no values", t)
	}
	list := strings.Join(allowed, ", ")
	return func(s string, v reflect.Value, _ *cellConv) error {
		if s == "" {
			return nil
		}
		for _, a := range allowed {
			if strings.EqualFold(a, s) {
				v.SetString(a)
				return nil
			}
		}
		return &convError{CodeOneOf, fmt.Sprintf("%q must be one of %s", s, list)}
	}, nil
}

func textConverter(s string, v reflect.Value, _ *cellConv) error {
	if s == "" {
		return nil
	}
	if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
		return &convError{CodeInvalid, fmt.Sprintf("%q is not valid: %v", s, err)}
	}
	return nil
}

// numberConverter parses ints, uints and floats of t's size.
func numberConverter(t reflect.Type) convertFunc {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(s string, v reflect.Value, cc *cellConv) error {
			if s == "" {
				return nil
			}
			plain, err := cc.plainNumber(s)
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(plain, 10, t.Bits())
			if err != nil {
				return numErr(s, err)
			}
			v.SetInt(n)
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(s string, v reflect.Value, cc *cellConv) error {
			if s == "" {
				return nil
			}
			plain, err := cc.plainNumber(s)
			if err != nil {
				return err
			}
			n, err := strconv.ParseUint(plain, 10, t.Bits())
			if err != nil {
				return numErr(s, err)
			}
			v.SetUint(n)
			return nil
		}
	}
	return func(s string, v reflect.Value, cc *cellConv) error {
		if s == "" {
			return nil
		}
		plain, err := cc.plainNumber(s)
		if err != nil {
			return err
		}
		n, err := strconv.ParseFloat(plain, t.Bits())
		if err != nil {
			return numErr(s, err)
		}
		// ParseFloat accepts "NaN" and "Inf"; no spreadsheet user means
		// them as amounts, and "Inf" would pass a range check like gte=0.
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return &convError{CodeNotANumber, fmt.Sprintf("%q is not a number", s)}
		}
		v.SetFloat(n)
		return nil
	}
}

// boolConverter reads the usual words for true and false, and those of
// the field's bool tag.
func boolConverter(o *fieldOpts) convertFunc {
	trueWords, falseWords := o.trueWords, o.falseWord
	words := "yes/no, true/false or 1/0"
	if len(trueWords) > 0 {
		words = trueWords[0] + "/" + falseWords[0] + ", " + words
	}
	return func(s string, v reflect.Value, _ *cellConv) error {
		if s == "" {
			return nil
		}
		w := strings.ToLower(s)
		switch {
		case w == "true" || w == "yes" || w == "y" || w == "1" || slices.Contains(trueWords, w):
			v.SetBool(true)
		case w == "false" || w == "no" || w == "n" || w == "0" || slices.Contains(falseWords, w):
			v.SetBool(false)
		default:
			return &convError{CodeNotABool, fmt.Sprintf("%q is not %s", s, words)}
		}
		return nil
	}
}

// looksSerial reports whether s is a plain non-negative number, the way a
// spreadsheet's date cell reads when exported without formatting: 45292 or
// 45292.5.
func looksSerial(s string) bool {
	digits, point := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point && digits > 0:
			point = true
		default:
			return false
		}
	}
	return digits > 0 && digits <= 12
}

func numErr(s string, err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return &convError{CodeOutOfRange, fmt.Sprintf("%q is out of range", s)}
	}
	return &convError{CodeNotANumber, fmt.Sprintf("%q is not a number", s)}
}

// humanLayouts renders Go time layouts the way a spreadsheet user reads
// them: "2006-01-02" becomes "YYYY-MM-DD".
func humanLayouts(layouts []string) string {
	r := strings.NewReplacer("2006", "YYYY", "01", "MM", "02", "DD", "15", "hh", "04", "mm", "05", "ss", "Z07:00", "±hh:mm")
	out := make([]string, len(layouts))
	for i, l := range layouts {
		out[i] = r.Replace(l)
	}
	return strings.Join(out, " or ")
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

// Format writes the bound fields of v (a struct of the binder's type or a
// pointer to one) as cells in Columns order, in a form Bind reads back:
// times in the field's first layout, decimals exact, nil pointers and zero
// times empty. It is how a kind's example row becomes a template.
func (b *Binder) Format(v any) ([]string, error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Type() != b.typ {
		return nil, fmt.Errorf("format: want %s, got %T", b.typ, v)
	}
	out := make([]string, len(b.fields))
	for i := range b.fields {
		f := &b.fields[i]
		s, err := formatValue(rv.FieldByIndex(f.index), &f.opts)
		if err != nil {
			return nil, fmt.Errorf("format %s: %w", f.name, err)
		}
		out[i] = s
	}
	return out, nil
}

var textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()

func formatValue(v reflect.Value, o *fieldOpts) (string, error) {
	if of, ok := v.Interface().(OptionalField); ok {
		val, set := of.OptionalValue()
		if !set {
			return "", nil
		}
		v = reflect.ValueOf(val)
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", nil
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		if t.IsZero() {
			return "", nil
		}
		return t.Format(o.layouts[0]), nil
	case v.Type() == decimalType:
		return v.Interface().(Decimal).String(), nil
	case v.Kind() != reflect.String && v.Type().Implements(textMarshalerType):
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		return string(b), err
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, v.Type().Bits()), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	}
	return "", fmt.Errorf("cannot format %s", v.Type())
}
