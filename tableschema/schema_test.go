package tableschema_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/tableschema"
)

// TestParseErrors: a schema with a mistake is refused with the JSON path
// of each mistake.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		schema string
		path   string
		msg    string
	}{
		{"unknown type", `{"x-table":"t","fields":[{"name":"a"},{"name":"b","type":"money"}]}`, "$.fields[1].type", `unknown type "money"`},
		{"bad pattern", `{"x-table":"t","fields":[{"name":"a","constraints":{"pattern":"[a-"}}]}`, "$.fields[0].constraints.pattern", "not a regular expression"},
		{"key not a field", `{"x-table":"t","fields":[{"name":"a"}],"primaryKey":["a","b"]}`, "$.primaryKey[1]", `"b" is not among the fields`},
		{"no table", `{"fields":[{"name":"a"}]}`, "$", "no x-table"},
		{"typo in a member", `{"x-table":"t","fields":[{"name":"a","constraint":{}}]}`, "$.fields[0].constraint", `did you mean "constraints"`},
		{"typo in an extension", `{"x-table":"t","x-mdoe":"insert","fields":[{"name":"a"}]}`, "$.x-mdoe", `did you mean "x-mode"`},
		{"bound of the wrong type", `{"x-table":"t","fields":[{"name":"a","type":"date","constraints":{"minimum":"yesterday"}}]}`, "$.fields[0].constraints.minimum", "not a date"},
		{"length on a number", `{"x-table":"t","fields":[{"name":"a","type":"number","constraints":{"maxLength":3}}]}`, "$.fields[0].constraints.maxLength", "for strings"},
		{"duplicate field", `{"x-table":"t","fields":[{"name":"a"},{"name":"A"}]}`, "$.fields[1].name", "already"},
		{"alias of another field", `{"x-table":"t","fields":[{"name":"a"},{"name":"b","x-aliases":["x","A"]}]}`, "$.fields[1].x-aliases[1]", "$.fields[0]"},
		{"alias of two fields", `{"x-table":"t","fields":[{"name":"a","x-aliases":["Total"]},{"name":"b","x-aliases":["total"]}]}`, "$.fields[1].x-aliases[0]", "$.fields[0]"},
		{"update without a key", `{"x-table":"t","x-mode":"update","fields":[{"name":"a"}]}`, "$.x-mode", "has none"},
		{"rule on no field", `{"x-table":"t","fields":[{"name":"a","type":"date"}],"x-rules":["a >= b"]}`, "$.x-rules[0]", `"b" is not among the fields`},
		{"rule of unlike types", `{"x-table":"t","fields":[{"name":"a","type":"date"},{"name":"b","type":"integer"}],"x-rules":["a >= b"]}`, "$.x-rules[0]", "do not compare"},
		{"bad date pattern", `{"x-table":"t","fields":[{"name":"a","type":"date","format":"%d/%q/%Y"}]}`, "$.fields[0].format", "%q"},
		{"a column name", `{"x-table":"t","fields":[{"name":"order id"}]}`, "$.fields[0].name", "letters, digits and _"},
		{"not JSON", `{"x-table": "t", "fields": [}`, "$", "not valid JSON"},
		{"bad x-validate", `{"x-table":"t","fields":[{"name":"a","x-validate":"gte=abc"}]}`, "$.fields[0].x-validate", "gte=abc"},
		{"enum of the wrong type", `{"x-table":"t","fields":[{"name":"a","type":"integer","constraints":{"enum":[1,"two"]}}]}`, "$.fields[0].constraints.enum[1]", "not an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tableschema.Parse([]byte(tc.schema), "s.json")
			var es tableschema.Errors
			if !errors.As(err, &es) {
				t.Fatalf("Parse = %v, want tableschema.Errors", err)
			}
			for _, e := range es {
				if e.Path == tc.path && strings.Contains(e.Msg, tc.msg) {
					if !strings.HasPrefix(e.Error(), "s.json: "+tc.path+": ") {
						t.Errorf("error %q does not name the file and path", e.Error())
					}
					return
				}
			}
			t.Errorf("errors %v, want one at %s saying %q", err, tc.path, tc.msg)
		})
	}
}

// TestParseExamples: the example schemas parse, JSON and YAML alike.
func TestParseExamples(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"orders.schema.json", "products.schema.yaml", "events.schema.json"} {
		data, err := os.ReadFile("../fixtures/schemas/" + f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := tableschema.Parse(data, f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := tableschema.Compile(s); err != nil {
			t.Errorf("%s: compile: %v", f, err)
		}
	}
}
