package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

func runStats(t *testing.T, newStore NewStoreFunc) {
	t.Run("RowTotals", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ss, ok := s.(driver.StatsStore)
		if !ok {
			t.Fatalf("%T does not implement driver.StatsStore", s)
		}
		testRowTotals(t, s, ss)
	})
}

// testRowTotals: the totals are every batch's rows by state, of every
// tenant, and follow a flush (the chunks' counts are the source).
func testRowTotals(t *testing.T, s driver.Store, ss driver.StatsStore) {
	ctx := context.Background()
	empty, err := ss.RowTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts(t, empty, rows.Counts{})

	a := ingest(t, s, tenant, 15, 10, 4)
	b := ingest(t, s, "t2", 5, 10, 2, 3)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: a.ID})
	got, err := ss.RowTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := rows.Counts{rows.StateValid: 17 - int64(len(l.Rows)), rows.StateProcessing: int64(len(l.Rows)), rows.StateInvalid: 3}
	wantCounts(t, got, want)

	outs := succeedAll(l)
	outs[0].State, outs[0].ResultID, outs[0].RetryDelay = rows.StateRetrying, "", time.Minute
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: a.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outs, Release: true}); err != nil {
		t.Fatalf("flush: %v", err)
	}
	got, err = ss.RowTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := rows.Counts{}
	for _, c := range []rows.Counts{CheckInvariant(t, s, tenant, a.ID), CheckInvariant(t, s, "t2", b.ID)} {
		for st, n := range c {
			sum[st] += n
		}
	}
	wantCounts(t, got, sum)
	wantCounts(t, got, rows.Counts{rows.StateValid: 17 - int64(len(l.Rows)), rows.StateSucceeded: int64(len(l.Rows)) - 1, rows.StateRetrying: 1, rows.StateInvalid: 3})
}
