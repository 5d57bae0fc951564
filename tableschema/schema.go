// Package tableschema reads a Frictionless Table Schema
// (https://specs.frictionlessdata.io/table-schema/) — the JSON (or YAML)
// file data teams already write to describe a table's columns — and
// compiles it into what the engine needs to import a file of that shape
// without Go code: a row type with the col, layout and validate tags a Go
// kind would carry, the checks validator's tags cannot express (patterns,
// enums, date bounds), the cross-field rules and the natural key.
//
// A small extension, in members starting with "x-", says what the
// standard leaves out: the target table (x-table), whether it is per
// tenant (x-tenant), how rows are written (x-mode: insert, upsert,
// update), column aliases (x-aliases), validator/v10 rules (x-validate),
// the day/month order of numeric dates (x-date-order), decimal commas
// (x-decimal-comma) and cross-field comparisons (x-rules). Parse refuses a
// schema with a mistake, naming its JSON path ($.fields[2].type).
//
// Infer drafts a schema from a file, for a person to edit.
package tableschema

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// The field types Rowfate reads. The standard's others (object, array,
// time, year, yearmonth, duration, geopoint, geojson, any) are refused by
// Parse: a cell of those has no column type every store agrees on.
const (
	TypeString   = "string"
	TypeInteger  = "integer"
	TypeNumber   = "number"
	TypeBoolean  = "boolean"
	TypeDate     = "date"
	TypeDatetime = "datetime"
)

var types = []string{TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeDate, TypeDatetime}

// Mode is how a schema kind writes its rows into its table.
type Mode string

// The modes.
const (
	// ModeUpsert inserts a row, or updates the row with its primary key;
	// the default when the schema has a primary key.
	ModeUpsert Mode = "upsert"
	// ModeInsert only inserts: a row whose key is in the table fails
	// (exists). The default without a primary key.
	ModeInsert Mode = "insert"
	// ModeUpdate only updates: a row whose key is not in the table fails
	// (not_found).
	ModeUpdate Mode = "update"
)

// Schema is a parsed Table Schema.
type Schema struct {
	// Name names the kind (x-name); defaults to the table's name.
	Name        string `json:"x-name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Fields      []Field
	// PrimaryKey names the fields of the natural key: a row whose key an
	// earlier row of the file has is invalid (duplicate_key), and an
	// upsert or update finds the table's row by it.
	PrimaryKey []string
	// MissingValues are cells read as empty; defaults to [""].
	MissingValues []string
	// Table is the target table (x-table), optionally schema-qualified
	// on PostgreSQL ("sales.orders").
	Table string
	// Tenant says the table has a tenant_id column that scopes every row
	// to the importing tenant (x-tenant, default true). A table shared by
	// every tenant must say x-tenant: false.
	Tenant bool
	// Mode is x-mode (upsert with a primary key, else insert).
	Mode Mode
	// DateOrder is x-date-order: dmy or mdy, for numeric dates that
	// neither the file nor the import settles.
	DateOrder rows.DateOrder
	// DecimalComma is x-decimal-comma: numbers are written 1.234,56.
	DecimalComma bool
	// Rules are x-rules, cross-field comparisons ("end_date >= start_date").
	Rules []Rule
	// ChunkSize is x-chunk-size; 0 is the engine's default.
	ChunkSize int
	// MaxInvalid is x-max-invalid ("10", "5%"): an import whose file has
	// more invalid rows is rejected whole, unless it sets its own bound.
	MaxInvalid batchtype.Threshold
	// MaxFailed is x-max-failed: a batch whose worked rows fail past it is
	// paused, unless its import sets its own bound.
	MaxFailed batchtype.Threshold
	// Text is the definition as Parse read it (JSON or YAML).
	Text string
}

// Field is one column of a schema.
type Field struct {
	Name        string
	Type        string
	Format      string
	Title       string
	Description string
	Constraints Constraints
	// Aliases are other header spellings of the column (x-aliases).
	Aliases []string
	// Validate is more checks in validator/v10 syntax (x-validate).
	Validate string
	// TrueValues and FalseValues are a boolean's words, as declared: a
	// declared list replaces the standard's (DefaultTrueValues,
	// DefaultFalseValues), an undeclared one is the standard's.
	TrueValues, FalseValues []string
	// DecimalChar and GroupChar are how a number (GroupChar: or an
	// integer) writes its decimal separator and groups of digits, when
	// the field says so: they replace the file's number format for this
	// column. "" is not declared.
	DecimalChar, GroupChar string
	// BareNumber false (declared) strips the text around a number or an
	// integer ("€ 95", "95%"); nil or true reads the number alone.
	BareNumber *bool
	// Example is a value for the template's example row.
	Example string
}

// Constraints are a field's constraints, as the standard names them.
// Minimum and Maximum keep their text: a number, an integer or a date,
// read as the field's type.
type Constraints struct {
	Required  bool
	Unique    bool
	Minimum   string
	Maximum   string
	MinLength *int
	MaxLength *int
	Pattern   string
	Enum      []string
}

// Rule is a cross-field comparison: Left Op Right, where Right is a
// field, or a literal when Literal.
type Rule struct {
	Text    string
	Left    string
	Op      string
	Right   string
	Literal bool
}

// Error is a mistake in a schema, at a JSON path ($.fields[2].type).
type Error struct {
	// Source names the file.
	Source string
	Path   string
	Msg    string
}

func (e *Error) Error() string {
	if e.Source != "" {
		return fmt.Sprintf("%s: %s: %s", e.Source, e.Path, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

// Errors are all the mistakes Parse found.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Field returns the field of that name, or nil.
func (s *Schema) Field(name string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// editDistance is the Levenshtein distance, for "did you mean".
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// goIdent is a field's Go name in the row type: its name in CamelCase,
// which validator and the binder report as the error's field.
func goIdent(name string, used map[string]bool) string {
	var b strings.Builder
	up := true
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			b.WriteRune(unicode.ToUpper(r))
			up = false
		} else {
			b.WriteRune(r)
		}
	}
	id := b.String()
	if id == "" || !unicode.IsLetter(rune(id[0])) {
		id = "F" + id
	}
	base := id
	for i := 2; used[id]; i++ {
		id = base + strconv.Itoa(i)
	}
	used[id] = true
	return id
}

// QuoteName quotes a field's or a table's name as an SQL identifier, for
// PostgreSQL and SQLite alike; a schema-qualified table ("sales.orders")
// is quoted part by part.
func QuoteName(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return strings.Join(parts, ".")
}

// PostgresType is the PostgreSQL type a field of type typ is cast to and
// stored as.
func PostgresType(typ string) string {
	switch typ {
	case TypeInteger:
		return "bigint"
	case TypeNumber:
		return "numeric"
	case TypeBoolean:
		return "boolean"
	case TypeDate:
		return "date"
	case TypeDatetime:
		return "timestamptz"
	}
	return "text"
}
