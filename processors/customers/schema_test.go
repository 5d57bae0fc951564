package customers_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/processors/customers"
)

// TestEnsureSchemaMakesOptionalColumnsNullable: a customers table made
// when country and amount were NOT NULL is changed in place, its rows
// kept, so that a file without those columns can insert NULL.
func TestEnsureSchemaMakesOptionalColumnsNullable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lite, err := sql.Open("sqlite", "file:"+testdb.SQLitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pool := testdb.PostgresPool(t)
	pg := stdlib.OpenDBFromPool(pool)
	defer pg.Close()
	for _, tc := range []struct {
		d   customers.Dialect
		db  *sql.DB
		old string
	}{
		{customers.SQLite, lite, `CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
			country TEXT NOT NULL, signup_date TEXT NOT NULL, amount TEXT NOT NULL, updated_at TEXT NOT NULL)`},
		{customers.Postgres, pg, `CREATE TABLE customers (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, email text NOT NULL UNIQUE,
			name text NOT NULL, country text NOT NULL, signup_date date NOT NULL, amount numeric(18,2) NOT NULL, updated_at timestamptz NOT NULL)`},
	} {
		if _, err := tc.db.ExecContext(ctx, tc.old); err != nil {
			t.Fatalf("%s: %v", tc.d, err)
		}
		if _, err := tc.db.ExecContext(ctx, `INSERT INTO customers (email, name, country, signup_date, amount, updated_at)
			VALUES ('old@example.com', 'Old', 'FR', '2020-01-02', '1.50', '2020-01-02T00:00:00Z')`); err != nil {
			t.Fatalf("%s: %v", tc.d, err)
		}
		for range 2 { // twice: the second is a no-op
			if err := customers.EnsureSchema(ctx, tc.db, tc.d); err != nil {
				t.Fatalf("%s: %v", tc.d, err)
			}
		}
		if _, err := tc.db.ExecContext(ctx, `INSERT INTO customers (email, name, country, signup_date, amount, updated_at)
			VALUES ('new@example.com', 'New', NULL, '2020-01-02', NULL, '2020-01-02T00:00:00Z')`); err != nil {
			t.Errorf("%s: NULL country and amount after EnsureSchema: %v", tc.d, err)
		}
		var country, amount string
		if err := tc.db.QueryRowContext(ctx, `SELECT country, CAST(amount AS TEXT) FROM customers WHERE email = 'old@example.com'`).Scan(&country, &amount); err != nil || country != "FR" || amount != "1.50" {
			t.Errorf("%s: the old row is %q %q, %v", tc.d, country, amount, err)
		}
	}
}
