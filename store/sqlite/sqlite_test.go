package sqlite_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/store/sqlite"
	"github.com/rowfate/rowfate/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) driver.Store {
		s, err := sqlite.Open(testdb.SQLitePath(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestConformanceRetention runs the policy sweep, whose batches are
// backdated through a connection of the test's own.
func TestConformanceRetention(t *testing.T) {
	t.Parallel()
	paths := map[driver.Store]string{}
	var mu sync.Mutex
	storetest.RunRetention(t, func(t *testing.T) driver.Store {
		path := testdb.SQLitePath(t)
		s := openMigrated(t, path)
		mu.Lock()
		paths[s] = path
		mu.Unlock()
		return s
	}, func(t *testing.T, s driver.Store, id int64, d time.Duration) {
		mu.Lock()
		path := paths[s]
		mu.Unlock()
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`UPDATE batches SET finished_at = finished_at - ? WHERE id = ?`, d.Milliseconds(), id); err != nil {
			t.Fatal(err)
		}
	})
}
