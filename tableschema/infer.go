package tableschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rowfate/rowfate/rows"
)

// InferOptions tune Infer.
type InferOptions struct {
	// Table is the draft's x-table. Defaults to "imported".
	Table string
	// Name is the draft's x-name; defaults to the table's.
	Name string
	// MaxRows bounds the rows read. Defaults to 100,000.
	MaxRows int
	// EnumMax is the most distinct values a text column may have to be
	// drafted as an enum (when the file has at least 20 rows and each
	// value comes back). Defaults to 10.
	EnumMax int
	// DecimalComma reads numbers with a decimal comma.
	DecimalComma bool
}

// Draft is a schema Infer drafted, with what a person should know about it
// before storing it: the renames it made up (a header twice, a header left
// empty, a column left out).
type Draft struct {
	Schema *Schema
	// Notes are sentences, one per decision the file did not settle.
	Notes []string
}

// Infer drafts a schema from a file's header and rows, for a person to
// read and edit: a column's type is the narrowest that reads every value
// (integer, number, boolean, date, datetime, else string); it is
// required when no value is empty; a text column with few distinct values
// that repeat is an enum; the key is the first column, preferring one
// named id, *_id, code or email, whose values are all present and unique.
// Dates are drafted as ISO (YYYY-MM-DD) when every value is; a column of
// numeric dates that read both ways (01/02/2025) is drafted as text with a
// note in its description, never as a guessed order. Column names that
// cannot be table columns are made into ones, the file's spelling kept as
// an alias: every header yields a column (capitals, spaces, accents and
// other scripts, a leading digit, SQL words, the engine's own tenant_id).
// A header the file has twice gives the second column a name of its own,
// aliased "Header#2"; a column without a header that has values is named
// by its position (column_13, aliased "#13"), one without values is left
// out. Each of those is a Note.
func Infer(r rows.Reader, o InferOptions) (*Draft, error) {
	if o.Table == "" {
		o.Table = "imported"
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 100_000
	}
	if o.EnumMax <= 0 {
		o.EnumMax = 10
	}
	header := r.Header()
	cols, n, bad, err := readStats(r, len(header), o)
	if err != nil {
		return nil, err
	}
	s := &Schema{Table: o.Table, Name: o.Name, Tenant: true, MissingValues: []string{""}}
	if s.Name == "" {
		s.Name = strings.ToLower(o.Table[strings.LastIndex(o.Table, ".")+1:])
	}
	s.DecimalComma = o.DecimalComma
	d := &Draft{Schema: s}
	if len(bad) > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d lines could not be read as CSV and were left out (the first is row %d): their text is no evidence of any column's type", len(bad), bad[0]))
	}
	used := map[string]bool{}
	times := map[string]int{}
	var kept []*colStats
	for i, h := range header {
		c := cols[i]
		h = strings.TrimSpace(h)
		alias := h
		if h == "" {
			if c.values == 0 {
				d.Notes = append(d.Notes, fmt.Sprintf("column %d has no header and no values: left out", i+1))
				continue
			}
			h, alias = fmt.Sprintf("column %d", i+1), fmt.Sprintf("#%d", i+1)
		}
		key := rows.NormalizeHeader(h)
		times[key]++
		if n := times[key]; n > 1 && alias != "" {
			alias = fmt.Sprintf("%s#%d", alias, n)
			h = fmt.Sprintf("%s %d", h, n)
		}
		name := columnName(h, used)
		switch {
		case strings.HasPrefix(alias, "#"):
			d.Notes = append(d.Notes, fmt.Sprintf("column %d has no header but has values: drafted as %s (x-aliases %q)", i+1, name, alias))
		case strings.Contains(alias, "#"):
			d.Notes = append(d.Notes, fmt.Sprintf("the file has %q twice or more: column %d is drafted as %s (x-aliases %q)", header[i], i+1, name, alias))
		}
		f := Field{Name: name, Type: c.typ(), Format: "default"}
		if f.Type == TypeString && c.most(c.emails) {
			f.Format = "email"
		}
		if f.Type == TypeBoolean {
			c.boolWords(&f)
		}
		if name != alias {
			f.Aliases = []string{alias}
		}
		f.Constraints.Required = c.empty == 0 && c.values > 0
		if f.Type == TypeString && c.ambiguousDates > 0 && c.ambiguousDates == c.values {
			f.Description = "numeric dates that read day first and month first alike: set type date and x-date-order (dmy or mdy) once you know which"
		}
		if f.Type == TypeString && n >= 20 && len(c.distinct) > 0 && len(c.distinct) <= o.EnumMax && c.values >= 2*len(c.distinct) {
			for v := range c.distinct {
				f.Constraints.Enum = append(f.Constraints.Enum, v)
			}
			slices.Sort(f.Constraints.Enum)
		}
		if ex := c.example; ex != "" {
			f.Example = ex
		}
		s.Fields = append(s.Fields, f)
		kept = append(kept, c)
	}
	if len(s.Fields) == 0 {
		return nil, errors.New("no column has a header or a value: nothing to draft")
	}
	if key := inferKey(s, kept, n); key >= 0 {
		s.PrimaryKey = []string{s.Fields[key].Name}
		s.Fields[key].Constraints.Required = true
		s.Mode = ModeUpsert
	} else {
		s.Mode = ModeInsert
	}
	return d, nil
}

// readStats reads up to o.MaxRows rows into each column's stats and says
// how many it read, and the rows of the lines it left out because they
// could not be read as cells (each one).
func readStats(r rows.Reader, width int, o InferOptions) ([]*colStats, int, []int64, error) {
	cols := make([]*colStats, width)
	for i := range cols {
		cols[i] = &colStats{distinct: map[string]int{}, reads: map[string]int{}}
	}
	n := 0
	var bad []int64
	for n < o.MaxRows {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, nil, err
		}
		if rec.Unreadable() {
			bad = append(bad, rec.Row)
			continue
		}
		n++
		for i := range cols {
			v := ""
			if i < len(rec.Values) {
				v = strings.TrimSpace(rec.Values[i])
			}
			cols[i].add(v, o.DecimalComma)
		}
	}
	return cols, n, bad, nil
}

// colStats is what Infer saw of a column.
type colStats struct {
	values, empty int
	distinct      map[string]int
	// reads counts the values that read as each type.
	reads          map[string]int
	ambiguousDates int
	example        string
	overflow       bool
	emails         int
	// trueWords and falseWords are the boolean words seen, as written.
	trueWords, falseWords map[string]bool
}

var (
	isoDate     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	numericDate = regexp.MustCompile(`^(\d{1,2})[/.](\d{1,2})[/.]\d{4}$`)
	emailLike   = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)
	leadingZero = regexp.MustCompile(`^-?0\d`)
)

func (c *colStats) add(v string, decimalComma bool) {
	if v == "" {
		c.empty++
		return
	}
	c.values++
	if c.example == "" {
		c.example = v
	}
	if !c.overflow {
		c.distinct[v]++
		if len(c.distinct) > 10_000 {
			// A column this varied is no enum, and its uniqueness is
			// judged on what was kept.
			c.overflow = true
		}
	}
	// An integer with a leading zero is a code (a postcode, an article
	// number): drafting it as a number would lose the zero.
	if _, err := strconv.ParseInt(v, 10, 64); err == nil && !leadingZero.MatchString(v) {
		c.reads[TypeInteger]++
	}
	num := v
	if decimalComma {
		num = strings.ReplaceAll(strings.ReplaceAll(v, ".", ""), ",", ".")
	}
	if _, err := rows.ParseDecimal(num); err == nil && !leadingZero.MatchString(num) {
		c.reads[TypeNumber]++
	}
	switch strings.ToLower(v) {
	case "true", "yes":
		c.reads[TypeBoolean]++
		c.trueWords = addWord(c.trueWords, v)
	case "false", "no":
		c.reads[TypeBoolean]++
		c.falseWords = addWord(c.falseWords, v)
	}
	if isoDate.MatchString(v) {
		if _, err := time.Parse("2006-01-02", v); err == nil {
			c.reads[TypeDate]++
		}
	}
	if _, err := time.Parse(time.RFC3339, v); err == nil {
		c.reads[TypeDatetime]++
	}
	if emailLike.MatchString(v) {
		c.emails++
	}
	if m := numericDate.FindStringSubmatch(v); m != nil {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		if a <= 12 && b <= 12 {
			c.ambiguousDates++
		}
	}
}

func addWord(words map[string]bool, w string) map[string]bool {
	if words == nil {
		words = map[string]bool{}
	}
	words[w] = true
	return words
}

// boolWords declares the words a boolean column was seen with, as written,
// when the standard's (true/True/TRUE, false/False/FALSE) do not read them
// all: a declared list replaces the standard's.
func (c *colStats) boolWords(f *Field) {
	standard := true
	for w := range c.trueWords {
		standard = standard && slices.Contains(DefaultTrueValues, w)
	}
	for w := range c.falseWords {
		standard = standard && slices.Contains(DefaultFalseValues, w)
	}
	if standard {
		return
	}
	for w := range c.trueWords {
		f.TrueValues = append(f.TrueValues, w)
	}
	for w := range c.falseWords {
		f.FalseValues = append(f.FalseValues, w)
	}
	slices.Sort(f.TrueValues)
	slices.Sort(f.FalseValues)
}

// most reports whether n of the column's values is at least 90% of them:
// a column of dates with a few typos is a date column whose typos are
// invalid rows, not a text column.
func (c *colStats) most(n int) bool { return c.values > 0 && n*10 >= c.values*9 }

// typ is the narrowest type that reads (most of) the values.
func (c *colStats) typ() string {
	for _, t := range []string{TypeBoolean, TypeInteger, TypeNumber, TypeDate, TypeDatetime} {
		if c.most(c.reads[t]) {
			return t
		}
	}
	return TypeString
}

// inferKey is the field to draft as the primary key, or -1.
func inferKey(s *Schema, cols []*colStats, n int) int {
	if n == 0 {
		return -1
	}
	best := -1
	for i, c := range cols {
		f := s.Fields[i]
		if c.empty > 0 || c.overflow || len(c.distinct) != n || f.Type == TypeBoolean || f.Type == TypeNumber {
			continue
		}
		name := strings.ToLower(f.Name)
		if name == "id" || strings.HasSuffix(name, "_id") || name == "code" || name == "email" || name == "sku" {
			return i
		}
		if best < 0 {
			best = i
		}
	}
	return best
}

// columnName makes a header cell a table column name: lower case, letters
// of every script and digits kept, runs of other characters as _, no
// leading digit, at most 63 bytes (PostgreSQL's limit), never tenant_id,
// unique.
func columnName(h string, used map[string]bool) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r):
			if b.Len()+utf8.RuneLen(r) > maxColumnBytes-8 {
				continue // room for a prefix and a number
			}
			b.WriteRune(r)
			under = false
		case !under && b.Len() > 0:
			b.WriteByte('_')
			under = true
		}
	}
	name := strings.TrimRight(b.String(), "_")
	if name == "" || unicode.IsDigit([]rune(name)[0]) {
		name = "col_" + name
	}
	if name == "tenant_id" {
		name = "source_tenant_id"
	}
	base := name
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	used[name] = true
	return name
}

// maxColumnBytes is the longest column name PostgreSQL keeps whole.
const maxColumnBytes = 63

// Marshal writes a schema as Table Schema JSON, indented, members in the
// standard's order: what Parse reads back.
func Marshal(s *Schema) ([]byte, error) {
	type constraints struct {
		Required  bool     `json:"required,omitempty"`
		Unique    bool     `json:"unique,omitempty"`
		Minimum   any      `json:"minimum,omitempty"`
		Maximum   any      `json:"maximum,omitempty"`
		MinLength *int     `json:"minLength,omitempty"`
		MaxLength *int     `json:"maxLength,omitempty"`
		Pattern   string   `json:"pattern,omitempty"`
		Enum      []string `json:"enum,omitempty"`
	}
	type field struct {
		Name        string       `json:"name"`
		Type        string       `json:"type"`
		Format      string       `json:"format,omitempty"`
		Title       string       `json:"title,omitempty"`
		Description string       `json:"description,omitempty"`
		Constraints *constraints `json:"constraints,omitempty"`
		TrueValues  []string     `json:"trueValues,omitempty"`
		FalseValues []string     `json:"falseValues,omitempty"`
		DecimalChar string       `json:"decimalChar,omitempty"`
		GroupChar   string       `json:"groupChar,omitempty"`
		BareNumber  *bool        `json:"bareNumber,omitempty"`
		Example     string       `json:"example,omitempty"`
		Aliases     []string     `json:"x-aliases,omitempty"`
		Validate    string       `json:"x-validate,omitempty"`
	}
	type schema struct {
		Name          string   `json:"x-name,omitempty"`
		Title         string   `json:"title,omitempty"`
		Description   string   `json:"description,omitempty"`
		Fields        []field  `json:"fields"`
		PrimaryKey    []string `json:"primaryKey,omitempty"`
		MissingValues []string `json:"missingValues,omitempty"`
		Table         string   `json:"x-table"`
		Tenant        *bool    `json:"x-tenant,omitempty"`
		Mode          Mode     `json:"x-mode,omitempty"`
		DateOrder     string   `json:"x-date-order,omitempty"`
		DecimalComma  bool     `json:"x-decimal-comma,omitempty"`
		Rules         []string `json:"x-rules,omitempty"`
		ChunkSize     int      `json:"x-chunk-size,omitempty"`
	}
	out := schema{Name: s.Name, Title: s.Title, Description: s.Description, PrimaryKey: s.PrimaryKey, Table: s.Table,
		Mode: s.Mode, DateOrder: string(s.DateOrder), DecimalComma: s.DecimalComma, ChunkSize: s.ChunkSize}
	if !slices.Equal(s.MissingValues, []string{""}) {
		out.MissingValues = s.MissingValues
	}
	if !s.Tenant {
		f := false
		out.Tenant = &f
	}
	for _, r := range s.Rules {
		out.Rules = append(out.Rules, r.Text)
	}
	for _, f := range s.Fields {
		of := field{Name: f.Name, Type: f.Type, Title: f.Title, Description: f.Description, TrueValues: f.TrueValues,
			FalseValues: f.FalseValues, DecimalChar: f.DecimalChar, GroupChar: f.GroupChar, BareNumber: f.BareNumber,
			Example: f.Example, Aliases: f.Aliases, Validate: f.Validate}
		if f.Format != "default" {
			of.Format = f.Format
		}
		c := f.Constraints
		oc := constraints{Required: c.Required, Unique: c.Unique, MinLength: c.MinLength, MaxLength: c.MaxLength, Pattern: c.Pattern, Enum: c.Enum}
		if c.Minimum != "" {
			oc.Minimum = literal(f.Type, c.Minimum)
		}
		if c.Maximum != "" {
			oc.Maximum = literal(f.Type, c.Maximum)
		}
		if oc.Required || oc.Unique || oc.Minimum != nil || oc.Maximum != nil || oc.MinLength != nil || oc.MaxLength != nil || oc.Pattern != "" || oc.Enum != nil {
			of.Constraints = &oc
		}
		out.Fields = append(out.Fields, of)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// literal writes a bound as the JSON the standard expects: a number for
// numeric types, a string for dates.
func literal(typ, s string) any {
	if typ == TypeInteger || typ == TypeNumber {
		return json.Number(s)
	}
	return s
}
