package postgres_test

import (
	"context"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) driver.Store {
		pool := testdb.PostgresPool(t)
		s := postgres.New(pool, &postgres.Config{Schema: testdb.SchemaOf(pool.Config())})
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	})
}
