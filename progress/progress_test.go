package progress_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/rows"
)

const tenant = "t1"

// ingest stores a batch of n valid rows in chunks of size.
func ingest(t *testing.T, s driver.Store, n, size int) *batchtype.Batch {
	t.Helper()
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			if !yield(driver.IngestRow{RowNo: int64(i + 2), ChunkNo: int64(i / size), State: rows.StateValid, Values: []string{fmt.Sprint(i)}}, nil) {
				return
			}
		}
	}
	b, err := s.BatchIngest(context.Background(), driver.BatchIngestParams{TenantID: tenant, Kind: "k", SourceName: "f.csv", Header: []string{"a"}, Rows: seq})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// work claims and flushes the batch's chunks one at a time, pausing
// between flushes, until none is left.
func work(ctx context.Context, s driver.Store, id int64, pause time.Duration) error {
	for ctx.Err() == nil {
		l, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", BatchID: id, LeaseDuration: time.Minute})
		if errors.Is(err, driver.ErrNoWork) {
			return nil
		}
		if err != nil {
			return err
		}
		out := make([]driver.RowOutcome, len(l.Rows))
		for i, r := range l.Rows {
			out[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateSucceeded, ResultID: "x"}
		}
		if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: id, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: out, Release: true}); err != nil {
			return err
		}
		time.Sleep(pause)
	}
	return ctx.Err()
}

// received is what a subscriber got, checked as it arrives.
type received struct {
	msgs    []progress.Message
	live    []time.Time
	lastSeq int64
}

// collect reads a subscription until its final event, failing on a
// sequence that does not increase, or when no message comes for
// testenv.Patience.
func collect(t *testing.T, sub *progress.Subscription) *received {
	t.Helper()
	r := &received{}
	for {
		m, ok := testenv.Receive(t, sub.C, func() string {
			return fmt.Sprintf("the next message; got %d messages, last seq %d", len(r.msgs), r.lastSeq)
		})
		if !ok {
			t.Fatalf("subscription ended before the final event: %v", sub.Err())
		}
		r.msgs = append(r.msgs, m)
		if m.Type != progress.MessageEvent {
			continue
		}
		if m.Event.Seq <= r.lastSeq {
			t.Fatalf("seq %d after %d", m.Event.Seq, r.lastSeq)
		}
		r.lastSeq = m.Event.Seq
		if !m.Replay {
			r.live = append(r.live, time.Now())
		}
		if m.Event.Final {
			return r
		}
	}
}

func runBroadcaster(t *testing.T, s driver.Store, cfg *progress.Config) *progress.Broadcaster {
	t.Helper()
	b := progress.New(s, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// TestReplayThenLive: a subscriber from cursor 0 gets the log so far as
// replay, then live events, in strictly increasing order, every lifecycle
// event, ending with the final one; live messages come at the rate at most.
func TestReplayThenLive(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(*testing.T) driver.Store{
		"sqlite":   func(t *testing.T) driver.Store { return teststore.SQLite(t) },
		"postgres": func(t *testing.T) driver.Store { return teststore.Postgres(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			const rate = 10
			b := runBroadcaster(t, s, &progress.Config{Rate: rate, PollInterval: time.Hour})
			bt := ingest(t, s, 3000, 20) // 150 chunks
			ctx := context.Background()
			// Three flushes and a pause before anyone subscribes: replayed.
			l, _ := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", BatchID: bt.ID, LeaseDuration: time.Minute})
			if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: bt.ID, ChunkNo: l.ChunkNo, Token: l.Token, Release: true,
				Outcomes: []driver.RowOutcome{{RowNo: l.Rows[0].RowNo, State: rows.StateFailed, Error: &rows.FieldError{Code: "x", Message: "x"}}},
				Unworked: rowNos(l.Rows[1:])}); err != nil {
				t.Fatal(err)
			}
			subscribed := time.Now()
			sub, err := b.Subscribe(ctx, progress.SubscribeParams{TenantID: tenant, BatchID: bt.ID})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			errc := make(chan error, 1)
			go func() {
				if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: bt.ID}, true); err != nil {
					errc <- err
					return
				}
				if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: bt.ID}, false); err != nil {
					errc <- err
					return
				}
				errc <- work(wctx, s, bt.ID, 2*time.Millisecond)
			}()
			r := collect(t, sub)
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if m := r.msgs[0]; !m.Replay || m.Event.Type != batchtype.EventStarted || m.Event.Seq != 1 {
				t.Fatalf("first message = %+v", m)
			}
			var paused, resumed bool
			for _, m := range r.msgs {
				paused = paused || m.Event.Type == batchtype.EventPaused
				resumed = resumed || m.Event.Type == batchtype.EventResumed
			}
			if !paused || !resumed {
				t.Fatalf("a lifecycle event was dropped (paused %v, resumed %v)", paused, resumed)
			}
			head := storeHead(t, s, bt.ID)
			if r.lastSeq != head {
				t.Fatalf("final event %d, log ends at %d", r.lastSeq, head)
			}
			if len(r.live) >= int(head) {
				t.Fatalf("%d live messages for %d events: nothing was coalesced", len(r.live), head)
			}
			t.Logf("%d messages, %d live, %d events", len(r.msgs), len(r.live), head)
			checkRate(t, subscribed, r.live, rate)
		})
	}
}

func rowNos(rs []driver.LeasedRow) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.RowNo
	}
	return out
}

func storeHead(t *testing.T, s driver.Store, id int64) int64 {
	t.Helper()
	var head int64
	for {
		evs, err := s.EventsList(context.Background(), driver.EventsListParams{TenantID: tenant, BatchID: id, AfterSeq: head})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return head
		}
		head = evs[len(evs)-1].Seq
	}
}

// checkRate fails when more live messages arrived than the rate allows
// since the subscription started (its burst of one, and one for rounding,
// included). It counts from the start, not within a sliding window: a
// reader that the machine did not run for a while takes what waited for
// it all at once, which a window at the reader would call a burst.
func checkRate(t *testing.T, start time.Time, at []time.Time, perSecond int) {
	t.Helper()
	for i, a := range at {
		if allowed := float64(perSecond)*a.Sub(start).Seconds() + 2; float64(i+1) > allowed {
			t.Fatalf("%d live messages %v after the subscription; the rate is %d/s", i+1, a.Sub(start), perSecond)
		}
	}
}

// TestPollingWithoutNotifications: a source that never tells of events is
// still followed to the end, by polling.
func TestPollingWithoutNotifications(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	b := progress.New(quiet{s}, &progress.Config{Rate: 50, PollInterval: 20 * time.Millisecond})
	bt := ingest(t, s, 200, 20)
	sub, err := b.Subscribe(context.Background(), progress.SubscribeParams{TenantID: tenant, BatchID: bt.ID, Cursor: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	go func() { _ = work(context.Background(), s, bt.ID, 5*time.Millisecond) }()
	r := collect(t, sub)
	if r.msgs[0].Replay {
		t.Fatalf("a subscriber at the head got a replay: %+v", r.msgs[0])
	}
}

// quiet hides the store's notifications.
type quiet struct{ s driver.Store }

func (q quiet) EventsList(ctx context.Context, p driver.EventsListParams) ([]batchtype.Event, error) {
	return q.s.EventsList(ctx, p)
}

// TestSubscribeRefusals: another tenant's batch, an unknown one, and a
// cursor that was never given out are refused before anything is sent.
func TestSubscribeRefusals(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	b := progress.New(s, nil)
	bt := ingest(t, s, 10, 10)
	ctx := context.Background()
	if _, err := b.Subscribe(ctx, progress.SubscribeParams{TenantID: "other", BatchID: bt.ID}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another tenant's batch: %v", err)
	}
	if _, err := b.Subscribe(ctx, progress.SubscribeParams{TenantID: tenant, BatchID: bt.ID + 1}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("an unknown batch: %v", err)
	}
	if _, err := b.Subscribe(ctx, progress.SubscribeParams{TenantID: tenant, BatchID: bt.ID, Cursor: 99}); !errors.Is(err, driver.ErrCursorAhead) {
		t.Fatalf("a cursor ahead of the log: %v", err)
	}
}

// TestCursorExpired: a cursor before the trimmed events gets an explicit
// cursor_expired, then the log from what is kept; never an empty success.
func TestCursorExpired(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	b := progress.New(s, &progress.Config{PollInterval: 20 * time.Millisecond})
	bt := ingest(t, s, 40, 10)
	if err := work(context.Background(), s, bt.ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EventsTrim(context.Background(), driver.EventsTrimParams{FinishedKeepLast: true}); err != nil {
		t.Fatal(err)
	}
	sub, err := b.Subscribe(context.Background(), progress.SubscribeParams{TenantID: tenant, BatchID: bt.ID, Cursor: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	first := <-sub.C
	if first.Type != progress.MessageCursorExpired || first.Cursor != 4 {
		t.Fatalf("first message = %+v, want cursor_expired going on after 4", first)
	}
	second := <-sub.C
	if second.Type != progress.MessageEvent || second.Event.Seq != 5 || !second.Event.Final {
		t.Fatalf("second message = %+v, want the final event 5", second)
	}
}

// TestSlowConsumer: a reader that takes nothing ends its subscription
// with ErrSlowConsumer once the buffer is full for SendTimeout.
func TestSlowConsumer(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	bt := ingest(t, s, 100, 10)
	if err := work(context.Background(), s, bt.ID, 0); err != nil {
		t.Fatal(err)
	}
	b := progress.New(s, &progress.Config{Buffer: 2, SendTimeout: 50 * time.Millisecond})
	sub, err := b.Subscribe(context.Background(), progress.SubscribeParams{TenantID: tenant, BatchID: bt.ID})
	if err != nil {
		t.Fatal(err)
	}
	// Take nothing until the subscription has ended.
	ended := make(chan error, 1)
	go func() { ended <- sub.Err() }()
	err, _ = testenv.Receive(t, ended, func() string { return "the subscription of a reader that takes nothing to end" })
	n := 0
	for range sub.C {
		n++
	}
	if !errors.Is(err, progress.ErrSlowConsumer) || n != 2 {
		t.Fatalf("slow reader: %d messages, err %v; want 2 and ErrSlowConsumer", n, err)
	}
}

// TestManySubscribersOneFeed: subscribers joining and leaving at random
// points, resuming from their last cursor, together see every event once
// in order and each reaches the final one.
func TestManySubscribersOneFeed(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	b := runBroadcaster(t, s, &progress.Config{Rate: 1000, PollInterval: time.Hour})
	bt := ingest(t, s, 1500, 10)
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() { errc <- work(ctx, s, bt.ID, time.Millisecond) }()
	const subscribers = 8
	results := make(chan []int64, subscribers)
	for i := range subscribers {
		go func() {
			var (
				seqs   []int64
				cursor int64
			)
			for round := 0; ; round++ {
				sub, err := b.Subscribe(ctx, progress.SubscribeParams{TenantID: tenant, BatchID: bt.ID, Cursor: cursor})
				if err != nil {
					t.Error(err)
					results <- nil
					return
				}
				take := 5 + (i*7+round*13)%40 // leave after a few messages
				final := false
				for m := range sub.C {
					seqs = append(seqs, m.Event.Seq)
					cursor = m.Cursor
					take--
					if final = m.Event.Final; final || take == 0 {
						break
					}
				}
				sub.Close()
				if final {
					results <- seqs
					return
				}
			}
		}()
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	head := storeHead(t, s, bt.ID)
	for range subscribers {
		seqs := <-results
		if len(seqs) == 0 || seqs[len(seqs)-1] != head {
			t.Fatalf("a subscriber ended at %v, not the final event %d", seqs[len(seqs)-1:], head)
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Fatalf("seq %d after %d across reconnects", seqs[i], seqs[i-1])
			}
		}
	}
}
