package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/processors/customers"
)

// gatedSource is a file whose second read (the pass that stores the
// rows) stops at half its bytes until the gate opens: the batch exists,
// part of it is read, and the import cannot finish.
type gatedSource struct {
	r       *bytes.Reader
	half    int64
	starts  atomic.Int32 // rewinds to the start: one per pass
	reached chan struct{}
	open    chan struct{}
	once    sync.Once
}

func newGatedSource(t *testing.T, data []byte) *gatedSource {
	g := &gatedSource{r: bytes.NewReader(data), half: int64(len(data) / 2), reached: make(chan struct{}), open: make(chan struct{})}
	t.Cleanup(g.release)
	return g
}

func (g *gatedSource) release() {
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *gatedSource) Seek(off int64, whence int) (int64, error) {
	if whence == io.SeekStart {
		g.starts.Add(1)
	}
	return g.r.Seek(off, whence)
}

func (g *gatedSource) Read(p []byte) (int, error) {
	if g.starts.Load() >= 2 {
		pos, _ := g.r.Seek(0, io.SeekCurrent)
		if pos >= g.half {
			g.once.Do(func() { close(g.reached) })
			<-g.open
		} else if rest := g.half - pos; int64(len(p)) > rest {
			p = p[:rest]
		}
	}
	return g.r.Read(p)
}

// progressLog keeps what ProgressFunc was told.
type progressLog struct {
	mu    sync.Mutex
	calls []batch.IngestProgress
}

func (l *progressLog) add(p batch.IngestProgress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, p)
}

func (l *progressLog) all() []batch.IngestProgress {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]batch.IngestProgress(nil), l.calls...)
}

// TestImportProgress: an import tells its caller its batch's id while the
// file is still read, then the rows read and the invalid ones. The store
// commits the batch row first, and the import writes ingest_progress
// events to the batch's log at a bounded rate, all before the batch's
// started event. So does an import that works its rows inline on
// PostgreSQL, which writes them beside the transaction that works them
// (on SQLite that one is one transaction, and the batch exists for
// others only once it commits).
func TestImportProgress(t *testing.T) {
	t.Parallel()
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			t.Parallel()
			forEachEngine(t, func(t *testing.T, bd *bundle) { testImportProgress(t, bd, inline) })
		})
	}
}

func testImportProgress(t *testing.T, bd *bundle, inline bool) {
	ctx := context.Background()
	e := customersEngine(t, bd)
	if inline && bd.dialect == customers.SQLite {
		t.Skip("on SQLite an inline import is one transaction, on the one connection: nothing to watch")
	}
	const n = 8000
	var b strings.Builder
	b.WriteString("email,name,country,signup_date,amount\n")
	for i := 1; i <= n; i++ {
		email := fmt.Sprintf("c%d@example.com", i)
		if i%10 == 0 {
			email = "not-an-email"
		}
		fmt.Fprintf(&b, "%s,Customer %d,FR,2021-03-04,%d.50\n", email, i, i%500)
	}
	src := newGatedSource(t, []byte(b.String()))
	var log progressLog
	type imported struct {
		b   *batchtype.Batch
		err error
	}
	done := make(chan imported, 1)
	go func() {
		b, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "big.csv", Source: src, WorkInline: inline,
			ProgressFunc: log.add, ProgressInterval: time.Millisecond, EventInterval: time.Millisecond})
		done <- imported{b, err}
	}()
	<-src.reached

	// Held at the gate: the batch exists, is ingesting, and its log
	// has an event with the rows read up to the gate.
	var id int64
	var atGate *batchtype.Event
	testenv.Until(t, func() bool {
		for _, c := range log.all() {
			if c.BatchID != 0 {
				id = c.BatchID
			}
			if c.BatchID != 0 && c.Progress.Invalid > 0 && c.Event != nil {
				atGate = c.Event
			}
		}
		return atGate != nil
	}, func() string { return fmt.Sprintf("no ingest progress with invalid rows: %+v", log.all()) })
	bt, err := e.Batch(ctx, batch.BatchParams{ID: id})
	if err != nil || bt.Status != batchtype.StatusIngesting {
		t.Fatalf("batch %d while ingesting: %+v, %v", id, bt, err)
	}
	evs, err := e.Events(ctx, batch.EventsParams{BatchID: id})
	if err != nil || len(evs) == 0 {
		t.Fatalf("events while ingesting: %v, %v", evs, err)
	}
	if ev := evs[len(evs)-1]; ev.Type != batchtype.EventIngestProgress || ev.Status != batchtype.StatusIngesting || ev.Ingest == nil ||
		ev.Ingest.RowsRead <= 0 || ev.Ingest.Invalid != ev.Ingest.RowsRead/10 || ev.Ingest.Size != int64(b.Len()) {
		t.Errorf("the log's last event while ingesting: %+v %+v", ev, ev.Ingest)
	}
	select {
	case r := <-done:
		t.Fatalf("the import returned at the gate: %+v, %v", r.b, r.err)
	default:
	}

	src.release()
	r := <-done
	want := batchtype.StatusRunning
	if inline {
		want = batchtype.StatusFinished // every valid row worked inline
	}
	if r.err != nil || r.b.ID != id || r.b.Status != want || r.b.Counts.Total() != n {
		t.Fatalf("import: %+v, %v", r.b, r.err)
	}
	evs, err = e.Events(ctx, batch.EventsParams{BatchID: id})
	if err != nil {
		t.Fatal(err)
	}
	for len(evs) > 0 && evs[len(evs)-1].Type != batchtype.EventStarted {
		evs = evs[:len(evs)-1] // a batch worked inline finishes as it starts
	}
	last := evs[len(evs)-1]
	if last.Type != batchtype.EventStarted || last.RowsPerSecond != 0 {
		t.Fatalf("the last event is not the start: %+v", last)
	}
	ingest := evs[:len(evs)-1]
	for i, ev := range ingest {
		if ev.Type != batchtype.EventIngestProgress || ev.Seq != int64(i+1) {
			t.Fatalf("event %d before the start: %+v", i+1, ev)
		}
		if i > 0 && ev.Ingest.RowsRead <= ingest[i-1].Ingest.RowsRead {
			t.Errorf("event %d: %d rows read after %d", ev.Seq, ev.Ingest.RowsRead, ingest[i-1].Ingest.RowsRead)
		}
	}
	// An event only when the counts moved, and at most one per
	// interval: far fewer than rows, even with a 1ms interval
	// (the engine's floor is 50ms).
	if len(ingest) == 0 || len(ingest) > n/20 {
		t.Errorf("%d ingest events for %d rows", len(ingest), n)
	}

	// The caller heard of the first pass (no batch yet) if it took a
	// while, then of the batch, and never went back.
	calls := log.all()
	seen := false
	for _, c := range calls {
		if seen && c.BatchID == 0 {
			t.Fatalf("a first-pass call after the batch existed: %+v", calls)
		}
		seen = seen || c.BatchID != 0
	}
}

// TestImportRacingAFailedImport: two imports of the same file start
// together; the second finds the first's key taken, waits for it, and
// the first fails. The second then imports the file itself: it had
// answered the key's conflict with an error (PostgreSQL's one-transaction
// ingest used to let it through once the first rolled back).
func TestImportRacingAFailedImport(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		const n = 3000
		var b strings.Builder
		b.WriteString("email,name,country,signup_date,amount\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "r%d@example.com,Customer %d,FR,2021-03-04,%d.50\n", i, i, i%500)
		}
		data := []byte(b.String())
		type imported struct {
			b   *batchtype.Batch
			err error
		}
		// The second import looks for an earlier batch, finds none, and
		// is held as it starts to store the file.
		second := newGatedSource(t, data)
		second.half = 0
		secondDone := make(chan imported, 1)
		go func() {
			b, err := e.Import(context.Background(), batch.ImportParams{Kind: customers.Name, SourceName: "same.csv", Source: second})
			secondDone <- imported{b, err}
		}()
		<-second.reached
		// The first takes the key and is held halfway through the file.
		first := newGatedSource(t, data)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		firstDone := make(chan error, 1)
		go func() {
			_, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "same.csv", Source: first})
			firstDone <- err
		}()
		<-first.reached
		second.release() // its batch row meets the key: it waits
		time.Sleep(500 * time.Millisecond)
		cancel()
		first.release()
		if err := <-firstDone; err == nil {
			t.Fatal("the first import, cut off, succeeded")
		}
		r := <-secondDone
		if r.err != nil || r.b.Reused || r.b.Counts.Total() != n {
			t.Fatalf("the second import after the first failed: %+v, %v", r.b, r.err)
		}
		if list, err := e.Batches(context.Background(), batch.BatchesParams{}); err != nil || len(list) != 1 {
			t.Fatalf("batches %v, %v; want the second import's only", list, err)
		}
	})
}
