package batch

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/rowfate/rowfate/rows"
)

// exportColumn is one column of an export: the struct field it comes from
// and how its value becomes a cell.
type exportColumn struct {
	name   string
	field  string
	index  []int
	raw    bool
	layout string // time.Time fields
	encode func(v reflect.Value) (rows.Cell, error)
}

// exportEncoder turns values of a row struct into cells, column by column,
// in the order of its col tags: the inverse of rows.Binder, so that a file
// exported from a type imports back into it.
type exportEncoder struct {
	cols []exportColumn
}

var (
	exportTimeType      = reflect.TypeFor[time.Time]()
	exportDecimalType   = reflect.TypeFor[rows.Decimal]()
	exportMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// newExportEncoder inspects T once. It accepts the field types the binder
// reads; raw columns are those whose col tag has the raw option or that are
// listed in raw.
func newExportEncoder(typ reflect.Type, raw []string) (*exportEncoder, error) {
	b, err := rows.NewBinder(typ)
	if err != nil {
		return nil, err
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	enc := &exportEncoder{}
	for _, c := range b.Columns() {
		sf, ok := typ.FieldByName(c.Field)
		if !ok {
			return nil, fmt.Errorf("export: %s has no field %s", typ, c.Field)
		}
		col := exportColumn{name: c.Name, field: c.Field, index: sf.Index}
		opts := strings.Split(sf.Tag.Get("col"), ",")[1:]
		for _, o := range opts {
			if strings.TrimSpace(o) == "raw" {
				col.raw = true
			}
		}
		for _, r := range raw {
			if rows.NormalizeHeader(r) == rows.NormalizeHeader(c.Name) {
				col.raw = true
			}
		}
		col.layout = rows.DefaultTimeLayouts[0]
		if l := sf.Tag.Get("layout"); l != "" {
			col.layout = strings.Split(l, "|")[0]
		}
		if col.encode, err = exportCellFunc(sf.Type, col.layout); err != nil {
			return nil, fmt.Errorf("export: %s.%s: %w", typ, c.Field, err)
		}
		enc.cols = append(enc.cols, col)
	}
	for _, r := range raw {
		found := false
		for _, c := range enc.cols {
			found = found || rows.NormalizeHeader(r) == rows.NormalizeHeader(c.name)
		}
		if !found {
			return nil, fmt.Errorf("export: RawColumns names %q, which %s has no column for", r, typ)
		}
	}
	return enc, nil
}

func (enc *exportEncoder) header() []string {
	out := make([]string, len(enc.cols))
	for i, c := range enc.cols {
		out[i] = c.name
	}
	return out
}

// encode fills cells from row (a struct value) and returns the field
// errors of values no file can hold (NaN, a failing MarshalText).
func (enc *exportEncoder) encode(row reflect.Value, cells []rows.Cell) []rows.FieldError {
	var errs []rows.FieldError
	for i, c := range enc.cols {
		fv := row.FieldByIndex(c.index)
		cell, err := c.encode(fv)
		if err != nil {
			errs = append(errs, rows.FieldError{Column: c.name, Field: c.field, Code: rows.CodeInvalid, Message: err.Error()})
			var ce *exportCellError
			if errors.As(err, &ce) {
				errs[len(errs)-1].Code = ce.code
			}
		}
		cell.Raw = c.raw
		cells[i] = cell
	}
	return errs
}

type exportCellError struct {
	code rows.Code
	msg  string
}

func (e *exportCellError) Error() string { return e.msg }

// hasClock reports whether a Go time layout shows a time of day.
func hasClock(layout string) bool {
	for _, tok := range []string{"15", "03", "04", "05", "PM", "pm"} {
		if strings.Contains(strings.ReplaceAll(layout, "2006", ""), tok) {
			return true
		}
	}
	return false
}

// exportCellFunc returns the function that renders a field of type t.
func exportCellFunc(t reflect.Type, layout string) (func(reflect.Value) (rows.Cell, error), error) {
	if elem, ok := rows.OptionalElem(t); ok {
		inner, err := exportCellFunc(elem, layout)
		if err != nil {
			return nil, err
		}
		// An unset Optional is an empty cell: the file says nothing of it.
		return func(v reflect.Value) (rows.Cell, error) {
			if !v.Field(1).Bool() {
				c, _ := inner(reflect.Zero(elem))
				return rows.Cell{Type: c.Type}, nil
			}
			return inner(v.Field(0))
		}, nil
	}
	if t.Kind() == reflect.Pointer {
		inner, err := exportCellFunc(t.Elem(), layout)
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value) (rows.Cell, error) {
			if v.IsNil() {
				return rows.Cell{}, nil
			}
			return inner(v.Elem())
		}, nil
	}
	switch {
	case t == exportTimeType:
		typ := rows.CellDate
		if hasClock(layout) {
			typ = rows.CellDateTime
		}
		return func(v reflect.Value) (rows.Cell, error) {
			tm := v.Interface().(time.Time)
			if tm.IsZero() {
				return rows.Cell{Type: typ}, nil
			}
			return rows.Cell{Type: typ, Text: tm.Format(layout), Time: tm}, nil
		}, nil
	case t == exportDecimalType:
		return func(v reflect.Value) (rows.Cell, error) {
			return rows.Cell{Type: rows.CellNumber, Text: v.Interface().(rows.Decimal).String()}, nil
		}, nil
	case t.Implements(exportMarshalerType) && t.Kind() != reflect.String:
		return func(v reflect.Value) (rows.Cell, error) {
			b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
			if err != nil {
				return rows.Cell{}, &exportCellError{rows.CodeInvalid, fmt.Sprintf("cannot be written: %v", err)}
			}
			return rows.Cell{Text: string(b)}, nil
		}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return func(v reflect.Value) (rows.Cell, error) { return rows.Cell{Text: v.String()}, nil }, nil
	case reflect.Bool:
		return func(v reflect.Value) (rows.Cell, error) {
			return rows.Cell{Type: rows.CellBool, Text: strconv.FormatBool(v.Bool())}, nil
		}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(v reflect.Value) (rows.Cell, error) {
			return rows.Cell{Type: rows.CellNumber, Text: strconv.FormatInt(v.Int(), 10)}, nil
		}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(v reflect.Value) (rows.Cell, error) {
			return rows.Cell{Type: rows.CellNumber, Text: strconv.FormatUint(v.Uint(), 10)}, nil
		}, nil
	case reflect.Float32, reflect.Float64:
		bits := t.Bits()
		return func(v reflect.Value) (rows.Cell, error) {
			f := v.Float()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return rows.Cell{Type: rows.CellNumber}, &exportCellError{rows.CodeNotANumber, fmt.Sprintf("%v is not a number a file can hold", f)}
			}
			return rows.Cell{Type: rows.CellNumber, Text: strconv.FormatFloat(f, 'f', -1, bits)}, nil
		}, nil
	}
	return nil, fmt.Errorf("unsupported field type %s", t)
}
