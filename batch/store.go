package batch

import (
	"errors"

	"github.com/rowfate/rowfate/batch/driver"
)

// The store seam lives in package driver, so that the stores compile
// without the engine; these names are the engine's view of it.
type (
	// Store is the durable truth of batches and rows; see driver.Store.
	Store = driver.Store
	// KindStore is driver.KindStore: stored kind definitions, versioned.
	KindStore = driver.KindStore
	// KindPutParams are the parameters of KindStore.KindPut.
	KindPutParams = driver.KindPutParams
	// IngestRow is a validated row handed to the store at ingest.
	IngestRow = driver.IngestRow
	// IngestSummary is known once every row has been read.
	IngestSummary = driver.IngestSummary
	// BatchIngestParams are the parameters of Store.BatchIngest.
	BatchIngestParams = driver.BatchIngestParams
	// DuplicateKey is driver.DuplicateKey.
	DuplicateKey = driver.DuplicateKey
	// BatchGetParams are the parameters of Store.BatchGet.
	BatchGetParams = driver.BatchGetParams
	// BatchFindParams are the parameters of Store.BatchFind.
	BatchFindParams = driver.BatchFindParams
	// BatchListParams are the parameters of Store.BatchList.
	BatchListParams = driver.BatchListParams
	// ChunkClaimParams are the parameters of Store.ChunkClaim.
	ChunkClaimParams = driver.ChunkClaimParams
	// Lease is a claimed chunk: its fencing token and due rows.
	Lease = driver.Lease
	// LeasedRow is a row handed to a worker.
	LeasedRow = driver.LeasedRow
	// ChunkDue is an open chunk no worker can claim yet.
	ChunkDue = driver.ChunkDue
	// ChunkNextDueParams are the parameters of Store.ChunkNextDue.
	ChunkNextDueParams = driver.ChunkNextDueParams
	// LeaseRenewParams are the parameters of Store.LeaseRenew.
	LeaseRenewParams = driver.LeaseRenewParams
	// RowOutcome is what the engine decided for one processed row.
	RowOutcome = driver.RowOutcome
	// ChunkFlushParams are the parameters of Store.ChunkFlush.
	ChunkFlushParams = driver.ChunkFlushParams
	// FlushResult reports the batch after a flush.
	FlushResult = driver.FlushResult
	// RowsListParams are the parameters of Store.RowsList.
	RowsListParams = driver.RowsListParams
	// RowsCountParams are the parameters of Store.RowsCount.
	RowsCountParams = driver.RowsCountParams
	// EffectRef is one row's effect to claim.
	EffectRef = driver.EffectRef
	// EffectsClaimParams are the parameters of Store.EffectsClaim.
	EffectsClaimParams = driver.EffectsClaimParams
	// EffectClaim is what claiming one row's effect key found.
	EffectClaim = driver.EffectClaim
	// BatchControlParams name a batch for cancel, pause and resume.
	BatchControlParams = driver.BatchControlParams
	// PauseParams pause or resume a kind or a tenant.
	PauseParams = driver.PauseParams
	// RowsRetryParams are the parameters of Store.RowsRetry.
	RowsRetryParams = driver.RowsRetryParams
	// RowSettleParams are the parameters of Store.RowSettle.
	RowSettleParams = driver.RowSettleParams
	// EventsListParams are the parameters of Store.EventsList.
	EventsListParams = driver.EventsListParams
	// EventsTrimParams are the parameters of Store.EventsTrim.
	EventsTrimParams = driver.EventsTrimParams
	// BatchRerunParams are the parameters of Store.BatchRerun.
	BatchRerunParams = driver.BatchRerunParams
	// RowReviewParams are the parameters of Store.RowReview.
	RowReviewParams = driver.RowReviewParams
	// HistoryListParams are the parameters of Store.HistoryList.
	HistoryListParams = driver.HistoryListParams
	// EventNotifier is a store that tells of events as they commit.
	EventNotifier = driver.EventNotifier
)

// Effect key statuses (see driver.EffectStatus).
const (
	EffectNew     = driver.EffectNew
	EffectMine    = driver.EffectMine
	EffectDone    = driver.EffectDone
	EffectPending = driver.EffectPending
	EffectReused  = driver.EffectReused
)

// Sentinel errors; match with errors.Is.
var (
	// ErrNotFound: no such batch for this tenant.
	ErrNotFound = driver.ErrNotFound
	// ErrLeaseLost: the chunk's lease moved on; nothing was written.
	ErrLeaseLost = driver.ErrLeaseLost
	// ErrNoWork: no chunk is claimable right now.
	ErrNoWork = driver.ErrNoWork
	// ErrConflict: a write violates a uniqueness rule.
	ErrConflict = driver.ErrConflict
	// ErrSchemaNewer: the database is ahead of this build.
	ErrSchemaNewer = driver.ErrSchemaNewer
	// ErrBatchStopped: the lease's batch was cancelled or paused.
	ErrBatchStopped = driver.ErrBatchStopped
	// ErrTransient: a database error a retry may clear.
	ErrTransient = driver.ErrTransient
	// ErrCursorExpired: events after the cursor were trimmed.
	ErrCursorExpired = driver.ErrCursorExpired
	// ErrCursorAhead: the cursor is beyond the batch's newest event.
	ErrCursorAhead = driver.ErrCursorAhead
	// ErrUnknownKind: the kind is not registered.
	ErrUnknownKind = errors.New("unknown kind")
	// ErrKeyReused: an idempotency key came back with other content.
	ErrKeyReused = errors.New("idempotency key reused")
)
