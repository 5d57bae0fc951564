package tableschema

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"

	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/validate"
)

// Compiled is a schema made ready for the engine: the row type with its
// tags and the checks that fill in the validation phases.
type Compiled struct {
	Schema *Schema
	// Type is the row type: a struct with one field per schema field, in
	// order, tagged as a Go kind's would be. A required field holds its
	// value; an optional one a rows.Optional, set only when the file gave
	// a value, so that a write leaves what the file did not mention alone.
	Type reflect.Type
	// Options fill in the pipeline's phases: pattern, enum and date-bound
	// checks (declarative), and the cross-field rules.
	Options validate.DynamicOptions
	// fields are the schema fields' Go names, in order.
	goNames []string
	keyIdx  []int
}

// Compile builds a schema's row type and checks. A schema that Parse
// accepted compiles; the error is for schemas built by hand.
func Compile(s *Schema) (*Compiled, error) {
	c := &Compiled{Schema: s}
	used := map[string]bool{}
	checks := &checkSet{}
	var sfs []reflect.StructField
	for i, f := range s.Fields {
		name := goIdent(f.Name, used)
		c.goNames = append(c.goNames, name)
		typ, err := fieldType(f)
		if err != nil {
			return nil, fmt.Errorf("$.fields[%d]: %w", i, err)
		}
		tag, err := fieldTag(f, s, checks)
		if err != nil {
			return nil, fmt.Errorf("$.fields[%d]: %w", i, err)
		}
		sfs = append(sfs, reflect.StructField{Name: name, Type: typ, Tag: tag})
	}
	c.Type = reflect.StructOf(sfs)
	for _, k := range s.PrimaryKey {
		c.keyIdx = append(c.keyIdx, slices.IndexFunc(s.Fields, func(f Field) bool { return f.Name == k }))
	}
	c.Options = validate.DynamicOptions{
		Checks:   checks.funcs(),
		Messages: checks.messages(),
		Codes:    checks.codeMap(),
	}
	if len(s.Rules) > 0 {
		rules, err := c.compileRules()
		if err != nil {
			return nil, err
		}
		c.Options.RowCheck = rules
	}
	// The tags are checked once here, the way the engine will run them.
	if _, err := validate.NewDynamic(c.Type, c.Options); err != nil {
		return nil, err
	}
	return c, nil
}

// fieldType is a field's Go type: a rows.Optional of its value, required
// or not, so that a value the file gave is told from one it did not even
// when it is 0 or false (validator's own required refuses those).
func fieldType(f Field) (reflect.Type, error) {
	switch f.Type {
	case TypeString:
		return reflect.TypeFor[rows.Optional[string]](), nil
	case TypeInteger:
		return reflect.TypeFor[rows.Optional[int64]](), nil
	case TypeNumber:
		return reflect.TypeFor[rows.Optional[rows.Decimal]](), nil
	case TypeBoolean:
		return reflect.TypeFor[rows.Optional[bool]](), nil
	case TypeDate, TypeDatetime:
		return reflect.TypeFor[rows.Optional[time.Time]](), nil
	}
	return nil, fmt.Errorf("type %q is not read by Rowfate", f.Type)
}

// fieldTag is a field's col, layout, bool, dateorder and validate tags.
func fieldTag(f Field, s *Schema, checks *checkSet) (reflect.StructTag, error) {
	col := f.Name
	if len(f.Aliases) > 0 {
		col += ",alias=" + strings.Join(f.Aliases, "|")
	}
	parts := []string{`col:` + strconv.Quote(col)}
	parts = append(parts, typeTags(f, s)...)
	var checksTag []string
	if f.Constraints.Required {
		checksTag = append(checksTag, checks.addRequired())
	} else {
		// omitnil, not omitempty: a field the file left empty skips its
		// checks, a 0 or a false the file gave does not.
		checksTag = append(checksTag, "omitnil")
	}
	switch f.Format {
	case "email":
		checksTag = append(checksTag, "email")
	case "uri":
		checksTag = append(checksTag, "url")
	case "uuid":
		checksTag = append(checksTag, "uuid")
	}
	c := f.Constraints
	if c.MinLength != nil {
		checksTag = append(checksTag, fmt.Sprintf("min=%d", *c.MinLength))
	}
	if c.MaxLength != nil {
		checksTag = append(checksTag, fmt.Sprintf("max=%d", *c.MaxLength))
	}
	for _, b := range []struct {
		text string
		op   string
	}{{c.Minimum, ">="}, {c.Maximum, "<="}} {
		if b.text != "" {
			checksTag = append(checksTag, checks.add(f, b.op, b.text))
		}
	}
	if c.Pattern != "" {
		checksTag = append(checksTag, checks.addPattern(c.Pattern))
	}
	if len(c.Enum) > 0 {
		checksTag = append(checksTag, checks.addEnum(f, c.Enum))
	}
	if f.Validate != "" {
		checksTag = append(checksTag, f.Validate)
	}
	parts = append(parts, `validate:`+strconv.Quote(strings.Join(checksTag, ",")))
	return reflect.StructTag(strings.Join(parts, " ")), nil
}

// typeTags are the binder's tags of a field's type: its date layouts and
// pattern, its boolean words, its number options.
func typeTags(f Field, s *Schema) []string {
	var parts []string
	switch f.Type {
	case TypeDate, TypeDatetime:
		layouts := isoLayouts(f.Type)
		switch f.Format {
		case "default":
		case "any":
			layouts = append(layouts, rows.DefaultTimeLayouts...)
		default:
			// The pattern, and the ISO forms a spreadsheet's date cells
			// are read as; nothing guessed.
			parts = append(parts, `strptime:`+strconv.Quote(f.Format))
		}
		parts = append(parts, `layout:`+strconv.Quote(strings.Join(layouts, "|")))
		if s.DateOrder != rows.DateOrderUnknown {
			parts = append(parts, `dateorder:`+strconv.Quote(string(s.DateOrder)))
		}
		parts = append(parts, `dateorderoption:"x-date-order"`)
	case TypeBoolean:
		tv, fv := boolValues(f)
		words, _ := json.Marshal([2][]string{tv, fv}) // strings always encode
		parts = append(parts, `boolvalues:`+strconv.Quote(string(words)))
	case TypeInteger, TypeNumber:
		if o, ok := numberTag(f); ok {
			parts = append(parts, `number:`+strconv.Quote(o.Tag()))
		}
	}
	return parts
}

// isoLayouts are the forms a date or a date-time is read in by default:
// the standard's (YYYY-MM-DD; XML Schema's date-time, with optional
// fractions and offset), and a date-time with a space, as a spreadsheet's
// date cells are read.
func isoLayouts(typ string) []string {
	if typ == TypeDatetime {
		return []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05"}
	}
	return []string{"2006-01-02"}
}

// numberTag is the binder's number options of an integer or a number: its
// own number format when it declares decimalChar or groupChar (the file's
// otherwise), bareNumber, and a number's exponent.
func numberTag(f Field) (rows.NumberOptions, bool) {
	var o rows.NumberOptions
	if f.DecimalChar != "" || f.GroupChar != "" {
		dec, _ := utf8.DecodeRuneInString(f.decimalChar())
		if f.Type == TypeInteger && f.GroupChar == "." {
			dec = ',' // an integer has no decimal separator; "." groups here
		}
		nf := rows.NumberFormat{Decimal: dec}
		if f.GroupChar != "" {
			g, _ := utf8.DecodeRuneInString(f.GroupChar)
			nf.Groups = []rune{g}
		}
		o.Format = &nf
	}
	o.Strip = f.BareNumber != nil && !*f.BareNumber
	o.Exponent = f.Type == TypeNumber
	return o, o.Format != nil || o.Strip || o.Exponent
}

// bound reads a constraint value or a literal as the field's type; nil
// when it does not read.
func bound(f *Field, s string) any {
	v, err := parseValue(f, s)
	if err != nil {
		return nil
	}
	return v
}

// checkBound says why a value does not read as the field's type.
func checkBound(f *Field, s string) error {
	_, err := parseValue(f, s)
	return err
}

// parseValue reads a schema's literal (a bound, an enum value, a rule's
// value) as a value of the field's type: in the schema's canonical form
// (ISO dates, a decimal point, true or false), or as the field's own
// rules write it (its date pattern, its boolean words, its decimalChar):
// the standard's constraint values "MAY be primitive types as possible in
// JSON, or represented as strings that are castable with the type and
// format rules of the field".
func parseValue(f *Field, s string) (any, error) {
	s = strings.TrimSpace(s)
	switch f.Type {
	case TypeString:
		return s, nil
	case TypeInteger:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return n, nil
	case TypeNumber:
		d, err := rows.ParseDecimal(s)
		if err != nil && f.DecimalChar != "" {
			d, err = rows.ParseDecimal(strings.Replace(s, f.DecimalChar, ".", 1))
		}
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return d, nil
	case TypeBoolean:
		tv, fv := boolValues(*f)
		switch {
		case s == "true" || slices.Contains(tv, s):
			return true, nil
		case s == "false" || slices.Contains(fv, s):
			return false, nil
		}
		return nil, fmt.Errorf("%q is not true or false", s)
	case TypeDate, TypeDatetime:
		return parseTime(f, s)
	}
	return nil, fmt.Errorf("a %s has no values to compare", f.Type)
}

// parseTime reads a date or date-time literal: ISO, or in the field's
// pattern.
func parseTime(f *Field, s string) (time.Time, error) {
	layouts := []string{"2006-01-02"}
	if f.Type == TypeDatetime {
		layouts = []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"}
	}
	for _, l := range layouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	if strings.Contains(f.Format, "%") {
		if t, err := rows.Strptime(f.Format, s); err == nil {
			return t, nil
		}
	}
	if f.Type == TypeDate {
		return time.Time{}, fmt.Errorf("%q is not a date in the form YYYY-MM-DD", s)
	}
	return time.Time{}, fmt.Errorf("%q is not a date-time in the form YYYY-MM-DDThh:mm:ssZ", s)
}

// compare orders two values of one kind: -1, 0, 1.
func compare(a, b any) int {
	switch x := a.(type) {
	case string:
		return strings.Compare(x, b.(string))
	case int64:
		switch y := b.(type) {
		case int64:
			return cmpInt(x, y)
		case rows.Decimal:
			return rows.NewDecimal(x, 0).Cmp(y)
		}
	case rows.Decimal:
		switch y := b.(type) {
		case int64:
			return x.Cmp(rows.NewDecimal(y, 0))
		case rows.Decimal:
			return x.Cmp(y)
		}
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case time.Time:
		return x.Compare(b.(time.Time))
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// value is a bound field's value and whether the file gave one.
func value(v reflect.Value) (any, bool) {
	if o, ok := v.Interface().(rows.OptionalField); ok {
		return o.OptionalValue()
	}
	return v.Interface(), true
}

// checkSet collects the custom checks fields' tags name: each one a tag
// of its own (rf_1, rf_2, ...), so that its parameters (a regexp, a list
// of values, a date) need not fit in a validator tag.
type checkSet struct {
	fns   []validator.Func
	msgs  []string
	codes []rows.Code
	// required is the tag of the required check, once made.
	required string
}

// The row error codes of a schema's constraints.
const (
	CodePattern rows.Code = "pattern"
	CodeEnum    rows.Code = "enum"
	CodeMinimum rows.Code = "minimum"
	CodeMaximum rows.Code = "maximum"
	CodeRule    rows.Code = "rule"
)

func (cs *checkSet) next(fn validator.Func, code rows.Code, msg string) string {
	cs.fns = append(cs.fns, fn)
	cs.msgs = append(cs.msgs, msg)
	cs.codes = append(cs.codes, code)
	return fmt.Sprintf("rf_%d", len(cs.fns))
}

func (cs *checkSet) codeMap() map[string]rows.Code {
	out := map[string]rows.Code{}
	for i, c := range cs.codes {
		out[fmt.Sprintf("rf_%d", i+1)] = c
	}
	return out
}

func (cs *checkSet) funcs() map[string]validator.Func {
	out := map[string]validator.Func{}
	for i, f := range cs.fns {
		out[fmt.Sprintf("rf_%d", i+1)] = f
	}
	return out
}

func (cs *checkSet) messages() map[string]func(string) string {
	out := map[string]func(string) string{}
	for i, m := range cs.msgs {
		out[fmt.Sprintf("rf_%d", i+1)] = func(string) string { return m }
	}
	return out
}

// fieldValue is the value validator hands a custom check, seen through
// an Optional and Decimal (which validator is given as a float64 by the
// pipeline's custom type functions, so the struct field is read instead).
func fieldValue(fl validator.FieldLevel) (any, bool) {
	parent := fl.Parent()
	for parent.Kind() == reflect.Pointer {
		parent = parent.Elem()
	}
	if parent.Kind() != reflect.Struct {
		// A check run on a value alone (the pipeline's probe of tags).
		return fl.Field().Interface(), true
	}
	f := parent.FieldByName(fl.StructFieldName())
	if !f.IsValid() {
		return nil, false
	}
	return value(f)
}

// add is a bound check: value op bound (>= or <=).
func (cs *checkSet) add(f Field, op, text string) string {
	b := bound(&f, text)
	code := CodeMinimum
	if op == "<=" {
		code = CodeMaximum
	}
	word := map[string]string{">=": "≥", "<=": "≤"}[op]
	if f.Type == TypeDate || f.Type == TypeDatetime {
		word = map[string]string{">=": "on or after", "<=": "on or before"}[op]
	}
	return cs.next(func(fl validator.FieldLevel) bool {
		v, ok := fieldValue(fl)
		if !ok {
			return true // not given: required says so, if it must be
		}
		c := compare(v, b)
		if op == ">=" {
			return c >= 0
		}
		return c <= 0
	}, code, "must be "+word+" "+text)
}

// addRequired is "the file gave a value": 0 and false are values, which
// validator's own required refuses.
func (cs *checkSet) addRequired() string {
	if cs.required != "" {
		return cs.required
	}
	cs.required = cs.next(func(fl validator.FieldLevel) bool {
		v, set := fieldValue(fl)
		if s, ok := v.(string); ok {
			return set && s != ""
		}
		return set && v != nil
	}, rows.CodeRequired, "is required")
	return cs.required
}

func (cs *checkSet) addPattern(pattern string) string {
	re := regexp.MustCompile(anchor(pattern))
	return cs.next(func(fl validator.FieldLevel) bool {
		v, ok := fieldValue(fl)
		if !ok {
			return true
		}
		s, _ := v.(string)
		return re.MatchString(s)
	}, CodePattern, "must match the pattern "+pattern)
}

func (cs *checkSet) addEnum(f Field, values []string) string {
	vals := make([]any, len(values))
	for i, s := range values {
		vals[i] = bound(&f, s)
		if f.Type == TypeString {
			vals[i] = s
		}
	}
	return cs.next(func(fl validator.FieldLevel) bool {
		v, ok := fieldValue(fl)
		if !ok {
			return true
		}
		return slices.ContainsFunc(vals, func(e any) bool { return compare(v, e) == 0 })
	}, CodeEnum, "must be one of "+strings.Join(values, ", "))
}

// compileRules builds the cross-field hook of phase 4.
func (c *Compiled) compileRules() (func(ctx context.Context, row reflect.Value) error, error) {
	type compiled struct {
		rule        Rule
		left, right int
		lit         any
		leftF       *Field
	}
	s := c.Schema
	idx := func(name string) int { return slices.IndexFunc(s.Fields, func(f Field) bool { return f.Name == name }) }
	var rules []compiled
	for i, r := range s.Rules {
		cr := compiled{rule: r, left: idx(r.Left), right: -1}
		if cr.left < 0 {
			return nil, fmt.Errorf("$.x-rules[%d]: %q is not among the fields", i, r.Left)
		}
		cr.leftF = &s.Fields[cr.left]
		if r.Literal {
			cr.lit = bound(cr.leftF, r.Right)
			if cr.lit == nil {
				return nil, fmt.Errorf("$.x-rules[%d]: %q does not read as a %s", i, r.Right, cr.leftF.Type)
			}
		} else if cr.right = idx(r.Right); cr.right < 0 {
			return nil, fmt.Errorf("$.x-rules[%d]: %q is not among the fields", i, r.Right)
		}
		rules = append(rules, cr)
	}
	words := map[string]string{"=": "must equal", "!=": "must differ from", "<": "must be before", "<=": "must be at most",
		">": "must be after", ">=": "must be at least"}
	return func(_ context.Context, row reflect.Value) error {
		var errs rows.FieldErrors
		for _, cr := range rules {
			l, ok := value(row.Field(cr.left))
			if !ok {
				continue
			}
			r := cr.lit
			name := cr.rule.Right
			if !cr.rule.Literal {
				if r, ok = value(row.Field(cr.right)); !ok {
					continue
				}
			}
			cmp := compare(l, r)
			var pass bool
			switch cr.rule.Op {
			case "=":
				pass = cmp == 0
			case "!=":
				pass = cmp != 0
			case "<":
				pass = cmp < 0
			case "<=":
				pass = cmp <= 0
			case ">":
				pass = cmp > 0
			case ">=":
				pass = cmp >= 0
			}
			if !pass {
				w := words[cr.rule.Op]
				if cr.leftF.Type != TypeDate && cr.leftF.Type != TypeDatetime {
					w = map[string]string{"<": "must be less than", ">": "must be greater than"}[cr.rule.Op]
					if w == "" {
						w = words[cr.rule.Op]
					}
				}
				errs = append(errs, rows.FieldError{Field: c.goNames[cr.left], Code: CodeRule, Message: w + " " + name})
			}
		}
		if len(errs) == 0 {
			return nil
		}
		return errs
	}, nil
}

// GoName returns the row type's Go field name of schema field i.
func (c *Compiled) GoName(i int) string { return c.goNames[i] }

// Key returns a bound row's primary key: the key fields' values, joined
// by a separator no text cell holds; "" without a primary key.
func (c *Compiled) Key(row reflect.Value) string {
	if len(c.keyIdx) == 0 {
		return ""
	}
	for row.Kind() == reflect.Pointer {
		row = row.Elem()
	}
	parts := make([]string, len(c.keyIdx))
	for i, fi := range c.keyIdx {
		v, _ := value(row.Field(fi))
		parts[i] = Canonical(v)
	}
	return strings.Join(parts, "\x1f")
}

// KeyFields are the positions of the primary key's fields.
func (c *Compiled) KeyFields() []int { return slices.Clone(c.keyIdx) }

// Canonical writes a value the way the schema's literals are written: ISO
// dates, a decimal point, true/false.
func Canonical(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case rows.Decimal:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 && x.Location() == time.UTC {
			return x.Format("2006-01-02")
		}
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// Value returns field i of a bound row and whether the file gave it.
func (c *Compiled) Value(row reflect.Value, i int) (any, bool) {
	for row.Kind() == reflect.Pointer {
		row = row.Elem()
	}
	return value(row.Field(i))
}

// Set sets field i of a row (a struct value of Type, addressable) from a
// value as a database writes it as text: ISO dates and date-times (also
// PostgreSQL's "2025-06-01 10:00:00+00"), a decimal point, true/false or
// 1/0. An empty text leaves the field unset.
func (c *Compiled) Set(row reflect.Value, i int, text string) error {
	for row.Kind() == reflect.Pointer {
		row = row.Elem()
	}
	if text == "" {
		return nil
	}
	f := c.Schema.Fields[i]
	var v any
	var err error
	switch f.Type {
	case TypeBoolean:
		switch strings.ToLower(text) {
		case "1", "t", "true":
			v = true
		case "0", "f", "false":
			v = false
		default:
			err = fmt.Errorf("%q is not a boolean", text)
		}
	case TypeDate, TypeDatetime:
		for _, l := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07", "2006-01-02 15:04:05.999999999-07:00",
			"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
			var t time.Time
			if t, err = time.Parse(l, text); err == nil {
				v = t.UTC()
				break
			}
		}
	default:
		v, err = parseValue(&f, text)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	field := row.Field(i)
	field.FieldByName("Value").Set(reflect.ValueOf(v))
	field.FieldByName("Set").SetBool(true)
	return nil
}
