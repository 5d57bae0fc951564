package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rowfate/rowfate/rows"
)

// WorkParams configure a run of workers.
type WorkParams struct {
	// BatchID limits work to one batch; 0 means any batch.
	BatchID int64
	// TenantIDs limits work to these tenants; nil means any. With a
	// BatchID, the batch must belong to one of them (to DefaultTenant
	// when nil), or Work returns ErrNotFound before doing anything.
	TenantIDs []string
	// Workers is the number of concurrent workers. Defaults to 2.
	Workers int
	// UntilDone returns once there is nothing left to do: no chunk is
	// claimable and no open chunk of a running batch in scope is left
	// (for a BatchID: the batch is finished). Rows that are due later, or
	// held by another worker's lease (one that crashed holds them until
	// its lease expires), are waited for. When false, workers poll until
	// ctx is done.
	UntilDone bool
	// WaitFunc, when set, is told about the chunk an UntilDone run waits
	// for: leased by another worker, or due later. It is called once per
	// chunk and lease, from any worker goroutine.
	WaitFunc func(ChunkDue)
}

// WorkStats counts what a run did.
type WorkStats struct {
	Chunks    int64 // chunks flushed
	Rows      int64 // row outcomes recorded
	LeaseLost int64 // flushes rejected because the lease had moved on
}

// Work runs workers that claim chunks, process their due rows and record
// each row's outcome. It returns when ctx is done (nil error) or, with
// UntilDone, when the work is done.
func (e *Engine) Work(ctx context.Context, p WorkParams) (WorkStats, error) {
	var tenant string
	if p.BatchID != 0 {
		// Find the batch before doing anything: a batch outside the
		// tenant scope is ErrNotFound at once, not after its rows ran.
		b, err := e.findBatch(ctx, p)
		if err != nil {
			return WorkStats{}, err
		}
		tenant = b.TenantID
	}
	n := p.Workers
	if n <= 0 {
		n = 2
	}
	var (
		mu    sync.Mutex
		total WorkStats
	)
	w := &waiter{f: p.WaitFunc, owner: e.owner}
	g, gctx := errgroup.WithContext(ctx)
	for range n {
		g.Go(func() error {
			s, err := e.workLoop(gctx, p, tenant, w)
			mu.Lock()
			total.Chunks += s.Chunks
			total.Rows += s.Rows
			total.LeaseLost += s.LeaseLost
			mu.Unlock()
			return err
		})
	}
	err := g.Wait()
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = nil // stopping is not a failure
	}
	return total, err
}

func (e *Engine) workLoop(ctx context.Context, p WorkParams, tenant string, w *waiter) (WorkStats, error) {
	var s WorkStats
	for {
		if ctx.Err() != nil {
			return s, nil
		}
		lease, err := e.store.ChunkClaim(ctx, ChunkClaimParams{Owner: e.owner, TenantIDs: p.TenantIDs, BatchID: p.BatchID, LeaseDuration: e.lease})
		if errors.Is(err, ErrNoWork) {
			if p.UntilDone {
				done, err := e.done(ctx, p, tenant, w)
				if err != nil || done {
					return s, err
				}
			}
			select {
			case <-ctx.Done():
				return s, nil
			case <-time.After(e.poll):
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return s, nil
			}
			return s, fmt.Errorf("claim chunk: %w", err)
		}
		n, err := e.workChunk(ctx, lease)
		switch {
		case errors.Is(err, ErrLeaseLost):
			// Not an ack and not a failure: the new owner works the rows.
			s.LeaseLost++
			e.logger.WarnContext(ctx, "lease lost", "batch_id", lease.BatchID, "chunk_no", lease.ChunkNo, "token", lease.Token)
		case err != nil:
			return s, err
		default:
			s.Chunks++
			s.Rows += int64(n)
		}
	}
}

// done reports whether there is nothing left to wait for: no open chunk of
// a running batch in scope (for a BatchID: the batch is no longer running).
// Otherwise it tells w what the run waits for.
func (e *Engine) done(ctx context.Context, p WorkParams, tenant string, w *waiter) (bool, error) {
	if p.BatchID != 0 {
		b, err := e.store.BatchGet(ctx, BatchGetParams{TenantID: tenant, ID: p.BatchID})
		if err != nil {
			return false, fmt.Errorf("check batch %d: %w", p.BatchID, err)
		}
		if b.Status != StatusRunning {
			return true, nil
		}
	}
	due, err := e.store.ChunkNextDue(ctx, ChunkNextDueParams{TenantIDs: p.TenantIDs, BatchID: p.BatchID})
	if errors.Is(err, ErrNoWork) {
		// A batch with no open chunk is finished by its last flush; the
		// next check of a BatchID sees it.
		return p.BatchID == 0, nil
	}
	if err != nil {
		return false, fmt.Errorf("check open chunks: %w", err)
	}
	w.tell(*due)
	return false, nil
}

// waiter tells a WaitFunc once about each chunk and lease an UntilDone run
// waits for, leaving out the leases of this engine's own workers.
type waiter struct {
	f     func(ChunkDue)
	owner string
	mu    sync.Mutex
	last  ChunkDue
}

func (w *waiter) tell(d ChunkDue) {
	if w.f == nil || d.LeaseOwner == w.owner {
		return
	}
	w.mu.Lock()
	if d.BatchID == w.last.BatchID && d.ChunkNo == w.last.ChunkNo && d.LeaseOwner == w.last.LeaseOwner {
		w.mu.Unlock()
		return
	}
	w.last = d
	w.mu.Unlock()
	w.f(d)
}

// findBatch looks p.BatchID up under each tenant of the scope (the default
// tenant when the scope is empty) and returns it, or ErrNotFound.
func (e *Engine) findBatch(ctx context.Context, p WorkParams) (*Batch, error) {
	tenants := p.TenantIDs
	if len(tenants) == 0 {
		tenants = []string{DefaultTenant}
	}
	for _, t := range tenants {
		b, err := e.store.BatchGet(ctx, BatchGetParams{TenantID: t, ID: p.BatchID})
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("batch %d: %w", p.BatchID, ErrNotFound)
}

// workChunk processes a leased chunk's rows and flushes their outcomes in one
// transaction. The lease is renewed while the processor runs; if renewal
// finds the lease gone, processing stops and ErrLeaseLost is returned.
func (e *Engine) workChunk(ctx context.Context, l *Lease) (int, error) {
	k, err := e.registry.lookup(l.Kind)
	if err != nil {
		// Another deployment's kind: leave the lease to expire rather than
		// guess at the rows.
		return 0, fmt.Errorf("batch %d: %w", l.BatchID, err)
	}
	m, err := k.mapHeader(l.Header, l.Conventions)
	if err != nil {
		return 0, fmt.Errorf("batch %d: header no longer maps to kind %s: %w", l.BatchID, l.Kind, err)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var hb sync.WaitGroup
	hb.Go(func() { e.heartbeat(wctx, cancel, l) })

	outcomes := e.processRows(wctx, k, m, l.Rows)
	cancel(nil)
	hb.Wait()
	if errors.Is(context.Cause(wctx), ErrLeaseLost) {
		return 0, ErrLeaseLost
	}

	// The row state machine is the engine's rule, checked here once for
	// every store: a processor's answer becomes an outcome only through
	// classify, and an outcome the machine does not allow is a bug.
	for _, o := range outcomes {
		if err := rows.Transition(rows.StateProcessing, o.State); err != nil {
			return 0, fmt.Errorf("batch %d row %d: %w", l.BatchID, o.RowNo, err)
		}
	}

	// Flush even when shutting down: the work is done and its outcomes
	// should not be lost, so give the flush its own short deadline.
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer fcancel()
	res, err := e.store.ChunkFlush(fctx, ChunkFlushParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outcomes, Release: true})
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return 0, ErrLeaseLost
		}
		return 0, fmt.Errorf("flush batch %d chunk %d: %w", l.BatchID, l.ChunkNo, err)
	}
	e.logger.DebugContext(ctx, "chunk flushed", "batch_id", l.BatchID, "chunk_no", l.ChunkNo, "rows", len(outcomes), "finished", res.Finished)
	return len(outcomes), nil
}

// processRows runs the processor over a chunk's leased rows and classifies
// each answer. It stops early when ctx is done (shutdown or lease lost): the
// rows without an outcome stay open for the next claim.
func (e *Engine) processRows(ctx context.Context, k kind, m *rows.Mapping, leased []LeasedRow) []RowOutcome {
	s := k.settings()
	outcomes := make([]RowOutcome, 0, len(leased))
	record := func(r LeasedRow, id string, err error) bool {
		out, ok := classify(ctx, id, err, r.Attempts, s.maxAttempts)
		if !ok {
			return false
		}
		out.RowNo = r.RowNo
		if out.Error != nil {
			out.Error.Row = r.RowNo
		}
		if out.State == rows.StateRetrying {
			out.RetryDelay = s.backoff(r.Attempts)
		}
		outcomes = append(outcomes, out)
		return true
	}

	cctx, ccancel := context.WithTimeout(ctx, s.timeout)
	results, chunked := k.processChunk(cctx, m, leased)
	ccancel()
	if chunked {
		for i, r := range leased {
			if !record(r, results[i].ID, results[i].Err) {
				break
			}
		}
		return outcomes
	}
	for _, r := range leased {
		if ctx.Err() != nil {
			break
		}
		rctx, rcancel := context.WithTimeout(ctx, s.timeout)
		id, err := e.call(rctx, k, m, r)
		rcancel()
		if !record(r, id, err) {
			break
		}
	}
	return outcomes
}

// call runs the processor for one row and turns a panic into a permanent
// error: a processor bug on one row's data must not take down the worker.
func (e *Engine) call(ctx context.Context, k kind, m *rows.Mapping, r LeasedRow) (id string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = Permanent(fmt.Errorf("processor panicked: %v", v))
		}
	}()
	return k.process(ctx, m, r.RowNo, r.Values)
}

// heartbeat renews the lease every third of its duration until ctx is done.
// A lost lease cancels the work with ErrLeaseLost.
func (e *Engine) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, l *Lease) {
	t := time.NewTicker(e.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := e.store.LeaseRenew(ctx, LeaseRenewParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token, LeaseDuration: e.lease})
		if errors.Is(err, ErrLeaseLost) {
			cancel(ErrLeaseLost)
			return
		}
		if err != nil && ctx.Err() == nil {
			// A failed renewal is not yet a lost lease; the next tick
			// retries, and the flush's token check is the real fence.
			e.logger.WarnContext(ctx, "lease renewal failed", "batch_id", l.BatchID, "chunk_no", l.ChunkNo, "err", err)
		}
	}
}
