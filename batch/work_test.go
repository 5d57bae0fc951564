package batch_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/storetest"
)

func outcomesRegistry(t *testing.T, p *outcomeProcessor) *batch.Registry {
	t.Helper()
	reg := batch.NewRegistry()
	if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "outcomes", Processor: p, ChunkSize: 2}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestWorkBatchOfATenantInScope: with a BatchID and several tenants, the
// batch is found under whichever tenant owns it; outside the scope it is
// ErrNotFound before any row is worked.
func TestWorkBatchOfATenantInScope(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		p := &outcomeProcessor{calls: map[string]int{}}
		e := newEngine(t, bd.store, outcomesRegistry(t, p), 0)
		b, err := e.Import(ctx, batch.ImportParams{TenantID: "acme", Kind: "outcomes", SourceName: "o.csv", Source: strings.NewReader("key,mode\na,ok\nb,ok\nc,ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{"globex"}, UntilDone: true}); !errors.Is(err, batch.ErrNotFound) {
			t.Fatalf("work on another tenant's batch = %v, want ErrNotFound", err)
		}
		if len(p.calls) != 0 {
			t.Fatalf("rows of another tenant's batch were worked: %v", p.calls)
		}
		stats, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{"globex", "acme"}, UntilDone: true})
		if err != nil {
			t.Fatalf("work with the owner among several tenants: %v", err)
		}
		if stats.Rows != 3 {
			t.Fatalf("stats = %+v", stats)
		}
		if got := storetest.CheckInvariant(t, bd.store, "acme", b.ID); got[rows.StateSucceeded] != 3 {
			t.Fatalf("counts = %v", got)
		}
	})
}

// TestUntilDoneWaitsForALeasedChunk: a chunk still leased by a worker that
// died is not "done": an UntilDone run says whose lease it waits for and
// works the rows once the lease has expired.
func TestUntilDoneWaitsForALeasedChunk(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		p := &outcomeProcessor{calls: map[string]int{}}
		e := newEngine(t, bd.store, outcomesRegistry(t, p), 0)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "outcomes", SourceName: "o.csv", Source: strings.NewReader("key,mode\na,ok\nb,ok\nc,ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		// A worker claims the first chunk and dies with it.
		dead, err := bd.store.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "dead-worker", BatchID: b.ID, LeaseDuration: 1500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu     sync.Mutex
			waited []batchtype.ChunkDue
		)
		stats, err := e.Work(ctx, batch.WorkParams{UntilDone: true, WaitFunc: func(d batchtype.ChunkDue) {
			mu.Lock()
			waited = append(waited, d)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		if stats.Rows != 3 {
			t.Fatalf("worked %d rows, want all 3 (the dead worker's 2 after its lease)", stats.Rows)
		}
		if len(waited) != 1 || waited[0].LeaseOwner != "dead-worker" || waited[0].ChunkNo != dead.ChunkNo || waited[0].LeaseExpiresAt.IsZero() {
			t.Fatalf("waited for %+v, want one report of dead-worker's chunk %d", waited, dead.ChunkNo)
		}
		if got := storetest.CheckInvariant(t, bd.store, "default", b.ID); got[rows.StateSucceeded] != 3 {
			t.Fatalf("counts = %v", got)
		}
	})
}
