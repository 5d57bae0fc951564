package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/rows"
)

// runEvents runs the conformance tests of the event log.
func runEvents(t *testing.T, newStore NewStoreFunc) {
	t.Run("EventsOnePerChange", func(t *testing.T) { t.Parallel(); testEventsLog(t, newStore(t)) })
	t.Run("EventsConcurrentFlushes", func(t *testing.T) { t.Parallel(); testEventsConcurrent(t, newStore(t)) })
	t.Run("EventsCancelFinal", func(t *testing.T) { t.Parallel(); testEventsCancel(t, newStore(t)) })
	t.Run("EventsTrim", func(t *testing.T) { t.Parallel(); testEventsTrim(t, newStore(t)) })
	t.Run("EventsNotify", func(t *testing.T) { t.Parallel(); testEventsNotify(t, newStore(t)) })
}

// Events lists a batch's whole log in pages of size, checking that the
// sequence is gap-free from 1.
func Events(t testing.TB, s driver.Store, tenantID string, id int64, size int) []batchtype.Event {
	t.Helper()
	var all []batchtype.Event
	for {
		var after int64
		if len(all) > 0 {
			after = all[len(all)-1].Seq
		}
		page, err := s.EventsList(context.Background(), driver.EventsListParams{TenantID: tenantID, BatchID: id, AfterSeq: after, Limit: size})
		if err != nil {
			t.Fatalf("list events after %d: %v", after, err)
		}
		if len(page) > size {
			t.Fatalf("page of %d events, limit %d", len(page), size)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) || ev.BatchID != id {
			t.Fatalf("event %d has seq %d of batch %d, want %d of %d", i, ev.Seq, ev.BatchID, i+1, id)
		}
		if i > 0 && ev.At.Before(all[i-1].At) {
			t.Fatalf("event %d at %v, before the one it follows (%v)", ev.Seq, ev.At, all[i-1].At)
		}
	}
	return all
}

func flushLease(t *testing.T, s driver.Store, l *driver.Lease) *driver.FlushResult {
	t.Helper()
	res, err := s.ChunkFlush(context.Background(), driver.ChunkFlushParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: succeedAll(l), Release: true})
	if err != nil {
		t.Fatalf("flush: %v", err)
	}
	return res
}

// testEventsLog: a started event, one per flush and control, the last one
// final, each with the totals the batch had right after its change.
func testEventsLog(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 25, 10, 4)
	var seqs []int64
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	seqs = append(seqs, flushLease(t, s, l).EventSeq)
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}, false); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
		seqs = append(seqs, flushLease(t, s, l).EventSeq)
	}
	evs := Events(t, s, tenant, b.ID, 2)
	types := make([]batchtype.EventType, len(evs))
	for i, ev := range evs {
		types[i] = ev.Type
	}
	want := []batchtype.EventType{batchtype.EventStarted, batchtype.EventProgress, batchtype.EventPaused, batchtype.EventResumed, batchtype.EventProgress, batchtype.EventFinished}
	if len(types) != len(want) {
		t.Fatalf("event types = %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("event types = %v, want %v", types, want)
		}
	}
	if seqs[0] != 2 || seqs[1] != 5 || seqs[2] != 6 {
		t.Fatalf("flush event seqs = %v, want [2 5 6]", seqs)
	}
	first, paused, last := evs[0], evs[2], evs[len(evs)-1]
	if first.Status != batchtype.StatusRunning || first.Total != 25 || first.Done != 1 || first.Counts[rows.StateValid] != 24 || first.Final {
		t.Fatalf("started event = %+v", first)
	}
	if !paused.Paused || paused.ETASeconds != nil || paused.Done != 10 {
		t.Fatalf("paused event = %+v", paused)
	}
	if !last.Final || last.Status != batchtype.StatusFinished || last.Done != 25 || last.Counts[rows.StateSucceeded] != 24 || last.ETASeconds != nil {
		t.Fatalf("last event = %+v", last)
	}
	for _, ev := range evs[:len(evs)-1] {
		if ev.Final {
			t.Fatalf("event %d is final before the last", ev.Seq)
		}
	}
	if evs[1].RowsPerSecond < 0 {
		t.Fatalf("rate = %v", evs[1].RowsPerSecond)
	}

	page, err := s.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: b.ID, AfterSeq: last.Seq})
	if err != nil || len(page) != 0 {
		t.Fatalf("events after the last = %v, %v; want none", page, err)
	}
	page, err = s.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: b.ID, AfterSeq: 4, Limit: 1})
	if err != nil || len(page) != 1 || page[0].Seq != 5 {
		t.Fatalf("events after 4 = %v, %v", page, err)
	}
	if _, err := s.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: b.ID, AfterSeq: last.Seq + 1}); !errors.Is(err, driver.ErrCursorAhead) {
		t.Fatalf("events after a cursor beyond the log: %v, want ErrCursorAhead", err)
	}
	if _, err := s.EventsList(ctx, driver.EventsListParams{TenantID: "t2", BatchID: b.ID}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("events of another tenant's batch: %v, want ErrNotFound", err)
	}
	if _, err := s.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: b.ID + 1000}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("events of an unknown batch: %v, want ErrNotFound", err)
	}
}

// testEventsConcurrent: flushes of four workers at once still make a
// gap-free log, one event per flush, and exactly one final event.
func testEventsConcurrent(t *testing.T, s driver.Store) {
	b := ingest(t, s, tenant, 400, 10)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		flushes int
	)
	for range 4 {
		wg.Go(func() {
			for {
				l, err := s.ChunkClaim(context.Background(), driver.ChunkClaimParams{Owner: "w", BatchID: b.ID, LeaseDuration: time.Minute})
				if errors.Is(err, driver.ErrNoWork) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := s.ChunkFlush(context.Background(), driver.ChunkFlushParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: succeedAll(l), Release: true}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				flushes++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	evs := Events(t, s, tenant, b.ID, 7)
	if len(evs) != 1+flushes || flushes != 40 {
		t.Fatalf("%d events for %d flushes of 40 chunks", len(evs), flushes)
	}
	var done int64
	for i, ev := range evs {
		if ev.Done < done {
			t.Fatalf("event %d says %d done, after %d", ev.Seq, ev.Done, done)
		}
		done = ev.Done
		if ev.Final != (i == len(evs)-1) {
			t.Fatalf("event %d of %d final = %v", ev.Seq, len(evs), ev.Final)
		}
	}
}

// testEventsCancel: a cancel with rows under a live lease is not final;
// the flush that records them is, and says cancelled.
func testEventsCancel(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingest(t, s, tenant, 20, 10)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	flushLease(t, s, l)
	evs := Events(t, s, tenant, b.ID, 100)
	if len(evs) != 3 {
		t.Fatalf("events = %+v", evs)
	}
	c, f := evs[1], evs[2]
	if c.Type != batchtype.EventCancelled || c.Status != batchtype.StatusCancelled || c.Final || c.Counts[rows.StateProcessing] != 10 {
		t.Fatalf("cancel event = %+v", c)
	}
	if f.Type != batchtype.EventProgress || f.Status != batchtype.StatusCancelled || !f.Final || f.Done != 20 {
		t.Fatalf("event after the cancel = %+v", f)
	}
}

// testEventsTrim: trimmed events make a cursor before them expire, never
// an empty success; a cursor at the head still reads nothing.
func testEventsTrim(t *testing.T, s driver.Store) {
	ctx := context.Background()
	done := ingest(t, s, tenant, 20, 10)
	for range 2 {
		flushLease(t, s, claim(t, s, driver.ChunkClaimParams{BatchID: done.ID}))
	}
	open := ingest(t, s, tenant, 20, 10)
	flushLease(t, s, claim(t, s, driver.ChunkClaimParams{BatchID: open.ID}))

	n, err := s.EventsTrim(ctx, driver.EventsTrimParams{FinishedKeepLast: true})
	if err != nil || n != 2 {
		t.Fatalf("trim finished = %d, %v; want 2", n, err)
	}
	_, err = s.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: done.ID})
	var ce *driver.CursorExpiredError
	if !errors.As(err, &ce) || !errors.Is(err, driver.ErrCursorExpired) || ce.Oldest != 3 || ce.Head != 3 {
		t.Fatalf("list from 0 after trim: %v, want ErrCursorExpired, oldest 3 of 3", err)
	}
	page, err := s.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: done.ID, AfterSeq: 2})
	if err != nil || len(page) != 1 || !page[0].Final {
		t.Fatalf("last event of a trimmed batch = %+v, %v", page, err)
	}
	if got := Events(t, s, tenant, open.ID, 10); len(got) != 2 {
		t.Fatalf("a running batch's events were trimmed: %+v", got)
	}

	time.Sleep(20 * time.Millisecond)
	if n, err := s.EventsTrim(ctx, driver.EventsTrimParams{OlderThan: 10 * time.Millisecond}); err != nil || n != 3 {
		t.Fatalf("trim by age = %d, %v; want 3", n, err)
	}
	if _, err := s.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: open.ID, AfterSeq: 1}); !errors.Is(err, driver.ErrCursorExpired) {
		t.Fatalf("list after trim by age: %v, want ErrCursorExpired", err)
	}
	if page, err := s.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: open.ID, AfterSeq: 2}); err != nil || len(page) != 0 {
		t.Fatalf("list at the head after trim = %v, %v", page, err)
	}
	// The log goes on after a trim, and the rate starts afresh.
	flushLease(t, s, claim(t, s, driver.ChunkClaimParams{BatchID: open.ID}))
	page, err = s.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: open.ID, AfterSeq: 2})
	if err != nil || len(page) != 1 || page[0].Seq != 3 || !page[0].Final {
		t.Fatalf("event after a trim = %+v, %v", page, err)
	}
}

// testEventsNotify: a store that tells of events tells of each commit,
// with its batch and sequence number.
func testEventsNotify(t *testing.T, s driver.Store) {
	n, ok := s.(driver.EventNotifier)
	if !ok {
		t.Skip("the store does not tell of events")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan [2]int64, 100)
	go func() {
		_ = n.NotifyEvents(ctx, func(b, seq int64) {
			select {
			case got <- [2]int64{b, seq}:
			default:
			}
		})
	}()
	// A notifier may need a moment to listen: ingest until one arrives.
	deadline := time.After(testenv.Patience(t))
	var b *batchtype.Batch
	for first := true; first; {
		b = ingest(t, s, tenant, 10, 10)
		select {
		case e := <-got:
			if e[0] == 0 {
				continue // listening (again): anything may have changed
			}
			first = false
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("no notification of an ingest")
		}
	}
	res := flushLease(t, s, claim(t, s, driver.ChunkClaimParams{BatchID: b.ID}))
	for {
		select {
		case e := <-got:
			if e[0] == b.ID && e[1] == res.EventSeq {
				return
			}
		case <-deadline:
			t.Fatalf("no notification of event %d of batch %d", res.EventSeq, b.ID)
		}
	}
}
