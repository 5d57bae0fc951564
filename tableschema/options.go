package tableschema

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// This file reads the field options of the standard's types (a boolean's
// words, a number's separators and bareNumber) and the members Rowfate
// refuses because it does not read them.

// Members of the standard (its version 2) that Rowfate does not read: each
// is refused with what to do instead, never accepted and ignored.
var (
	unreadSchemaMembers = map[string]string{
		"fieldsMatch": "Rowfate matches the file's columns to the fields by name, whatever their order; x-aliases takes other spellings",
		"uniqueKeys":  "declare the unique index on the table, or make the fields the primaryKey",
	}
	unreadFieldMembers = map[string]string{
		"categories":        "list the values in constraints.enum",
		"categoriesOrdered": "list the values in constraints.enum",
		"missingValues":     "a field's own missing values are not read by Rowfate: list them in the schema's missingValues",
	}
	unreadConstraintMembers = map[string]string{
		"exclusiveMinimum": "use minimum with the next value",
		"exclusiveMaximum": "use maximum with the previous value",
		"jsonSchema":       "Rowfate reads no object or array fields",
	}
)

// unread refuses the members of obj that the standard defines and Rowfate
// does not read, saying what to do instead.
func (p *parser) unread(path string, obj map[string]any, members map[string]string) {
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := obj[k]; ok {
			msg := members[k]
			if !strings.HasPrefix(msg, "a field's") {
				msg = "not read by Rowfate: " + msg
			}
			p.fail(path+"."+k, "%s", msg)
		}
	}
}

// missingValues reads the schema's missing values: strings, or (the
// standard's version 2) objects with a value and a label.
func (p *parser) missingValues(path string, v any) []string {
	arr, ok := v.([]any)
	if !ok {
		p.fail(path, "want an array of strings, not %s", jsonType(v))
		return nil
	}
	if len(arr) == 0 {
		// "Providing the empty list [] means that no conversion to null
		// will be done": Rowfate reads an empty cell as missing always.
		p.fail(path, "an empty list would keep empty cells as values, and Rowfate reads an empty cell as missing always: leave missingValues out")
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		ep := fmt.Sprintf("%s[%d]", path, i)
		if obj, ok := e.(map[string]any); ok {
			p.known(ep, obj, []string{"value", "label"})
			if val, ok := obj["value"]; ok {
				e = val
				ep += ".value"
			} else {
				p.fail(ep, "a missing value's object needs a value")
				continue
			}
		}
		if s, ok := p.str(ep, e); ok {
			out = append(out, s)
		}
	}
	return out
}

// The standard's words for a boolean: "trueValues: [ "true", "True",
// "TRUE", "1" ]" and "falseValues: [ "false", "False", "FALSE", "0" ]".
var (
	DefaultTrueValues  = []string{"true", "True", "TRUE", "1"}
	DefaultFalseValues = []string{"false", "False", "FALSE", "0"}
)

// boolValues are a boolean field's words: the declared lists, else the
// standard's.
func boolValues(f Field) (trueValues, falseValues []string) {
	trueValues, falseValues = f.TrueValues, f.FalseValues
	if trueValues == nil {
		trueValues = DefaultTrueValues
	}
	if falseValues == nil {
		falseValues = DefaultFalseValues
	}
	return trueValues, falseValues
}

// booleanOptions reads trueValues and falseValues, a boolean's own.
func (p *parser) booleanOptions(path string, obj map[string]any, f *Field) {
	for _, key := range []string{"trueValues", "falseValues"} {
		v, ok := obj[key]
		if !ok {
			continue
		}
		if f.Type != TypeBoolean {
			p.fail(path+"."+key, "%s is for a boolean, not a %s", key, f.Type)
			continue
		}
		words := p.strings(path+"."+key, v)
		if words == nil {
			words = []string{}
		}
		for i, w := range words {
			if strings.TrimSpace(w) != w || w == "" {
				p.fail(fmt.Sprintf("%s.%s[%d]", path, key, i), "%q: an empty cell is a missing value, and a cell is read without its surrounding spaces", w)
			}
		}
		if key == "trueValues" {
			f.TrueValues = words
		} else {
			f.FalseValues = words
		}
	}
	if f.Type != TypeBoolean {
		return
	}
	tv, fv := boolValues(*f)
	for i, w := range fv {
		if slices.Contains(tv, w) {
			switch {
			case f.FalseValues == nil:
				p.fail(fmt.Sprintf("%s.trueValues[%d]", path, slices.Index(tv, w)), "%q is one of the standard's falseValues: declare falseValues too", w)
			case f.TrueValues == nil:
				p.fail(fmt.Sprintf("%s.falseValues[%d]", path, i), "%q is one of the standard's trueValues: declare trueValues too", w)
			default:
				p.fail(fmt.Sprintf("%s.falseValues[%d]", path, i), "%q is among the trueValues too", w)
			}
		}
	}
}

// numberOptions reads decimalChar, groupChar and bareNumber, which say how
// a number (an integer: groupChar and bareNumber) is written.
func (p *parser) numberOptions(path string, obj map[string]any, f *Field) {
	for _, key := range []string{"decimalChar", "groupChar"} {
		v, ok := obj[key]
		if !ok {
			continue
		}
		switch {
		case key == "decimalChar" && f.Type != TypeNumber:
			p.fail(path+"."+key, "decimalChar is for a number, not a %s", f.Type)
			continue
		case f.Type != TypeNumber && f.Type != TypeInteger:
			p.fail(path+"."+key, "%s is for an integer or a number, not a %s", key, f.Type)
			continue
		}
		c, ok := p.str(path+"."+key, v)
		if !ok || (key == "groupChar" && c == "") {
			continue // "" groups nothing, as no groupChar
		}
		if err := numberChar(c); err != nil {
			p.fail(path+"."+key, "%q: %v", c, err)
			continue
		}
		if key == "decimalChar" {
			f.DecimalChar = c
		} else {
			f.GroupChar = c
		}
	}
	if f.Type == TypeNumber && f.GroupChar != "" && f.GroupChar == f.decimalChar() {
		p.fail(path+".groupChar", "%q is the decimal separator too (decimalChar defaults to \".\"): declare decimalChar", f.GroupChar)
	}
	if v, ok := obj["bareNumber"]; ok {
		if f.Type != TypeNumber && f.Type != TypeInteger {
			p.fail(path+".bareNumber", "bareNumber is for an integer or a number, not a %s", f.Type)
			return
		}
		if _, ok := v.(bool); !ok {
			p.fail(path+".bareNumber", "want true or false, not %s", jsonType(v))
			return
		}
		b := v.(bool)
		f.BareNumber = &b
	}
}

// numberChar says why a decimalChar or groupChar cannot be read: it must
// be one character that no number is written with.
func numberChar(c string) error {
	if utf8.RuneCountInString(c) != 1 {
		return errors.New("want exactly one character")
	}
	r, _ := utf8.DecodeRuneInString(c)
	switch {
	case r >= '0' && r <= '9':
		return errors.New("a digit cannot separate digits")
	case r == '+' || r == '-' || r == 'e' || r == 'E':
		return errors.New("a sign or an exponent's E cannot separate digits")
	}
	return nil
}

// decimalChar is the field's decimal separator: declared, else ".".
func (f *Field) decimalChar() string {
	if f.DecimalChar != "" {
		return f.DecimalChar
	}
	return "."
}
