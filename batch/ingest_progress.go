package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync/atomic"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// IngestProgress is what ImportParams.ProgressFunc is told while an
// import reads its file.
type IngestProgress struct {
	// BatchID is the batch's id, 0 while the first pass reads the file
	// (it settles the file's conventions and digest, which the batch's
	// idempotency key is made of, so the batch does not exist yet).
	BatchID int64
	// Progress is how far the current pass has got: rows read, invalid
	// rows (0 in the first pass, which validates nothing), bytes read of
	// the file's size.
	Progress batchtype.IngestProgress
	// Event is the ingest_progress event this call follows, as the
	// batch's log keeps it (what watchers in other processes get); nil on
	// the calls between events.
	Event *batchtype.Event
}

// Defaults of ImportParams.ProgressInterval and EventInterval.
const (
	defaultProgressInterval = 250 * time.Millisecond
	defaultEventInterval    = 2 * time.Second
	minProgressInterval     = 50 * time.Millisecond
)

// ingestTracker counts what an import has read, and tells of it at a
// bounded rate: ImportParams.ProgressFunc every ProgressInterval at most,
// and the batch's log (an ingest_progress event) every EventInterval at
// most, once the batch exists. The counts are the reader's, held here
// rather than derived from stored rows as every other count is: the rows
// are not stored (or not visible) until the ingest commits. The reader
// only adds to atomic counters, so a row costs no call, lock or write.
type ingestTracker struct {
	e      *Engine
	tenant string
	f      func(IngestProgress)
	every  time.Duration
	events time.Duration

	rows, invalid, bytes atomic.Int64
	size                 atomic.Int64
	// batch is the batch's id once it exists; created is then signalled.
	batch   atomic.Int64
	created chan struct{}
	// quiet stops the events: an import that works its rows inline
	// writes in one transaction, which no other process sees (and on
	// SQLite, whose one connection it holds, an event would wait for
	// it), unless the store shows the batch first (shown).
	quiet atomic.Bool
	// stop cancels the ingest with a cause, which cause returns;
	// callerErr is the caller's context's Err.
	stop             context.CancelCauseFunc
	cause, callerErr func() error
}

// newIngestTracker returns the tracker of an import of p; start it with
// start.
func (e *Engine) newIngestTracker(p ImportParams) *ingestTracker {
	t := &ingestTracker{e: e, tenant: p.TenantID, f: p.ProgressFunc, every: p.ProgressInterval, events: p.EventInterval,
		created: make(chan struct{}, 1)}
	if t.every <= 0 {
		t.every = defaultProgressInterval
	}
	if t.events <= 0 {
		t.events = defaultEventInterval
	}
	// The rate is the engine's to bound, whatever a caller asks: a
	// shorter interval would make an event (a transaction) per few rows.
	t.every, t.events = max(t.every, minProgressInterval), max(t.events, minProgressInterval)
	return t
}

// trackIngest starts the tracker of an import of p. It returns the
// ingest's own context, which the tracker ends when the batch is
// cancelled while the file is read, and the function that stops both.
func (e *Engine) trackIngest(ctx context.Context, p ImportParams) (context.Context, *ingestTracker, func()) {
	t := e.newIngestTracker(p)
	t.callerErr = ctx.Err
	ctx, cancel := context.WithCancelCause(ctx)
	t.stop, t.cause = cancel, func() error { return context.Cause(ctx) }
	stop := t.start(ctx)
	return ctx, t, func() { stop(); cancel(nil) }
}

// why is the error an ingest failed with: err, or the batch's cancel
// when that is what ended it (not the caller's context).
func (t *ingestTracker) why(err error) error {
	if cause := t.cause(); t.callerErr() == nil && errors.Is(cause, ErrBatchStopped) {
		return cause
	}
	return err
}

// restart zeroes the counts for the second pass, which reads the file
// again from its start.
func (t *ingestTracker) restart() {
	t.rows.Store(0)
	t.invalid.Store(0)
	t.bytes.Store(0)
}

// createdBatch records the batch's id, as the store calls it once the
// batch row is committed.
func (t *ingestTracker) createdBatch(id int64) {
	t.batch.Store(id)
	select {
	case t.created <- struct{}{}:
	default:
	}
}

// shown is told that the batch row is committed while its rows are
// written: its events can be written, and read by others.
func (t *ingestTracker) shown() { t.quiet.Store(false) }

func (t *ingestTracker) snapshot() batchtype.IngestProgress {
	return batchtype.IngestProgress{RowsRead: t.rows.Load(), Invalid: t.invalid.Load(), BytesRead: t.bytes.Load(), Size: t.size.Load()}
}

// start runs the tracker until the returned function is called, which
// waits for it to end.
func (t *ingestTracker) start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.run(ctx)
	}()
	return func() { cancel(); <-done }
}

func (t *ingestTracker) run(ctx context.Context) {
	tick := time.NewTicker(t.every)
	defer tick.Stop()
	evTick := time.NewTicker(t.events)
	defer evTick.Stop()
	var logged batchtype.IngestProgress
	writing := true // until the store says the batch is no longer ingesting
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.created:
			// At once: the caller prints the id before a row is stored.
			evTick.Reset(t.events)
		case <-tick.C:
		case <-evTick.C:
			id := t.batch.Load()
			now := t.snapshot()
			if id == 0 || !writing || now == logged || t.quiet.Load() {
				continue
			}
			ev, err := t.e.store.IngestProgress(ctx, driver.IngestProgressParams{TenantID: t.tenant, BatchID: id, Progress: now})
			switch {
			case errors.Is(err, ErrNotFound):
				// The ingest committed (or failed): its batch has
				// started, and no ingest event may follow that. Or the
				// batch was cancelled: the ingest stops reading.
				writing = false
				t.stopIfCancelled(ctx, id)
				continue
			case err != nil:
				// A progress event is a view of the ingest, not part of
				// it: the ingest's own writes decide whether it fails. The
				// next tick tries again (the event also renews the
				// ingest's lease).
				if ctx.Err() == nil {
					t.e.logger.WarnContext(ctx, "write ingest progress", "batch_id", id, "err", err)
				}
				continue
			}
			logged = now
			if t.f != nil {
				t.f(IngestProgress{BatchID: id, Progress: now, Event: ev})
			}
			continue
		}
		if t.f != nil {
			// Every tick, changed or not: a caller that prints on a
			// schedule of its own (a line every so often) gets its turn.
			t.f(IngestProgress{BatchID: t.batch.Load(), Progress: t.snapshot()})
		}
	}
}

// stopIfCancelled ends the ingest when its batch was cancelled while
// its file was read (it would fail at its end anyway, ErrBatchStopped).
func (t *ingestTracker) stopIfCancelled(ctx context.Context, id int64) {
	b, err := t.e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: t.tenant, ID: id})
	if err == nil && b.Status == batchtype.StatusCancelled && t.stop != nil {
		t.stop(fmt.Errorf("batch %d was cancelled while its file was read: %w", id, ErrBatchStopped))
	}
}

// count passes seq's rows on, counting them: those read, and the invalid
// among them.
func (t *ingestTracker) count(seq iter.Seq2[driver.IngestRow, error]) iter.Seq2[driver.IngestRow, error] {
	return func(yield func(driver.IngestRow, error) bool) {
		for row, err := range seq {
			if err == nil {
				t.rows.Add(1)
				if row.State == rows.StateInvalid {
					t.invalid.Add(1)
				}
			}
			if !yield(row, err) || err != nil {
				return
			}
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
