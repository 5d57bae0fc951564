// Package validate runs the fixed validation phases of a row. The sequence
// belongs to this package, not to the kind: a kind supplies a struct type
// with tags and, optionally, methods; it cannot reorder or skip a phase.
//
//  1. Bind: the record's cells are converted into the struct's fields
//     (type errors are field errors).
//  2. Declarative: `validate:"..."` tags via go-playground/validator.
//  3. Per field, by convention: a method Validate<Field>(context.Context) error
//     is called for each field that has one (found once per type).
//  4. Cross field: an optional ValidateRow(context.Context) error, which may
//     return rows.FieldErrors to report several fields.
//
// Every phase runs; all errors of a row are collected. A field that already
// failed an earlier phase is not checked again by a later one, so a user sees
// "not a number" once rather than also "is required".
//
// ARCHITECTURE.md at the repository root shows where validation sits in
// the path of a row.
package validate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/go-playground/validator/v10"

	"github.com/rowfate/rowfate/rows"
)

// RowValidator is the cross-field hook a row type may implement.
type RowValidator interface {
	ValidateRow(ctx context.Context) error
}

// Pipeline validates rows of type T. It is safe for concurrent use.
type Pipeline[T any] struct {
	*core
	// perField are the Validate<Field> methods, in field order.
	perField []fieldCheck[T]
}

// core is what every pipeline has, whatever gives it its row type: the
// binder, the validator of the declarative phase and the required columns.
type core struct {
	binder    *rows.Binder
	validator *validator.Validate
	// required lists the columns whose field is tagged required: a file
	// without one of them is rejected as a whole.
	required []string
	// messages word the failures of custom checks, by tag, and codes
	// name them (a custom check's tag is unique; its code is not).
	messages map[string]func(param string) string
	codes    map[string]rows.Code
	// quick answers the declarative phase for the rows that pass it; nil
	// when the row type has a check it does not know.
	quick *quickCheck
}

// RequiredColumns returns the columns a file must have: those whose field
// carries a top-level `required` validate tag.
func (p *core) RequiredColumns() []string { return p.required }

// requires reports whether a validate tag makes its field required:
// validator's required, or a custom check with that code.
func (p *core) requires(tag string) bool {
	if hasTag(tag, "required") {
		return true
	}
	for t, code := range p.codes {
		if code == rows.CodeRequired && hasTag(tag, t) {
			return true
		}
	}
	return false
}

// hasTag reports whether a validate tag lists name at its top level.
func hasTag(tag, name string) bool {
	for _, t := range strings.Split(tag, ",") {
		if t == name {
			return true
		}
	}
	return false
}

type fieldCheck[T any] struct {
	field string
	// call is the method expression (*T).Validate<Field>, found once by
	// reflection and then called directly: a reflect call per field and
	// row would cost several allocations each.
	call func(*T, context.Context) error
}

var ctxType = reflect.TypeFor[context.Context]()
var errType = reflect.TypeFor[error]()

// New inspects T once: its col tags, its validate tags and its
// Validate<Field> methods.
func New[T any]() (*Pipeline[T], error) {
	typ := reflect.TypeFor[T]()
	c, err := newCore(typ, nil, nil)
	if err != nil {
		return nil, err
	}
	p := &Pipeline[T]{core: c}
	ptr := reflect.PointerTo(typ)
	for _, col := range c.binder.Columns() {
		m, ok := ptr.MethodByName("Validate" + col.Field)
		if !ok {
			continue
		}
		mt := m.Type // receiver is the first argument
		if mt.NumIn() != 2 || mt.In(1) != ctxType || mt.NumOut() != 1 || mt.Out(0) != errType {
			return nil, fmt.Errorf("validate: %s.Validate%s must be func(context.Context) error", typ, col.Field)
		}
		call, ok := m.Func.Interface().(func(*T, context.Context) error)
		if !ok {
			return nil, fmt.Errorf("validate: %s.Validate%s must be func(context.Context) error", typ, col.Field)
		}
		p.perField = append(p.perField, fieldCheck[T]{field: col.Field, call: call})
	}
	return p, nil
}

// newCore inspects a struct type: its col tags and validate tags, the
// custom checks those tags may name (tag name to check) included. A
// custom check whose code is "required" stands for validator's own: it
// sees empty values too, and its field's column is a required one.
func newCore(typ reflect.Type, custom map[string]validator.Func, codes map[string]rows.Code) (*core, error) {
	b, err := rows.NewBinder(typ)
	if err != nil {
		return nil, err
	}
	v := validator.New(validator.WithRequiredStructEnabled())
	// Registered before the kind's own checks, so that a kind's "email"
	// still replaces it.
	if err := v.RegisterValidation("email", emailCheck()); err != nil {
		return nil, fmt.Errorf("validate: check email: %w", err)
	}
	for tag, f := range custom {
		if err := v.RegisterValidation(tag, f, codes[tag] == rows.CodeRequired); err != nil {
			return nil, fmt.Errorf("validate: check %q: %w", tag, err)
		}
	}
	// Name fields by their declared column, not their Go name, in
	// everything validator produces (FieldError.Field, Namespace). Run
	// renames once more to the file's spelling through the Mapping.
	v.RegisterTagNameFunc(func(sf reflect.StructField) string {
		if c, ok := b.ColumnOf(sf.Name); ok {
			return c
		}
		return sf.Name
	})
	// validator cannot compare a struct with gte=0; it sees a Decimal as
	// the nearest float64, which is exact enough for a bound in a tag.
	v.RegisterCustomTypeFunc(func(f reflect.Value) any {
		return f.Interface().(rows.Decimal).Float64()
	}, rows.Decimal{})
	// An Optional field is checked as its value when the file gave one,
	// and as a nil pointer (so omitempty and omitnil skip it and required
	// fails) when not. A nil pointer rather than nil: omitnil, which skips
	// what the file did not give but checks 0 and false, needs one.
	if opts := optionalTypes(typ); len(opts) > 0 {
		v.RegisterCustomTypeFunc(func(f reflect.Value) any {
			val, set := f.Interface().(rows.OptionalField).OptionalValue()
			if !set {
				return (*struct{})(nil)
			}
			if d, ok := val.(rows.Decimal); ok {
				return d.Float64()
			}
			return val
		}, opts...)
	}
	c := &core{binder: b, validator: v, codes: codes, quick: compileQuick(typ, custom)}
	// A zero row may well fail validation, which is fine; a malformed tag
	// makes validator panic, and that must surface here, at registration,
	// rather than on the first row.
	if err := guard(func() error { return v.Struct(reflect.New(typ).Interface()) }); err != nil {
		var pe *panicError
		var inv *validator.InvalidValidationError
		if errors.As(err, &pe) || errors.As(err, &inv) {
			return nil, fmt.Errorf("validate: %s: %w", typ, err)
		}
	}
	for _, sf := range reflect.VisibleFields(typ) {
		if err := probeTag(v, sf); err != nil {
			return nil, fmt.Errorf("validate: %s.%s: %w", typ, sf.Name, err)
		}
		if col, ok := b.ColumnOf(sf.Name); ok && c.requires(sf.Tag.Get("validate")) {
			c.required = append(c.required, col)
		}
	}
	return c, nil
}

// optionalTypes returns a zero value of each Optional field type of typ,
// for validator's custom type registration.
func optionalTypes(typ reflect.Type) []any {
	var out []any
	seen := map[reflect.Type]bool{}
	if typ.Kind() != reflect.Struct {
		return nil
	}
	for _, sf := range reflect.VisibleFields(typ) {
		if _, ok := rows.OptionalElem(sf.Type); ok && !seen[sf.Type] {
			seen[sf.Type] = true
			out = append(out, reflect.Zero(sf.Type).Interface())
		}
	}
	return out
}

// probeTag runs each check of a field's validate tag on its own against a
// zero value of the field. The zero row New validates only reaches the
// checks a zero value gets to: "required" or "omitempty" in front of a check
// with a malformed parameter (gte=abc) would hide it until the first row
// that passes them, and then panic on every such row.
func probeTag(v *validator.Validate, sf reflect.StructField) error {
	tag := sf.Tag.Get("validate")
	if !sf.IsExported() || tag == "" || tag == "-" {
		return nil
	}
	t := sf.Type
	if elem, ok := rows.OptionalElem(t); ok {
		t = elem
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	zero := reflect.Zero(t).Interface()
	if t == reflect.TypeFor[rows.Decimal]() {
		zero = 0.0 // as the custom type function hands it to validator
	}
	for _, check := range strings.Split(tag, ",") {
		if check == "dive" {
			break // what follows applies to the elements, not the field
		}
		for _, alt := range strings.Split(check, "|") {
			if alt == "" {
				continue
			}
			if err := guard(func() error { _ = v.Var(zero, alt); return nil }); err != nil {
				return fmt.Errorf("check %q: %w", alt, err)
			}
		}
	}
	return nil
}

// Binder returns the binder of T, for mapping headers.
func (p *core) Binder() *rows.Binder { return p.binder }

// Run takes one record through every phase and returns the bound row and all
// its errors. A panic in a kind's hook becomes a field error of this row.
func (p *Pipeline[T]) Run(ctx context.Context, m *rows.Mapping, rec rows.Record) (T, []rows.FieldError) {
	var t T
	if rec.Unreadable() {
		return t, append([]rows.FieldError(nil), rec.Errors...) // no cells to check
	}
	st := p.begin(m, rec)
	// 1. Bind.
	p.bind(st, m, rec, &t)
	// 2. Declarative.
	p.declare(ctx, st, m, &t)
	// 3. Per field, by convention.
	for _, fc := range p.perField {
		if !st.failed[fc.field] {
			st.hook(guard(func() error { return fc.call(&t, ctx) }), rows.FieldError{Field: fc.field, Column: m.ColumnName(fc.field)}, m)
		}
	}
	// 4. Cross field.
	if hook, ok := any(&t).(RowValidator); ok {
		st.hook(guard(func() error { return hook.ValidateRow(ctx) }), rows.FieldError{}, m)
	}
	return t, st.errs
}

// run is one row's way through the phases: its errors so far, and the
// fields that failed, which later phases do not check again.
type run struct {
	row    int64
	errs   []rows.FieldError
	failed map[string]bool
}

func (st *run) note(fe rows.FieldError) {
	fe.Row = st.row
	st.errs = append(st.errs, fe)
	if fe.Field != "" {
		st.failed[fe.Field] = true
	}
}

// hook records what a hook of phase 3 or 4 returned (nil: nothing).
func (st *run) hook(err error, base rows.FieldError, m *rows.Mapping) {
	if err == nil {
		return
	}
	for _, fe := range hookErrors(err, base, m) {
		st.note(fe)
	}
}

// begin starts a row's run with the reader's errors of the record.
func (p *core) begin(m *rows.Mapping, rec rows.Record) *run {
	st := &run{row: rec.Row, errs: append([]rows.FieldError(nil), rec.Errors...), failed: map[string]bool{}}
	// A cell the reader rejected (too long, bad bytes) was emptied: name its
	// field, and don't report it again as, say, required.
	for i, fe := range st.errs {
		if fe.Field == "" && fe.Column != "" {
			for _, c := range p.binder.Columns() {
				if !slices.Contains(m.Missing, c.Name) && m.ColumnName(c.Field) == fe.Column {
					st.errs[i].Field = c.Field
				}
			}
		}
		if st.errs[i].Field != "" {
			st.failed[st.errs[i].Field] = true
		}
	}
	return st
}

// bind is phase 1: the cells into the fields of dst, a pointer to the
// struct.
func (p *core) bind(st *run, m *rows.Mapping, rec rows.Record, dst any) {
	for _, fe := range m.Bind(rec.Row, rec.Values, dst) {
		st.note(fe)
	}
}

// declare is phase 2: the validate tags.
func (p *core) declare(ctx context.Context, st *run, m *rows.Mapping, dst any) {
	if p.quick != nil && p.quick.passes(dst) {
		return
	}
	err := guard(func() error { return p.validator.StructCtx(ctx, dst) })
	if err == nil {
		return
	}
	var ves validator.ValidationErrors
	if !errors.As(err, &ves) {
		st.note(rows.FieldError{Code: rows.CodeInvalid, Message: err.Error()})
		return
	}
	for _, ve := range ves {
		field := ve.StructField()
		if st.failed[field] {
			continue
		}
		msg := ""
		if f := p.messages[ve.Tag()]; f != nil {
			msg = f(ve.Param())
		} else {
			msg = message(ve, m)
		}
		code := rows.Code(ve.Tag())
		if c, ok := p.codes[ve.Tag()]; ok {
			code = c
		}
		st.note(rows.FieldError{Field: field, Column: m.ColumnName(field), Code: code, Message: msg})
	}
}

// panicError marks an error recovered from a panic in a kind's code.
type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprintf("validation panicked: %v", e.v) }

// guard runs f and turns a panic into an error, so that one row's bad data
// hitting a bug in a kind's hook costs that row, not the batch.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{v: r}
		}
	}()
	return f()
}

// hookErrors turns what a hook returned into field errors. base carries the
// field the hook was called for, if any.
func hookErrors(err error, base rows.FieldError, m *rows.Mapping) []rows.FieldError {
	var pe *panicError
	if errors.As(err, &pe) {
		base.Code, base.Message = rows.CodePanic, pe.Error()
		return []rows.FieldError{base}
	}
	var many rows.FieldErrors
	if errors.As(err, &many) {
		out := make([]rows.FieldError, 0, len(many))
		for _, fe := range many {
			out = append(out, fill(fe, base, m))
		}
		return out
	}
	var one *rows.FieldError
	if errors.As(err, &one) {
		return []rows.FieldError{fill(*one, base, m)}
	}
	base.Code, base.Message = rows.CodeInvalid, err.Error()
	return []rows.FieldError{base}
}

func fill(fe, base rows.FieldError, m *rows.Mapping) rows.FieldError {
	if fe.Field == "" {
		fe.Field = base.Field
	}
	if fe.Column == "" && fe.Field != "" {
		fe.Column = m.ColumnName(fe.Field)
	}
	if fe.Code == "" {
		fe.Code = rows.CodeInvalid
	}
	return fe
}

// fieldParamTags are the validator tags whose parameter names other Go
// fields; a message names those fields by their column, as the file
// spells it.
var fieldParamTags = map[string]string{
	"eqfield": "must equal %s", "nefield": "must differ from %s",
	"gtfield": "must be greater than %s", "gtefield": "must be at least %s",
	"ltfield": "must be less than %s", "ltefield": "must be at most %s",
	"required_with": "is required when %s is given", "required_with_all": "is required when %s are given",
	"required_without": "is required when %s is empty", "required_without_all": "is required when %s are empty",
	"excluded_with": "must be empty when %s is given", "excluded_without": "must be empty when %s is empty",
}

// message renders a validator error in words a spreadsheet user reads.
func message(ve validator.FieldError, m *rows.Mapping) string {
	p := ve.Param()
	if form, ok := fieldParamTags[ve.Tag()]; ok {
		names := strings.Fields(p)
		for i, n := range names {
			if c := m.ColumnName(n); c != "" {
				names[i] = c
			}
		}
		return fmt.Sprintf(form, strings.Join(names, ", "))
	}
	switch ve.Tag() {
	case "required":
		return "is required"
	case "email":
		return "must be a valid email"
	case "gte":
		return "must be ≥ " + p
	case "gt":
		return "must be > " + p
	case "lte":
		return "must be ≤ " + p
	case "lt":
		return "must be < " + p
	case "min":
		return "must be at least " + p + lengthUnit(ve)
	case "max":
		return "must be at most " + p + lengthUnit(ve)
	case "len":
		return "must be exactly " + p + lengthUnit(ve)
	case "oneof":
		return "must be one of " + strings.Join(strings.Fields(p), ", ")
	case "url":
		return "must be a valid URL"
	case "iso3166_1_alpha2":
		if s, ok := ve.Value().(string); ok && s != "" {
			return fmt.Sprintf("%q is not a country code: write the two-letter ISO 3166-1 code, such as DE or US", s)
		}
		return "must be a two-letter country code (ISO 3166-1)"
	}
	if p != "" {
		return fmt.Sprintf("failed the %s=%s check", ve.Tag(), p)
	}
	return fmt.Sprintf("failed the %s check", ve.Tag())
}

func lengthUnit(ve validator.FieldError) string {
	if ve.Kind() == reflect.String {
		return " characters"
	}
	return ""
}
