package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
)

// MigrateConcurrently starts Migrate on every store at the same instant (as
// replicas booting together would) and fails the test for each error. The
// stores should share one empty database through separate connections.
func MigrateConcurrently(t testing.TB, stores []driver.Store) {
	t.Helper()
	ctx := context.Background()
	start := make(chan struct{})
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			<-start
			errs[i] = s.Migrate(ctx)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrator %d: %v", i, err)
		}
	}
}
