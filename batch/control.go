package batch

import (
	"context"
	"errors"
	"fmt"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// Cancel cancels a running batch for good: no new claims; its open rows
// are cancelled at once, and those under way when their worker's lease
// next renews (the processors see their context cancelled) or flushes. No
// row succeeds after the cancel: a row whose effect finished too late to
// be stopped is unknown, to be reconciled. A batch that no longer runs
// comes back unchanged.
func (e *Engine) Cancel(ctx context.Context, tenant string, id int64) (*batchtype.Batch, error) {
	b, err := e.store.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: id})
	if err != nil {
		return nil, fmt.Errorf("cancel batch %d: %w", id, err)
	}
	return b, nil
}

// PauseBatch pauses (paused true) or resumes a batch. Workers observe a
// pause at every claim and renewal: a lease on a paused batch stops, and
// its unworked rows go back without using an attempt. A batch whose
// failures pass its bound is not resumed (ErrPastBound): raise the bound
// first (Limit).
func (e *Engine) PauseBatch(ctx context.Context, tenant string, id int64, paused bool) (*batchtype.Batch, error) {
	b, err := e.store.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: id}, paused)
	if err != nil {
		verb := "pause"
		if !paused {
			verb = "resume"
		}
		return nil, fmt.Errorf("%s batch %d: %w", verb, id, err)
	}
	if !paused {
		e.bell.ring()
	}
	return b, nil
}

// Limit sets a batch's failure bound (Batch.MaxFailed), while it runs or
// before it is resumed; the zero Threshold lifts it. A running batch whose
// failures pass the new bound is paused at once, with an event and a
// webhook, as its next flush would.
func (e *Engine) Limit(ctx context.Context, tenant string, id int64, maxFailed Threshold) (*batchtype.Batch, error) {
	b, err := e.store.BatchLimit(ctx, driver.BatchControlParams{TenantID: tenant, ID: id}, maxFailed)
	if err != nil {
		return nil, fmt.Errorf("limit batch %d: %w", id, err)
	}
	return b, nil
}

// PauseParams pause or resume a kind of a tenant, or the whole tenant.
type PauseParams struct {
	TenantID string
	// Kind pauses one kind of the tenant; "" pauses the whole tenant.
	Kind   string
	Paused bool
}

// Pause pauses or resumes a kind of a tenant, or the whole tenant when
// p.Kind is empty: a kill switch workers observe at every claim and
// renewal.
func (e *Engine) Pause(ctx context.Context, p PauseParams) error {
	if err := e.store.Pause(ctx, driver.PauseParams(p)); err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	if !p.Paused {
		e.bell.ring()
	}
	return nil
}

// RetryParams name the rows of a batch to make due again.
type RetryParams struct {
	TenantID string
	BatchID  int64
	// States are the states to retry: failed and dead by default; unknown
	// too, for a person who knows the effect did not happen.
	States []rows.State
	// Actor is who retried, for the batch's history.
	Actor string
}

// Retry makes a batch's rows in the given states (failed and dead by
// default) due again, with their attempts reset, and returns how many.
// Effects already done are not run again: a keyed kind's claim finds
// them done.
func (e *Engine) Retry(ctx context.Context, p RetryParams) (int64, error) {
	if len(p.States) == 0 {
		p.States = []rows.State{rows.StateFailed, rows.StateDead}
	}
	for _, s := range p.States {
		if s != rows.StateFailed && s != rows.StateDead && s != rows.StateUnknown {
			return 0, fmt.Errorf("retry rows in state %s: %w: only failed, dead and unknown rows can be retried", s, ErrInvalidRequest)
		}
	}
	n, err := e.store.RowsRetry(ctx, driver.RowsRetryParams(p))
	if err != nil {
		return 0, fmt.Errorf("retry batch %d: %w", p.BatchID, err)
	}
	e.bell.ring()
	return n, nil
}

// SettleParams settle one unknown row.
type SettleParams struct {
	TenantID string
	BatchID  int64
	RowNo    int64
	// State is succeeded, failed, or valid (to be worked again).
	State    rows.State
	ResultID string
	// Reason is recorded as the row's error when it failed, and in the
	// batch's history either way.
	Reason string
	// Actor is who settled the row, for the batch's history.
	Actor string
}

// Settle settles one unknown row by hand: succeeded (the effect happened,
// with its result id), failed (it did not, and must not be retried), or
// valid (to be worked again).
func (e *Engine) Settle(ctx context.Context, p SettleParams) error {
	if err := e.store.RowSettle(ctx, driver.RowSettleParams(p)); err != nil {
		return fmt.Errorf("settle row %d of batch %d: %w", p.RowNo, p.BatchID, err)
	}
	if p.State == rows.StateValid {
		e.bell.ring()
	}
	return nil
}

// SettleAllParams are the parameters of Engine.SettleAll.
type SettleAllParams struct {
	TenantID string
	BatchID  int64
	// State is succeeded (the effects happened) or failed (they did not,
	// and must not be retried). To work unknown rows again, Retry them.
	State rows.State
	// ResultID is recorded as every row's result id when they succeeded.
	// Optional.
	ResultID string
	// Reason says why, and is required: a whole batch's rows are settled
	// on one person's word. It is recorded as each failed row's error,
	// and in the batch's history for every row.
	Reason string
	// Actor is who settles them, for the history.
	Actor string
}

// settleAllPage is how many unknown rows SettleAll reads at a time.
const settleAllPage = 500

// SettleAll settles every unknown row of a batch the same way, by hand,
// and returns how many it settled: for when a person has checked the
// downstream as a whole (the CRM has none of them) or the kind cannot
// ask it. Each row is settled as Settle does it, in its own transaction
// with its own settled event, so the rows, their effects, the counts and
// the events stay as they would be had each been settled alone. A row no
// longer unknown when its turn comes (a worker or a person settled it
// meanwhile) is left as it is.
func (e *Engine) SettleAll(ctx context.Context, p SettleAllParams) (int64, error) {
	if p.State != rows.StateSucceeded && p.State != rows.StateFailed {
		return 0, fmt.Errorf("settle the unknown rows of batch %d as %q: %w: only succeeded or failed", p.BatchID, p.State, ErrInvalidRequest)
	}
	if p.Reason == "" {
		return 0, fmt.Errorf("settle the unknown rows of batch %d: %w: a reason is required", p.BatchID, ErrInvalidRequest)
	}
	// The batch first: another tenant's, or none, is ErrNotFound, not
	// "nothing to settle".
	if _, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: p.BatchID}); err != nil {
		return 0, fmt.Errorf("settle the unknown rows of batch %d: %w", p.BatchID, err)
	}
	var n, after int64
	for {
		page, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: p.TenantID, BatchID: p.BatchID, State: rows.StateUnknown, AfterRowNo: after, Limit: settleAllPage})
		if err != nil {
			return n, fmt.Errorf("settle the unknown rows of batch %d: %w", p.BatchID, err)
		}
		for _, r := range page {
			err := e.store.RowSettle(ctx, driver.RowSettleParams{TenantID: p.TenantID, BatchID: p.BatchID, RowNo: r.RowNo, State: p.State, ResultID: p.ResultID, Reason: p.Reason, Actor: p.Actor})
			switch {
			case errors.Is(err, ErrConflict):
				continue
			case err != nil:
				return n, fmt.Errorf("settle row %d of batch %d: %w", r.RowNo, p.BatchID, err)
			}
			n++
		}
		if len(page) < settleAllPage {
			return n, nil
		}
		after = page[len(page)-1].RowNo
	}
}

// ReconcileStats counts what Reconcile settled.
type ReconcileStats struct {
	Succeeded, Failed int64
	// Left are unknown rows still unknown: the kind's ReconcileFunc could
	// not tell (an error that is not Permanent means "ask again later").
	Left int64
}

// ErrNoReconcile: the kind has no ReconcileFunc, so its unknown rows wait
// for a person (Settle).
var ErrNoReconcile = errors.New("the kind has no ReconcileFunc")

// Reconcile asks the kind's ReconcileFunc about each unknown row of a
// batch and settles what it answers: a result id is succeeded, a
// Permanent error failed; any other error leaves the row unknown.
func (e *Engine) Reconcile(ctx context.Context, tenant string, id int64) (ReconcileStats, error) {
	var st ReconcileStats
	b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: id})
	if err != nil {
		return st, err
	}
	k, err := e.registry.lookup(b.Kind)
	if err != nil {
		return st, err
	}
	m, err := k.mapHeader(b.Header, b.Conventions)
	if err != nil {
		return st, fmt.Errorf("batch %d: %w", id, err)
	}
	var after int64
	for {
		page, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: tenant, BatchID: id, State: rows.StateUnknown, AfterRowNo: after, Limit: 500})
		if err != nil {
			return st, err
		}
		for _, r := range page {
			info := RowInfo{TenantID: tenant, BatchID: id, RowNo: r.RowNo, Attempt: r.Attempts,
				EffectKey: k.effectRefs(tenant, id, m, []driver.LeasedRow{{RowNo: r.RowNo, Values: r.Values}}, false)[0].Key}
			rid, rerr, ok := k.reconcile(ContextWithRow(ctx, info), m, r.RowNo, r.Values)
			if !ok {
				return st, fmt.Errorf("batch %d (%s): %w", id, b.Kind, ErrNoReconcile)
			}
			p := driver.RowSettleParams{TenantID: tenant, BatchID: id, RowNo: r.RowNo, Actor: "reconcile"}
			switch {
			case rerr == nil:
				p.State, p.ResultID, p.Reason = rows.StateSucceeded, rid, "the kind's reconciliation found the effect"
				st.Succeeded++
			case IsPermanent(rerr):
				p.State, p.Reason = rows.StateFailed, rerr.Error()
				st.Failed++
			default:
				st.Left++
				continue
			}
			if err := e.store.RowSettle(ctx, p); err != nil {
				return st, err
			}
		}
		if len(page) < 500 {
			return st, nil
		}
		after = page[len(page)-1].RowNo
	}
}
