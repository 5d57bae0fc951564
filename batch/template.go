package batch

import (
	"reflect"
	"slices"
	"strings"

	"github.com/rowfate/rowfate/rows"
)

// TemplateColumns describes a kind's columns for a spreadsheet template:
// name, example cell, whether the column is required, and the fixed values
// of enum columns (a rows.Enum type, or a `validate:"oneof=..."` tag), which
// an XLSX template offers as a dropdown.
func (r *Registry) TemplateColumns(kindName string) ([]rows.TemplateColumn, error) {
	k, err := r.lookup(kindName)
	if err != nil {
		return nil, err
	}
	header, example, err := k.template()
	if err != nil {
		return nil, err
	}
	info := k.info()
	enums := k.enums()
	notes := k.notes()
	cols := make([]rows.TemplateColumn, len(header))
	for i, h := range header {
		cols[i] = rows.TemplateColumn{Name: h, Required: slices.Contains(info.Required, h), Note: notes[h]}
		if i < len(example) {
			cols[i].Example = example[i]
		}
		if i < len(info.Columns) {
			cols[i].Enum = enums[info.Columns[i].Field]
		}
	}
	return cols, nil
}

// enumValues returns, per Go field of T, the fixed values the field takes.
func enumValues(typ reflect.Type) map[string][]string {
	out := map[string][]string{}
	enumType := reflect.TypeFor[rows.Enum]()
	for _, sf := range reflect.VisibleFields(typ) {
		if !sf.IsExported() {
			continue
		}
		t := sf.Type
		if elem, ok := rows.OptionalElem(t); ok {
			t = elem
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Implements(enumType) {
			out[sf.Name] = reflect.Zero(t).Interface().(rows.Enum).Enum()
			continue
		}
		for _, check := range strings.Split(sf.Tag.Get("validate"), ",") {
			if vals, ok := strings.CutPrefix(check, "oneof="); ok {
				out[sf.Name] = strings.Fields(vals)
			}
		}
	}
	return out
}
