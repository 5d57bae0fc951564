package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/migrations"
	"github.com/rowfate/rowfate/store/sqlite"
	"github.com/rowfate/rowfate/store/storetest"
)

// TestConcurrentMigrators opens one new file from four stores at once (four
// processes starting together): BEGIN IMMEDIATE and the busy timeout must
// make them take turns, and each step is applied once.
func TestConcurrentMigrators(t *testing.T) {
	t.Parallel()
	path := testdb.SQLitePath(t)
	const n = 4
	stores := make([]*sqlite.Store, n)
	for i := range stores {
		s, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	generic := make([]driver.Store, len(stores))
	for i, s := range stores {
		generic[i] = s
	}
	storetest.MigrateConcurrently(t, generic)
	all, err := migrations.Load(migrations.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := stores[0].DB().QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != len(all) {
		t.Fatalf("schema_migrations has %d rows, want %d", got, len(all))
	}
}

// TestSchemaNewerThanBuild: a database migrated by a newer build is neither
// migrated nor reported up to date by this one.
func TestSchemaNewerThanBuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := sqlite.Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, err := s.SchemaStatus(ctx); err != nil || st.Current != 0 || st.Latest == 0 {
		t.Fatalf("status of an empty file = %+v, %v", st, err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'from_the_future', 0)`); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); !errors.Is(err, driver.ErrSchemaNewer) {
		t.Fatalf("migrate of a newer schema = %v, want ErrSchemaNewer", err)
	}
}

// TestOpenReadOnly: a read-only open creates nothing, reads a file in a
// folder the process cannot write, and cannot write.
func TestOpenReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "rowfate.db")
	if _, err := sqlite.OpenReadOnly(path); err == nil {
		t.Fatal("read-only open of a missing file succeeded")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only open created %s", path)
	}
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	ro, err := sqlite.OpenReadOnly(path)
	if err != nil {
		t.Fatalf("read-only open of a read-only file: %v", err)
	}
	defer ro.Close()
	st, err := ro.SchemaStatus(ctx)
	if err != nil || st.Current != st.Latest {
		t.Fatalf("schema status = %+v, %v", st, err)
	}
	if _, err := ro.BatchList(ctx, driver.BatchListParams{TenantID: "default"}); err != nil {
		t.Fatalf("list batches read-only: %v", err)
	}
	_, err = ro.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "default", Kind: "k", Header: []string{"a"},
		Rows: func(func(driver.IngestRow, error) bool) {}})
	if err == nil {
		t.Fatal("a write through a read-only store succeeded")
	}
}

// TestMigrateRetentionOverRows: migration 0013 applies to a file with
// batches and rows at 0012.
func TestMigrateRetentionOverRows(t *testing.T) {
	t.Parallel()
	s := openMigrated(t, testdb.SQLitePath(t))
	storetest.MigrateRetentionOverRows(t, s, func(t *testing.T) {
		for _, stmt := range []string{`DROP INDEX batches_values_kept`, `ALTER TABLE batches DROP COLUMN values_purged_at`,
			`ALTER TABLE batches DROP COLUMN values_purged_by`, `DROP TABLE retention_policies`, `DELETE FROM schema_migrations WHERE version = 13`} {
			if _, err := s.DB().Exec(stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	})
}
