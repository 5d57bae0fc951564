// Package schemarecalc makes a recalculation out of a file beside a Table
// Schema: which stored schema kind's table it updates, the columns a
// --where filter may name (package where), and the new values, either
// SQL expressions over the row's columns (set) or a stored function
// called with the row's key (call, PostgreSQL only). It is registered as
// a batch.DynamicRecalc: each matched row is one batch row, written in
// the flush's transaction with the same outcomes, history, re-runs,
// retries and cancel as a Go recalculation.
//
// The expressions are trusted like the schema (whoever may store kinds
// writes them); the filter's values come from users and are always bind
// parameters.
package schemarecalc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rowfate/rowfate/tableschema"
)

// Format is the stored format of a recalculation file
// (batch.KindPutParams.Format).
const Format = "recalc"

// Member is the member that makes a file a recalculation and names it.
const Member = "x-recalc"

// Definition is a parsed recalculation file.
type Definition struct {
	// Name is the recalculation's name (x-recalc).
	Name        string
	Description string
	// Kind is the stored schema kind whose table the recalculation
	// updates: its table, tenant scoping, key and column types.
	Kind string
	// Where are the columns a filter may name.
	Where []string
	// Set are the new values: SQL expressions over the row's columns, by
	// column, in column order.
	Set []Assignment
	// Call is a stored function called with the row's key instead
	// (PostgreSQL): it returns the row's result id, or NULL when the row
	// no longer exists.
	Call string
}

// Assignment is one column's new value.
type Assignment struct {
	Column string
	Expr   string
}

// IsRecalc reports whether data is a recalculation file rather than a
// Table Schema: an object with an x-recalc member.
func IsRecalc(data []byte) bool {
	doc, err := decode(data)
	if err != nil {
		return false
	}
	_, ok := doc[Member]
	return ok
}

var members = []string{Member, "description", "kind", "where", "set", "call"}

// Parse reads a recalculation file (JSON or YAML). Every mistake is
// reported with its JSON path; the error is tableschema.Errors.
func Parse(data []byte, source string) (*Definition, error) {
	fail := func(errs *tableschema.Errors, path, format string, args ...any) {
		*errs = append(*errs, &tableschema.Error{Source: source, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	var errs tableschema.Errors
	doc, err := decode(data)
	if err != nil {
		return nil, tableschema.Errors{{Source: source, Path: "$", Msg: err.Error()}}
	}
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		if !slices.Contains(members, k) {
			fail(&errs, "$."+k, "unknown member; a recalculation's are %s", strings.Join(members, ", "))
		}
	}
	d := &Definition{}
	str := func(name string, required bool) string {
		v, ok := doc[name]
		if !ok {
			if required {
				fail(&errs, "$", "%s is required", name)
			}
			return ""
		}
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			fail(&errs, "$."+name, "must be a non-empty string")
		}
		return s
	}
	d.Name, d.Description, d.Kind, d.Call = str(Member, true), str("description", false), str("kind", true), str("call", false)
	if d.Name != "" && !nameRE.MatchString(d.Name) {
		fail(&errs, "$."+Member, "%q is not a kind name (letters, digits, - and _)", d.Name)
	}
	if d.Call != "" && !callRE.MatchString(d.Call) {
		fail(&errs, "$.call", "%q is not a function name (name or schema.name)", d.Call)
	}
	if v, ok := doc["where"]; ok {
		list, ok := v.([]any)
		if !ok {
			fail(&errs, "$.where", "must be a list of column names")
		}
		for i, c := range list {
			s, ok := c.(string)
			if !ok || s == "" {
				fail(&errs, fmt.Sprintf("$.where[%d]", i), "must be a column name")
				continue
			}
			d.Where = append(d.Where, s)
		}
	}
	if v, ok := doc["set"]; ok {
		obj, ok := v.(map[string]any)
		if !ok || len(obj) == 0 {
			fail(&errs, "$.set", "must be an object of column: SQL expression")
		}
		for _, col := range slices.Sorted(maps.Keys(obj)) {
			expr, ok := obj[col].(string)
			if !ok || strings.TrimSpace(expr) == "" {
				fail(&errs, "$.set."+col, "must be a SQL expression, as a string")
				continue
			}
			if err := checkExpr(expr); err != nil {
				fail(&errs, "$.set."+col, "%v", err)
				continue
			}
			d.Set = append(d.Set, Assignment{Column: col, Expr: expr})
		}
	}
	_, hasSet := doc["set"]
	_, hasCall := doc["call"]
	switch {
	case hasSet && hasCall:
		fail(&errs, "$", "set and call exclude each other: say the new values, or the function that computes them")
	case !hasSet && !hasCall:
		fail(&errs, "$", "set or call is required: the new values, or the function that computes them")
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return d, nil
}

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	callRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
)

// checkExpr refuses an expression that would reach past its own
// parentheses in the statement it goes into: a ; or a comment outside a
// quote, a parenthesis or a quote left open. It is a guard against a slip,
// not a sandbox: the expressions are trusted like the schema.
func checkExpr(s string) error {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return fmt.Errorf("the quote %c at %d is never closed", c, i+1)
			}
			i += j + 1
		case '(':
			depth++
		case ')':
			if depth--; depth < 0 {
				return fmt.Errorf("the ) at %d closes nothing", i+1)
			}
		case ';':
			return fmt.Errorf("one expression, without ; (at %d)", i+1)
		case '-', '/':
			if i+1 < len(s) && ((c == '-' && s[i+1] == '-') || (c == '/' && s[i+1] == '*')) {
				return fmt.Errorf("no comments in an expression (at %d)", i+1)
			}
		}
	}
	if depth > 0 {
		return fmt.Errorf("%d ( left open", depth)
	}
	return nil
}

// decode reads a JSON or YAML object.
func decode(data []byte) (map[string]any, error) {
	trimmed := bytes.TrimSpace(data)
	var v any
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if err := json.Unmarshal(trimmed, &v); err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
	} else if err := yaml.Unmarshal(trimmed, &v); err != nil {
		return nil, fmt.Errorf("neither JSON (which starts with {) nor valid YAML: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	return obj, nil
}

// Bind checks a definition against the schema kind it names: its where
// and set columns exist, the key is not set, the key exists (the
// recalculation finds rows by it). The error is tableschema.Errors.
func Bind(d *Definition, s *tableschema.Schema, source string) error {
	var errs tableschema.Errors
	fail := func(path, format string, args ...any) {
		errs = append(errs, &tableschema.Error{Source: source, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if len(s.PrimaryKey) == 0 {
		fail("$.kind", "kind %s has no primaryKey: a recalculation finds each row by its key", s.Name)
	}
	names := fieldNames(s)
	for i, c := range d.Where {
		f := s.Field(c)
		switch {
		case f == nil:
			fail(fmt.Sprintf("$.where[%d]", i), "kind %s has no column %q (columns: %s)", s.Name, c, names)
		case f.Type == tableschema.TypeDatetime:
			fail(fmt.Sprintf("$.where[%d]", i), "%s is a datetime: a filter compares text, numbers, integers, dates and booleans", c)
		}
	}
	for _, a := range d.Set {
		switch {
		case s.Field(a.Column) == nil:
			fail("$.set."+a.Column, "kind %s has no column %q (columns: %s)", s.Name, a.Column, names)
		case slices.Contains(s.PrimaryKey, a.Column):
			fail("$.set."+a.Column, "%s is part of the key (%s), by which each row is found: it cannot be set", a.Column, strings.Join(s.PrimaryKey, ", "))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func fieldNames(s *tableschema.Schema) string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return strings.Join(out, ", ")
}
