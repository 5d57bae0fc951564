package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/storetest"
)

// migratedStore returns a migrated store of a fresh schema, its pool and
// the schema's quoted name.
func migratedStore(t *testing.T) (*postgres.Store, string) {
	t.Helper()
	pool := testdb.PostgresPool(t)
	schema := testdb.SchemaOf(pool.Config())
	s := postgres.New(pool, &postgres.Config{Schema: schema})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, `"` + schema + `"`
}

// count runs a query of one count as the pool's user.
func count(t *testing.T, s *postgres.Store, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestValuesPurgeTruncates: a batch ingested now keeps its values in its
// own partition of batch_values, batch_rows' payload the JSON null; its
// purge empties the partition and writes no row of batch_rows, and its
// rows read back with their outcomes, values null and purged.
func TestValuesPurgeTruncates(t *testing.T) {
	t.Parallel()
	s, schema := migratedStore(t)
	ctx := context.Background()
	b := ingestAs(t, s, "a", 40)
	keep := ingestAs(t, s, "b", 6)
	part := fmt.Sprintf(`%s."batch_values_%d"`, schema, b.ID)
	if n := count(t, s, `SELECT count(*) FROM `+part); n != 40 {
		t.Fatalf("partition of batch %d holds %d values, want 40", b.ID, n)
	}
	if n := count(t, s, `SELECT count(*) FROM `+schema+`.batch_rows WHERE batch_id = $1 AND payload <> 'null'`, b.ID); n != 0 {
		t.Fatalf("%d rows of batch_rows hold values", n)
	}
	before, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "a", BatchID: b.ID, Limit: 100})
	if err != nil || len(before) != 40 || len(before[0].Values) != 1 {
		t.Fatalf("rows before the purge = %d, %v", len(before), err)
	}
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: "a", ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	cancelled, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "a", BatchID: b.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	xmin := count(t, s, `SELECT max(xmin::text::bigint) FROM `+schema+`.batch_rows WHERE batch_id = $1`, b.ID)
	out, err := s.ValuesPurge(ctx, driver.ValuesPurgeParams{TenantID: "a", BatchID: b.ID})
	if err != nil || len(out) != 1 || out[0].Rows != 40 {
		t.Fatalf("purge = %+v, %v", out, err)
	}
	if n := count(t, s, `SELECT count(*) FROM `+part); n != 0 {
		t.Fatalf("partition holds %d values after the purge", n)
	}
	if got := count(t, s, `SELECT max(xmin::text::bigint) FROM `+schema+`.batch_rows WHERE batch_id = $1`, b.ID); got != xmin {
		t.Fatalf("the purge wrote rows of batch_rows (xmin %d, was %d)", got, xmin)
	}
	after, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "a", BatchID: b.ID, Limit: 100})
	if err != nil || len(after) != len(cancelled) {
		t.Fatalf("rows after the purge = %d, %v", len(after), err)
	}
	for i, r := range after {
		was := cancelled[i]
		if !r.ValuesPurged || r.Values != nil || r.State != was.State || r.Attempts != was.Attempts || len(r.Errors) != len(was.Errors) {
			t.Fatalf("row %d after the purge = %+v, was %+v", r.RowNo, r, was)
		}
	}
	got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: "a", ID: b.ID})
	if err != nil || got.ValuesPurgedAt == nil || got.Status != batchtype.StatusCancelled {
		t.Fatalf("purged batch = %+v, %v", got, err)
	}
	if rs, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "b", BatchID: keep.ID, Limit: 10}); err != nil || len(rs) != 6 || rs[0].ValuesPurged || len(rs[0].Values) != 1 {
		t.Fatalf("another batch's rows = %+v, %v", rs, err)
	}
}

// TestValuesAttachBesideImport: a batch's partition is attached while
// another import has written values and not committed. CREATE TABLE ...
// PARTITION OF would wait for that import (ACCESS EXCLUSIVE on
// batch_values against its ROW EXCLUSIVE): shown here with a lock
// timeout. The store's CREATE TABLE then ATTACH PARTITION does not: the
// ingest completes while the other transaction is still open.
func TestValuesAttachBesideImport(t *testing.T) {
	t.Parallel()
	s, schema := migratedStore(t)
	ctx := context.Background()
	running := ingestAs(t, s, "a", 4)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO `+schema+`.batch_values (batch_id, row_no, tenant_id, payload) VALUES ($1, 1000, 'a', '[]')`, running.ID); err != nil {
		t.Fatal(err)
	}

	err = pgx.BeginFunc(ctx, s.Pool(), func(other pgx.Tx) error {
		if _, err := other.Exec(ctx, `SET LOCAL lock_timeout = '100ms'`); err != nil {
			return err
		}
		_, err := other.Exec(ctx, `CREATE TABLE `+schema+`.batch_values_far PARTITION OF `+schema+`.batch_values FOR VALUES FROM (1000000000000) TO (1000000000001)`)
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "55P03" {
		t.Fatalf("CREATE TABLE ... PARTITION OF beside an open import = %v, want a lock timeout (55P03)", err)
	}

	// An outer bound only: the attach waits for nothing.
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b := ingestAsCtx(t, bctx, s, "b", 6)
	if n := count(t, s, fmt.Sprintf(`SELECT count(*) FROM %s."batch_values_%d"`, schema, b.ID)); n != 6 {
		t.Fatalf("new batch's partition holds %d values, want 6", n)
	}
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatalf("the open import's transaction: %v", err)
	}
}

// TestValuesTenantIsolation: as the tenant role, a tenant reads its own
// values in batch_values and none of another's; a batch's partition is
// not granted to the role at all.
func TestValuesTenantIsolation(t *testing.T) {
	t.Parallel()
	s := tenantStore(t)
	ctx := context.Background()
	a := ingestAs(t, s, "a", 4)
	b := ingestAs(t, s, "b", 5)
	schema := `"` + s.Schema() + `"`
	asTenant := func(tenant, sql string, args ...any) (int64, error) {
		var n int64
		err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true)`, s.Schema()+"_tenant", tenant); err != nil {
				return err
			}
			return tx.QueryRow(ctx, sql, args...).Scan(&n)
		})
		return n, err
	}
	values := `SELECT count(*) FROM ` + schema + `.batch_values WHERE batch_id = $1`
	for _, c := range []struct {
		tenant string
		batch  int64
		want   int64
	}{{"a", a.ID, 4}, {"a", b.ID, 0}, {"b", b.ID, 5}, {"b", a.ID, 0}} {
		if n, err := asTenant(c.tenant, values, c.batch); err != nil || n != c.want {
			t.Fatalf("values of batch %d as tenant %s = %d, %v; want %d", c.batch, c.tenant, n, err, c.want)
		}
	}
	if n := count(t, s, values, b.ID); n != 5 {
		t.Fatalf("values of b's batch as the owner = %d, want 5", n)
	}
	_, err := asTenant("b", fmt.Sprintf(`SELECT count(*) FROM %s."batch_values_%d"`, schema, b.ID))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("read of a partition as the tenant role = %v, want permission denied (42501)", err)
	}
	rs, err := s.RowsList(as(ctx, "a"), driver.RowsListParams{TenantID: "b", BatchID: b.ID})
	if err != nil || len(rs) != 0 {
		t.Fatalf("b's rows as a = %+v, %v", rs, err)
	}
}

// TestMigrateValuesOverRows: migration 0014 applies to a schema whose
// batches keep their values in batch_rows; it moves none of them, and
// they read back, take edits and purge (by the UPDATE of 0013).
func TestMigrateValuesOverRows(t *testing.T) {
	t.Parallel()
	s, schema := migratedStore(t)
	old := storetest.MigrateValuesOverRows(t, s, func(t *testing.T) {
		q := `SET LOCAL search_path = ` + schema + `;
			UPDATE batch_rows r SET payload = v.payload FROM batch_values v WHERE v.batch_id = r.batch_id AND v.row_no = r.row_no;
			DROP TABLE batch_values;
			ALTER TABLE batch_rows ALTER COLUMN payload DROP DEFAULT;
			DELETE FROM schema_migrations WHERE version = 14`
		if err := pgx.BeginFunc(context.Background(), s.Pool(), func(tx pgx.Tx) error {
			_, err := tx.Exec(context.Background(), q)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	})
	for _, id := range old {
		if n := count(t, s, `SELECT count(*) FROM `+schema+`.batch_values WHERE batch_id = $1`, id); n != 0 {
			t.Fatalf("batch %d, ingested before the migration, has %d rows in batch_values", id, n)
		}
		if n := count(t, s, `SELECT count(*) FROM pg_class WHERE oid = to_regclass($1)`, fmt.Sprintf(`%s."batch_values_%d"`, schema, id)); n != 0 {
			t.Fatalf("batch %d, ingested before the migration, has a partition", id)
		}
	}
}

// TestConfigurePoolCustomPlans: a read of one batch's values, prepared
// and run a sixth time, locks every batch's partition on a plain pool
// (PostgreSQL builds a generic plan), and that batch's partition alone
// on a pool ConfigurePool readied.
func TestConfigurePoolCustomPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, schema := migratedStore(t)
	const batches = 40
	for i := int64(1); i <= batches; i++ {
		part := fmt.Sprintf("%s.batch_values_%d", schema, i)
		if _, err := s.Pool().Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (LIKE %s.batch_values); ALTER TABLE %s.batch_values ATTACH PARTITION %s FOR VALUES FROM (%d) TO (%d)`,
			part, schema, schema, part, i, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	locks := func(pool *pgxpool.Pool) int64 {
		t.Helper()
		var n int64
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for row := range int64(7) {
				var p []byte
				err := tx.QueryRow(ctx, `SELECT payload FROM `+schema+`.batch_values WHERE batch_id = $1 AND row_no = $2`, int64(3), row).Scan(&p)
				if !errors.Is(err, pgx.ErrNoRows) {
					return fmt.Errorf("read: %v", err)
				}
			}
			return tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
				WHERE l.pid = pg_backend_pid() AND c.relname LIKE 'batch_values_%'`).Scan(&n)
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := locks(s.Pool()); n < batches {
		t.Fatalf("a plain pool locked %d partitions or keys; the generic plan the test means to show locks all %d partitions", n, batches)
	}
	cfg := s.Pool().Config()
	postgres.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if n := locks(pool); n > 2 {
		t.Fatalf("a pool ConfigurePool readied locked %d partitions or keys, want batch 3's partition and its key", n)
	}
}
