package batch

import (
	"errors"

	"github.com/rowfate/rowfate/batch/driver"
)

// Store is the durable truth of batches and rows that an engine is built
// on (Config.Store): the seam package driver defines, so that the stores
// compile without the engine. A front end constructs one (sqlite.Open,
// postgres.New) and hands it to NewEngine; everything else it does goes
// through the engine.
type Store = driver.Store

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
	// ErrPastBound: a batch's failures pass its bound (Batch.MaxFailed),
	// so it is not resumed until the bound is raised (Engine.Limit).
	ErrPastBound = driver.ErrPastBound
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
