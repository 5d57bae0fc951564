package driver

import (
	"context"
	"errors"
	"time"

	"github.com/rowfate/rowfate/batchtype"
)

// RetentionStore keeps the retention policies of the rows' values and
// drops the values they, or a command, say. Both stores implement it;
// store/storetest checks them.
type RetentionStore interface {
	// RetentionSet creates or replaces a tenant's policy for a kind ("":
	// every kind without one of its own).
	RetentionSet(ctx context.Context, params RetentionSetParams) (*batchtype.RetentionPolicy, error)
	// RetentionList lists a tenant's policies by kind.
	RetentionList(ctx context.Context, tenantID string) ([]batchtype.RetentionPolicy, error)
	// RetentionRemove removes a tenant's policy for a kind; ErrNotFound
	// when it has none.
	RetentionRemove(ctx context.Context, tenantID, kind string) error
	// ValuesPurge drops the values of the batches the params select, each
	// in a transaction of its own, and records each purge in the batch's
	// history. A running batch is never purged: named, it is
	// ErrBatchRunning; selected by age or policy, it is not a candidate.
	ValuesPurge(ctx context.Context, params ValuesPurgeParams) ([]batchtype.Purge, error)
}

// ErrBatchRunning: the batch is running (or still ingesting): its rows are
// being worked and need their values, so they are not purged.
var ErrBatchRunning = errors.New("the batch is running")

// RetentionSetParams are the parameters of RetentionStore.RetentionSet.
type RetentionSetParams struct {
	TenantID string
	// Kind is the kind the policy is for; "" for every kind of the tenant
	// without a policy of its own.
	Kind string
	// ValuesDays is how many days after it ended a batch keeps its rows'
	// values; at least 1.
	ValuesDays int
}

// ValuesPurgeParams are the parameters of RetentionStore.ValuesPurge. One
// of BatchID, OlderThan and Policy selects the batches.
type ValuesPurgeParams struct {
	// TenantID is the tenant whose batches are purged; "" for every
	// tenant (the service's sweep of the policies; not with BatchID).
	TenantID string
	// BatchID names one batch.
	BatchID int64
	// OlderThan selects the batches that ended longer ago than this
	// (database clock).
	OlderThan time.Duration
	// Policy selects the batches past their tenant's and kind's policy.
	Policy bool
	// By is recorded with the purge: batchtype.PurgedByPolicy or
	// PurgedByCommand. Defaults to PurgedByCommand.
	By string
	// Actor is recorded in the batch's history. Defaults to By.
	Actor string
	// DryRun returns what would be purged, changing nothing.
	DryRun bool
	// Limit caps the batches purged by age or policy in one call.
	// Defaults to 100.
	Limit int
}
