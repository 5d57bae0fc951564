package schemakind_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/schemakind"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/tableschema"
)

// optionCell is one row of an options test's file: the valid row with
// one column's cell changed, and the error that cell should have ("" for
// none).
type optionCell struct{ col, cell, code string }

// optionFile writes a file of one row per case: id (1, 2, ...), then the
// columns, each the base row's cell but for the case's column. It returns
// the file and the invalid rows expected, as errorsOf lists them.
func optionFile(cols []string, base map[string]string, cases []optionCell) (string, []string) {
	var file strings.Builder
	file.WriteString("id;" + strings.Join(cols, ";") + "\n")
	var want []string
	for i, c := range cases {
		cells := []string{strconv.Itoa(i + 1)}
		for _, col := range cols {
			v := base[col]
			if col == c.col {
				v = c.cell
			}
			cells = append(cells, v)
		}
		file.WriteString(strings.Join(cells, ";") + "\n")
		if c.code != "" {
			want = append(want, strconv.Itoa(i+2)+" "+c.col+":"+c.code)
		}
	}
	return file.String(), want
}

// importOptions registers a schema (of the table opts) and imports the
// file of cases on a store: the invalid rows are the cases' errors, and
// the other rows are written.
func importOptions(t *testing.T, e *env, schema string, cols []string, base map[string]string, cases []optionCell) *batchtype.Batch {
	t.Helper()
	e.registerText(t, schema)
	file, want := optionFile(cols, base, cases)
	b := e.importReader(t, "opts", "opts.csv", "acme", strings.NewReader(file))
	if got := e.errorsOf(t, b, rows.StateInvalid); !slices.Equal(got, want) {
		t.Errorf("invalid rows:\n got %v\nwant %v", got, want)
	}
	if n := b.Counts[rows.StateSucceeded]; n != int64(len(cases)-len(want)) {
		t.Errorf("%d rows written, want %d (%v)", n, len(cases)-len(want), b.Counts)
	}
	return b
}

// stored checks values as the table holds them, read as text by expr
// from the row with that id.
func (e *env) stored(t *testing.T, checks ...[3]string) {
	t.Helper()
	for _, c := range checks {
		id, expr, want := c[0], c[1], c[2]
		var got string
		if err := e.db.QueryRow(`SELECT ` + expr + ` FROM opts WHERE id = ` + id).Scan(&got); err != nil {
			t.Fatalf("row %s: %v", id, err)
		}
		if !strings.HasPrefix(got, want) {
			t.Errorf("row %s: %s = %q, want %q", id, expr, got, want)
		}
	}
}

// TestZeroAndFalseEndToEnd (issue 25, point 3): "A minimum value
// constraint checks whether a field value is greater than or equal to the
// specified value", and "The value of the field must exactly match a
// value in the enum array": 0 and false are values like any other; only
// an empty cell skips an optional field's constraints.
func TestZeroAndFalseEndToEnd(t *testing.T) {
	t.Parallel()
	const schema = `{"x-table": "opts", "primaryKey": "id", "fields": [
	  {"name": "id", "type": "integer"},
	  {"name": "qty", "type": "integer", "constraints": {"minimum": 1}},
	  {"name": "prio", "type": "integer", "constraints": {"enum": [1, 2, 3]}},
	  {"name": "flag", "type": "boolean", "constraints": {"enum": [true]}},
	  {"name": "rate", "type": "number", "constraints": {"maximum": -1}}]}`
	cols := []string{"qty", "prio", "flag", "rate"}
	base := map[string]string{"qty": "2", "prio": "1", "flag": "true", "rate": "-2"}
	cases := []optionCell{{}, {"qty", "0", "minimum"}, {"prio", "0", "enum"}, {"flag", "false", "enum"}, {"rate", "0.00", "maximum"},
		{"qty", "", ""}, {"prio", "", ""}, {"flag", "", ""}, {"rate", "", ""}}
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			importOptions(t, e, schema, cols, base, cases)
			if n := e.count(t, `SELECT count(*) FROM opts WHERE qty IS NULL OR prio IS NULL OR flag IS NULL OR rate IS NULL`); n != 4 {
				t.Errorf("%d rows with an empty cell written, want 4", n)
			}
		})
	}
}

// TestTrueValuesAloneEndToEnd (issue 25, point 4): a boolean with
// trueValues and no falseValues reads its declared true words and the
// standard's false ones ("falseValues: [ "false", "False", "FALSE", "0"
// ]"); it used to panic the process.
func TestTrueValuesAloneEndToEnd(t *testing.T) {
	t.Parallel()
	const schema = `{"x-table": "opts", "primaryKey": "id", "fields": [
	  {"name": "id", "type": "integer"},
	  {"name": "ok", "type": "boolean", "trueValues": ["Ja"]},
	  {"name": "no", "type": "boolean", "falseValues": ["Nein"]}]}`
	cols := []string{"ok", "no"}
	base := map[string]string{"ok": "Ja", "no": "Nein"}
	cases := []optionCell{{}, {"ok", "false", ""}, {"ok", "0", ""}, {"ok", "true", "not_a_bool"}, {"ok", "ja", "not_a_bool"},
		{"no", "TRUE", ""}, {"no", "false", "not_a_bool"}}
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			importOptions(t, e, schema, cols, base, cases)
			e.stored(t, [3]string{"1", "CASE WHEN ok THEN 1 ELSE 0 END", "1"}, [3]string{"1", "CASE WHEN no THEN 1 ELSE 0 END", "0"},
				[3]string{"2", "CASE WHEN ok THEN 1 ELSE 0 END", "0"}, [3]string{"3", "CASE WHEN ok THEN 1 ELSE 0 END", "0"},
				[3]string{"6", "CASE WHEN no THEN 1 ELSE 0 END", "1"})
		})
	}
}

// optionsSchema declares one column per field option of issue 25's
// point 6.
const optionsSchema = `{
  "x-table": "opts",
  "primaryKey": "id",
  "missingValues": ["", "NA"],
  "fields": [
    {"name": "id", "type": "integer"},
    {"name": "std", "type": "boolean"},
    {"name": "yn", "type": "boolean", "trueValues": ["Y"], "falseValues": ["N"]},
    {"name": "amount", "type": "number", "decimalChar": ",", "groupChar": "\u00a0"},
    {"name": "total", "type": "number", "groupChar": ","},
    {"name": "units", "type": "integer", "groupChar": " "},
    {"name": "price", "type": "number", "bareNumber": false},
    {"name": "d", "type": "date", "format": "%d/%m/%y"},
    {"name": "at", "type": "datetime"},
    {"name": "local", "type": "datetime", "format": "%d.%m.%Y %H:%M%z"},
    {"name": "seen", "type": "date", "format": "any"},
    {"name": "n", "type": "integer"}
  ]
}`

// TestOptionsEndToEnd (issue 25, point 6) imports a file through a schema
// with the standard's field options on both stores: what each option
// reads is stored as the value it names, and what it does not read is an
// invalid row naming the column. Each case quotes the standard in
// tableschema's TestBooleanValues, TestNumberOptions and TestDateOptions.
func TestOptionsEndToEnd(t *testing.T) {
	t.Parallel()
	const nbsp = "\u00a0"
	cols := []string{"std", "yn", "amount", "total", "units", "price", "d", "at", "local", "seen", "n"}
	base := map[string]string{"std": "true", "yn": "Y", "amount": "1" + nbsp + "234,56", "total": "1,234.50", "units": "12 345",
		"price": "-12.3 €", "d": "30/11/14", "at": "2024-01-26T15:00:00.300-05:00", "local": "26.01.2024 15:00+0100",
		"seen": "Dec 31, 2025", "n": "NA"}
	cases := []optionCell{
		{}, // id 1: the base row
		// Only the standard's words without declarations; declared words
		// replace them.
		{"std", "No", "not_a_bool"},
		{"std", "FALSE", ""},
		{"yn", "N", ""},
		{"yn", "true", "not_a_bool"},
		// decimalChar and groupChar, for their column only.
		{"amount", "1.234,56", "not_a_number"},
		{"total", "1,5", "not_a_number"},
		{"units", "1 5", "not_a_number"},
		// bareNumber: false.
		{"price", "€ -12.3", ""},
		{"price", "$10000.00", ""},
		{"price", "100%", ""},
		{"price", "1000‰", ""},
		{"price", "(5.00)", "not_a_number"},
		// %y, and a declared pattern read no other way.
		{"d", "01/01/69", ""},
		{"d", "11/30/14", "bad_date"},
		// any: the usual forms, never a guess (nothing in the file says
		// the order of day and month).
		{"seen", "01/02/2025", "bad_date"},
		// missingValues: exact strings.
		{"n", "na", "not_a_number"},
		{"n", "", ""},
	}
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			b := importOptions(t, e, optionsSchema, cols, base, cases)
			// A column that declares its own decimalChar says nothing of
			// the file's: no warning that its commas need the import's
			// decimal comma.
			for _, w := range b.Warnings {
				if strings.Contains(w.Message, "amount") {
					t.Errorf("warning %q about a column that declares its decimalChar", w.Message)
				}
			}
			e.stored(t,
				[3]string{"1", "CAST(amount AS TEXT)", "1234.56"},
				[3]string{"1", "CAST(total AS TEXT)", "1234.50"},
				[3]string{"1", "CAST(units AS TEXT)", "12345"},
				[3]string{"1", "CAST(price AS TEXT)", "-12.3"},
				[3]string{"1", "CAST(d AS TEXT)", "2014-11-30"},
				[3]string{"1", "CAST(seen AS TEXT)", "2025-12-31"},
				[3]string{"1", "CASE WHEN n IS NULL THEN 'null' ELSE 'value' END", "null"},
				[3]string{"3", "CASE WHEN std THEN 1 ELSE 0 END", "0"},
				[3]string{"4", "CASE WHEN yn THEN 1 ELSE 0 END", "0"},
				[3]string{"9", "CAST(price AS TEXT)", "-12.3"},
				[3]string{"10", "CAST(price AS TEXT)", "10000.00"},
				[3]string{"11", "CAST(price AS TEXT)", "100"},
				[3]string{"12", "CAST(price AS TEXT)", "1000"},
				[3]string{"14", "CAST(d AS TEXT)", "1969-01-01"},
			)
			// A date-time with an offset is stored as the instant it
			// names: 15:00 at -05:00 is 20:00 UTC, 15:00 at +01:00 14:00.
			for col, want := range map[string]time.Time{
				"at":    time.Date(2024, 1, 26, 20, 0, 0, 300_000_000, time.UTC),
				"local": time.Date(2024, 1, 26, 14, 0, 0, 0, time.UTC),
			} {
				var got string
				if err := e.db.QueryRow(`SELECT CAST(` + col + ` AS TEXT) FROM opts WHERE id = 1`).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if tm := instant(t, got); !tm.Equal(want) {
					t.Errorf("%s = %q (%v), want the instant %v", col, got, tm, want)
				}
			}
		})
	}
}

// TestUniqueEndToEnd: the constraint unique, "If true, then all values for
// that field MUST be unique within the data file in which it is found", is
// kept by the table's unique index, which CreateTable creates and
// CheckTable requires: the row with a value already written fails, on
// both stores.
func TestUniqueEndToEnd(t *testing.T) {
	t.Parallel()
	const schema = `{"x-table": "coded", "primaryKey": "id", "fields": [
	  {"name": "id", "type": "integer"},
	  {"name": "code", "type": "string", "constraints": {"unique": true}}]}`
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			e.registerText(t, schema)
			b := e.importReader(t, "coded", "coded.csv", "acme", strings.NewReader("id,code\n1,A\n2,B\n3,A\n"))
			if b.Counts[rows.StateSucceeded] != 2 || b.Counts[rows.StateFailed] != 1 {
				t.Errorf("counts %v, want 2 succeeded and the repeated code failed", b.Counts)
			}
			if n := e.count(t, `SELECT count(*) FROM coded WHERE code = 'A'`); n != 1 {
				t.Errorf("%d rows with code A, want 1", n)
			}

			// A table of Rowfate's making has the index; another table
			// without it is refused before any row is read.
			s, err := tableschema.Parse([]byte(strings.Replace(schema, `"coded"`, `"coded2"`, 1)), "coded2.json")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.db.Exec(`CREATE TABLE coded2 (tenant_id text NOT NULL, id bigint NOT NULL, code text, PRIMARY KEY (tenant_id, id))`); err != nil {
				t.Fatal(err)
			}
			err = schemakind.CheckTable(context.Background(), e.cfg, s)
			if !errors.Is(err, schemakind.ErrTable) || !strings.Contains(err.Error(), "unique constraint on code") {
				t.Errorf("check = %v, want the table refused for want of a unique index on code", err)
			}

		})
	}
}

// TestMissingValuesEndToEnd: "missingValues dictates which string values
// should be treated as null values. This conversion to null is done before
// any other attempted type-specific string conversion": the exact strings
// listed, and only those, are missing.
func TestMissingValuesEndToEnd(t *testing.T) {
	t.Parallel()
	const schema = `{"x-table": "mv", "primaryKey": "id", "missingValues": ["", "-", "n/a"], "fields": [
	  {"name": "id", "type": "integer"},
	  {"name": "qty", "type": "integer"},
	  {"name": "note", "type": "string"}]}`
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			e.registerText(t, schema)
			b := e.importReader(t, "mv", "mv.csv", "acme", strings.NewReader("id,qty,note\n1,-,n/a\n2,n/a,-\n3,N/A,x\n4,,\n-,1,x\n"))
			want := []string{"4 qty:not_a_number", "6 id:required"}
			if got := e.errorsOf(t, b, rows.StateInvalid); !slices.Equal(got, want) {
				t.Errorf("invalid rows %v, want %v", got, want)
			}
			if n := e.count(t, `SELECT count(*) FROM mv WHERE qty IS NULL AND note IS NULL`); n != 3 {
				t.Errorf("%d rows with both cells missing, want 3", n)
			}
		})
	}
}

// registerText registers the kind of a schema given as text.
func (e *env) registerText(t *testing.T, schema string) {
	t.Helper()
	s, err := tableschema.Parse([]byte(schema), "schema.json")
	if err != nil {
		t.Fatal(err)
	}
	e.register(t, s)
}

// instant reads a date-time as a store gives it back as text.
func instant(t *testing.T, s string) time.Time {
	t.Helper()
	for _, l := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07", "2006-01-02 15:04:05.999999999-07:00"} {
		if tm, err := time.Parse(l, s); err == nil {
			return tm
		}
	}
	t.Fatalf("%q is not a date-time", s)
	return time.Time{}
}
