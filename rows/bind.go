package rows

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeLayouts are tried, in order, for a time.Time field without a
// `layout` tag.
var DefaultTimeLayouts = []string{"2006-01-02", time.RFC3339, "2006-01-02 15:04:05"}

// Binder binds records to fields of one struct type. Only fields with a
// `col:"name"` tag can be bound, so a header can never reach an internal
// field. Build one per type with NewBinder and reuse it.
//
// Tag syntax: `col:"email,alias=E-mail|mail"` and, for time.Time,
// `layout:"2006-01-02|02/01/2006"`.
type Binder struct {
	typ    reflect.Type
	fields []boundField
}

type boundField struct {
	index   []int
	name    string   // Go field name
	column  string   // canonical column name from the tag
	keys    []string // normalised names that match: column and aliases
	layouts []string
	convert func(s string, v reflect.Value) error
}

// NewBinder inspects the struct type of sample (a struct or a pointer to
// one) once.
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
		f := boundField{index: sf.Index, name: sf.Name}
		parts := strings.Split(tag, ",")
		f.column = strings.TrimSpace(parts[0])
		if f.column == "" {
			f.column = sf.Name
		}
		f.keys = []string{NormalizeHeader(f.column)}
		for _, opt := range parts[1:] {
			if alias, ok := strings.CutPrefix(strings.TrimSpace(opt), "alias="); ok {
				for _, a := range strings.Split(alias, "|") {
					f.keys = append(f.keys, NormalizeHeader(a))
				}
			}
		}
		for _, k := range f.keys {
			if other, dup := seen[k]; dup {
				return nil, fmt.Errorf("bind: %s: column name %q of field %s collides with field %s", typ, k, sf.Name, other)
			}
			seen[k] = sf.Name
		}
		if l := sf.Tag.Get("layout"); l != "" {
			f.layouts = strings.Split(l, "|")
		} else {
			f.layouts = DefaultTimeLayouts
		}
		conv, err := converter(sf.Type, f.layouts)
		if err != nil {
			return nil, fmt.Errorf("bind: %s.%s: %w", typ, sf.Name, err)
		}
		f.convert = conv
		b.fields = append(b.fields, f)
	}
	if len(b.fields) == 0 {
		return nil, fmt.Errorf("bind: %s has no field with a col tag", typ)
	}
	return b, nil
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
// compared: trimmed, lower-case, with no spaces.
func NormalizeHeader(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), ""))
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

// Mapping is a header matched against a Binder: which cell feeds which field.
type Mapping struct {
	b *Binder
	// cell[i] is the field index for header cell i, or -1 when unknown.
	cell []int
	// header as the file spells it, used to name columns in errors.
	header []string
	// Unknown lists header cells that match no field; they are ignored.
	Unknown []string
	// Missing lists declared columns absent from the header.
	Missing []string
}

// ErrBadHeader is wrapped by every header problem returned by Map.
var ErrBadHeader = errors.New("bad header")

// Map matches a header row against the binder's columns. An empty or
// duplicate header cell is an error wrapping ErrBadHeader.
func (b *Binder) Map(header []string) (*Mapping, error) {
	m := &Mapping{b: b, cell: make([]int, len(header)), header: header}
	used := make([]bool, len(b.fields))
	byKey := map[string]int{}
	for i, h := range header {
		k := NormalizeHeader(h)
		if k == "" {
			return nil, fmt.Errorf("%w: column %d has an empty name", ErrBadHeader, i+1)
		}
		if j, dup := byKey[k]; dup {
			return nil, fmt.Errorf("%w: columns %d and %d are both named %q", ErrBadHeader, j+1, i+1, strings.TrimSpace(h))
		}
		byKey[k] = i
		m.cell[i] = -1
		for fi, f := range b.fields {
			for _, fk := range f.keys {
				if fk == k {
					if used[fi] {
						return nil, fmt.Errorf("%w: column %q and another column both map to %s", ErrBadHeader, strings.TrimSpace(h), f.column)
					}
					used[fi] = true
					m.cell[i] = fi
				}
			}
		}
		if m.cell[i] < 0 {
			m.Unknown = append(m.Unknown, strings.TrimSpace(h))
		}
	}
	for fi, f := range b.fields {
		if !used[fi] {
			m.Missing = append(m.Missing, f.column)
		}
	}
	return m, nil
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
		if err := f.convert(strings.TrimSpace(s), fv); err != nil {
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
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// converter returns the function that parses a trimmed cell into a value of
// type t. An empty cell leaves the zero value (nil for pointers), so that
// "required" is the declarative phase's decision, not the binder's.
func converter(t reflect.Type, layouts []string) (func(string, reflect.Value) error, error) {
	if t.Kind() == reflect.Pointer {
		inner, err := converter(t.Elem(), layouts)
		if err != nil {
			return nil, err
		}
		return func(s string, v reflect.Value) error {
			if s == "" {
				v.SetZero()
				return nil
			}
			p := reflect.New(t.Elem())
			if err := inner(s, p.Elem()); err != nil {
				return err
			}
			v.Set(p)
			return nil
		}, nil
	}
	if t == timeType {
		return func(s string, v reflect.Value) error {
			if s == "" {
				return nil
			}
			for _, l := range layouts {
				if tm, err := time.Parse(l, s); err == nil {
					v.Set(reflect.ValueOf(tm))
					return nil
				}
			}
			return &convError{CodeBadDate, fmt.Sprintf("%q is not a date in the form %s", s, humanLayouts(layouts))}
		}, nil
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return func(s string, v reflect.Value) error {
			if s == "" {
				return nil
			}
			if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
				return &convError{CodeInvalid, fmt.Sprintf("%q is not valid: %v", s, err)}
			}
			return nil
		}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return func(s string, v reflect.Value) error { v.SetString(s); return nil }, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(s string, v reflect.Value) error {
			if s == "" {
				return nil
			}
			n, err := strconv.ParseInt(s, 10, t.Bits())
			if err != nil {
				return numErr(s, err)
			}
			v.SetInt(n)
			return nil
		}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(s string, v reflect.Value) error {
			if s == "" {
				return nil
			}
			n, err := strconv.ParseUint(s, 10, t.Bits())
			if err != nil {
				return numErr(s, err)
			}
			v.SetUint(n)
			return nil
		}, nil
	case reflect.Float32, reflect.Float64:
		return func(s string, v reflect.Value) error {
			if s == "" {
				return nil
			}
			n, err := strconv.ParseFloat(s, t.Bits())
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
		}, nil
	case reflect.Bool:
		return func(s string, v reflect.Value) error {
			if s == "" {
				return nil
			}
			switch strings.ToLower(s) {
			case "true", "yes", "y", "1":
				v.SetBool(true)
			case "false", "no", "n", "0":
				v.SetBool(false)
			default:
				return &convError{CodeNotABool, fmt.Sprintf("%q is not yes/no, true/false or 1/0", s)}
			}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("unsupported field type %s", t)
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
