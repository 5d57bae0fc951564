package batchctl

import (
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sqlDB opens the session's database, to look at the tables the kinds
// write.
func (c *session) sqlDB() *sql.DB {
	c.t.Helper()
	driver, dsn := "sqlite", "file:"+c.database
	if strings.HasPrefix(c.database, "postgres") {
		driver, dsn = "pgx", c.database
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { db.Close() })
	return db
}

func (c *session) text(db *sql.DB, query string, args ...any) string {
	c.t.Helper()
	var s sql.NullString
	if err := db.QueryRow(query, args...).Scan(&s); err != nil {
		c.t.Fatalf("%s: %v", query, err)
	}
	return s.String
}

// TestTierWhere: customers-tier reads its filter with the where grammar,
// on both stores. On the old code "country=DE or amount>=500" was one
// comparison of country with "DE or amount>=500" and "country='DE'"
// compared with the quotes; both matched nothing, exited 0 and recorded
// an empty batch.
func TestTierWhere(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, c *session) {
		in := writeFile(t, "c.csv", []byte("email,name,country,signup_date,amount\na@example.com,Ann,DE,2020-01-02,5\n"+
			"b@example.com,Bo,DE,2020-01-02,500\nc@example.com,Cy,FR,2020-01-02,5000\nd@example.com,Di,FR,2020-01-02,5\n"))
		if r := c.run("import", "customers", in); r.code != exitOK {
			t.Fatalf("import: %s", r)
		}
		if r := c.run("recalc", "customers-tier", "--where", "country=DE or amount>=500"); r.code != exitOK || !strings.Contains(r.stdout, "succeeded  3\n") {
			t.Errorf("or: %s", r)
		}
		if r := c.run("recalc", "customers-tier", "--where", "country='DE'"); r.code != exitOK || !strings.Contains(r.stdout, "succeeded  2\n") {
			t.Errorf("quoted: %s", r)
		}
		if r := c.run("recalc", "customers-tier", "--where", "(country in (DE, 'FR') and amount < 100) or tier = gold"); r.code != exitOK || !strings.Contains(r.stdout, "succeeded  3\n") {
			t.Errorf("in, parentheses: %s", r)
		}
		before := len(c.batches())
		for _, bad := range []string{"country=", "amount>=abc", "foo=1", "country=DE and", "country=DE or amount>=500)"} {
			r := c.run("recalc", "customers-tier", "--where", bad)
			if r.code != exitUsage || !strings.Contains(r.stderr, "where ") {
				t.Errorf("--where %q: %s", bad, r)
			}
		}
		r := c.run("recalc", "customers-tier", "--where", "country=XX")
		if r.code != exitError || !strings.Contains(r.stderr, "no row matches --where country=XX: nothing to recalculate, no batch created") {
			t.Errorf("no match: %s", r)
		}
		if n := len(c.batches()); n != before {
			t.Errorf("%d batches after refused filters, want %d", n, before)
		}
	})
}

// TestRecalcFile: a recalculation declared in a file beside a Table
// Schema, end to end on both stores: stored with kind add, listed, run
// with a filter of or, parentheses and in; the table's new values; a row
// deleted since the batch was made fails on its re-run; a hostile value
// is data; bad files and filters are refused.
func TestRecalcFile(t *testing.T) {
	t.Parallel()
	fix := func(name string) string { return filepath.Join("..", "fixtures", "schemas", name) }
	bothStores(t, func(t *testing.T, c *session) {
		if r := c.run("kind", "add", fix("orders.schema.json"), "--create-table"); r.code != exitOK {
			t.Fatalf("kind add schema: %s", r)
		}
		if r := c.run("import", "orders", fix("orders.csv")); r.code != exitRows || !strings.Contains(r.stdout, "succeeded  32") {
			t.Fatalf("import: %s", r)
		}
		r := c.run("kind", "add", fix("orders.recalc.json"))
		if r.code != exitOK || !strings.Contains(r.stdout, "kind orders-discount stored: recalc v1 of kind orders (table orders), sets customer_email, unit_price") {
			t.Fatalf("kind add recalc: %s", r)
		}
		if r := c.run("kind", "add", fix("orders.recalc.json")); r.code != exitOK || !strings.Contains(r.stdout, "unchanged") {
			t.Errorf("kind add again: %s", r)
		}
		if r := c.run("kinds"); !strings.Contains(r.stdout, "orders-discount (recalc, recalc v1 of orders)") {
			t.Errorf("kinds: %s", r)
		}
		db := c.sqlDB()
		price := func(order string, line int) string {
			return c.text(db, `SELECT CAST(unit_price AS TEXT) FROM orders WHERE order_id = $1 AND line_no = $2`, order, line)
		}
		r = c.run("recalc", "orders-discount", "--where", "(sku in ('SKU-0332', SKU-0667) or quantity >= 9) and order_date < 2025-04-01")
		if r.code != exitOK || !strings.Contains(r.stdout, "succeeded  3\n") {
			t.Fatalf("recalc: %s", r)
		}
		for _, tc := range []struct {
			order string
			line  int
			want  string
		}{{"ORD-10001", 1, "59.11"}, {"ORD-10001", 2, "11.57"}, {"ORD-10001", 3, "14.78"}, {"ORD-10002", 1, "84.13"}} {
			if got := price(tc.order, tc.line); got != tc.want {
				t.Errorf("%s/%d: unit_price %s, want %s", tc.order, tc.line, got, tc.want)
			}
		}
		if got := c.text(db, `SELECT customer_email FROM orders WHERE order_id = 'ORD-10001' AND line_no = 2`); got != "buyer1@example.com" {
			t.Errorf("email %q", got)
		}

		// A batch made, then a row deleted before its rows are worked:
		// that row fails on the re-run, the others are recalculated.
		r = c.run("recalc", "orders-discount", "--where", "order_id = 'ORD-10002'", "--no-work")
		if r.code != exitOK {
			t.Fatalf("recalc --no-work: %s", r)
		}
		bs := c.batches()
		id := bs[0].ID
		for _, b := range bs {
			id = max(id, b.ID)
		}
		if _, err := db.Exec(`DELETE FROM orders WHERE order_id = 'ORD-10002' AND line_no = 1`); err != nil {
			t.Fatal(err)
		}
		r = c.run("rerun", strconv.FormatInt(id, 10))
		if r.code != exitRows || !strings.Contains(r.stdout, "failed  1\n") {
			t.Fatalf("rerun: %s", r)
		}
		if r := c.run("rows", strconv.FormatInt(id, 10), "--state", "failed"); !strings.Contains(r.stdout, "ORD-10002/1 no longer exists in orders") {
			t.Errorf("the deleted row's outcome: %s", r)
		}
		if got := price("ORD-10002", 2); got != "13.57" {
			t.Errorf("ORD-10002/2: unit_price %s, want 13.57", got)
		}

		// A hostile value is a parameter: it matches no sku, and the
		// table is still there.
		hostile := `x'); DROP TABLE orders; --`
		r = c.run("recalc", "orders-discount", "--where", `sku = 'SKU-0247' or sku = "`+hostile+`"`)
		if r.code != exitOK || !strings.Contains(r.stderr, "DROP TABLE orders") || !strings.Contains(r.stdout, "succeeded  1\n") {
			t.Errorf("hostile: %s", r)
		}
		if got := c.text(db, `SELECT CAST(count(*) AS TEXT) FROM orders`); got != "31" {
			t.Errorf("%s orders after the hostile filter, want 31", got)
		}

		before := len(c.batches())
		for _, bad := range []string{"sku=", "quantity>=abc", "foo=1", "sku=X and", "customer_email = a@b.c"} {
			if r := c.run("recalc", "orders-discount", "--where", bad); r.code != exitUsage {
				t.Errorf("--where %q: %s", bad, r)
			}
		}
		if r := c.run("recalc", "orders-discount", "--where", "sku = nope"); r.code != exitError || !strings.Contains(r.stderr, "no row matches") {
			t.Errorf("no match: %s", r)
		}
		if n := len(c.batches()); n != before {
			t.Errorf("%d batches after refused filters, want %d", n, before)
		}
	})
}

// TestRecalcFileRefused: kind add refuses a recalculation file's
// mistakes with their JSON path, and an expression the table cannot run,
// storing nothing.
func TestRecalcFileRefused(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, c *session) {
		if r := c.run("kind", "add", filepath.Join("..", "fixtures", "schemas", "orders.schema.json"), "--create-table"); r.code != exitOK {
			t.Fatalf("kind add schema: %s", r)
		}
		for _, tc := range []struct{ file, want string }{
			{`{"x-recalc": "r", "kind": "orders", "sett": {}}`, "$.sett: unknown member"},
			{`{"x-recalc": "r", "kind": "orders", "set": {"nope": "1"}}`, `$.set.nope: kind orders has no column "nope"`},
			{`{"x-recalc": "r", "kind": "orders", "set": {"line_no": "2"}}`, "$.set.line_no: line_no is part of the key"},
			{`{"x-recalc": "r", "kind": "orders", "where": ["nope"], "set": {"sku": "sku"}}`, `$.where[0]: kind orders has no column "nope"`},
			{`{"x-recalc": "r", "kind": "orders", "set": {"sku": "1); DROP TABLE orders; --"}}`, "$.set.sku: the ) at 2 closes nothing"},
			{`{"x-recalc": "r", "kind": "orders"}`, "set or call is required"},
			{`{"x-recalc": "r", "kind": "nope", "set": {"sku": "sku"}}`, "kind nope is not a stored schema kind"},
			{`{"x-recalc": "r", "kind": "orders", "set": {"unit_price": "round(unit_pric * 0.9, 2)"}}`, "set does not run on the table orders"},
			{`{"x-recalc": "r", "kind": "orders", "set": {"sku": "no_such_function(sku)"}}`, "set does not run on the table orders"},
			{"x-recalc: r\nkind: orders\nset:\n  sku: upper(sku)\nwhere: [sku]\nextra: 1\n", "$.extra: unknown member"},
		} {
			r := c.run("kind", "add", writeFile(t, "r.recalc.json", []byte(tc.file)))
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%s: %s\nwant exit 2 and %s", tc.file, r, tc.want)
			}
		}
		if r := c.run("kind", "show", "r"); r.code == exitOK {
			t.Errorf("a refused file was stored: %s", r)
		}
		if r := c.run("kind", "add", writeFile(t, "r.recalc.yaml", []byte("x-recalc: orders-upper\nkind: orders\nset:\n  sku: upper(sku)\nwhere: [sku]\n"))); r.code != exitOK {
			t.Errorf("YAML: %s", r)
		}
	})
}
