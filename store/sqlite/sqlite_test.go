package sqlite_test

import (
	"context"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/store/sqlite"
	"github.com/rowfate/rowfate/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) batch.Store {
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
