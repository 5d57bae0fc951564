package sqlite_test

import (
	"testing"

	"github.com/rowfate/rowfate/batch"
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
	generic := make([]batch.Store, len(stores))
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
