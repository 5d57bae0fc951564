package validate

import (
	"context"

	"fmt"
	"reflect"

	"github.com/go-playground/validator/v10"

	"github.com/rowfate/rowfate/rows"
)

// Dynamic validates rows of a struct type built at run time
// (reflect.StructOf), for kinds that are described by data, such as a
// Table Schema file, rather than by Go code. It runs the same four phases
// in the same order as Pipeline: a kind fills them in through
// DynamicOptions, it cannot reorder or skip one. It is safe for concurrent
// use.
type Dynamic struct {
	*core
	typ   reflect.Type
	field []dynamicCheck
	row   func(ctx context.Context, row reflect.Value) error
}

type dynamicCheck struct {
	field string
	index int
	call  func(ctx context.Context, v reflect.Value) error
}

// DynamicOptions fill in a Dynamic pipeline's phases.
type DynamicOptions struct {
	// Checks are custom checks the validate tags may name (phase 2), by
	// tag: a schema's pattern or enum, whose parameters validator's own
	// tags cannot carry. A check whose code (Codes) is required stands for
	// validator's own required (which refuses 0 and false): it is called
	// for empty values too, and its field's column is one the file must
	// have.
	Checks map[string]validator.Func
	// Messages word a custom check's failure for a person, by tag, from
	// the tag's parameter. Without one the message names the check.
	Messages map[string]func(param string) string
	// Codes are the row error codes of custom checks, by tag (several
	// tags may share one: every pattern check is "pattern"). Without one
	// the code is the tag.
	Codes map[string]rows.Code
	// FieldChecks are phase 3: a check per Go field name, called with the
	// field's value when the earlier phases passed it.
	FieldChecks map[string]func(ctx context.Context, v reflect.Value) error
	// RowCheck is phase 4, the cross-field hook, called with the bound row
	// (the struct). It may return rows.FieldErrors to report several
	// fields.
	RowCheck func(ctx context.Context, row reflect.Value) error
}

// NewDynamic inspects typ, a struct type with col and validate tags, once.
func NewDynamic(typ reflect.Type, o DynamicOptions) (*Dynamic, error) {
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("validate: %s is not a struct type", typ)
	}
	c, err := newCore(typ, o.Checks, o.Codes)
	if err != nil {
		return nil, err
	}
	c.messages = o.Messages
	d := &Dynamic{core: c, typ: typ, row: o.RowCheck}
	for _, col := range c.binder.Columns() {
		f, ok := o.FieldChecks[col.Field]
		if !ok {
			continue
		}
		sf, _ := typ.FieldByName(col.Field)
		d.field = append(d.field, dynamicCheck{field: col.Field, index: sf.Index[0], call: f})
	}
	for name := range o.FieldChecks {
		if _, ok := c.binder.ColumnOf(name); !ok {
			return nil, fmt.Errorf("validate: a field check for %q, which %s has no column for", name, typ)
		}
	}
	return d, nil
}

// Type returns the row type.
func (d *Dynamic) Type() reflect.Type { return d.typ }

// Run takes one record through every phase and returns the bound row (a
// pointer to a new struct) and all its errors.
func (d *Dynamic) Run(ctx context.Context, m *rows.Mapping, rec rows.Record) (reflect.Value, []rows.FieldError) {
	ptr := reflect.New(d.typ)
	if rec.Unreadable() {
		return ptr, append([]rows.FieldError(nil), rec.Errors...) // no cells to check
	}
	st := d.begin(m, rec)
	// 1. Bind.
	d.bind(st, m, rec, ptr.Interface())
	// 2. Declarative.
	d.declare(ctx, st, m, ptr.Interface())
	// 3. Per field.
	row := ptr.Elem()
	for _, fc := range d.field {
		if !st.failed[fc.field] {
			st.hook(guard(func() error { return fc.call(ctx, row.Field(fc.index)) }), rows.FieldError{Field: fc.field, Column: m.ColumnName(fc.field)}, m)
		}
	}
	// 4. Cross field, unless a field already failed: its value is not
	// what the file meant, and a comparison with it would only add noise.
	if d.row != nil && len(st.failed) == 0 {
		st.hook(guard(func() error { return d.row(ctx, row) }), rows.FieldError{}, m)
	}
	return ptr, st.errs
}

// CheckTag checks a validate tag (validator/v10 syntax) for a field of
// type t without a struct around it: a malformed check (gte=abc, an
// unknown tag) is an error naming it.
func CheckTag(t reflect.Type, tag string) error {
	v := validator.New(validator.WithRequiredStructEnabled())
	return probeTag(v, reflect.StructField{Name: "X", Type: t, Tag: reflect.StructTag(`validate:"` + tag + `"`)})
}
