package postgres

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/store/internal/storesql"
)

// tenantTestStore is a migrated store with its tenant role, dropped when
// the test ends (roles outlive the test's schema).
func tenantTestStore(t *testing.T) *Store {
	t.Helper()
	pool := testdb.PostgresPool(t)
	schema := testdb.SchemaOf(pool.Config())
	role := schema + "_tenant"
	t.Cleanup(func() { dropRole(t, role) })
	s := New(pool, &Config{Schema: schema, TenantRole: role})
	ctx := context.Background()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTenantRole(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func dropRole(t *testing.T, role string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.PostgresURL(t))
	if err != nil {
		t.Errorf("drop role %s: %v", role, err)
		return
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{role}.Sanitize()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil || !exists {
		return
	}
	if _, err := conn.Exec(ctx, `DROP OWNED BY `+ident+` CASCADE`); err != nil {
		t.Errorf("drop owned by %s: %v", role, err)
	}
	if _, err := conn.Exec(ctx, `DROP ROLE `+ident); err != nil {
		t.Errorf("drop role %s: %v", role, err)
	}
}

// idle fails unless every idle connection of the pool is out of any
// transaction and the pool's own user again.
func idle(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for _, c := range s.pool.AcquireAllIdle(ctx) {
		var same bool
		err := c.QueryRow(ctx, `SELECT current_user = session_user AND coalesce(current_setting('app.tenant_id', true), '') = ''`).Scan(&same)
		status := c.Conn().PgConn().TxStatus()
		c.Release()
		if err != nil || !same || status != 'I' {
			t.Errorf("a pooled connection: owner's %v, transaction status %c, %v", same, status, err)
		}
	}
}

// TestTenantDBStatements: the one-round-trip statements of tenantDB end
// their transaction whatever happens to the statement: an error, no row, a
// result read in part, a cancelled context.
func TestTenantDBStatements(t *testing.T) {
	t.Parallel()
	s := tenantTestStore(t)
	db := s.driver().DB()
	ctx := driver.WithTenant(context.Background(), "a")
	tbl := storesql.QuoteIdent(s.schema) + ".pauses"

	if n, err := db.Exec(ctx, `INSERT INTO `+tbl+` (tenant_id, scope, value) VALUES ('a', 'kind', 'k1'), ('a', 'kind', 'k2')`); err != nil || n != 2 {
		t.Fatalf("insert as a: %d, %v", n, err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO `+tbl+` (tenant_id, scope, value) VALUES ('b', 'kind', 'k1')`); err == nil || !strings.Contains(err.Error(), "row-level security") {
		t.Fatalf("insert for b as a: %v", err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO `+tbl+` (tenant_id, scope, value) VALUES ('a', 'kind', 'k1')`); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("duplicate as a: %v, want ErrConflict", err)
	}
	var who string
	if err := db.QueryRow(ctx, `SELECT current_user`).Scan(&who); err != nil || who != s.tenantRole {
		t.Fatalf("current_user as a: %q, %v", who, err)
	}
	var v string
	if err := db.QueryRow(ctx, `SELECT value FROM `+tbl+` WHERE tenant_id = 'b'`).Scan(&v); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("no row: %v", err)
	}
	if err := db.QueryRow(ctx, `SELECT value FROM `+tbl+` WHERE`).Scan(&v); err == nil {
		t.Fatal("a syntax error scanned")
	}
	// A write that returns no row commits all the same (k3 below).
	if err := db.QueryRow(ctx, `WITH u AS (UPDATE `+tbl+` SET value = 'k3' WHERE value = 'k2' RETURNING value) SELECT value FROM u WHERE false`).Scan(&v); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("update returning nothing: %v", err)
	}
	rs, err := db.Query(ctx, `SELECT value FROM `+tbl+` ORDER BY value`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rs.Next() {
		if err := rs.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := rs.Close(); err != nil || !slices.Equal(got, []string{"k1", "k3"}) {
		t.Fatalf("values as a: %v, %v", got, err)
	}
	if err := rs.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	// Closed after one row of many.
	rs, err = db.Query(ctx, `SELECT g FROM generate_series(1, 100000) g`)
	if err != nil {
		t.Fatal(err)
	}
	rs.Next()
	if err := rs.Close(); err != nil {
		t.Fatalf("close early: %v", err)
	}
	// A statement that fails while its rows are read.
	rs, err = db.Query(ctx, `SELECT 1 / (g - 3) FROM generate_series(1, 5) g`)
	if err == nil {
		for rs.Next() {
		}
		err = rs.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("rows that fail: %v", err)
	}
	if _, err := db.Query(ctx, `SELECT nothing FROM nowhere`); err == nil {
		t.Fatal("a query of no table: no error")
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := db.Exec(cctx, `SELECT pg_sleep(5)`); err == nil {
		t.Fatal("a cancelled statement: no error")
	}
	// Without a tenant: the owner, who sees both.
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM `+tbl+` WHERE current_user = session_user`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("as the owner: %d, %v", n, err)
	}
	idle(t, s)
}

// TestTenantTxRollsBack: a tenant's transaction whose f fails, or panics,
// leaves nothing and gives its connection back clean.
func TestTenantTxRollsBack(t *testing.T) {
	t.Parallel()
	s := tenantTestStore(t)
	d := s.driver()
	ctx := driver.WithTenant(context.Background(), "a")
	tbl := storesql.QuoteIdent(s.schema) + ".pauses"
	insert := func(q storesql.Querier) error {
		_, err := q.Exec(ctx, `INSERT INTO `+tbl+` (tenant_id, scope, value) VALUES ('a', 'tenant', '')`)
		return err
	}
	boom := errors.New("boom")
	if err := d.InTx(ctx, func(q storesql.Querier) error { _ = insert(q); return boom }); !errors.Is(err, boom) {
		t.Fatalf("failing f: %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = d.InTx(ctx, func(q storesql.Querier) error { _ = insert(q); panic("boom") })
	}()
	// A failed statement f ignores: COMMIT rolls back, and says so.
	err := d.InTx(ctx, func(q storesql.Querier) error {
		_ = insert(q)
		_, _ = q.Exec(ctx, `SELECT 1 / 0`)
		return nil
	})
	if !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("commit of a failed transaction: %v", err)
	}
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+tbl).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows left: %d, %v", n, err)
	}
	if err := d.InTx(ctx, insert); err != nil {
		t.Fatal(err)
	}
	idle(t, s)
}

// TestCopyAsOwnerChecksTenant: the one statement a tenant's transaction
// runs as the owner, COPY, refuses rows of another tenant.
func TestCopyAsOwnerChecksTenant(t *testing.T) {
	t.Parallel()
	s := tenantTestStore(t)
	d := s.driver()
	ctx := driver.WithTenant(context.Background(), "a")
	err := d.InTx(ctx, func(q storesql.Querier) error {
		return d.InsertRows(ctx, q, storesql.InsertRowsParams{BatchID: 1, TenantID: "b", Rows: func(yield func(driver.IngestRow, error) bool) {
			yield(driver.IngestRow{RowNo: 2, State: "valid"}, nil)
		}})
	})
	if err == nil || !strings.Contains(err.Error(), `rows of tenant "b" in a transaction of tenant "a"`) {
		t.Fatalf("copy of b's rows as a: %v", err)
	}
	// As a, the COPY runs and the transaction is the role's again after.
	err = d.InTx(ctx, func(q storesql.Querier) error {
		if err := d.InsertRows(ctx, q, storesql.InsertRowsParams{BatchID: 1, TenantID: "a", Rows: func(yield func(driver.IngestRow, error) bool) {
			yield(driver.IngestRow{RowNo: 2, State: "valid"}, nil)
		}}); err != nil {
			return err
		}
		var who string
		var n int
		if err := q.QueryRow(ctx, `SELECT current_user, (SELECT count(*) FROM `+storesql.QuoteIdent(s.schema)+`.batch_rows)`).Scan(&who, &n); err != nil {
			return err
		}
		if who != s.tenantRole || n != 1 {
			t.Errorf("after the COPY: user %s, %d rows", who, n)
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatal(err)
	}
	idle(t, s)
}

// TestCreateRoleRace: a role created by another session meanwhile — one
// the advisory lock does not cover, such as a caller on another database
// of the cluster — is taken as it is.
func TestCreateRoleRace(t *testing.T) {
	t.Parallel()
	pool := testdb.PostgresPool(t)
	role := testdb.SchemaOf(pool.Config()) + "_race"
	t.Cleanup(func() { dropRole(t, role) })
	ctx := context.Background()
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback(ctx) }()
	if _, err := other.Exec(ctx, `CREATE ROLE `+storesql.QuoteIdent(role)+` NOLOGIN`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return createRole(ctx, tx, role) })
	}()
	// Wait until createRole is blocked on the uncommitted role, then
	// commit it: createRole gets the duplicate.
	deadline := time.Now().Add(testenv.Patience(t))
	for {
		var waiting bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'CREATE ROLE %' AND query LIKE '%' || $1 || '%')`, role).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("createRole never waited on the other session's role")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("createRole beside another session's: %v", err)
	}
}
