package validate

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"

	"github.com/rowfate/rowfate/rows"
)

// quickCheck answers the declarative phase for the rows that pass it,
// without validator: validator walks the struct by reflection and boxes
// each custom-typed field (every Optional, every Decimal) to check it,
// which was a sixth of an import's CPU, for rows that nearly all pass.
//
// It only ever says "passes": a row it cannot prove passes, because a
// check fails or because the check is not one it knows, is asked of
// validator, whose answer (and messages) stand. So it must never pass a
// row validator fails; FuzzQuickCheck holds it to that. A struct with a
// tag or a field type it does not know gets no quickCheck at all.
type quickCheck struct {
	fields []quickField
}

// quickField is one field's compiled tag.
type quickField struct {
	index []int
	kind  quickKind
	// optional: the field is a rows.Optional of kind, which validator
	// sees as a nil pointer when not set.
	optional bool
	// skipEmpty: omitempty, first in the tag (the value's zero skips the
	// rest); skipUnset: omitempty or omitnil first (an unset Optional
	// skips the rest).
	skipEmpty, skipUnset bool
	rules                []quickRule
}

// quickKind is how a field's value is read and compared.
type quickKind int

const (
	quickString quickKind = iota
	quickInt
	quickDecimal
	quickTime
)

// quickRule is one check of a tag.
type quickRule struct {
	tag string
	// n is the parameter of a comparison (max=254: 254), as a float64:
	// validator compares numbers as float64 or int64 and lengths as int,
	// and every parameter quick accepts is exact in a float64.
	n float64
	// oneof are the words of oneof's parameter.
	oneof []string
	// memo answers a check of the value alone (iso3166_1_alpha2) once
	// per value, asking validator.
	memo *quickMemo
}

// quickTags are the checks quick knows; the rest make a struct validator's.
var quickTags = map[string]bool{
	"required": true, "omitempty": true, "omitnil": true, "email": true,
	"max": true, "min": true, "len": true, "gte": true, "gt": true, "lte": true, "lt": true,
	"oneof": true, "iso3166_1_alpha2": true,
}

// compileQuick returns the quickCheck of typ, or nil when one of its
// fields has a tag or a type it does not know. custom are the kind's own
// checks, which may replace a built-in one of the same name.
func compileQuick(typ reflect.Type, custom map[string]validator.Func) *quickCheck {
	if typ.Kind() != reflect.Struct {
		return nil
	}
	q := &quickCheck{}
	for i := range typ.NumField() {
		sf := typ.Field(i)
		tag := sf.Tag.Get("validate")
		if sf.Anonymous {
			return nil // validator walks an embedded struct, exported or not
		}
		if !sf.IsExported() {
			continue
		}
		kind, optional, ok := quickKindOf(sf.Type)
		if !ok {
			if tag == "" || tag == "-" {
				// validator walks a nested struct even without a tag.
				if k := sf.Type.Kind(); k == reflect.Struct || k == reflect.Pointer || k == reflect.Interface ||
					k == reflect.Slice || k == reflect.Map || k == reflect.Array {
					return nil
				}
				continue
			}
			return nil
		}
		if tag == "" || tag == "-" {
			continue
		}
		f, ok := compileField(tag, kind, optional, custom)
		if !ok {
			return nil
		}
		f.index = sf.Index
		q.fields = append(q.fields, f)
	}
	return q
}

// quickKindOf names how quick reads a field type, if it can.
func quickKindOf(t reflect.Type) (quickKind, bool, bool) {
	optional := false
	if elem, ok := rows.OptionalElem(t); ok {
		t, optional = elem, true
	}
	switch {
	case t == reflect.TypeFor[rows.Decimal]():
		return quickDecimal, optional, true
	case t == reflect.TypeFor[time.Time]():
		return quickTime, optional, true
	case t.Kind() == reflect.String:
		return quickString, optional, true
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return quickInt, optional, true
	}
	return 0, false, false
}

// compileField compiles a tag, or reports that quick does not know it.
func compileField(tag string, kind quickKind, optional bool, custom map[string]validator.Func) (quickField, bool) {
	f := quickField{kind: kind, optional: optional}
	for i, item := range strings.Split(tag, ",") {
		name, param, _ := strings.Cut(item, "=")
		if !quickTags[name] || custom[name] != nil || strings.ContainsAny(item, "|'") {
			return f, false
		}
		switch name {
		case "omitempty", "omitnil":
			if i != 0 {
				return f, false
			}
			f.skipUnset = true
			f.skipEmpty = name == "omitempty"
			continue
		}
		r := quickRule{tag: name}
		switch name {
		case "required", "email":
			if param != "" || (name == "email" && kind != quickString) {
				return f, false
			}
		case "oneof":
			if kind != quickString {
				return f, false
			}
			r.oneof = strings.Fields(param)
		case "iso3166_1_alpha2":
			if kind != quickString {
				return f, false
			}
			r.memo = newQuickMemo(name)
		default: // a comparison
			n, err := strconv.ParseFloat(param, 64)
			if err != nil || kind == quickTime || n != float64(int64(n)) || n < -1<<53 || n > 1<<53 {
				return f, false
			}
			r.n = n
		}
		f.rules = append(f.rules, r)
	}
	return f, true
}

// passes reports whether validator would find nothing wrong with *dst
// (a pointer to the struct quick was compiled for); false is "ask
// validator", not "fails".
func (q *quickCheck) passes(dst any) bool {
	v := reflect.ValueOf(dst).Elem()
	for i := range q.fields {
		f := &q.fields[i]
		fv := v.FieldByIndex(f.index)
		if f.optional {
			if !fv.Field(1).Bool() { // Optional.Set
				if f.skipUnset {
					continue
				}
				return false
			}
			fv = fv.Field(0) // Optional.Value
		}
		if !f.passes(fv) {
			return false
		}
	}
	return true
}

// passes checks one field's value against its rules.
func (f *quickField) passes(fv reflect.Value) bool {
	var (
		s    string
		num  float64
		zero bool
	)
	switch f.kind {
	case quickString:
		s = fv.String()
		zero = s == ""
	case quickInt:
		i := fv.Int()
		if i < -1<<53 || i > 1<<53 {
			return false // beyond float64's exact integers
		}
		num, zero = float64(i), i == 0
	case quickDecimal:
		// As validator sees it, through the custom type function.
		num = fv.Interface().(rows.Decimal).Float64()
		zero = num == 0
	case quickTime:
		zero = fv.IsZero()
	}
	if zero && f.skipEmpty {
		return true
	}
	for _, r := range f.rules {
		if !r.passes(f.kind, s, num, zero) {
			return false
		}
	}
	return true
}

// passes checks one rule. A string's comparisons are of its length in
// runes, as validator's.
func (r *quickRule) passes(kind quickKind, s string, num float64, zero bool) bool {
	if kind == quickString {
		num = float64(utf8.RuneCountInString(s))
	}
	switch r.tag {
	case "required":
		return !zero
	case "email":
		return simpleEmail(s)
	case "oneof":
		for _, w := range r.oneof {
			if s == w {
				return true
			}
		}
		return false
	case "iso3166_1_alpha2":
		return r.memo.passes(s)
	case "max", "lte":
		return num <= r.n
	case "min", "gte":
		return num >= r.n
	case "len":
		return num == r.n
	case "gt":
		return num > r.n
	case "lt":
		return num < r.n
	}
	return false
}

// quickMemo answers a check of a string value alone by asking validator
// once per value: a column of country codes holds a few hundred values
// at most. It stops remembering at quickMemoSize values (and asks each
// time after that).
type quickMemo struct {
	tag   string
	v     *validator.Validate
	mu    sync.RWMutex
	known map[string]bool
}

const quickMemoSize = 4096

func newQuickMemo(tag string) *quickMemo {
	return &quickMemo{tag: tag, v: validator.New(), known: make(map[string]bool)}
}

func (m *quickMemo) passes(s string) bool {
	m.mu.RLock()
	ok, found := m.known[s]
	m.mu.RUnlock()
	if found {
		return ok
	}
	ok = m.v.Var(s, m.tag) == nil
	m.mu.Lock()
	if len(m.known) < quickMemoSize {
		m.known[s] = ok
	}
	m.mu.Unlock()
	return ok
}
