package batch

import (
	"context"
	"fmt"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// The engine is the front door for reading as for writing: a front end
// (the HTTP service, the CLI, a program embedding Rowfate) reads batches,
// rows, events and history here, never from the store below. Every read
// filters by tenant; an empty TenantID is DefaultTenant. Errors are the
// store's, which name what was read ("get batch 7: not found"); match them
// with errors.Is (ErrNotFound, ErrCursorExpired, ...).

// BatchParams name one batch of a tenant.
type BatchParams struct {
	TenantID string
	ID       int64
}

// Batch returns a batch with its totals; ErrNotFound when the tenant has
// no such batch.
func (e *Engine) Batch(ctx context.Context, p BatchParams) (*batchtype.Batch, error) {
	return e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: tenantOr(p.TenantID), ID: p.ID})
}

// BatchesParams page through a tenant's batches, newest first.
type BatchesParams struct {
	TenantID string
	// BeforeID pages backwards: batches with id < BeforeID; 0 starts
	// from the newest.
	BeforeID int64
	// Limit caps the page. Defaults to 20.
	Limit int
	// Status and Kind filter; empty is any.
	Status batchtype.Status
	Kind   string
	// NeedsAttention keeps the batches a person has to look at: paused,
	// or with invalid, failed, dead or unknown rows.
	NeedsAttention bool
}

// Batches returns one page of a tenant's batches, newest first.
func (e *Engine) Batches(ctx context.Context, p BatchesParams) ([]*batchtype.Batch, error) {
	return e.store.BatchList(ctx, driver.BatchListParams{TenantID: tenantOr(p.TenantID), BeforeID: p.BeforeID, Limit: p.Limit, Status: p.Status, Kind: p.Kind,
		NeedsAttention: p.NeedsAttention})
}

// BatchByKeyParams name a batch by the idempotency key it was created
// with.
type BatchByKeyParams struct {
	TenantID       string
	IdempotencyKey string
}

// BatchByKey returns the batch a tenant created with an idempotency key;
// ErrNotFound when there is none.
func (e *Engine) BatchByKey(ctx context.Context, p BatchByKeyParams) (*batchtype.Batch, error) {
	return e.store.BatchFind(ctx, driver.BatchFindParams{TenantID: tenantOr(p.TenantID), IdempotencyKey: p.IdempotencyKey})
}

// RowsParams page through a batch's rows in row order.
type RowsParams struct {
	TenantID string
	BatchID  int64
	// State filters by state; empty is every state. Filter.States, when
	// set, is used instead.
	State rows.State
	// Filter selects rows by state, by error and by their cells (Where).
	Filter RowFilter
	// AfterRowNo pages: rows with row_no > AfterRowNo.
	AfterRowNo int64
	// Limit caps the page. Defaults to 100.
	Limit int
}

// Rows returns one page of a batch's rows, each with its state, attempts,
// errors and cells.
//
// A Filter.Where is checked against the batch's header first: a column
// its file does not have, or an expression that cannot be read, is
// ErrInvalidRequest with the *where.Error; over a batch whose values
// were purged it is ErrValuesPurged.
func (e *Engine) Rows(ctx context.Context, p RowsParams) ([]batchtype.Row, error) {
	p.TenantID = tenantOr(p.TenantID)
	if p.Filter.Where != "" {
		b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: p.BatchID})
		if err != nil {
			return nil, fmt.Errorf("rows of batch %d: %w", p.BatchID, err)
		}
		if err := checkWhere(b, p.Filter); err != nil {
			return nil, fmt.Errorf("rows of batch %d: %w", p.BatchID, err)
		}
	}
	return e.store.RowsList(ctx, driver.RowsListParams{TenantID: p.TenantID, BatchID: p.BatchID, State: p.State, Filter: p.Filter, AfterRowNo: p.AfterRowNo, Limit: p.Limit})
}

// RowParams name one row of a batch.
type RowParams struct {
	TenantID string
	BatchID  int64
	RowNo    int64
}

// Row returns one row; ErrNotFound when the batch has no such row.
func (e *Engine) Row(ctx context.Context, p RowParams) (*batchtype.Row, error) {
	rs, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: tenantOr(p.TenantID), BatchID: p.BatchID, AfterRowNo: p.RowNo - 1, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 || rs[0].RowNo != p.RowNo {
		return nil, fmt.Errorf("row %d of batch %d: %w", p.RowNo, p.BatchID, ErrNotFound)
	}
	return &rs[0], nil
}

// EventsParams page through a batch's event log.
type EventsParams struct {
	TenantID string
	BatchID  int64
	// AfterSeq is the cursor: events with seq > AfterSeq; 0 reads the log
	// from its start.
	AfterSeq int64
	// Limit caps the page. Defaults to 500.
	Limit int
}

// Events returns one page of a batch's events in order. ErrCursorExpired
// when events after the cursor were trimmed, ErrCursorAhead when the
// cursor is beyond the newest.
func (e *Engine) Events(ctx context.Context, p EventsParams) ([]batchtype.Event, error) {
	return e.store.EventsList(ctx, driver.EventsListParams{TenantID: tenantOr(p.TenantID), BatchID: p.BatchID, AfterSeq: p.AfterSeq, Limit: p.Limit})
}

// HistoryParams page through a batch's history.
type HistoryParams struct {
	TenantID string
	BatchID  int64
	// AfterID pages: entries with id > AfterID.
	AfterID int64
	// Limit caps the page. Defaults to 100.
	Limit int
}

// History returns one page of a batch's re-runs, edits, skips and
// settlements, oldest first.
func (e *Engine) History(ctx context.Context, p HistoryParams) ([]batchtype.HistoryEntry, error) {
	return e.store.HistoryList(ctx, driver.HistoryListParams{TenantID: tenantOr(p.TenantID), BatchID: p.BatchID, AfterID: p.AfterID, Limit: p.Limit})
}

// SchemaStatus says where the database's schema stands against this
// build: a service is ready only when it is current.
func (e *Engine) SchemaStatus(ctx context.Context) (batchtype.SchemaStatus, error) {
	return e.store.SchemaStatus(ctx)
}

// tenantOr is tenant, or DefaultTenant when it is empty.
func tenantOr(tenant string) string {
	if tenant == "" {
		return DefaultTenant
	}
	return tenant
}
