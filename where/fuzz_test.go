package where_test

import (
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/where"
)

// FuzzParse: no filter makes the parser panic; whatever it accepts reads
// back from its canonical text as the same filter, and compiles to SQL
// with one parameter per value and no quote (no value in the SQL text).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"country=DE or amount>=500", "(country='DE' or tier in (a,\"b\")) and not amount<1",
		"tier is not null", "qty in (1, 2, 3) and day >= 2025-01-01", "country='it''s'", "paid=true", "((", "country="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := where.Parse(s, cols)
		if err != nil || e == nil {
			return
		}
		back, err := where.Parse(e.String(), cols)
		if err != nil {
			t.Fatalf("%q accepted, but its canonical %q is not: %v", s, e.String(), err)
		}
		if back.String() != e.String() {
			t.Fatalf("%q: canonical %q reads back as %q", s, e.String(), back.String())
		}
		for _, d := range []batchtype.Dialect{batchtype.Postgres, batchtype.SQLite} {
			sql, args := e.SQL(d, 1)
			if strings.ContainsAny(sql, `'`) || strings.Count(sql, "$") != len(args) {
				t.Fatalf("%q on %s: %s %v", s, d, sql, args)
			}
		}
	})
}
