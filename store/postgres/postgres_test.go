package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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

// TestConformanceRetention runs the policy sweep, whose batches are
// backdated in the test's schema.
func TestConformanceRetention(t *testing.T) {
	t.Parallel()
	pools := map[driver.Store]*pgxpool.Pool{}
	var mu sync.Mutex
	storetest.RunRetention(t, func(t *testing.T) driver.Store {
		pool := testdb.PostgresPool(t)
		s := postgres.New(pool, &postgres.Config{Schema: testdb.SchemaOf(pool.Config())})
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		pools[s] = pool
		mu.Unlock()
		return s
	}, func(t *testing.T, s driver.Store, id int64, d time.Duration) {
		mu.Lock()
		pool := pools[s]
		mu.Unlock()
		schema := testdb.SchemaOf(pool.Config())
		if _, err := pool.Exec(context.Background(), `UPDATE "`+schema+`".batches SET finished_at = finished_at - make_interval(secs => $1) WHERE id = $2`,
			d.Seconds(), id); err != nil {
			t.Fatal(err)
		}
	})
}
