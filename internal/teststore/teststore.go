// Package teststore opens migrated stores on real databases for tests: a
// SQLite file per test, a PostgreSQL schema per test (internal/testdb).
// It is imported by tests only.
package teststore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/sqlite"
)

// SQLite returns a migrated SQLite store in the test's temporary folder,
// closed when the test ends.
func SQLite(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// Postgres returns a migrated PostgreSQL store in a schema of the test's
// own on DATABASE_URL (skipped, or failed under ROWFATE_REQUIRE_POSTGRES,
// without one), with its pool.
func Postgres(t testing.TB) *postgres.Store {
	t.Helper()
	pool := testdb.PostgresPool(t)
	s := postgres.New(pool, &postgres.Config{Schema: testdb.SchemaOf(pool.Config())})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// PostgresCustomPlans is Postgres on a pool readied as batchctl readies
// its own (postgres.ConfigurePool: custom plans), for the benchmarks that
// time statements a generic plan would time otherwise.
func PostgresCustomPlans(t testing.TB) *postgres.Store {
	t.Helper()
	cfg := testdb.PostgresSchema(t)
	postgres.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	s := postgres.New(pool, &postgres.Config{Schema: testdb.SchemaOf(cfg)})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}
