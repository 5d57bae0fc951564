package rows

import (
	"encoding/json"
	"reflect"
)

// Optional is a field a file may leave out. Set reports whether the file
// gave it a value: false when the file has no such column, or the cell is
// empty. A processor that updates stored data changes only what is Set, so
// a file that does not mention a column never overwrites it with a zero:
//
//	type Customer struct {
//		Email   string                `col:"email" validate:"required,email"`
//		Country rows.Optional[string] `col:"country" validate:"omitempty,iso3166_1_alpha2"`
//	}
//
// Declarative checks see the Value when Set and nothing when not (so
// `omitempty` skips an unset field and `required` fails it).
type Optional[T any] struct {
	Value T
	Set   bool
}

// Some returns an Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{Value: v, Set: true} }

// Get returns the value and whether it is set.
func (o Optional[T]) Get() (T, bool) { return o.Value, o.Set }

// Or returns the value when set, else def.
func (o Optional[T]) Or(def T) T {
	if o.Set {
		return o.Value
	}
	return def
}

// OptionalValue returns the value as an any, and whether it is set: the
// OptionalField interface, which code that handles fields of any type
// (validation, exports) uses to see through an Optional.
func (o Optional[T]) OptionalValue() (any, bool) { return o.Value, o.Set }

// optionalElem returns T, so the binder can convert cells into Value.
func (Optional[T]) optionalElem() reflect.Type { return reflect.TypeFor[T]() }

// IsZero reports whether the value is not set, so that a field tagged
// `json:",omitzero"` is left out of a JSON body when the file did not
// give it: a downstream is not told to clear what the file never
// mentioned.
func (o Optional[T]) IsZero() bool { return !o.Set }

// MarshalJSON writes the value, or null when it is not set.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.Set {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// UnmarshalJSON reads a value (set) or null (not set).
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = Optional[T]{}
		return nil
	}
	o.Set = true
	return json.Unmarshal(b, &o.Value)
}

// OptionalField is implemented by every Optional.
type OptionalField interface {
	OptionalValue() (any, bool)
}

type optionalType interface {
	optionalElem() reflect.Type
}

var optionalIface = reflect.TypeFor[optionalType]()

// OptionalElem returns T when t is an Optional[T].
func OptionalElem(t reflect.Type) (reflect.Type, bool) {
	if !t.Implements(optionalIface) {
		return nil, false
	}
	return reflect.Zero(t).Interface().(optionalType).optionalElem(), true
}
