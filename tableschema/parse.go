package tableschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/validate"
	"go.yaml.in/yaml/v3"
)

// parser collects a schema's mistakes.
type parser struct {
	source string
	errs   Errors
}

func (p *parser) fail(path, format string, args ...any) {
	p.errs = append(p.errs, &Error{Source: p.source, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Parse reads a schema from JSON or YAML (decided by its first
// non-space byte: JSON starts with {). source names it in errors. Every
// mistake is reported, each with its JSON path; the error is Errors.
func Parse(data []byte, source string) (*Schema, error) {
	p := &parser{source: source}
	doc, err := decode(data)
	if err != nil {
		return nil, Errors{{Source: source, Path: "$", Msg: err.Error()}}
	}
	s := p.schema(doc)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	s.Text = string(data)
	return s, nil
}

// decode reads JSON (numbers kept as written) or YAML into plain values.
func decode(data []byte) (any, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("the schema is empty")
	}
	if trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line := 1 + bytes.Count(trimmed[:min(int(se.Offset), len(trimmed))], []byte("\n"))
				return nil, fmt.Errorf("not valid JSON: line %d: %v", line, err)
			}
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		if dec.More() {
			return nil, errors.New("not valid JSON: more than one value")
		}
		return v, nil
	}
	var v any
	if err := yaml.Unmarshal(trimmed, &v); err != nil {
		return nil, fmt.Errorf("neither JSON (which starts with {) nor valid YAML: %v", err)
	}
	return normalize(v), nil
}

// normalize turns YAML's values into JSON's: string keys, numbers as
// json.Number.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	case int:
		return json.Number(strconv.Itoa(x))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case uint64:
		return json.Number(strconv.FormatUint(x, 10))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'f', -1, 64))
	}
	return v
}

// known checks an object's members against a list, suggesting the near
// spelling of an unknown one.
func (p *parser) known(path string, obj map[string]any, members []string) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(members, k) {
			continue
		}
		hint := ""
		for _, m := range members {
			if strings.EqualFold(m, k) || editDistance(strings.ToLower(m), strings.ToLower(k)) <= 2 {
				hint = fmt.Sprintf(" (did you mean %q?)", m)
				break
			}
		}
		if strings.HasPrefix(k, "x-") {
			p.fail(path+"."+k, "unknown extension member%s; Rowfate's are %s", hint, strings.Join(xMembers(members), ", "))
			continue
		}
		p.fail(path+"."+k, "unknown member%s", hint)
	}
}

func xMembers(members []string) []string {
	var out []string
	for _, m := range members {
		if strings.HasPrefix(m, "x-") {
			out = append(out, m)
		}
	}
	return out
}

func (p *parser) str(path string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		p.fail(path, "want a string, not %s", jsonType(v))
	}
	return s, ok
}

func (p *parser) boolean(path string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		p.fail(path, "want true or false, not %s", jsonType(v))
	}
	return b
}

func (p *parser) strings(path string, v any) []string {
	arr, ok := v.([]any)
	if !ok {
		p.fail(path, "want an array of strings, not %s", jsonType(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		if s, ok := p.str(fmt.Sprintf("%s[%d]", path, i), e); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) integer(path string, v any) (int, bool) {
	n, ok := v.(json.Number)
	if ok {
		if i, err := strconv.Atoi(n.String()); err == nil && i >= 0 {
			return i, true
		}
	}
	p.fail(path, "want a whole number, 0 or more, not %s", jsonValue(v))
	return 0, false
}

// scalar is a constraint bound or an enum value as text: a string or a
// number as written.
func (p *parser) scalar(path string, v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	p.fail(path, "want a string or a number, not %s", jsonType(v))
	return "", false
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func jsonValue(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return jsonType(v)
}

// schema reads the top-level object.
func (p *parser) schema(doc any) *Schema {
	obj, ok := doc.(map[string]any)
	if !ok {
		p.fail("$", "a schema is an object with fields, not %s", jsonType(doc))
		return nil
	}
	p.known("$", obj, schemaMembers)
	s := &Schema{Tenant: true, MissingValues: []string{""}}
	if v, ok := obj["x-name"]; ok {
		s.Name, _ = p.str("$.x-name", v)
	}
	if v, ok := obj["title"]; ok {
		s.Title, _ = p.str("$.title", v)
	}
	if v, ok := obj["description"]; ok {
		s.Description, _ = p.str("$.description", v)
	}
	if !p.fields(obj, s) {
		return s
	}
	if v, ok := obj["missingValues"]; ok {
		s.MissingValues = p.missingValues("$.missingValues", v)
	}
	p.unread("$", obj, unreadSchemaMembers)
	p.primaryKey(obj, s)
	if v, ok := obj["foreignKeys"]; ok {
		if arr, _ := v.([]any); len(arr) > 0 {
			p.fail("$.foreignKeys", "foreign keys are not checked by Rowfate; declare them on the table and leave them out here")
		}
	}
	p.extensions(obj, s)
	if s.Name == "" {
		s.Name = strings.ToLower(s.Table[strings.LastIndex(s.Table, ".")+1:])
	}
	if !kindName.MatchString(s.Name) {
		p.fail("$.x-name", "%q is not a kind name: lower-case letters, digits, - and _", s.Name)
	}
	return s
}

// fields reads the schema's fields and their aliases into s; false when
// there are none to read.
func (p *parser) fields(obj map[string]any, s *Schema) bool {
	raw, ok := obj["fields"]
	if !ok {
		p.fail("$", "no fields: a schema lists its columns in fields")
		return false
	}
	arr, ok := raw.([]any)
	if !ok || len(arr) == 0 {
		p.fail("$.fields", "want a non-empty array of fields, not %s", jsonType(raw))
		return false
	}
	names := map[string]int{}
	for i, f := range arr {
		path := fmt.Sprintf("$.fields[%d]", i)
		fd := p.field(path, f)
		if fd == nil {
			continue
		}
		key := rows.NormalizeHeader(fd.Name)
		if j, dup := names[key]; dup {
			p.fail(path+".name", "%q is the name of $.fields[%d] already", fd.Name, j)
		}
		names[key] = i
		s.Fields = append(s.Fields, *fd)
	}
	// An alias is another spelling of its own field's header; naming another
	// field's header or alias would leave the reader to guess which column a
	// file means.
	aliases := map[string]int{}
	for i, fd := range s.Fields {
		for j, a := range fd.Aliases {
			key := rows.NormalizeHeader(a)
			if k, ok := names[key]; ok && k != i {
				p.fail(fmt.Sprintf("$.fields[%d].x-aliases[%d]", i, j), "%q is the name of $.fields[%d]", a, k)
			} else if k, ok := aliases[key]; ok && k != i {
				p.fail(fmt.Sprintf("$.fields[%d].x-aliases[%d]", i, j), "%q is an alias of $.fields[%d] already", a, k)
			}
			aliases[key] = i
		}
	}
	return true
}

// primaryKey reads the primary key, a field name or an array of them.
func (p *parser) primaryKey(obj map[string]any, s *Schema) {
	if v, ok := obj["primaryKey"]; ok {
		switch x := v.(type) {
		case string:
			s.PrimaryKey = []string{x}
			p.keyField("$.primaryKey", x, s)
		case []any:
			s.PrimaryKey = p.strings("$.primaryKey", v)
			for i, k := range s.PrimaryKey {
				p.keyField(fmt.Sprintf("$.primaryKey[%d]", i), k, s)
			}
			if len(s.PrimaryKey) == 0 {
				p.fail("$.primaryKey", "an empty key: leave primaryKey out instead")
			}
		default:
			p.fail("$.primaryKey", "want a field name or an array of them, not %s", jsonType(v))
		}
	}
}

// extensions reads Rowfate's own members (x-table, x-tenant, x-mode,
// x-date-order, x-decimal-comma, x-chunk-size, x-max-invalid,
// x-max-failed, x-rules).
func (p *parser) extensions(obj map[string]any, s *Schema) {
	if v, ok := obj["x-table"]; ok {
		if t, ok := p.str("$.x-table", v); ok {
			if !tableName.MatchString(t) {
				p.fail("$.x-table", "%q is not a table name: letters, digits and _, optionally schema.table", t)
			}
			s.Table = t
		}
	} else {
		p.fail("$", "no x-table: name the table the rows go into")
	}
	if v, ok := obj["x-tenant"]; ok {
		s.Tenant = p.boolean("$.x-tenant", v)
	}
	s.Mode = ModeUpsert
	if len(s.PrimaryKey) == 0 {
		s.Mode = ModeInsert
	}
	if v, ok := obj["x-mode"]; ok {
		if m, ok := p.str("$.x-mode", v); ok {
			switch Mode(m) {
			case ModeInsert:
				s.Mode = ModeInsert
			case ModeUpsert, ModeUpdate:
				s.Mode = Mode(m)
				if len(s.PrimaryKey) == 0 {
					p.fail("$.x-mode", "%s finds rows by their primary key: the schema has none", m)
				}
			default:
				p.fail("$.x-mode", "%q: want insert, upsert or update", m)
			}
		}
	}
	if v, ok := obj["x-date-order"]; ok {
		if d, ok := p.str("$.x-date-order", v); ok {
			order, err := rows.ParseDateOrder(d)
			if err != nil {
				p.fail("$.x-date-order", "%v", err)
			}
			s.DateOrder = order
		}
	}
	if v, ok := obj["x-decimal-comma"]; ok {
		s.DecimalComma = p.boolean("$.x-decimal-comma", v)
	}
	if v, ok := obj["x-chunk-size"]; ok {
		if n, ok := p.integer("$.x-chunk-size", v); ok {
			if n < 1 || n > 100_000 {
				p.fail("$.x-chunk-size", "%d: want 1 to 100000", n)
			}
			s.ChunkSize = n
		}
	}
	s.MaxInvalid = p.threshold("$.x-max-invalid", obj["x-max-invalid"])
	s.MaxFailed = p.threshold("$.x-max-failed", obj["x-max-failed"])
	if v, ok := obj["x-rules"]; ok {
		for i, text := range p.strings("$.x-rules", v) {
			if r, ok := p.rule(fmt.Sprintf("$.x-rules[%d]", i), text, s); ok {
				s.Rules = append(s.Rules, r)
			}
		}
	}
}

// threshold reads a bound on bad rows: a count (10 or "10") or a
// percentage ("5%"); nil (absent) is none.
func (p *parser) threshold(path string, v any) batchtype.Threshold {
	var s string
	switch v := v.(type) {
	case nil:
		return batchtype.Threshold{}
	case string:
		s = v
	case json.Number:
		s = v.String()
	default:
		p.fail(path, "want a count (10) or a percentage (\"5%%\"), not %s", jsonType(v))
		return batchtype.Threshold{}
	}
	t, err := batchtype.ParseThreshold(s)
	if err != nil {
		p.fail(path, "%v", err)
	}
	return t
}

// keyField checks a primary key's field and makes it required.
func (p *parser) keyField(path, name string, s *Schema) {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			s.Fields[i].Constraints.Required = true
			return
		}
	}
	p.fail(path, "%q is not among the fields", name)
}

// field reads one field.
func (p *parser) field(path string, v any) *Field {
	obj, ok := v.(map[string]any)
	if !ok {
		p.fail(path, "a field is an object with a name, not %s", jsonType(v))
		return nil
	}
	p.known(path, obj, fieldMembers)
	f := &Field{Type: TypeString, Format: "default"}
	if n, ok := obj["name"]; ok {
		f.Name, _ = p.str(path+".name", n)
	}
	if f.Name == "" {
		p.fail(path, "a field needs a name")
		return nil
	}
	if !colName.MatchString(f.Name) {
		p.fail(path+".name", "%q cannot be a column of the table: letters, digits and _ only, not starting with a digit (x-aliases takes the file's other spellings)", f.Name)
	} else if len(f.Name) > maxColumnBytes {
		p.fail(path+".name", "%q is longer than the %d bytes a PostgreSQL column name keeps", f.Name, maxColumnBytes)
	}
	if strings.EqualFold(f.Name, "tenant_id") {
		p.fail(path+".name", "tenant_id is the table's tenant column, which Rowfate fills in")
	}
	if t, ok := obj["type"]; ok {
		if s, ok := p.str(path+".type", t); ok {
			if !slices.Contains(types, s) {
				p.fail(path+".type", "unknown type %q: Rowfate reads %s", s, strings.Join(types, ", "))
			}
			f.Type = s
		}
	}
	if fm, ok := obj["format"]; ok {
		f.Format, _ = p.str(path+".format", fm)
		p.format(path+".format", f)
	}
	for key, dst := range map[string]*string{"title": &f.Title, "description": &f.Description} {
		if v, ok := obj[key]; ok {
			*dst, _ = p.str(path+"."+key, v)
		}
	}
	if v, ok := obj["example"]; ok {
		f.Example, _ = p.scalar(path+".example", v)
	}
	if v, ok := obj["x-aliases"]; ok {
		f.Aliases = p.strings(path+".x-aliases", v)
		for i, a := range f.Aliases {
			if strings.ContainsAny(a, ",|") {
				p.fail(fmt.Sprintf("%s.x-aliases[%d]", path, i), "an alias cannot contain , or |")
			}
		}
	}
	if v, ok := obj["x-validate"]; ok {
		f.Validate, _ = p.str(path+".x-validate", v)
		if typ, err := fieldType(*f); err == nil && f.Validate != "" {
			elem, _ := rows.OptionalElem(typ)
			if err := validate.CheckTag(elem, f.Validate); err != nil {
				p.fail(path+".x-validate", "%q: %v", f.Validate, err)
			}
		}
	}
	p.booleanOptions(path, obj, f)
	p.numberOptions(path, obj, f)
	p.unread(path, obj, unreadFieldMembers)
	if c, ok := obj["constraints"]; ok {
		p.constraints(path+".constraints", c, f)
	}
	return f
}

// format checks a field's format against its type.
func (p *parser) format(path string, f *Field) {
	switch f.Type {
	case TypeString:
		switch f.Format {
		case "default", "email", "uri", "uuid":
		case "binary":
			p.fail(path, "binary strings are not read by Rowfate")
		default:
			p.fail(path, "unknown string format %q: default, email, uri or uuid", f.Format)
		}
	case TypeDate, TypeDatetime:
		f.Format = strings.TrimPrefix(f.Format, "fmt:") // the standard's v0 spelling, which v2 says to read
		if f.Format == "default" || f.Format == "any" {
			return
		}
		if !strings.Contains(f.Format, "%") {
			p.fail(path, "date format %q: want default, any, or a pattern such as %%d/%%m/%%Y", f.Format)
		} else if err := rows.CheckStrptime(f.Format); err != nil {
			p.fail(path, "%v", err)
		} else if f.Type == TypeDate && rows.StrptimeHasTime(f.Format) {
			p.fail(path, "date pattern %q reads a time of day, which a date drops: make the field a datetime", f.Format)
		}
	default:
		if f.Format != "default" {
			p.fail(path, "a %s has no format other than default", f.Type)
		}
	}
}

// constraints reads a field's constraints.
func (p *parser) constraints(path string, v any, f *Field) {
	obj, ok := v.(map[string]any)
	if !ok {
		p.fail(path, "want an object, not %s", jsonType(v))
		return
	}
	p.known(path, obj, constraintMembers)
	p.unread(path, obj, unreadConstraintMembers)
	c := &f.Constraints
	if v, ok := obj["required"]; ok {
		c.Required = p.boolean(path+".required", v)
	}
	if v, ok := obj["unique"]; ok {
		c.Unique = p.boolean(path+".unique", v)
	}
	for key, dst := range map[string]**int{"minLength": &c.MinLength, "maxLength": &c.MaxLength} {
		if v, ok := obj[key]; ok {
			if f.Type != TypeString {
				p.fail(path+"."+key, "%s is for strings, not a %s", key, f.Type)
				continue
			}
			if n, ok := p.integer(path+"."+key, v); ok {
				*dst = &n
			}
		}
	}
	if c.MinLength != nil && c.MaxLength != nil && *c.MinLength > *c.MaxLength {
		p.fail(path, "minLength %d is above maxLength %d", *c.MinLength, *c.MaxLength)
	}
	for key, dst := range map[string]*string{"minimum": &c.Minimum, "maximum": &c.Maximum} {
		v, ok := obj[key]
		if !ok {
			continue
		}
		s, ok := p.scalar(path+"."+key, v)
		if !ok {
			continue
		}
		if err := checkBound(f, s); err != nil {
			p.fail(path+"."+key, "%v", err)
			continue
		}
		*dst = s
	}
	if c.Minimum != "" && c.Maximum != "" {
		if lo, hi := bound(f, c.Minimum), bound(f, c.Maximum); lo != nil && hi != nil && compare(lo, hi) > 0 {
			p.fail(path, "minimum %s is above maximum %s", c.Minimum, c.Maximum)
		}
	}
	if v, ok := obj["pattern"]; ok {
		if s, ok := p.str(path+".pattern", v); ok {
			if f.Type != TypeString {
				p.fail(path+".pattern", "pattern is for strings, not a %s", f.Type)
			} else if _, err := regexp.Compile(anchor(s)); err != nil {
				p.fail(path+".pattern", "not a regular expression: %v", err)
			}
			c.Pattern = s
		}
	}
	if v, ok := obj["enum"]; ok {
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			p.fail(path+".enum", "want a non-empty array of values, not %s", jsonType(v))
			return
		}
		for i, e := range arr {
			s, ok := p.scalar(fmt.Sprintf("%s.enum[%d]", path, i), e)
			if !ok {
				continue
			}
			if f.Type != TypeString {
				if err := checkBound(f, s); err != nil {
					p.fail(fmt.Sprintf("%s.enum[%d]", path, i), "%v", err)
					continue
				}
			}
			c.Enum = append(c.Enum, s)
		}
	}
}

// anchor makes a Table Schema pattern, which must match the whole value
// (XML Schema's rule), a Go regexp.
func anchor(p string) string { return `^(?:` + p + `)$` }

// rule parses a cross-field rule: "field op field" or "field op literal",
// op one of = == != < <= > >=; a literal is a number or a quoted string.
func (p *parser) rule(path, text string, s *Schema) (Rule, bool) {
	m := ruleText.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		p.fail(path, "%q: want \"field op field\" or \"field op value\", op one of = != < <= > >=", text)
		return Rule{}, false
	}
	r := Rule{Text: text, Left: m[1], Op: m[2], Right: m[3]}
	if r.Op == "==" {
		r.Op = "="
	}
	left := s.Field(r.Left)
	if left == nil {
		p.fail(path, "%q is not among the fields", r.Left)
		return r, false
	}
	if right := s.Field(r.Right); right != nil {
		if !comparable(left.Type, right.Type) {
			p.fail(path, "%s is a %s and %s a %s: they do not compare", left.Name, left.Type, right.Name, right.Type)
			return r, false
		}
		return r, true
	}
	r.Literal = true
	if q, err := strconv.Unquote(r.Right); err == nil {
		r.Right = q
	} else if strings.HasPrefix(r.Right, "'") && strings.HasSuffix(r.Right, "'") && len(r.Right) >= 2 {
		r.Right = r.Right[1 : len(r.Right)-1]
	} else if colName.MatchString(r.Right) && left.Type != TypeBoolean {
		p.fail(path, "%q is not among the fields (quote a text value: '%s')", r.Right, r.Right)
		return r, false
	}
	if err := checkBound(left, r.Right); err != nil {
		p.fail(path, "%v", err)
		return r, false
	}
	return r, true
}

var ruleText = regexp.MustCompile(`^([\p{L}_][\p{L}\p{N}_]*)\s*(==|=|!=|<=|>=|<|>)\s*(.+?)$`)

func comparable(a, b string) bool {
	num := func(t string) bool { return t == TypeInteger || t == TypeNumber }
	date := func(t string) bool { return t == TypeDate || t == TypeDatetime }
	return a == b || (num(a) && num(b)) || (date(a) && date(b))
}

// The members the standard defines, which Parse accepts; other members
// are refused unless they start with "x-" (a typo must not pass silently).
var (
	schemaMembers = []string{"$schema", "fields", "primaryKey", "missingValues", "foreignKeys", "name", "title", "description",
		"x-name", "x-table", "x-tenant", "x-mode", "x-date-order", "x-decimal-comma", "x-rules", "x-chunk-size",
		"x-max-invalid", "x-max-failed",
		"fieldsMatch", "uniqueKeys"}
	fieldMembers = []string{"name", "type", "format", "title", "description", "constraints", "rdfType", "example",
		"trueValues", "falseValues", "decimalChar", "groupChar", "bareNumber", "x-aliases", "x-validate",
		"categories", "categoriesOrdered", "missingValues"}
	constraintMembers = []string{"required", "unique", "minimum", "maximum", "minLength", "maxLength", "pattern", "enum",
		"exclusiveMinimum", "exclusiveMaximum", "jsonSchema"}
)

var (
	tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
	kindName  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	// colName is a column name every store takes unquoted: letters of any
	// script, digits and _, not starting with a digit.
	colName = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_]*$`)
)
