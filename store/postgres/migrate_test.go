package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/migrations"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/storetest"
)

// TestConcurrentMigrators starts eight migrators at once, each with its own
// pool (as eight replicas booting together would), on a database without
// the engine's schema: all must succeed, the schema must be created once
// and each step applied exactly once. The steps use plain CREATE TABLE, so
// a second application would fail loudly, and two CREATE SCHEMA IF NOT
// EXISTS without the lock collide on the catalog.
func TestConcurrentMigrators(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresURL(t)
	schema := testdb.PostgresSchemaName(t) // does not exist yet
	ctx := context.Background()
	const n = 8
	stores := make([]*postgres.Store, n)
	for i := range stores {
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if err := pool.Ping(ctx); err != nil { // connect before the race starts
			t.Fatal(err)
		}
		stores[i] = postgres.New(pool, &postgres.Config{Schema: schema})
	}
	generic := make([]driver.Store, len(stores))
	for i, s := range stores {
		generic[i] = s
	}
	storetest.MigrateConcurrently(t, generic)
	all, err := migrations.Load(migrations.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	var rowsN, distinct int
	if err := stores[0].Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM `+schema+`.schema_migrations`).Scan(&rowsN, &distinct); err != nil {
		t.Fatal(err)
	}
	if rowsN != len(all) || distinct != len(all) {
		t.Fatalf("schema_migrations has %d rows (%d distinct), want %d", rowsN, distinct, len(all))
	}
}

// TestSchemaNewerThanBuild: a database migrated by a newer build is neither
// migrated nor reported up to date by this one.
func TestSchemaNewerThanBuild(t *testing.T) {
	t.Parallel()
	pool := testdb.PostgresPool(t)
	s := postgres.New(pool, &postgres.Config{Schema: testdb.SchemaOf(pool.Config())})
	ctx := context.Background()
	st, err := s.SchemaStatus(ctx)
	if err != nil || st.Current != 0 || st.Latest == 0 {
		t.Fatalf("status of an empty schema = %+v, %v", st, err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := s.SchemaStatus(ctx); err != nil || st.Current != st.Latest {
		t.Fatalf("status after migrate = %+v, %v", st, err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'from_the_future', now())`); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); !errors.Is(err, driver.ErrSchemaNewer) {
		t.Fatalf("migrate of a newer schema = %v, want ErrSchemaNewer", err)
	}
	if st, err := s.SchemaStatus(ctx); err != nil || st.Current != 9999 {
		t.Fatalf("status of a newer schema = %+v, %v", st, err)
	}
}

// TestMigrateRetentionOverRows: migration 0013 applies to a schema with
// batches and rows at 0012, row-level security included.
func TestMigrateRetentionOverRows(t *testing.T) {
	t.Parallel()
	pool := testdb.PostgresPool(t)
	schema := testdb.SchemaOf(pool.Config())
	s := postgres.New(pool, &postgres.Config{Schema: schema})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	storetest.MigrateRetentionOverRows(t, s, func(t *testing.T) {
		q := `SET LOCAL search_path = "` + schema + `";
			DROP TABLE retention_policies;
			ALTER TABLE batches DROP COLUMN values_purged_at, DROP COLUMN values_purged_by;
			DELETE FROM schema_migrations WHERE version = 13`
		tx, err := pool.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		if _, err := tx.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	var rls bool
	if err := pool.QueryRow(context.Background(), `SELECT relrowsecurity FROM pg_class WHERE oid = CAST($1 AS regclass)`, schema+".retention_policies").Scan(&rls); err != nil || !rls {
		t.Fatalf("retention_policies row-level security = %v, %v", rls, err)
	}
}
