package tableschema_test

import (
	"os"
	"testing"

	"github.com/rowfate/rowfate/tableschema"
)

// FuzzSchema: no schema file, however malformed, panics the parser or the
// compiler; a schema Parse accepts compiles, and what Marshal writes of it
// parses again.
func FuzzSchema(f *testing.F) {
	for _, name := range []string{"orders.schema.json", "products.schema.yaml", "events.schema.json"} {
		data, err := os.ReadFile("../fixtures/schemas/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"x-table":"t","fields":[{"name":"a","type":"date","format":"%d/%m/%Y","constraints":{"minimum":"2020-01-01","enum":["2021-01-01"]}}],"x-rules":["a > '2020-02-02'"]}`))
	f.Add([]byte("x-table: t\nfields: [{name: a, type: number, constraints: {pattern: '['}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := tableschema.Parse(data, "fuzz")
		if err != nil {
			return
		}
		if _, err := tableschema.Compile(s); err != nil {
			t.Fatalf("a schema Parse accepted does not compile: %v\n%s", err, data)
		}
		out, err := tableschema.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tableschema.Parse(out, "again"); err != nil {
			t.Fatalf("Marshal wrote a schema that does not parse: %v\n%s", err, out)
		}
	})
}
