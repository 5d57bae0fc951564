package batch

import (
	"context"
	"fmt"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
)

// The rows' lifecycle: a row's values (the cells as read) are customer
// data, dropped by a retention policy or a purge command once its batch
// has ended; its outcome, its errors and the batch's counts stay. A purged
// batch says so (Batch.ValuesPurgedAt, Row.ValuesPurged), and whatever
// needs the values — a re-run, a retry, an edit, the error report —
// refuses it with a *ValuesPurgedError.

// ErrValuesPurged: the batch's row values were purged; the error is a
// *ValuesPurgedError naming the batch, the date and who purged them.
var ErrValuesPurged = batchtype.ErrValuesPurged

// ValuesPurgedError says which batch's values were purged, when and by
// what (batchtype.PurgedByPolicy or PurgedByCommand).
type ValuesPurgedError = batchtype.ValuesPurgedError

// ErrBatchRunning: a purge named a batch that is running or still
// ingesting; its values are purged once it has finished or been cancelled.
var ErrBatchRunning = driver.ErrBatchRunning

// ErrNoRetention: the engine's store keeps no retention policies. Both
// stores of this module keep them; a store of one's own may not.
var ErrNoRetention = fmt.Errorf("the store keeps no retention policies: %w", ErrNoService)

func (e *Engine) retention() (driver.RetentionStore, error) {
	rs, ok := e.store.(driver.RetentionStore)
	if !ok {
		return nil, ErrNoRetention
	}
	return rs, nil
}

// RetentionSetParams set a tenant's retention policy for a kind.
type RetentionSetParams struct {
	TenantID string
	// Kind is the kind the policy is for; "" for every kind of the tenant
	// without a policy of its own.
	Kind string
	// ValuesDays is how many days after a batch finished or was cancelled
	// its rows' values are dropped; at least 1.
	ValuesDays int
}

// RetentionSet creates or replaces a tenant's retention policy for a kind.
// The service applies it (Purge with Policy) on its retention sweep.
func (e *Engine) RetentionSet(ctx context.Context, p RetentionSetParams) (*batchtype.RetentionPolicy, error) {
	rs, err := e.retention()
	if err != nil {
		return nil, err
	}
	if p.ValuesDays < 1 {
		return nil, fmt.Errorf("retention of kind %q: %w: values days must be at least 1, not %d", p.Kind, ErrInvalidRequest, p.ValuesDays)
	}
	return rs.RetentionSet(ctx, driver.RetentionSetParams{TenantID: tenantOr(p.TenantID), Kind: p.Kind, ValuesDays: p.ValuesDays})
}

// Retention lists a tenant's retention policies by kind ("" first: the
// tenant's policy for every other kind).
func (e *Engine) Retention(ctx context.Context, tenantID string) ([]batchtype.RetentionPolicy, error) {
	rs, err := e.retention()
	if err != nil {
		return nil, err
	}
	return rs.RetentionList(ctx, tenantOr(tenantID))
}

// RetentionRemove removes a tenant's retention policy for a kind;
// ErrNotFound when it has none.
func (e *Engine) RetentionRemove(ctx context.Context, tenantID, kind string) error {
	rs, err := e.retention()
	if err != nil {
		return err
	}
	return rs.RetentionRemove(ctx, tenantOr(tenantID), kind)
}

// PurgeParams say which batches lose their rows' values. One of BatchID,
// OlderThan and Policy is required.
type PurgeParams struct {
	// TenantID is the tenant whose batches are purged. AllTenants, for
	// the service's sweep, purges every tenant's batches past their
	// policies instead.
	TenantID   string
	AllTenants bool
	// BatchID purges one batch; a running one is ErrBatchRunning.
	BatchID int64
	// OlderThan purges the batches that finished or were cancelled
	// longer ago than this.
	OlderThan time.Duration
	// Policy purges the batches past their tenant's and kind's retention
	// policy.
	Policy bool
	// Actor is recorded in each batch's history. Defaults to "command",
	// or "policy" for a purge by policy alone.
	Actor string
	// DryRun returns what would be purged, changing nothing.
	DryRun bool
	// Limit caps the batches purged by age or policy in one call: call
	// again until it returns fewer. Defaults to 100.
	Limit int
}

// Purge drops the rows' values of the batches the params select, each
// batch in a transaction of its own, with an entry in its history
// (action "purge"). Running batches are never purged: named, ErrBatchRunning;
// selected by age or policy, they are left for a later sweep. A batch
// purged before comes back with Already set, unchanged.
func (e *Engine) Purge(ctx context.Context, p PurgeParams) ([]batchtype.Purge, error) {
	rs, err := e.retention()
	if err != nil {
		return nil, err
	}
	if p.BatchID == 0 && p.OlderThan <= 0 && !p.Policy {
		return nil, fmt.Errorf("purge: %w: name a batch, an age or the policies", ErrInvalidRequest)
	}
	if p.BatchID != 0 && p.AllTenants {
		return nil, fmt.Errorf("purge batch %d: %w: a batch is purged for its tenant", p.BatchID, ErrInvalidRequest)
	}
	tenant := tenantOr(p.TenantID)
	if p.AllTenants {
		tenant = ""
	}
	by := batchtype.PurgedByCommand
	if p.Policy && p.BatchID == 0 && p.OlderThan <= 0 {
		by = batchtype.PurgedByPolicy
	}
	out, err := rs.ValuesPurge(ctx, driver.ValuesPurgeParams{TenantID: tenant, BatchID: p.BatchID, OlderThan: p.OlderThan,
		Policy: p.Policy, By: by, Actor: p.Actor, DryRun: p.DryRun, Limit: p.Limit})
	if err != nil {
		return out, fmt.Errorf("purge: %w", err)
	}
	return out, nil
}
