package tableschema_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/tableschema"
	"github.com/rowfate/rowfate/validate"
)

// readCells compiles a schema of one field, v, declared by the JSON
// object field, and reads each cell through the import's phases (bind,
// checks) under a file's conventions: the value as the schema's literals
// write it (tableschema.Canonical), "-" when the cell gave none, or the
// row's error codes.
func readCells(t *testing.T, field string, conv rows.Conventions, cells ...string) []string {
	t.Helper()
	s, err := tableschema.Parse([]byte(`{"x-table":"t","fields":[`+field+`]}`), "s.json")
	if err != nil {
		t.Fatalf("parse %s: %v", field, err)
	}
	c, err := tableschema.Compile(s)
	if err != nil {
		t.Fatalf("compile %s: %v", field, err)
	}
	d, err := validate.NewDynamic(c.Type, c.Options)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Binder().MapFile([]string{"v"}, conv)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(cells))
	for i, cell := range cells {
		row, errs := d.Run(context.Background(), m, rows.Record{Row: int64(i + 2), Values: []string{cell}})
		if len(errs) > 0 {
			codes := make([]string, len(errs))
			for j, e := range errs {
				codes[j] = string(e.Code)
			}
			out[i] = strings.Join(codes, ",")
			continue
		}
		v, ok := c.Value(row, 0)
		if !ok {
			out[i] = "-"
			continue
		}
		out[i] = tableschema.Canonical(v)
	}
	return out
}

// optionCase is one option of the standard, read on cells.
type optionCase struct {
	name  string
	field string
	conv  rows.Conventions
	cells []string
	want  []string
}

func runOptionCases(t *testing.T, cases []optionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := readCells(t, tc.field, tc.conv, tc.cells...)
			for i := range tc.cells {
				if got[i] != tc.want[i] {
					t.Errorf("%q = %s, want %s", tc.cells[i], got[i], tc.want[i])
				}
			}
		})
	}
}

// TestConstraintsOnZeroAndFalse (issue 25, point 3): a constraint applies
// to every value the file gives, 0 and false included; only an empty cell
// skips it.
func TestConstraintsOnZeroAndFalse(t *testing.T) {
	t.Parallel()
	runOptionCases(t, []optionCase{
		// "A minimum value constraint checks whether a field value is
		// greater than or equal to the specified value."
		{name: "minimum", field: `{"name":"v","type":"integer","constraints":{"minimum":1}}`,
			cells: []string{"0", "1", ""}, want: []string{"minimum", "1", "-"}},
		{name: "maximum", field: `{"name":"v","type":"number","constraints":{"maximum":-1}}`,
			cells: []string{"0", "0.00", "-1"}, want: []string{"maximum", "maximum", "-1"}},
		// "The value of the field must exactly match a value in the enum
		// array."
		{name: "enum of integers", field: `{"name":"v","type":"integer","constraints":{"enum":[1,2,3]}}`,
			cells: []string{"0", "2", ""}, want: []string{"enum", "2", "-"}},
		{name: "enum of booleans", field: `{"name":"v","type":"boolean","constraints":{"enum":[true]}}`,
			cells: []string{"false", "true", ""}, want: []string{"enum", "true", "-"}},
		{name: "x-validate", field: `{"name":"v","type":"integer","x-validate":"gte=1"}`,
			cells: []string{"0", "1"}, want: []string{"gte", "1"}},
	})
}

// TestBooleanValues (issue 25, points 4 and 6): a boolean reads the
// standard's words, or those the field declares instead of them.
func TestBooleanValues(t *testing.T) {
	t.Parallel()
	runOptionCases(t, []optionCase{
		// "trueValues: [ "true", "True", "TRUE", "1" ]" and "falseValues:
		// [ "false", "False", "FALSE", "0" ]": those and no others.
		{name: "defaults", field: `{"name":"v","type":"boolean"}`,
			cells: []string{"true", "True", "TRUE", "1", "false", "False", "FALSE", "0", "YES", "NO", "No", "yes", "y", "tRUE", "t"},
			want:  []string{"true", "true", "true", "true", "false", "false", "false", "false", "not_a_bool", "not_a_bool", "not_a_bool", "not_a_bool", "not_a_bool", "not_a_bool", "not_a_bool"}},
		// "the values set in trueValues and falseValues are to be cast to
		// their logical representation as booleans": a declared list
		// replaces the default one.
		{name: "declared", field: `{"name":"v","type":"boolean","trueValues":["ja","Ja"],"falseValues":["nein"]}`,
			cells: []string{"ja", "Ja", "nein", "JA", "true", "0"},
			want:  []string{"true", "true", "false", "not_a_bool", "not_a_bool", "not_a_bool"}},
		// trueValues alone: the false words stay the standard's.
		{name: "trueValues alone", field: `{"name":"v","type":"boolean","trueValues":["ja"]}`,
			cells: []string{"ja", "false", "0", "true"},
			want:  []string{"true", "false", "false", "not_a_bool"}},
		{name: "falseValues alone", field: `{"name":"v","type":"boolean","falseValues":["nein"]}`,
			cells: []string{"nein", "true", "false"},
			want:  []string{"false", "true", "not_a_bool"}},
		{name: "words with commas and bars", field: `{"name":"v","type":"boolean","trueValues":["a,b"],"falseValues":["c|d"]}`,
			cells: []string{"a,b", "c|d", "a"}, want: []string{"true", "false", "not_a_bool"}},
		// An enum of a boolean compares the logical values.
		{name: "enum by the declared words", field: `{"name":"v","type":"boolean","trueValues":["ja"],"falseValues":["nein"],"constraints":{"enum":["ja"]}}`,
			cells: []string{"ja", "nein"}, want: []string{"true", "enum"}},
	})
}

// TestNumberOptions (issue 25, point 6): decimalChar, groupChar and
// bareNumber, for the column that declares them.
func TestNumberOptions(t *testing.T) {
	t.Parallel()
	runOptionCases(t, []optionCase{
		// "decimalChar: A string whose value is used to represent a
		// decimal point within the number. The default value is "."."
		{name: "decimalChar", field: `{"name":"v","type":"number","decimalChar":","}`,
			cells: []string{"1234,5", "-0,25", "7", "1234.5", "1.234,5"},
			want:  []string{"1234.5", "-0.25", "7", "not_a_number", "not_a_number"}},
		// "groupChar: A string whose value is used to group digits within
		// the number. [...] A common value is "," e.g. "100,000"."
		{name: "groupChar", field: `{"name":"v","type":"number","groupChar":","}`,
			cells: []string{"100,000", "1,234.50", "12.5", "1,5", "1,23,456"},
			want:  []string{"100000", "1234.50", "12.5", "not_a_number", "not_a_number"}},
		{name: "both", field: `{"name":"v","type":"number","decimalChar":",","groupChar":"."}`,
			cells: []string{"1.234,56", "1234,56", "1.234.567", "1.5"},
			want:  []string{"1234.56", "1234.56", "1234567", "not_a_number"}},
		{name: "a space", field: `{"name":"v","type":"number","decimalChar":",","groupChar":" "}`,
			cells: []string{"1 234,56", "12 345 678"}, want: []string{"1234.56", "12345678"}},
		{name: "a no-break space", field: "{\"name\":\"v\",\"type\":\"number\",\"decimalChar\":\",\",\"groupChar\":\"\u00a0\"}",
			cells: []string{"1\u00a0234,56", "1 234,56"}, want: []string{"1234.56", "not_a_number"}},
		{name: "an apostrophe", field: `{"name":"v","type":"number","groupChar":"'"}`,
			cells: []string{"1'234.50"}, want: []string{"1234.50"}},
		{name: "integer groupChar", field: `{"name":"v","type":"integer","groupChar":","}`,
			cells: []string{"100,000", "1,5", "1000"}, want: []string{"100000", "not_a_number", "1000"}},
		{name: "integer groupChar point", field: `{"name":"v","type":"integer","groupChar":"."}`,
			cells: []string{"1.234.567", "1.5"}, want: []string{"1234567", "not_a_number"}},
		// The column's declaration wins over the file's convention (a
		// decimal comma declared for the import).
		{name: "over the file's convention", field: `{"name":"v","type":"number","decimalChar":"."}`,
			conv:  rows.Conventions{Number: rows.DecimalComma},
			cells: []string{"1.5", "1,5"}, want: []string{"1.5", "not_a_number"}},
		{name: "file's convention without one", field: `{"name":"v","type":"number"}`,
			conv:  rows.Conventions{Number: rows.DecimalComma},
			cells: []string{"1,5", "1.234,5"}, want: []string{"1.5", "1234.5"}},
		// "If false the contents of this field may contain leading and/or
		// trailing non-numeric characters (which implementors MUST
		// therefore strip)."
		{name: "bareNumber false", field: `{"name":"v","type":"number","bareNumber":false}`,
			cells: []string{"-12.3 €", "€ -12.3", "$10000.00", "100%", "1000‰", "EUR 95", "€95", "12.30", "€"},
			want:  []string{"-12.3", "-12.3", "10000.00", "100", "1000", "95", "95", "12.30", "not_a_number"}},
		{name: "bareNumber false with separators", field: `{"name":"v","type":"number","bareNumber":false,"decimalChar":",","groupChar":"."}`,
			cells: []string{"1.234,56 €", "EUR 1.234,56"}, want: []string{"1234.56", "1234.56"}},
		{name: "bareNumber false integer", field: `{"name":"v","type":"integer","bareNumber":false}`,
			cells: []string{"€95", "95%", "-3 pcs"}, want: []string{"95", "95", "-3"}},
		// "If true the physical contents of this field must follow the
		// formatting constraints already set out."
		{name: "bareNumber true", field: `{"name":"v","type":"number","bareNumber":true}`,
			cells: []string{"€95", "95%", "95"}, want: []string{"not_a_number", "not_a_number", "95"}},
		// What the stripped text would change is never dropped: a sign, an
		// accounting negative, a magnitude.
		{name: "bareNumber false keeps meaning", field: `{"name":"v","type":"number","bareNumber":false}`,
			cells: []string{"(12.30)", "12.30-", "1.5k", "2 Mio", "− 4"},
			want:  []string{"not_a_number", "not_a_number", "not_a_number", "not_a_number", "not_a_number"}},
		// "A number MAY also have a trailing: exponent: this MUST consist of
		// an E followed by an optional + or - sign followed by one or more
		// decimal digits (0-9)"
		{name: "exponent", field: `{"name":"v","type":"number"}`,
			cells: []string{"1.5E3", "25e-2", "1E+2", "1E", "5 EUR", "1E99"}, want: []string{"1500", "0.25", "100", "not_a_number", "not_a_number", "out_of_range"}},
		// "The following special string values are permitted [...] NaN,
		// INF, -INF": no column type stores them alike, so Rowfate says so.
		{name: "NaN and INF", field: `{"name":"v","type":"number"}`,
			cells: []string{"NaN", "INF", "-inf"}, want: []string{"not_a_number", "not_a_number", "not_a_number"}},
	})
}

// TestDateOptions (issue 25, point 6): date and datetime formats.
func TestDateOptions(t *testing.T) {
	t.Parallel()
	runOptionCases(t, []optionCase{
		// "default: The lexical representation MUST be yyyy-mm-dd"
		{name: "date default", field: `{"name":"v","type":"date"}`,
			cells: []string{"2024-01-26", "2024-02-30"}, want: []string{"2024-01-26", "bad_date"}},
		// "<PATTERN> MUST follow the syntax of standard Python / C
		// strptime [...] Example for "format": "%d/%m/%y" which would
		// correspond to dates like: 30/11/14"; strptime's %y reads 69-99
		// as 1969-1999 and 00-68 as 2000-2068.
		{name: "date %d/%m/%y", field: `{"name":"v","type":"date","format":"%d/%m/%y"}`,
			cells: []string{"30/11/14", "01/01/69", "31/12/68", "11/30/14", "30/11/2014", "2014-11-30"},
			want:  []string{"2014-11-30", "1969-01-01", "2068-12-31", "bad_date", "bad_date", "2014-11-30"}},
		// A declared pattern is the order of day and month: the file's own
		// order does not read it the other way round.
		{name: "date pattern over the file's order", field: `{"name":"v","type":"date","format":"%d/%m/%Y"}`,
			conv:  rows.Conventions{DateOrder: rows.MDY},
			cells: []string{"1/2/2025", "01/02/2025", "13/02/2025", "02/13/2025"},
			want:  []string{"2025-02-01", "2025-02-01", "2025-02-13", "bad_date"}},
		{name: "date month names", field: `{"name":"v","type":"date","format":"%d %B %Y"}`,
			cells: []string{"5 March 2025", "5 march 2025", "5 Mar 2025"}, want: []string{"2025-03-05", "2025-03-05", "bad_date"}},
		// "any: Any parsable representation of the type": Rowfate reads
		// the usual forms and never guesses the order of day and month.
		{name: "date any", field: `{"name":"v","type":"date","format":"any"}`,
			cells: []string{"2025-12-31", "31/12/2025", "Dec 31, 2025", "01/02/2025"},
			want:  []string{"2025-12-31", "2025-12-31", "2025-12-31", "bad_date"}},
		{name: "date any with an order", field: `{"name":"v","type":"date","format":"any"}`,
			conv:  rows.Conventions{DateOrder: rows.DMY},
			cells: []string{"01/02/2025"}, want: []string{"2025-02-01"}},
		// "default: The lexical representation MUST be in a form defined by
		// XML Schema containing required date and time parts, followed by
		// optional milliseconds and timezone parts, for example,
		// 2024-01-26T15:00:00 or 2024-01-26T15:00:00.300-05:00."
		{name: "datetime default", field: `{"name":"v","type":"datetime"}`,
			cells: []string{"2024-01-26T15:00:00", "2024-01-26T15:00:00.300-05:00", "2024-01-26T15:00:00Z", "2024-01-26T25:00:00"},
			want:  []string{"2024-01-26T15:00:00Z", "2024-01-26T20:00:00.3Z", "2024-01-26T15:00:00Z", "bad_date"}},
		// "Example for "format": "%d/%m/%Y %H:%M:%S" which would correspond
		// to a date with time like: 12/11/2018 09:15:32."
		{name: "datetime pattern", field: `{"name":"v","type":"datetime","format":"%d/%m/%Y %H:%M:%S"}`,
			cells: []string{"12/11/2018 09:15:32", "12/11/2018 9:15:32", "2018-11-12 09:15:32", "12/11/2018"},
			want:  []string{"2018-11-12T09:15:32Z", "2018-11-12T09:15:32Z", "2018-11-12T09:15:32Z", "bad_date"}},
		{name: "datetime pattern with an offset", field: `{"name":"v","type":"datetime","format":"%Y-%m-%d %H:%M:%S%z"}`,
			cells: []string{"2018-11-12 09:15:32+0100", "2018-11-12 09:15:32-05:30", "2018-11-12 09:15:32Z"},
			want:  []string{"2018-11-12T08:15:32Z", "2018-11-12T14:45:32Z", "2018-11-12T09:15:32Z"}},
		{name: "datetime pattern 12-hour", field: `{"name":"v","type":"datetime","format":"%m/%d/%Y %I:%M %p"}`,
			cells: []string{"11/12/2018 12:05 AM", "11/12/2018 9:15 pm", "11/12/2018 13:15 PM"},
			want:  []string{"2018-11-12T00:05:00Z", "2018-11-12T21:15:00Z", "bad_date"}},
		{name: "datetime fractions", field: `{"name":"v","type":"datetime","format":"%Y-%m-%dT%H:%M:%S.%f"}`,
			cells: []string{"2018-11-12T09:15:32.5", "2018-11-12T09:15:32.123456"},
			want:  []string{"2018-11-12T09:15:32.5Z", "2018-11-12T09:15:32.123456Z"}},
		// A time zone's name does not say its offset (EST is two places):
		// only UTC and GMT are read.
		{name: "datetime zone names", field: `{"name":"v","type":"datetime","format":"%Y-%m-%d %H:%M %Z"}`,
			cells: []string{"2018-11-12 09:15 UTC", "2018-11-12 09:15 GMT", "2018-11-12 09:15 EST"},
			want:  []string{"2018-11-12T09:15:00Z", "2018-11-12T09:15:00Z", "bad_date"}},
		// Constraint values are "represented as strings that are castable
		// with the type and format rules of the field".
		{name: "date bound in the field's pattern", field: `{"name":"v","type":"date","format":"%d/%m/%Y","constraints":{"minimum":"01/02/2025"}}`,
			cells: []string{"31/01/2025", "01/02/2025"}, want: []string{"minimum", "2025-02-01"}},
	})
}

// TestOptionRefusals: what Rowfate does not read is refused, naming its
// JSON path, never accepted and ignored.
func TestOptionRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, field, path, msg string
	}{
		{"trueValues on a string", `{"name":"a","trueValues":["y"]}`, "$.fields[0].trueValues", "boolean"},
		{"groupChar on a date", `{"name":"a","type":"date","groupChar":","}`, "$.fields[0].groupChar", "integer or a number"},
		{"decimalChar on an integer", `{"name":"a","type":"integer","decimalChar":","}`, "$.fields[0].decimalChar", "number"},
		{"bareNumber on a string", `{"name":"a","bareNumber":false}`, "$.fields[0].bareNumber", "integer or a number"},
		{"decimalChar of two characters", `{"name":"a","type":"number","decimalChar":",,"}`, "$.fields[0].decimalChar", "one character"},
		{"decimalChar a digit", `{"name":"a","type":"number","decimalChar":"5"}`, "$.fields[0].decimalChar", "digit"},
		{"groupChar the decimalChar", `{"name":"a","type":"number","groupChar":"."}`, "$.fields[0].groupChar", "decimalChar"},
		{"a word both true and false", `{"name":"a","type":"boolean","trueValues":["x"],"falseValues":["x"]}`, "$.fields[0].falseValues[0]", "true"},
		{"an empty word", `{"name":"a","type":"boolean","trueValues":[""]}`, "$.fields[0].trueValues[0]", "missing"},
		{"bareNumber not a boolean", `{"name":"a","type":"number","bareNumber":"no"}`, "$.fields[0].bareNumber", "true or false"},
		{"a pattern directive", `{"name":"a","type":"date","format":"%d/%m/%Y %j"}`, "$.fields[0].format", "%j"},
		{"exclusiveMinimum", `{"name":"a","type":"integer","constraints":{"exclusiveMinimum":1}}`, "$.fields[0].constraints.exclusiveMinimum", "not read by Rowfate"},
		{"categories", `{"name":"a","categories":["x"]}`, "$.fields[0].categories", "not read by Rowfate"},
		{"field missingValues", `{"name":"a","missingValues":["-"]}`, "$.fields[0].missingValues", "schema's missingValues"},
		{"the any type", `{"name":"a","type":"any"}`, "$.fields[0].type", `unknown type "any"`},
		{"a year", `{"name":"a","type":"year"}`, "$.fields[0].type", `unknown type "year"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tableschema.Parse([]byte(`{"x-table":"t","fields":[`+tc.field+`]}`), "s.json")
			var es tableschema.Errors
			if !errors.As(err, &es) {
				t.Fatalf("Parse = %v, want tableschema.Errors", err)
			}
			for _, e := range es {
				if e.Path == tc.path && strings.Contains(e.Msg, tc.msg) {
					return
				}
			}
			t.Errorf("errors %v, want one at %s saying %q", err, tc.path, tc.msg)
		})
	}
	for _, tc := range []struct{ name, schema, path, msg string }{
		// "Providing the empty list [] means that no conversion to null
		// will be done, on any value": Rowfate always reads an empty cell
		// as missing.
		{"no missing values", `{"x-table":"t","fields":[{"name":"a"}],"missingValues":[]}`, "$.missingValues", "empty cell"},
		{"fieldsMatch", `{"x-table":"t","fields":[{"name":"a"}],"fieldsMatch":"subset"}`, "$.fieldsMatch", "not read by Rowfate"},
		{"uniqueKeys", `{"x-table":"t","fields":[{"name":"a"}],"uniqueKeys":[["a"]]}`, "$.uniqueKeys", "not read by Rowfate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tableschema.Parse([]byte(tc.schema), "s.json")
			if err == nil || !strings.Contains(err.Error(), tc.path+": ") || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Parse = %v, want an error at %s saying %q", err, tc.path, tc.msg)
			}
		})
	}
}

// TestMissingValuesObjects: v2's missingValues may be objects with a
// value and a label; their values are the missing values.
func TestMissingValuesObjects(t *testing.T) {
	t.Parallel()
	s, err := tableschema.Parse([]byte(`{"x-table":"t","fields":[{"name":"a"}],"missingValues":[{"value":"","label":"OMITTED"},{"value":"-99","label":"REFUSED"}]}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.MissingValues); got != "[ -99]" {
		t.Errorf("missing values %s, want [\"\" \"-99\"]", got)
	}
}

// TestAnyDateNamesTheOrderOption: "any: Any parsable representation of
// the type" stops short of a guess; a date that reads two ways is a
// bad_date whose message names the schema's option that settles it.
func TestAnyDateNamesTheOrderOption(t *testing.T) {
	t.Parallel()
	s, err := tableschema.Parse([]byte(`{"x-table":"t","fields":[{"name":"v","type":"date","format":"any"}]}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tableschema.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := validate.NewDynamic(c.Type, c.Options)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Binder().Map([]string{"v"})
	if err != nil {
		t.Fatal(err)
	}
	_, errs := d.Run(context.Background(), m, rows.Record{Row: 2, Values: []string{"01/02/2025"}})
	if len(errs) != 1 || errs[0].Code != rows.CodeBadDate || !strings.Contains(errs[0].Message, "x-date-order") {
		t.Errorf("errors %+v, want a bad_date naming x-date-order", errs)
	}
}
