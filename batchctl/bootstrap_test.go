package batchctl

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/migrations"
)

// migrateRounds is how many times the bootstrap tests race their
// migrators: 5 (3 with -short), 50 in make test-long, or
// $ROWFATE_MIGRATE_ROUNDS.
func migrateRounds(t *testing.T) int {
	if v := os.Getenv("ROWFATE_MIGRATE_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ROWFATE_MIGRATE_ROUNDS=%q", v)
		}
		return n
	}
	if testing.Short() {
		return 3
	}
	return testenv.Pick(5, 50)
}

// raceMigrate starts n `batchctl migrate` processes at once and wants
// every one to succeed.
func raceMigrate(t *testing.T, bin string, n int, args ...string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	start := make(chan struct{})
	for range n {
		cmd := exec.Command(bin, append([]string{"migrate"}, args...)...)
		cmd.Env = append(os.Environ(), "DATABASE_URL=")
		wg.Go(func() {
			<-start
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Sprintf("%v: %s", err, out)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("a migrator failed: %s", e)
	}
}

// TestBootstrapRacePostgres: ten processes migrate an empty database at
// once, migrateRounds times: all succeed, and each step is applied once.
func TestBootstrapRacePostgres(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresURL(t)
	bin := buildBatchctl(t)
	want, err := migrations.Load(migrations.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the rounds' schemas are dropped: cleanups run last
	// registered first, and a deferred Close would run before all of them.
	t.Cleanup(func() { conn.Close(context.Background()) })
	for round := range migrateRounds(t) {
		schema := fmt.Sprintf("%s_r%d", testdb.PostgresSchemaName(t), round)
		// The built-in kinds' tables go in the database's search_path:
		// give each round its own, dropped with it.
		dbURL := url + "&search_path=" + schema
		if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
		})
		raceMigrate(t, bin, 10, "--database", dbURL, "--pg-schema", schema)
		var n, distinct int
		if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&n, &distinct); err != nil {
			t.Fatal(err)
		}
		if n != len(want) || distinct != len(want) {
			t.Fatalf("round %d: %d steps applied (%d distinct), want %d once each", round, n, distinct, len(want))
		}
		if t.Failed() {
			t.Fatalf("round %d failed", round)
		}
	}
}

// TestBootstrapRaceSQLite: the same on a new SQLite file.
func TestBootstrapRaceSQLite(t *testing.T) {
	t.Parallel()
	bin := buildBatchctl(t)
	dir := t.TempDir()
	for round := range migrateRounds(t) {
		db := filepath.Join(dir, fmt.Sprintf("r%d.db", round))
		raceMigrate(t, bin, 10, "--database", db)
		r := run(t, "status", "1", "--database", db)
		if r.code != exitError || t.Failed() {
			t.Fatalf("round %d: the database does not answer as migrated: %s", round, r)
		}
	}
}
