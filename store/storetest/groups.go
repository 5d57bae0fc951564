package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

func runGroups(t *testing.T, newStore NewStoreFunc) {
	t.Run("CountGroupsUnderConcurrentFlushes", func(t *testing.T) { t.Parallel(); testCountGroups(t, newStore(t)) })
}

// testCountGroups: a batch of 450 chunks (five count groups, the last one
// part full) worked by eight concurrent workers, each claim and flush on
// its own: at the end the batch's totals equal a fresh count of its rows,
// every row succeeded. Flushes of
// chunks of one group race to recount it; a recount that aggregated a
// snapshot from before another's commit would lose that one's rows.
func testCountGroups(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 900, 2)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				l, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: fmt.Sprint("w", w), LeaseDuration: time.Minute})
				if errors.Is(err, driver.ErrNoWork) {
					return
				}
				if err == nil {
					_, err = s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: b.ID, ChunkNo: l.ChunkNo,
						Token: l.Token, Outcomes: succeedAll(l), Release: true})
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("workers: %v", errs)
	}
	got := CheckInvariant(t, s, tenant, b.ID)
	wantCounts(t, got, rows.Counts{rows.StateSucceeded: 900})
	after, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != batchtype.StatusFinished {
		t.Fatalf("status = %s with every row done", after.Status)
	}
}
