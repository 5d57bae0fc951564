package batch

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// inlineWork works a transactional kind's valid rows while they are
// ingested (ImportParams.WorkInline), in the ingest's transaction: the
// store hands it each group of rows before it writes them
// (driver.BatchIngestParams.WorkFunc), and each row is then written once,
// with its outcome, instead of written valid, claimed, worked and written
// again.
//
// It works a chunk of rows in one processor call under a savepoint of its
// own, so that a call that fails as a whole rolls back its writes and
// nothing else: its rows stay valid, for the workers, which retry and
// classify them as they do any chunk. It leaves to the workers as well a
// row whose key the key filter may have seen on an earlier row (the store
// finds the true repeats when every row is written), and every row once a
// call failed or the failures passed the batch's bound (the first flush
// then pauses the batch, as it would have).
type inlineWork struct {
	e      *Engine
	k      kind
	m      *rows.Mapping
	tenant string
	set    kindSettings
	// maxFailed is the batch's failure bound; rowsEstimate, the rows of
	// the file, is what a percentage is of until the store knows better.
	maxFailed    Threshold
	rowsEstimate int64
	// screen holds the rows whose key the filter may have seen before;
	// it is written by the goroutine that reads ahead (readAhead).
	screen *keyScreen
	off    bool
	failed int64
	by     map[rows.State]int // outcomes, for the observer once committed
}

// inlineSavepoint names the savepoint a chunk's processor call runs under.
const inlineSavepoint = "rowfate_inline_chunk"

// work works the valid rows of a group of whole chunks, setting their
// outcomes in place: one processor call per chunk, or per run of whole
// chunks up to the kind's InlineCallRows, or per run of chunks of which
// rs holds a few rows each (the suspects the store hands back at the
// end) up to that size, where one call per chunk cost a statement or
// three for a row or two.
func (w *inlineWork) work(ctx context.Context, tx Tx, batchID int64, rs []driver.IngestRow) error {
	for start := 0; start < len(rs) && !w.off; {
		end := start + 1
		for end < len(rs) && (rs[end].ChunkNo == rs[end-1].ChunkNo || end-start < w.set.callRows) {
			end++
		}
		if err := w.chunk(ctx, tx, batchID, rs[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// chunk works the valid rows of one chunk, or of a run of chunks, in one
// processor call. When a call of several chunks fails as a whole, they
// are tried one by one: a chunk that fails costs its own rows only, as
// with a call per chunk.
func (w *inlineWork) chunk(ctx context.Context, tx Tx, batchID int64, rs []driver.IngestRow) error {
	idx := make([]int, 0, len(rs))
	worked := make([]driver.LeasedRow, 0, len(rs))
	for i, r := range rs {
		if r.State != rows.StateValid {
			continue
		}
		if r.KeyDigest != nil && w.screen.isSuspect(r.RowNo) {
			w.screen.hold(r)
			continue
		}
		idx = append(idx, i)
		worked = append(worked, driver.LeasedRow{RowNo: r.RowNo, Values: r.Values, Attempts: 1})
	}
	if len(worked) == 0 {
		return nil
	}
	outs, callErr, err := w.attempt(ctx, tx, batchID, worked)
	switch {
	case err != nil:
		return err
	case callErr == nil:
		w.record(rs, idx, outs)
		return nil
	case w.set.callRows > w.set.chunkSize && rs[idx[0]].ChunkNo != rs[idx[len(idx)-1]].ChunkNo:
		return w.oneByOne(ctx, tx, batchID, rs, idx, worked)
	}
	w.stop(ctx, batchID, rs[idx[0]].ChunkNo, callErr)
	return nil
}

// oneByOne works a run of chunks whose call failed as a whole one chunk
// at a time, up to the first that fails too.
func (w *inlineWork) oneByOne(ctx context.Context, tx Tx, batchID int64, rs []driver.IngestRow, idx []int, worked []driver.LeasedRow) error {
	for start := 0; start < len(idx) && !w.off; {
		end := start + 1
		for end < len(idx) && rs[idx[end]].ChunkNo == rs[idx[start]].ChunkNo {
			end++
		}
		outs, callErr, err := w.attempt(ctx, tx, batchID, worked[start:end])
		if err != nil {
			return err
		}
		if callErr != nil {
			w.stop(ctx, batchID, rs[idx[start]].ChunkNo, callErr)
			return nil
		}
		w.record(rs, idx[start:end], outs)
		start = end
	}
	return nil
}

// attempt calls the processor on worked under a savepoint. A call that
// fails as a whole is rolled back to before it and is callErr; err is
// what ends the ingest (the context, the transaction).
func (w *inlineWork) attempt(ctx context.Context, tx Tx, batchID int64, worked []driver.LeasedRow) (outs []driver.RowOutcome, callErr, err error) {
	refs := w.k.effectRefs(w.tenant, batchID, w.m, worked, false)
	infos := make([]RowInfo, len(worked))
	for j, r := range worked {
		infos[j] = RowInfo{TenantID: w.tenant, BatchID: batchID, RowNo: r.RowNo, Attempt: 1, EffectKey: refs[j].Key}
	}
	if _, err := tx.Exec(ctx, "SAVEPOINT "+inlineSavepoint); err != nil {
		return nil, nil, err
	}
	outs, callErr = w.call(ctx, tx, batchID, worked, infos)
	if callErr != nil {
		if ctx.Err() != nil {
			return nil, nil, context.Cause(ctx)
		}
		// Rolled back to before the call: its rows stay valid.
		if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+inlineSavepoint); rerr != nil {
			return nil, nil, fmt.Errorf("roll back a failed chunk (%v): %w", callErr, rerr)
		}
	}
	if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT "+inlineSavepoint); err != nil {
		return nil, nil, err
	}
	return outs, callErr, nil
}

// stop leaves the rows of a chunk whose call failed as a whole, and the
// rest of the file, to the workers, which take them from here.
func (w *inlineWork) stop(ctx context.Context, batchID, chunkNo int64, err error) {
	w.off = true
	w.e.logger.WarnContext(ctx, "a chunk failed as a whole while ingested; its rows and the rest are left to the workers",
		"batch_id", batchID, "chunk_no", chunkNo, "err", err)
}

// record sets the outcomes of a call's rows (rs[idx[j]] got outs[j]),
// and stops the inline work once the failures pass the batch's bound.
func (w *inlineWork) record(rs []driver.IngestRow, idx []int, outs []driver.RowOutcome) {
	for j, o := range outs {
		r := &rs[idx[j]]
		r.State, r.ResultID, r.Attempts, r.RetryDelay = o.State, o.ResultID, 1, o.RetryDelay
		if o.Error != nil {
			r.Errors = []rows.FieldError{*o.Error}
		}
		w.by[o.State]++
		if o.State == rows.StateFailed || o.State == rows.StateDead {
			w.failed++
		}
	}
	if !w.maxFailed.IsZero() && w.maxFailed.Exceeded(w.failed, w.rowsEstimate) {
		// Past the bound: the rest waits, and the batch is paused.
		w.off = true
	}
}

// call runs the processor on a chunk's rows and classifies its answers.
func (w *inlineWork) call(ctx context.Context, tx Tx, batchID int64, worked []driver.LeasedRow, infos []RowInfo) ([]driver.RowOutcome, error) {
	pctx, cancel := context.WithTimeout(ContextWithChunk(ctx, infos), w.set.timeout)
	defer cancel()
	results, err := w.k.processTx(pctx, tx, w.m, worked)
	if err != nil {
		return nil, err
	}
	outs, err := txOutcomes(pctx, w.set, worked, results, make([]driver.RowOutcome, 0, len(worked)))
	if err != nil {
		return nil, err
	}
	return outs, checkOutcomes(batchID, outs)
}

// inlineFor returns the inline work of an import, or nil when its rows
// are left to the workers: a kind that is not transactional, or whose
// effects are keyed (their claims live outside the transaction), or one
// paused for the tenant.
func (e *Engine) inlineFor(ctx context.Context, k kind, m *rows.Mapping, p ImportParams, maxFailed Threshold, estimate int64) (*inlineWork, error) {
	if !p.WorkInline || !k.transactional() || k.keyed() {
		return nil, nil
	}
	paused, err := e.store.Paused(ctx, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", p.SourceName, err)
	}
	if slices.Contains(paused, "") || slices.Contains(paused, p.Kind) {
		return nil, nil
	}
	return &inlineWork{e: e, k: k, m: m, tenant: p.TenantID, set: k.settings(), maxFailed: maxFailed, rowsEstimate: estimate,
		by: map[rows.State]int{}}, nil
}

// committed tells the observer the outcomes the ingest recorded.
func (w *inlineWork) committed(kind string) {
	if w == nil {
		return
	}
	for st, n := range w.by {
		w.e.observer.RowsRecorded(kind, st, n)
	}
}

// workFunc is the store's hook for w, nil when there is no inline work.
func (w *inlineWork) workFunc() func(context.Context, driver.Tx, int64, []driver.IngestRow) error {
	if w == nil {
		return nil
	}
	return w.work
}

// readAhead reads seq in a goroutine of its own, parts of n rows ahead of
// the caller: while the store works and writes one group of rows, the
// next is read and validated, so that the client's work and the
// database's overlap instead of taking turns. It stops the goroutine, and
// waits for it, before it returns.
func readAhead(seq iter.Seq2[driver.IngestRow, error], n int) iter.Seq2[driver.IngestRow, error] {
	type part struct {
		rows []driver.IngestRow
		err  error
	}
	return func(yield func(driver.IngestRow, error) bool) {
		parts := make(chan part, readAheadParts)
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			defer close(parts)
			send := func(p part) bool {
				select {
				case parts <- p:
					return true
				case <-done:
					return false
				}
			}
			buf := make([]driver.IngestRow, 0, n)
			for r, err := range seq {
				if err != nil {
					send(part{rows: buf, err: err})
					return
				}
				if buf = append(buf, r); len(buf) == n {
					if !send(part{rows: buf}) {
						return
					}
					buf = make([]driver.IngestRow, 0, n)
				}
			}
			if len(buf) > 0 {
				send(part{rows: buf})
			}
		})
		defer func() {
			close(done)
			wg.Wait()
		}()
		for p := range parts {
			for _, r := range p.rows {
				if !yield(r, nil) {
					return
				}
			}
			if p.err != nil {
				yield(driver.IngestRow{}, p.err)
				return
			}
		}
	}
}

// readAheadRows is the size of the parts readAhead hands over.
const readAheadRows = 1024

// readAheadParts is how many parts readAhead holds ready: more than a
// group the store works at once (workGroupRows), so that the reader
// never waits while the database works.
const readAheadParts = 5
