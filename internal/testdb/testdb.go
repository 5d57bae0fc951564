// Package testdb gives tests real databases: a fresh SQLite file per test,
// and a fresh PostgreSQL schema per test on the server named by
// DATABASE_URL. It is imported by tests only.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SQLitePath returns a database file path in a per-test temporary folder.
func SQLitePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "rowfate.db")
}

// PostgresURL returns DATABASE_URL. When it is unset the test is skipped,
// unless ROWFATE_REQUIRE_POSTGRES=1 (make test, CI), which makes it fail.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		const fix = "set DATABASE_URL=postgres://... or run `make test`, which starts a throwaway PostgreSQL"
		if os.Getenv("ROWFATE_REQUIRE_POSTGRES") == "1" {
			t.Fatal("PostgreSQL required (ROWFATE_REQUIRE_POSTGRES=1) but DATABASE_URL is unset: " + fix)
		}
		t.Skip("no PostgreSQL: " + fix)
	}
	return u
}

// PostgresSchemaName returns a schema name unique to this test, which does
// not exist yet; whatever creates it, it is dropped when the test ends.
func PostgresSchemaName(t testing.TB) string {
	t.Helper()
	url := PostgresURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "rf_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// PostgresSchema creates an empty schema for this test and returns a pool
// config whose connections use it as search_path (SchemaOf returns it).
// The schema is dropped when the test ends.
func PostgresSchema(t testing.TB) *pgxpool.Config {
	t.Helper()
	url := PostgresURL(t)
	ctx := context.Background()
	schema := PostgresSchemaName(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to DATABASE_URL: %v", err)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		t.Fatalf("create schema: %v", err)
	}
	conn.Close(ctx)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse DATABASE_URL: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 8
	return cfg
}

// PostgresPool returns a pool on a fresh schema, closed when the test ends.
func PostgresPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), PostgresSchema(t))
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// SchemaOf returns the test schema of a pool config PostgresSchema made (its
// search_path), to hand to postgres.Config.Schema.
func SchemaOf(cfg *pgxpool.Config) string {
	return cfg.ConnConfig.RuntimeParams["search_path"]
}

// DropRoles drops roles when the test ends, before its schema is dropped:
// roles belong to the cluster and outlive the schema, so every test names
// its own after its schema. DROP OWNED revokes their privileges (and drops
// what they own), which DROP ROLE requires.
func DropRoles(t testing.TB, roles ...string) {
	t.Helper()
	url := PostgresURL(t)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop roles: %v", err)
			return
		}
		defer conn.Close(ctx)
		for _, r := range roles {
			var exists bool
			if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, r).Scan(&exists); err != nil || !exists {
				continue
			}
			if _, err := conn.Exec(ctx, `DROP OWNED BY `+pgx.Identifier{r}.Sanitize()+` CASCADE`); err != nil {
				t.Errorf("drop owned by %s: %v", r, err)
			}
		}
		for _, r := range roles {
			if _, err := conn.Exec(ctx, `DROP ROLE IF EXISTS `+pgx.Identifier{r}.Sanitize()); err != nil {
				t.Errorf("drop role %s: %v", r, err)
			}
		}
	})
}
