package where_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/where"
)

var cols = []where.Column{
	{Name: "country", Type: where.Text},
	{Name: "tier", Type: where.Text},
	{Name: "amount", Type: where.Number},
	{Name: "qty", Type: where.Integer},
	{Name: "day", Type: where.Date},
	{Name: "paid", Type: where.Boolean},
}

// TestParse: what the grammar reads, shown in its canonical form, which
// makes precedence and grouping visible.
func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"country=DE", "country = 'DE'"},
		{"country='DE'", "country = 'DE'"},
		{`country="DE"`, "country = 'DE'"},
		{"country=DE or amount>=500", "country = 'DE' or amount >= '500'"},
		// and binds tighter than or.
		{"country=DE or country=FR and amount>1", "country = 'DE' or country = 'FR' and amount > '1'"},
		{"(country=DE or country=FR) and amount>1", "(country = 'DE' or country = 'FR') and amount > '1'"},
		{"COUNTRY = de AND Amount < 5", "country = 'de' and amount < '5'"},
		{"country in (DE, 'FR', \"IT\")", "country in ('DE', 'FR', 'IT')"},
		{"country NOT IN ('DE')", "country not in ('DE')"},
		{"tier is null or tier is not null", "tier is null or tier is not null"},
		{"not (country=DE or tier=gold)", "not (country = 'DE' or tier = 'gold')"},
		{"not country=DE", "not country = 'DE'"},
		{"country='it''s' and tier=\"say \"\"hi\"\"\"", `country = 'it''s' and tier = 'say "hi"'`},
		{"country = 'and'", "country = 'and'"},
		{"country<>DE", "country != 'DE'"},
		{"qty >= -3 and day < 2025-01-31 and paid = TRUE", "qty >= '-3' and day < '2025-01-31' and paid = 'true'"},
		{"amount > 1.5e3 and amount < .5", "amount > '1.5e3' and amount < '.5'"},
		{"email=a@example.com", ""}, // email is no column: refused below
		{"  ", ""},
	} {
		e, err := where.Parse(tc.in, cols)
		if tc.want == "" {
			if tc.in == "  " && (err != nil || e != nil) {
				t.Errorf("%q: %v, %v; want no filter", tc.in, e, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := e.String(); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.in, got, tc.want)
		}
		back, err := where.Parse(e.String(), cols)
		if err != nil || back.String() != e.String() {
			t.Errorf("%q does not read back: %v, %v", e.String(), back, err)
		}
	}
}

// TestErrors: a filter the parser cannot read is refused with where the
// problem is.
func TestErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"country=DE or", `where "country=DE or": expected a column after "or" (columns: country, tier, amount, qty, day or paid) at the end`},
		{"country=", `expected a value after "=" at the end`},
		{"country=DE and", `expected a column after "and"`},
		{"amount>=abc", `amount is a number: "abc" is not a number at position 9`},
		{"foo=1", `unknown column "foo" (columns: country, tier, amount, qty, day or paid) at position 1`},
		{"qty=1.5", `qty is an integer: "1.5" is not an integer`},
		{"day=2025-02-30", `day is a date: "2025-02-30" is not a date (YYYY-MM-DD)`},
		{"paid=maybe", `paid is a boolean: "maybe" is not true or false`},
		{"country>DE", "country is text: it compares with = or != only at position 8"},
		{"country=DE GmbH", `expected and, or or the end after "DE" (quote a value with spaces or keywords) at position 12`},
		{"country='DE", "the quote ' is never closed at position 9"},
		{"(country=DE", `expected ) to close the ( at position 1 at the end`},
		{"country=DE)", `expected and, or or the end after "DE"`},
		{"country in DE", "expected ( after in"},
		{"country in (DE FR)", "expected , or ) in the list of in"},
		{"country = null", "(write is null or is not null)"},
		{"country = or", "(quote it if it is one: 'or')"},
		{"country is DE", `expected null after "is"`},
		{"country ! DE", `unknown operator "!"`},
		{"country DE", `expected an operator (= != <> < <= > >=), in or is after "country"`},
		{"'country'=DE", "expected a column"},
		{strings.Repeat("(", 200) + "country=DE" + strings.Repeat(")", 200), "nested more than 100 deep"},
		{strings.Repeat("not ", 200) + "country=DE", "nested more than 100 deep"},
	} {
		_, err := where.Parse(tc.in, cols)
		var we *where.Error
		if !errors.As(err, &we) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v\nwant an *Error containing %s", tc.in, err, tc.want)
		}
	}
}

// TestSQL: every value is a parameter, numbered from the first one asked
// for, typed per dialect; precedence survives as parentheses.
func TestSQL(t *testing.T) {
	t.Parallel()
	e, err := where.Parse("country=DE or amount>=500 and (qty in (1,2) or paid=true) and tier is null", cols)
	if err != nil {
		t.Fatal(err)
	}
	sql, args := e.SQL(batchtype.Postgres, 3)
	want := `(("country" = CAST($3 AS text)) OR (("amount" >= CAST($4 AS numeric)) AND (("qty" IN (CAST($5 AS bigint), CAST($6 AS bigint))) OR ("paid" = CAST($7 AS boolean))) AND ("tier" IS NULL)))`
	if sql != want || !slices.Equal(args, []any{"DE", "500", "1", "2", "true"}) {
		t.Errorf("PostgreSQL:\n got %s %v\nwant %s", sql, args, want)
	}
	sql, args = e.SQL(batchtype.SQLite, 1)
	want = `(("country" = $1) OR ((CAST("amount" AS REAL) >= CAST($2 AS REAL)) AND (("qty" IN ($3, $4)) OR ("paid" = $5)) AND ("tier" IS NULL)))`
	if sql != want || !slices.Equal(args, []any{"DE", "500", int64(1), int64(2), int64(1)}) {
		t.Errorf("SQLite:\n got %s %v\nwant %s", sql, args, want)
	}
	if sql, args := (*where.Expr)(nil).SQL(batchtype.SQLite, 1); sql != "TRUE" || args != nil {
		t.Errorf("no filter: %s %v", sql, args)
	}
}

// TestHostileValue: a value that is SQL stays a parameter.
func TestHostileValue(t *testing.T) {
	t.Parallel()
	hostile := `x'); DROP TABLE customers; --`
	e, err := where.Parse(`country = "`+hostile+`" or tier in ('a''b', "1=1")`, cols)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []batchtype.Dialect{batchtype.Postgres, batchtype.SQLite} {
		sql, args := e.SQL(d, 1)
		if strings.Contains(sql, "DROP") || strings.Contains(sql, "'") || strings.Contains(sql, "1=1") {
			t.Errorf("%s: a value reached the SQL: %s", d, sql)
		}
		if !slices.Equal(args, []any{hostile, "a'b", "1=1"}) {
			t.Errorf("%s: args %v", d, args)
		}
	}
}

// TestColumnSQL: a column's SQL replaces its quoted name.
func TestColumnSQL(t *testing.T) {
	t.Parallel()
	e, err := where.Parse("n >= 2", []where.Column{{Name: "n", Type: where.Number, SQL: "t.amount"}})
	if err != nil {
		t.Fatal(err)
	}
	if sql, _ := e.SQL(batchtype.SQLite, 1); sql != "(CAST(t.amount AS REAL) >= CAST($1 AS REAL))" {
		t.Errorf("got %s", sql)
	}
}
