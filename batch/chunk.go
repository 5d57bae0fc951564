package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/failpoint"
	"github.com/rowfate/rowfate/rows"
)

// flushRetryLimit bounds how long a flush is retried through transient
// errors: long enough for a database restart. Until it commits, or the
// token check says the lease moved on, the outcomes of effects that
// happened are not thrown away.
const flushRetryLimit = 2 * time.Minute

// chunkDone is what working one chunk did.
type chunkDone struct {
	outcomes, givenBack int
	stopped             bool
}

// workChunk works a leased chunk's rows and flushes their outcomes. The
// lease is renewed while the processor runs; a lost lease stops the work
// and returns ErrLeaseLost with nothing recorded, and a cancelled or
// paused batch stops it too, with what was done recorded and the rest
// given back (or, for a cancel, cancelled).
//
// claimed is when the claim was sent: the lease lasts at least until then
// plus its duration by the database's clock, and the worker counts on it
// no longer than that unless a renewal answers (heartbeat).
func (e *Engine) workChunk(ctx context.Context, r *run, l *driver.Lease, claimed time.Time, s *WorkStats) (chunkDone, error) {
	all := make([]int64, len(l.Rows))
	for i, row := range l.Rows {
		all[i] = row.RowNo
	}
	if l.Cancelled {
		// A sweep of a cancelled batch's dead lease: the flush cancels the
		// rows it left.
		return chunkDone{}, e.flushChunk(ctx, s, l, driver.ChunkFlushParams{Release: true})
	}
	k, err := e.registry.lookup(l.Kind)
	if err != nil {
		// Claims ask only for known kinds; should one slip through, its
		// rows go back untouched for a worker that knows the kind.
		return chunkDone{givenBack: len(all)}, e.flushChunk(ctx, s, l, driver.ChunkFlushParams{Unworked: all, Release: true})
	}
	m, err := k.mapHeader(l.Header, l.Conventions)
	if err != nil {
		// The kind changed since the batch was imported: no row can bind.
		outs := make([]driver.RowOutcome, len(l.Rows))
		for i, row := range l.Rows {
			outs[i] = driver.RowOutcome{RowNo: row.RowNo, State: rows.StateFailed, Error: &rows.FieldError{Row: row.RowNo, Code: CodeProcessor,
				Message: fmt.Sprintf("the header no longer maps to kind %s: %v", l.Kind, err)}}
		}
		return chunkDone{outcomes: len(outs)}, e.flushChunk(ctx, s, l, driver.ChunkFlushParams{Outcomes: outs, Release: true})
	}

	wctx, cancel := context.WithCancelCause(r.hard)
	defer cancel(nil)
	// The caller's ctx only stops claims; the rows under way keep going
	// until r.hard (Grace later) or their own stop.
	var hb sync.WaitGroup
	hb.Go(func() { e.heartbeat(wctx, cancel, l, claimed) })
	defer hb.Wait()

	infos := e.rowInfos(k, m, l)
	if k.transactional() {
		return e.workTx(ctx, wctx, cancel, s, k, m, l, infos)
	}
	outcomes, unworked, inflight, released, err := e.workRows(wctx, s, k, m, l, infos)
	failpoint.Hit(failpoint.AfterEffect) // effects happened, their outcomes are not recorded
	cancel(nil)
	hb.Wait()
	if err != nil {
		return chunkDone{}, err
	}
	cause := context.Cause(wctx)
	if errors.Is(cause, ErrLeaseLost) {
		return chunkDone{}, ErrLeaseLost
	}
	if err := checkOutcomes(l.BatchID, outcomes); err != nil {
		return chunkDone{}, err
	}
	done := chunkDone{outcomes: len(outcomes), givenBack: len(unworked) + len(inflight), stopped: errors.Is(cause, ErrBatchStopped)}
	return done, e.flushChunk(ctx, s, l, driver.ChunkFlushParams{Outcomes: outcomes, Unworked: unworked, InFlight: inflight, Released: released, Release: true})
}

// rowInfos are the RowInfo of a lease's rows, effect keys included.
func (e *Engine) rowInfos(k kind, m *rows.Mapping, l *driver.Lease) []RowInfo {
	refs := k.effectRefs(l.TenantID, l.BatchID, m, l.Rows, false)
	infos := make([]RowInfo, len(l.Rows))
	for i, row := range l.Rows {
		infos[i] = RowInfo{TenantID: l.TenantID, BatchID: l.BatchID, RowNo: row.RowNo, Attempt: row.Attempts, EffectKey: refs[i].Key}
	}
	return infos
}

// workRows runs a non-transactional processor over a lease's rows. For a
// keyed kind it first claims the rows' effect keys: a key already done is
// not run again (the row takes its result), a key reused with another
// payload fails the row, a key another row holds waits. It returns the
// outcomes, the rows that got none (the work stopped first), the rows
// whose processor call the stop cut off (in flight: their effect may have
// happened), and the effect keys this lease claimed first for rows it
// did not run, to release.
func (e *Engine) workRows(ctx context.Context, s *WorkStats, k kind, m *rows.Mapping, l *driver.Lease, infos []RowInfo) (outcomes []driver.RowOutcome, unworked, inflight []int64, released []string, err error) {
	set := k.settings()
	outcomes = make([]driver.RowOutcome, 0, len(l.Rows))
	toRun := make([]int, 0, len(l.Rows))
	claimedNew := make([]bool, len(l.Rows))
	unanswered := make([]bool, len(l.Rows)) // an earlier run of its key may have had its effect
	if k.keyed() {
		claims, err := e.claimEffects(ctx, s, k, m, l)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		for i, c := range claims {
			if out, run := claimedOutcome(set, c, l.Rows[i].RowNo, infos[i].EffectKey); !run {
				outcomes = append(outcomes, out)
				continue
			}
			claimedNew[i] = c.Status == driver.EffectNew
			unanswered[i] = c.Unanswered
			toRun = append(toRun, i)
		}
	} else {
		for i := range l.Rows {
			toRun = append(toRun, i)
		}
	}
	record := func(i int, id string, err error) bool {
		r := l.Rows[i]
		out, ok := classify(ctx, id, err, r.Attempts, set.maxAttempts)
		if !ok {
			return false
		}
		out.RowNo = r.RowNo
		if out.Error != nil {
			out.Error.Row = r.RowNo
		}
		if out.State == rows.StateRetrying {
			out.RetryDelay = set.backoff(r.Attempts)
		}
		if k.keyed() {
			out.EffectKey = infos[i].EffectKey
			out.NotApplied = out.State == rows.StateRetrying && IsNotApplied(err)
			if out.State == rows.StateDead {
				out = exhaustedKeyed(out, unanswered[i], IsNotApplied(err))
			}
		}
		outcomes = append(outcomes, out)
		return true
	}
	ran := make([]bool, len(l.Rows))
	called := make([]bool, len(l.Rows)) // the processor was called for it
	if len(toRun) > 0 {
		leased := make([]driver.LeasedRow, len(toRun))
		chunkInfos := make([]RowInfo, len(toRun))
		for j, i := range toRun {
			leased[j], chunkInfos[j] = l.Rows[i], infos[i]
		}
		cctx, ccancel := context.WithTimeout(ContextWithChunk(ctx, chunkInfos), set.timeout)
		results, chunked := k.processChunk(cctx, m, leased)
		ccancel()
		if chunked {
			for j, i := range toRun {
				called[i] = true
				if !record(i, results[j].ID, results[j].Err) {
					continue
				}
				ran[i] = true
			}
		} else {
			for _, i := range toRun {
				if ctx.Err() != nil {
					break
				}
				rctx, rcancel := context.WithTimeout(ContextWithRow(ctx, infos[i]), set.timeout)
				called[i] = true
				id, err := k.process(rctx, m, l.Rows[i].RowNo, l.Rows[i].Values)
				rcancel()
				if !record(i, id, err) {
					break
				}
				ran[i] = true
			}
		}
	}
	unworked, inflight, released = leftOver(l, infos, toRun, ran, called, claimedNew)
	return outcomes, unworked, inflight, released, nil
}

// exhaustedKeyed is the outcome of a keyed row whose last attempt failed
// with an error to retry: dead only when no run of its key may have had
// its effect. An earlier run that never answered may have (the chaos
// harness saw rows dead whose first attempt the downstream had applied),
// and so may this one unless its error says not (batch.NotApplied): a
// program whose own call timed out after the downstream applied it exits
// 1 all the same. Such a row is unknown, to reconcile; the retry that
// would have found out is what the exhausted attempts rule out.
func exhaustedKeyed(out driver.RowOutcome, unanswered, notApplied bool) driver.RowOutcome {
	switch {
	case unanswered:
		out.State = rows.StateUnknown
		out.Error.Message += "; an earlier attempt ran its effect and stopped before recording an outcome, so the effect may have happened: reconcile the row"
	case !notApplied:
		out.State = rows.StateUnknown
		out.Error.Message += "; the error does not say the effect did not happen (batch.NotApplied), so it may have: reconcile the row"
	}
	return out
}

// leftOver sorts the rows of toRun that got no outcome: in flight (the
// processor was called, and the stop cut it off) or unworked, with the
// effect keys this lease claimed first for unworked rows, to release.
func leftOver(l *driver.Lease, infos []RowInfo, toRun []int, ran, called, claimedNew []bool) (unworked, inflight []int64, released []string) {
	for _, i := range toRun {
		switch {
		case ran[i]:
		case called[i]:
			inflight = append(inflight, l.Rows[i].RowNo)
		default:
			unworked = append(unworked, l.Rows[i].RowNo)
			if claimedNew[i] {
				released = append(released, infos[i].EffectKey)
			}
		}
	}
	return unworked, inflight, released
}

// claimedOutcome is what a row's effect claim decides before anything
// runs: run the row (run true: the key is new, or this lease's), or its
// outcome now (the key is done, reused with another payload, or held).
func claimedOutcome(set kindSettings, c driver.EffectClaim, row int64, key string) (out driver.RowOutcome, run bool) {
	switch {
	case c.Status == driver.EffectNew, c.Status == driver.EffectMine:
		return driver.RowOutcome{}, true
	case c.Status == driver.EffectDone:
		return driver.RowOutcome{RowNo: row, State: rows.StateSucceeded, ResultID: c.ResultID, EffectKey: key}, false
	case c.Status == driver.EffectReused:
		return driver.RowOutcome{RowNo: row, State: rows.StateFailed, Error: &rows.FieldError{Row: row, Code: CodeKeyReused,
			Message: fmt.Sprintf("effect key %q was claimed by batch %d row %d with another payload", key, c.HolderBatch, c.HolderRow)}}, false
	case c.Running:
		return driver.RowOutcome{RowNo: row, State: rows.StateRetrying, RetryDelay: set.runFor(), Error: &rows.FieldError{Row: row, Code: CodeKeyHeld,
			Message: fmt.Sprintf("an earlier run of effect key %q, whose worker stopped before it answered, may still be under way: not run again beside it", key)}}, false
	}
	// Pending: another row holds the key.
	return driver.RowOutcome{RowNo: row, State: rows.StateRetrying, RetryDelay: set.backoff(1), Error: &rows.FieldError{Row: row, Code: CodeKeyHeld,
		Message: fmt.Sprintf("effect key %q is held by batch %d row %d, whose effect is not finished", key, c.HolderBatch, c.HolderRow)}}, false
}

// runFor bounds how long a run of a keyed kind's effect may be under way:
// its timeout, plus the kind's RunGrace for what the processor takes to
// stop after it. Until then after a claim, a key whose run never answered
// is not run again by another lease (EffectClaim.Running).
func (s kindSettings) runFor() time.Duration { return s.timeout + s.runGrace }

// claimEffects claims a lease's effect keys, retrying transient errors.
func (e *Engine) claimEffects(ctx context.Context, s *WorkStats, k kind, m *rows.Mapping, l *driver.Lease) ([]driver.EffectClaim, error) {
	refs := k.effectRefs(l.TenantID, l.BatchID, m, l.Rows, true)
	var claims []driver.EffectClaim
	err := e.retry(ctx, s, "claim effects", func(ctx context.Context) (err error) {
		claims, err = e.store.EffectsClaim(ctx, driver.EffectsClaimParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token, Effects: refs,
			RunFor: k.settings().runFor()})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			// Stopped before anything ran: the rows are given back.
			return make([]driver.EffectClaim, 0), nil
		}
		return nil, err
	}
	return claims, nil
}

// workTx runs a transactional processor inside the flush's transaction:
// its writes commit with the outcomes, under the fencing token, or not at
// all. A failure of the whole call rolls its writes back, so its rows are
// retried (never unknown: nothing happened).
func (e *Engine) workTx(ctx, wctx context.Context, cancel context.CancelCauseFunc, s *WorkStats, k kind, m *rows.Mapping, l *driver.Lease, infos []RowInfo) (chunkDone, error) {
	set := k.settings()
	var outcomes []driver.RowOutcome
	effect := func(fctx context.Context, tx Tx) ([]driver.RowOutcome, error) {
		// The processor's statements stop with the lease or the batch.
		pctx, pcancel := context.WithTimeout(ContextWithChunk(wctx, infos), set.timeout)
		defer pcancel()
		stop := context.AfterFunc(fctx, pcancel)
		defer stop()
		results, err := k.processTx(pctx, tx, m, l.Rows)
		if err != nil {
			return nil, err
		}
		if outcomes, err = txOutcomes(wctx, set, l.Rows, results, outcomes[:0]); err != nil {
			return nil, err
		}
		if err := checkOutcomes(l.BatchID, outcomes); err != nil {
			return nil, err
		}
		return outcomes, nil
	}
	res, err := e.flushResult(ctx, s, l, driver.ChunkFlushParams{EffectFunc: effect, Release: true})
	// Whether the work was stopped (a shutdown, a cancel, a pause, a lost
	// lease) is read before cancel(nil) below, which would make every
	// failure look like a stop: the rows would go back without using an
	// attempt and be claimed again at once, forever.
	stopped := wctx.Err() != nil
	cause := context.Cause(wctx)
	cancel(nil)
	switch {
	case err == nil:
		if res.Cancelled {
			return chunkDone{stopped: true}, nil
		}
		return chunkDone{outcomes: len(outcomes)}, nil
	case errors.Is(err, ErrLeaseLost):
		return chunkDone{}, ErrLeaseLost // its writes rolled back with the flush
	case stopped && errors.Is(cause, ErrLeaseLost):
		return chunkDone{}, ErrLeaseLost
	}
	all := make([]int64, len(l.Rows))
	for i, row := range l.Rows {
		all[i] = row.RowNo
	}
	if stopped {
		// Stopped (shutdown, cancel, pause) mid-transaction: rolled back,
		// so the rows go back as they were.
		done := chunkDone{givenBack: len(all), stopped: errors.Is(cause, ErrBatchStopped)}
		return done, e.flushChunk(ctx, s, l, driver.ChunkFlushParams{Unworked: all, Release: true})
	}
	if errors.Is(err, ErrTransient) {
		return chunkDone{}, fmt.Errorf("flush batch %d chunk %d: %w", l.BatchID, l.ChunkNo, err)
	}
	// The call failed as a whole and was rolled back: every row shares the
	// error, as a failure (Permanent) or a retry.
	e.logger.WarnContext(ctx, "transactional processor failed; its writes were rolled back", "batch_id", l.BatchID, "chunk_no", l.ChunkNo, "err", err)
	outs := make([]driver.RowOutcome, len(l.Rows))
	for i, row := range l.Rows {
		o := driver.RowOutcome{RowNo: row.RowNo, State: rows.StateRetrying, RetryDelay: set.backoff(row.Attempts),
			Error: &rows.FieldError{Row: row.RowNo, Code: CodeProcessor, Message: err.Error()}}
		switch {
		case IsPermanent(err):
			o.State, o.RetryDelay = rows.StateFailed, 0
		case row.Attempts >= set.maxAttempts:
			o.State, o.RetryDelay, o.Error.Code = rows.StateDead, 0, CodeExhausted
		}
		outs[i] = o
	}
	return chunkDone{outcomes: len(outs)}, e.flushChunk(ctx, s, l, driver.ChunkFlushParams{Outcomes: outs, Release: true})
}

// txOutcomes turns a transactional processor's results for worked rows
// into their outcomes, appended to outs. A result with neither an id nor
// an error is an error for the whole call: its writes are in the
// transaction, and are rolled back rather than committed as an effect the
// engine cannot name.
func txOutcomes(ctx context.Context, set kindSettings, worked []driver.LeasedRow, results []Result, outs []driver.RowOutcome) ([]driver.RowOutcome, error) {
	for i, res := range results {
		row := worked[i]
		if res.Err == nil && res.ID == "" {
			return nil, fmt.Errorf("the processor answered row %d with neither a result id nor an error", row.RowNo)
		}
		out, ok := classify(ctx, res.ID, res.Err, row.Attempts, set.maxAttempts)
		if !ok {
			return nil, context.Cause(ctx)
		}
		if out.State == rows.StateUnknown {
			// Rolled back or not, a row's own timeout inside the
			// transaction has no effect outside it: retry it.
			out.State = rows.StateRetrying
		}
		out.RowNo = row.RowNo
		if out.Error != nil {
			out.Error.Row = row.RowNo
		}
		if out.State == rows.StateRetrying {
			out.RetryDelay = set.backoff(row.Attempts)
		}
		outs = append(outs, out)
	}
	return outs, nil
}

// checkOutcomes applies the row state machine, the engine's rule, once for
// every store: an outcome the machine does not allow is a bug.
func checkOutcomes(batchID int64, outcomes []driver.RowOutcome) error {
	for _, o := range outcomes {
		if err := rows.Transition(rows.StateProcessing, o.State); err != nil {
			return fmt.Errorf("batch %d row %d: %w", batchID, o.RowNo, err)
		}
	}
	return nil
}

// flushChunk flushes a lease's outcomes; see flushResult.
func (e *Engine) flushChunk(ctx context.Context, s *WorkStats, l *driver.Lease, p driver.ChunkFlushParams) error {
	_, err := e.flushResult(ctx, s, l, p)
	return err
}

// flushResult flushes under the lease, retrying transient errors for up
// to flushRetryLimit, even when ctx is done: the work is done and its
// outcomes must not be lost.
func (e *Engine) flushResult(ctx context.Context, s *WorkStats, l *driver.Lease, p driver.ChunkFlushParams) (*driver.FlushResult, error) {
	p.TenantID, p.BatchID, p.ChunkNo, p.Token, p.Deferred = l.TenantID, l.BatchID, l.ChunkNo, l.Token, l.Deferred
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushRetryLimit)
	defer cancel()
	// effected are the EffectFunc's outcomes in the attempt that
	// committed, for the observer: they join p.Outcomes in the store.
	var effected []driver.RowOutcome
	if f := p.EffectFunc; f != nil {
		p.EffectFunc = func(ctx context.Context, tx Tx) ([]driver.RowOutcome, error) {
			outs, err := f(ctx, tx)
			effected = outs
			return outs, err
		}
	}
	var res *driver.FlushResult
	err := e.retry(fctx, s, "flush", func(ctx context.Context) (err error) {
		effected = nil
		res, err = e.store.ChunkFlush(ctx, p)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			e.observer.StaleAckRejected(l.Kind)
			return nil, ErrLeaseLost
		}
		return nil, fmt.Errorf("flush batch %d chunk %d: %w", l.BatchID, l.ChunkNo, err)
	}
	if !res.Cancelled {
		e.recorded(l.Kind, p.Outcomes, effected)
	}
	e.logger.DebugContext(ctx, "chunk flushed", "batch_id", l.BatchID, "chunk_no", l.ChunkNo, "rows", len(p.Outcomes), "finished", res.Finished)
	return res, nil
}

// heartbeat renews the lease every third of its duration until ctx is
// done, and between renewals checks it (a read) every stopCheckInterval:
// a worker learns of a cancel or a pause within about that, not at its
// next renewal (10 s apart by default: after a cancel, effects went on
// starting for 8 s). A lost lease cancels the work with ErrLeaseLost; a
// cancelled or paused batch with ErrBatchStopped. The processors see it
// through their context, and no row is started after it.
//
// A worker that cannot reach the database cannot learn that its lease
// ended, so it also keeps its own count: the lease holds, by the
// database's clock, at least the lease duration from when the claim or the
// last renewal that answered was sent, and no longer for certain. When
// that passes with no renewal answered, the work stops as for a lost
// lease, even while a renewal is still waiting for its answer: rows
// started after it could run beside the next owner's (the chaos harness
// saw a worker go on sending rows through a PostgreSQL restart, after
// another had claimed its chunk).
func (e *Engine) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, l *driver.Lease, claimed time.Time) {
	every := max(e.lease/3, time.Millisecond)
	renew := time.NewTicker(every)
	defer renew.Stop()
	check := time.NewTicker(min(e.stopCheck, every))
	defer check.Stop()
	expired := time.AfterFunc(time.Until(claimed.Add(e.lease)), func() {
		e.observer.LeaseLost(l.Kind)
		cancel(fmt.Errorf("%w: no renewal answered within the lease (%s)", ErrLeaseLost, e.lease))
	})
	defer expired.Stop()
	p := driver.LeaseRenewParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token, LeaseDuration: e.lease}
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			sent := time.Now()
			if err = e.store.LeaseRenew(ctx, p); err == nil && !expired.Reset(time.Until(sent.Add(e.lease))) {
				// The count ran out while the renewal waited for its
				// answer: the work has stopped already.
				expired.Stop()
			}
		case <-check.C:
			err = e.store.LeaseCheck(ctx, p)
		}
		switch {
		case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrBatchStopped):
			if errors.Is(err, ErrLeaseLost) {
				e.observer.LeaseLost(l.Kind)
			}
			cancel(err)
			return
		case err != nil && ctx.Err() == nil:
			// A failed renewal or check is not yet a lost lease; the next
			// tick tries again, and the flush's token check is the real
			// fence.
			e.logger.WarnContext(ctx, "lease renewal failed", "batch_id", l.BatchID, "chunk_no", l.ChunkNo, "err", err)
		}
	}
}
