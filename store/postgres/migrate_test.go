package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/migrations"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/storetest"
)

// TestConcurrentMigrators starts eight migrators at once, each with its own
// pool (as eight replicas booting together would), on an empty schema: all
// must succeed and each step must be applied exactly once. The steps use
// plain CREATE TABLE, so a second application would fail loudly.
func TestConcurrentMigrators(t *testing.T) {
	t.Parallel()
	cfg := testdb.PostgresSchema(t)
	ctx := context.Background()
	const n = 8
	stores := make([]*postgres.Store, n)
	for i := range stores {
		pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if err := pool.Ping(ctx); err != nil { // connect before the race starts
			t.Fatal(err)
		}
		stores[i] = postgres.New(pool)
	}
	generic := make([]batch.Store, len(stores))
	for i, s := range stores {
		generic[i] = s
	}
	storetest.MigrateConcurrently(t, generic)
	all, err := migrations.Load(migrations.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	var rowsN, distinct int
	if err := stores[0].Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&rowsN, &distinct); err != nil {
		t.Fatal(err)
	}
	if rowsN != len(all) || distinct != len(all) {
		t.Fatalf("schema_migrations has %d rows (%d distinct), want %d", rowsN, distinct, len(all))
	}
}
