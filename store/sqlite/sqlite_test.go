package sqlite_test

import (
	"context"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/store/sqlite"
	"github.com/rowfate/rowfate/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	// Under the race detector, modernc's SQLite (C translated to Go, every
	// memory access instrumented) runs the effect race about twenty times
	// slower; its one connection serialises the goroutines anyway. make
	// test runs the full 10,000 keys again without -race.
	opts := storetest.Options{}
	if raceEnabled {
		opts.EffectKeys = 1000
	}
	storetest.RunWith(t, func(t *testing.T) driver.Store {
		s, err := sqlite.Open(testdb.SQLitePath(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}, opts)
}
