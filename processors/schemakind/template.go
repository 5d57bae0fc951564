package schemakind

import (
	"fmt"
	"strings"

	"github.com/rowfate/rowfate/tableschema"
)

// templateHelp is what a template says of a schema's columns: the fixed
// values of enum fields (a dropdown) and, per column, a note with what
// the column takes (the header cell's comment), as a Go kind's template
// says of its tags.
func templateHelp(s *tableschema.Schema) (enums map[string][]string, notes map[string]string) {
	enums, notes = map[string][]string{}, map[string]string{}
	for _, f := range s.Fields {
		if len(f.Constraints.Enum) > 0 {
			enums[f.Name] = f.Constraints.Enum
		}
		if n := fieldNote(f); n != "" {
			notes[f.Name] = n
		}
	}
	return enums, notes
}

// fieldNote is a field's note: its title or description, its type and
// format, and its constraints, in sentences.
func fieldNote(f tableschema.Field) string {
	var parts []string
	for _, t := range []string{f.Title, f.Description} {
		if t = strings.TrimSpace(t); t != "" {
			parts = append(parts, strings.TrimSuffix(t, ".")+".")
		}
	}
	switch f.Type {
	case tableschema.TypeInteger:
		parts = append(parts, "A whole number.")
	case tableschema.TypeNumber:
		parts = append(parts, "A number.")
	case tableschema.TypeBoolean:
		if len(f.TrueValues) > 0 || len(f.FalseValues) > 0 {
			parts = append(parts, fmt.Sprintf("Yes: %s; no: %s.", strings.Join(f.TrueValues, ", "), strings.Join(f.FalseValues, ", ")))
		} else {
			parts = append(parts, "true or false.")
		}
	case tableschema.TypeDate, tableschema.TypeDatetime:
		what := map[string]string{tableschema.TypeDate: "A date", tableschema.TypeDatetime: "A date and time"}[f.Type]
		switch f.Format {
		case "default", "":
			parts = append(parts, what+map[string]string{tableschema.TypeDate: ", YYYY-MM-DD.", tableschema.TypeDatetime: ", YYYY-MM-DDThh:mm:ssZ."}[f.Type])
		case "any":
			parts = append(parts, what+".")
		default:
			parts = append(parts, what+", written "+f.Format+".")
		}
	case tableschema.TypeString:
		switch f.Format {
		case "email":
			parts = append(parts, "An email address.")
		case "uri":
			parts = append(parts, "A URL.")
		case "uuid":
			parts = append(parts, "A UUID.")
		}
	}
	c := f.Constraints
	switch {
	case c.Minimum != "" && c.Maximum != "":
		parts = append(parts, fmt.Sprintf("From %s to %s.", c.Minimum, c.Maximum))
	case c.Minimum != "":
		parts = append(parts, fmt.Sprintf("At least %s.", c.Minimum))
	case c.Maximum != "":
		parts = append(parts, fmt.Sprintf("At most %s.", c.Maximum))
	}
	switch {
	case c.MinLength != nil && c.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("%d to %d characters.", *c.MinLength, *c.MaxLength))
	case c.MinLength != nil:
		parts = append(parts, fmt.Sprintf("At least %d characters.", *c.MinLength))
	case c.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("At most %d characters.", *c.MaxLength))
	}
	if c.Pattern != "" {
		parts = append(parts, "Matches the pattern "+c.Pattern+".")
	}
	if c.Unique {
		parts = append(parts, "Unique.")
	}
	return strings.Join(parts, " ")
}
