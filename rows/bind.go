package rows

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

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
//   - `boolvalues:"[[\"ja\"],[\"nein\"]]"` (bool): the only words for
//     true and for false, as a JSON array of two arrays, matched exactly
//     (case included): a Table Schema's trueValues and falseValues.
//   - `number:"{...}"` (numbers, Decimal): the column's own NumberOptions
//     as JSON (NumberOptions.Tag): its number format, which replaces the
//     file's, whether text around the number is stripped, exponents.
//   - `strptime:"%d/%m/%y"` (time.Time): the column's date pattern in
//     strptime syntax (Strptime), tried before the layouts; with it, no
//     other form is guessed at (numeric dates in the file's order, month
//     names, Excel serials).
//   - `dateorder:"dmy"` (time.Time): the order of day and month in numeric
//     dates when the file neither declares it (Conventions.DateOrder) nor
//     settles it by a value only one order reads (13/02/2025).
//   - `dateorderoption:"x-date-order"` (time.Time): the kind's own
//     option for the order of day and month, which the message of a date
//     that reads two ways names besides the import's.
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
	date   DateFormat // the file's declared date format
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
	// exactBool: trueWords and falseWord are the only words, matched
	// exactly (the boolvalues tag).
	exactBool bool
	// number is the column's own way of writing numbers (number tag).
	number *NumberOptions
	// strptime is the column's date pattern (strptime tag).
	strptime string
	// orderOption names where the kind declares its day/month order
	// (dateorderoption tag: a schema's x-date-order), for the message of
	// a date that reads two ways.
	orderOption string
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
		if (f.opts.number != nil && f.opts.number.Format != nil) || f.opts.strptime != "" {
			f.kind = KindOwn
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
	if n, ok := tag.Lookup("number"); ok {
		var no NumberOptions
		if err := json.Unmarshal([]byte(n), &no); err != nil {
			return fmt.Errorf("number tag %q: %w", n, err)
		}
		o.number = &no
	}
	o.orderOption = tag.Get("dateorderoption")
	if p, ok := tag.Lookup("strptime"); ok {
		if err := CheckStrptime(p); err != nil {
			return fmt.Errorf("strptime tag: %w", err)
		}
		o.strptime = p
	}
	if b, ok := tag.Lookup("boolvalues"); ok {
		return o.parseBoolValues(b)
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

// parseBoolValues reads the boolvalues tag: [[true words], [false words]].
func (o *fieldOpts) parseBoolValues(tag string) error {
	var lists [2][]string
	if err := json.Unmarshal([]byte(tag), &lists); err != nil {
		return fmt.Errorf("boolvalues tag %q: want a JSON array of two arrays of words: %w", tag, err)
	}
	for _, w := range lists[1] {
		if slices.Contains(lists[0], w) {
			return fmt.Errorf("boolvalues tag %q: %q is both true and false", tag, w)
		}
	}
	o.exactBool, o.trueWords, o.falseWord = true, lists[0], lists[1]
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

// Kinds of values a column holds, for a caller that settles a file's
// conventions from its values (FieldKind).
const (
	KindText   = "text"
	KindNumber = "number"
	KindDate   = "date"
	// KindOwn is a column that declares how it writes its values (its
	// own number format, its date pattern): they say nothing about the
	// rest of the file's.
	KindOwn = "own"
)

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
				fe.Code, fe.Message, fe.Hints = ce.code, ce.msg, ce.hints
			}
			errs = append(errs, fe)
		}
	}
	return errs
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	decimalType         = reflect.TypeFor[Decimal]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	enumType            = reflect.TypeFor[Enum]()
)

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
