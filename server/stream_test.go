package server_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/server"
)

// Order is the row type of the tests' kind.
type Order struct {
	Ref string `col:"ref" validate:"required"`
	Qty int    `col:"qty" validate:"gte=1"`
}

// engine returns an engine with the orders kind, whose processor does
// nothing but answer: the run's pace is the store's.
func engine(t testing.TB, s driver.Store, chunk int) *batch.Engine {
	t.Helper()
	reg := batch.NewRegistry()
	err := batch.Register(reg, batch.Kind[Order]{Name: "orders", ChunkSize: chunk,
		Processor: batch.ProcessFunc[Order](func(_ context.Context, o Order) (string, error) { return "o-" + o.Ref, nil })})
	if err != nil {
		t.Fatal(err)
	}
	e, err := batch.NewEngine(batch.Config{Store: s, Registry: reg, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// orders is a CSV of n orders, one in every 1,000 invalid.
func orders(n int) io.Reader {
	var b strings.Builder
	b.WriteString("ref,qty\n")
	for i := range n {
		qty := 1 + i%9
		if i%1000 == 999 {
			qty = 0
		}
		fmt.Fprintf(&b, "R%d,%d\n", i, qty)
	}
	return strings.NewReader(b.String())
}

func importOrders(t testing.TB, e *batch.Engine, n int) *batchtype.Batch {
	t.Helper()
	b, err := e.Import(context.Background(), batch.ImportParams{TenantID: tenant, Kind: "orders", SourceName: "orders.csv", Source: orders(n)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// got is one subscriber's messages.
type got struct {
	msgs []server.StreamMessage
	at   []time.Time
	err  error
}

// follow reads a stream until its final event.
func follow(t testing.TB, c *websocket.Conn) got {
	var g got
	_ = c.SetReadDeadline(time.Now().Add(testenv.Patience(t)))
	for {
		var m server.StreamMessage
		if err := c.ReadJSON(&m); err != nil {
			g.err = err
			return g
		}
		g.msgs, g.at = append(g.msgs, m), append(g.at, time.Now())
		if m.Event != nil && m.Event.Final {
			return g
		}
	}
}

// logOf reads a batch's whole event log from the store.
func logOf(t testing.TB, s driver.Store, id int64) []batchtype.Event {
	t.Helper()
	var all []batchtype.Event
	for {
		var after int64
		if len(all) > 0 {
			after = all[len(all)-1].Seq
		}
		page, err := s.EventsList(context.Background(), driver.EventsListParams{TenantID: tenant, BatchID: id, AfterSeq: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
	}
}

// TestFiftySubscribers: a 50,000-row import watched by 20 websocket
// clients (200,000 rows and 50 clients in make test-long). Each gets a strictly increasing sequence ending with the final
// event, every lifecycle event, live messages at no more than the rate; a
// replay from cursor 0 afterwards is the whole log, gap-free.
func TestFiftySubscribers(t *testing.T) {
	t.Parallel()
	n, subscribers := testenv.Pick(50_000, 200_000), testenv.Pick(20, 50)
	if testing.Short() {
		n, subscribers = 20_000, 10
	}
	s := teststore.Postgres(t)
	const perSecond = 4
	h := start(t, s, options{progress: progress.Config{Rate: perSecond}})
	e := engine(t, s, 500)
	b := importOrders(t, e, n)

	results := make([]got, subscribers)
	var wg sync.WaitGroup
	subscribed := time.Now()
	for i := range subscribers {
		c := h.dial(t, b.ID, 0)
		wg.Go(func() {
			defer c.Close()
			results[i] = follow(t, c)
		})
	}
	// A pause and a resume during the run: lifecycle events nobody may
	// miss, however fast progress comes.
	go func() {
		time.Sleep(500 * time.Millisecond)
		// A failed resume would leave the batch paused, and the work
		// below waiting for it forever: say so.
		if _, err := s.BatchPause(context.Background(), driver.BatchControlParams{TenantID: tenant, ID: b.ID}, true); err != nil {
			t.Errorf("pause: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := s.BatchPause(context.Background(), driver.BatchControlParams{TenantID: tenant, ID: b.ID}, false); err != nil {
			t.Errorf("resume: %v", err)
		}
	}()
	stats, err := e.Work(context.Background(), batch.WorkParams{BatchID: b.ID, TenantIDs: []string{tenant}, Workers: 2, UntilDone: true})
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	log := logOf(t, s, b.ID)
	head := log[len(log)-1]
	if !head.Final || head.Counts.Total() != int64(n) {
		t.Fatalf("log ends with %+v", head)
	}
	lifecycle := map[int64]bool{}
	for _, ev := range log {
		if !ev.Coalescable() {
			lifecycle[ev.Seq] = true
		}
	}
	var live, minLive, maxLive int
	minLive = math.MaxInt
	for i, g := range results {
		if g.err != nil {
			t.Fatalf("subscriber %d: %v after %d messages", i, g.err, len(g.msgs))
		}
		var (
			last   int64
			liveAt []time.Time
			seen   = map[int64]bool{}
		)
		for j, m := range g.msgs {
			if m.Type != string(progress.MessageEvent) {
				t.Fatalf("subscriber %d: message %+v", i, m)
			}
			if m.Event.Seq <= last {
				t.Fatalf("subscriber %d: seq %d after %d", i, m.Event.Seq, last)
			}
			last = m.Event.Seq
			seen[last] = true
			if !m.Replay {
				liveAt = append(liveAt, g.at[j])
			}
		}
		if last != head.Seq {
			t.Fatalf("subscriber %d ended at %d, the log at %d", i, last, head.Seq)
		}
		for seq := range lifecycle {
			if !seen[seq] {
				t.Fatalf("subscriber %d missed lifecycle event %d (%s)", i, seq, log[seq-1].Type)
			}
		}
		checkRate(t, subscribed, liveAt, perSecond)
		live += len(liveAt)
		minLive, maxLive = min(minLive, len(liveAt)), max(maxLive, len(liveAt))
	}
	t.Logf("%d rows, %d chunks flushed, %d events; live messages per subscriber %d to %d (mean %d)",
		n, stats.Chunks, len(log), minLive, maxLive, live/subscribers)

	c := h.dial(t, b.ID, 0)
	defer c.Close()
	replay := follow(t, c)
	if replay.err != nil || len(replay.msgs) != len(log) {
		t.Fatalf("replay from 0: %d messages (%v), log has %d", len(replay.msgs), replay.err, len(log))
	}
	for i, m := range replay.msgs {
		if !m.Replay || m.Event.Seq != int64(i+1) || m.Event.Done != log[i].Done {
			t.Fatalf("replay message %d = %+v", i, m)
		}
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

// TestResumeAfterDisconnects: clients that drop the connection at random
// points and resume from their last cursor receive, together, exactly the
// log: nothing missed, nothing twice. The rate is unlimited, so nothing is
// coalesced and the whole stream is comparable.
func TestResumeAfterDisconnects(t *testing.T) {
	t.Parallel()
	s := teststore.Postgres(t)
	h := start(t, s, options{progress: progress.Config{Rate: math.Inf(1)}})
	e := engine(t, s, 100)
	b := importOrders(t, e, 20_000)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	const clients = 8
	results := make([][]int64, clients)
	var wg sync.WaitGroup
	for i := range clients {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() {
			var (
				cursor int64
				seqs   []int64
			)
			for {
				c, resp, err := h.dialWith(b.ID, cursor, map[string][]string{"Authorization": {"Bearer " + token}}, nil)
				if err != nil {
					t.Errorf("client %d: dial at %d: %v (%s)", i, cursor, err, body(resp))
					return
				}
				take := 1 + rng.IntN(60)
				final := false
				for ; take > 0 && !final; take-- {
					var m server.StreamMessage
					if err := c.ReadJSON(&m); err != nil {
						t.Errorf("client %d: %v", i, err)
						c.Close()
						return
					}
					seqs = append(seqs, m.Event.Seq)
					cursor, final = m.Cursor, m.Event.Final
				}
				c.Close() // abruptly: no close handshake
				if final {
					results[i] = seqs
					return
				}
			}
		})
	}
	if _, err := e.Work(context.Background(), batch.WorkParams{BatchID: b.ID, TenantIDs: []string{tenant}, Workers: 2, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	log := logOf(t, s, b.ID)
	for i, seqs := range results {
		if len(seqs) != len(log) {
			t.Fatalf("client %d received %d events, the log has %d", i, len(seqs), len(log))
		}
		for j, seq := range seqs {
			if seq != int64(j+1) {
				t.Fatalf("client %d: event %d is seq %d", i, j, seq)
			}
		}
	}
}

// TestListenBackendKilled: the server's LISTEN connection is terminated
// during a run; it listens again, and every subscriber still reaches the
// final event. Polling is off, so the notifications alone carry it.
func TestListenBackendKilled(t *testing.T) {
	t.Parallel()
	s := teststore.Postgres(t)
	h := start(t, s, options{progress: progress.Config{Rate: 20, PollInterval: time.Hour}})
	e := engine(t, s, 100)
	b := importOrders(t, e, 20_000)
	var wg sync.WaitGroup
	results := make([]got, 5)
	for i := range results {
		c := h.dial(t, b.ID, 0)
		wg.Go(func() {
			defer c.Close()
			results[i] = follow(t, c)
		})
	}
	ctx := context.Background()
	listeners := func() []int32 {
		rs, err := s.Pool().Query(ctx, `SELECT pid FROM pg_stat_activity WHERE query = $1`,
			`LISTEN "rowfate_events_`+s.Schema()+`"`)
		if err != nil {
			t.Fatal(err)
		}
		var pids []int32
		for rs.Next() {
			var pid int32
			if err := rs.Scan(&pid); err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		return pids
	}
	workDone := make(chan error, 1)
	go func() {
		_, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{tenant}, Workers: 1, UntilDone: true})
		workDone <- err
	}()
	var killed []int32
	testenv.Until(t, func() bool { killed = listeners(); return len(killed) == 1 }, func() string {
		return fmt.Sprintf("one LISTEN backend, have %v", killed)
	})
	if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, killed[0]); err != nil {
		t.Fatal(err)
	}
	if err := <-workDone; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	head := logOf(t, s, b.ID)
	for i, g := range results {
		if g.err != nil || len(g.msgs) == 0 || g.msgs[len(g.msgs)-1].Event.Seq != int64(len(head)) {
			t.Fatalf("subscriber %d: %d messages, %v", i, len(g.msgs), g.err)
		}
	}
	var again []int32
	testenv.Until(t, func() bool { again = listeners(); return len(again) == 1 && again[0] != killed[0] }, func() string {
		return fmt.Sprintf("one new LISTEN backend after the kill: %v (killed %d)", again, killed[0])
	})
}
