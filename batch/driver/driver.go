// Package driver is the seam between the batch engine and its stores, in
// the way database/sql/driver is the seam of database/sql: the Store
// interface, the parameters of its methods and the sentinel errors it
// speaks; the records it returns are package batchtype's. A store
// implements it (store/sqlite, store/postgres) without compiling the
// engine, its validator or the file formats. Front ends never see it: they
// call the engine (package batch).
//
// ARCHITECTURE.md at the repository root describes the data model behind it.
package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// Sentinel errors returned by stores and the engine; match with errors.Is.
var (
	// ErrNotFound: no such batch for this tenant.
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost: the chunk's lease token no longer matches; another
	// worker owns the chunk, and nothing was written.
	ErrLeaseLost = errors.New("lease lost")
	// ErrNoWork: no chunk is claimable right now.
	ErrNoWork = errors.New("no work")
	// ErrConflict: a write violates a uniqueness rule.
	ErrConflict = errors.New("conflict")
	// ErrPastBound: a batch's failures pass its failure bound
	// (Batch.MaxFailed): it is not resumed until the bound is raised.
	ErrPastBound = errors.New("failures past the batch's bound")
)

// IngestRow is a row as the engine hands it to the store at ingest: already
// validated, with its outcome.
type IngestRow struct {
	RowNo   int64
	ChunkNo int64
	State   rows.State // valid or invalid; an export's: succeeded (written) or failed
	Values  []string
	Errors  []rows.FieldError
	// KeyDigest is the digest of a valid row's natural key, or nil. The
	// store marks a row whose digest an earlier row of the batch has as
	// invalid (BatchIngestParams.DuplicateKey).
	KeyDigest []byte
	// ResultID, Attempts and RetryDelay are the outcome of a row worked
	// while it was ingested (BatchIngestParams.WorkFunc): its result id
	// when succeeded, the attempts it used, and for a row to retry how
	// long after now it is due. A row not worked has none of them.
	ResultID   string
	Attempts   int
	RetryDelay time.Duration
}

// IngestSummary is known only once every row has been read.
type IngestSummary struct {
	SourceDigest string
	SkippedEmpty int64
	// ErrorCounts counts the invalid rows' field errors by column and
	// code; stored with the batch.
	ErrorCounts []rows.ErrorCount
	// Width is the most cells any row had.
	Width int
	// Warnings, learnt while the rows were read, join the batch's.
	Warnings []batchtype.Warning
}

// BatchIngestParams are the parameters of Store.BatchIngest.
type BatchIngestParams struct {
	TenantID   string
	Kind       string
	SourceName string
	Header     []string
	// Warnings are stored with the batch (unknown columns, say) and come
	// back on every BatchGet.
	Warnings []batchtype.Warning
	// Conventions are stored with the batch and handed to every lease.
	Conventions rows.Conventions
	// IdempotencyKey, when set, is unique per tenant: a second batch with
	// it is ErrConflict.
	IdempotencyKey string
	// OptionsDigest is stored with the batch (Batch.OptionsDigest).
	OptionsDigest string
	// Export is stored with the batch (Batch.Export).
	Export bool
	// MaxAttempts is the kind's attempt limit: a claim moves a row that has
	// used them all to dead. Defaults to 5.
	MaxAttempts int
	// MaxFailed is stored with the batch (Batch.MaxFailed): the flush whose
	// failures pass it pauses the batch.
	MaxFailed batchtype.Threshold
	// SourceDigest, when known before the rows are read (the importer's
	// first pass), is stored with the batch row as it is created, so that
	// an import of the same file meanwhile sees its content is the same;
	// IngestSummary.SourceDigest sets it at the end either way.
	SourceDigest string
	// Rows yields the rows in order. A non-nil error aborts the ingest: the
	// store rolls back and nothing of the batch is left.
	Rows iter.Seq2[IngestRow, error]
	// SummaryFunc is called after Rows is drained.
	SummaryFunc func() IngestSummary
	// Recalc, for a recalculation, are its source's parameters, and for
	// a filtered export its filter: stored with the batch (Batch.Recalc).
	Recalc map[string]string
	// KindVersion is stored with the batch (Batch.KindVersion).
	KindVersion int64
	// KindDefinition is stored with the batch (Batch.KindDefinition).
	KindDefinition string
	// DuplicateKey names the natural key in the error of a row whose
	// KeyDigest an earlier row has. The store finds those rows with one
	// statement before the batch is accepted, so an importer's memory
	// does not grow with the file; it adds them to the error counts.
	DuplicateKey DuplicateKey
	// AcceptFunc, when set, is called once every row is written and the
	// duplicates are found, with how many rows were made invalid as
	// duplicates, before the batch is accepted: an error fails the ingest
	// (nothing is kept), as an error of Rows does.
	AcceptFunc func(duplicates int64) error
	// CreatedFunc, when set, is called with the batch's id once its row
	// exists, before a row is written. A store that writes a file in parts
	// (SQLite), or beside the transaction that works and accepts it
	// (PostgreSQL), commits the row first, status ingesting, and then
	// calls ShownFunc: from then on other processes see the batch and its
	// ingest_progress events (IngestProgress) while the file is still
	// read, a second import of the file answers that batch, and a failed
	// ingest removes it (one whose process died is removed once its lease
	// ran out). A store that writes the whole ingest in one transaction
	// (SQLite, with a WorkFunc) calls it inside that transaction: the
	// batch, under its idempotency key, exists for others only once the
	// ingest commits; IngestProgress finds no batch then.
	CreatedFunc func(id int64)
	// ShownFunc, when set, is called once the batch row is committed,
	// before a row is written (see CreatedFunc).
	ShownFunc func()
	// WorkFunc, when set, works rows while they are ingested, so that
	// each is written once, with its outcome: the store calls it with
	// the rows in order, in groups of whole chunks (ChunkNo), inside the
	// ingest's transaction and before it writes them, and it sets the
	// outcome of the rows it worked in place (State, ResultID, Errors,
	// Attempts, RetryDelay). Its writes commit with the rows or not at
	// all; it must leave the transaction usable for the rows (a
	// processor's failure rolled back to a savepoint of its own), and an
	// error fails the ingest. A row it leaves valid is worked later by
	// the workers. Once every row is written and the duplicates found,
	// the store hands it again the rows still valid whose digest is
	// among the screen's candidates (DuplicateKey.Screen), with
	// KeyDigest nil: they repeat no earlier row, and may be worked. A store that writes an ingest in parts (SQLite)
	// writes one with a WorkFunc in one transaction; one that writes the
	// rows beside (PostgreSQL) commits them before the transaction that
	// worked them, which accepts the batch: either way a failed or
	// crashed ingest leaves none of its effects behind.
	WorkFunc func(ctx context.Context, tx Tx, batchID int64, rows []IngestRow) error
}

// IngestProgressParams are the parameters of Store.IngestProgress.
type IngestProgressParams struct {
	TenantID string
	BatchID  int64
	Progress batchtype.IngestProgress
}

// DuplicateKey is how a duplicate_key row error names the key: the column
// as the file spells it, the struct field, and the key's name in the
// message ("same email as row 12").
type DuplicateKey struct {
	Column string
	Field  string
	Name   string
	// Screen, when set, is called once every row is read. When ok, the
	// importer screened the rows' digests in order (a Bloom filter) and
	// found that only rows whose digest is among candidates can repeat
	// an earlier row's: the store looks only at those digests, and at
	// none when there are none, instead of sorting every digest of the
	// batch; the suspects are the rows a WorkFunc held back.
	Screen func() (s Screened, ok bool)
}

// Screened is what an importer's screen of key digests found
// (DuplicateKey.Screen).
type Screened struct {
	// Candidates are the digests the store must check.
	Candidates [][]byte
	// Suspects are the numbers of the rows whose digest may repeat an
	// earlier row's, ascending.
	Suspects []int64
	// Held, when not nil, are the suspects' rows (one each, in order),
	// held unworked by the importer so that the store need not read them.
	Held []IngestRow
}

// BatchGetParams are the parameters of Store.BatchGet.
type BatchGetParams struct {
	TenantID string
	ID       int64
}

// BatchFindParams are the parameters of Store.BatchFind: a batch by its
// idempotency key, or else the newest of a kind with a source digest.
type BatchFindParams struct {
	TenantID       string
	IdempotencyKey string
	Kind           string
	SourceDigest   string
}

// ChunkClaimParams are the parameters of Store.ChunkClaim.
type ChunkClaimParams struct {
	// Owner identifies the worker instance (credential name plus a per-boot
	// id), for diagnostics; the fence is the token.
	Owner string
	// TenantIDs limits the claim to these tenants; nil means any.
	TenantIDs []string
	// BatchID limits the claim to one batch; 0 means any.
	BatchID int64
	// LeaseDuration is how long the lease lasts without renewal, measured on
	// the database's clock.
	LeaseDuration time.Duration
	// Kinds limits the claim to batches of these kinds (the kinds this
	// worker can process); nil means any. A batch of another kind is left
	// to the workers that know it.
	Kinds []string
	// DeferKinds are kinds whose processors write in the flush's
	// transaction (transactional kinds). A claim of such a chunk whose last
	// lease ended in a flush leaves its rows as they are — no processing
	// pass, no recount — and the flush moves them to their outcome and
	// counts the attempt (Lease.Deferred): one write per row instead of
	// two. A chunk whose last lease expired (its worker died or stalled)
	// is claimed the usual way, attempts counted at the claim, so a row
	// that crashes its worker still ends dead.
	DeferKinds []string
}

// Lease is a claimed chunk: the fencing token and the rows that are due.
type Lease struct {
	BatchID  int64
	ChunkNo  int64
	TenantID string
	Kind     string
	Header   []string
	// Conventions are the batch's, for binding its rows again.
	Conventions rows.Conventions
	// Cancelled is a lease on a chunk of a cancelled batch, claimed to
	// sweep rows a dead worker left processing: flush it with no outcomes
	// and they become cancelled.
	Cancelled bool
	// Deferred: the rows were not marked processing (ChunkClaimParams.
	// DeferKinds); the flush must say so (ChunkFlushParams.Deferred).
	Deferred bool
	Owner    string
	// Token is the fencing token: it grows with every claim of the chunk,
	// and every write under the lease is a compare-and-set on it.
	Token int64
	Rows  []LeasedRow
}

// LeasedRow is a row handed to a worker, marked processing unless the
// lease is Deferred.
type LeasedRow struct {
	RowNo    int64
	Values   []string
	Attempts int // including this one
}

// ChunkNextDueParams are the parameters of Store.ChunkNextDue.
type ChunkNextDueParams struct {
	// TenantIDs limits the search to these tenants; nil means any.
	TenantIDs []string
	// Kinds limits the search to batches of these kinds; nil means any.
	Kinds []string
	// BatchID limits the search to one batch; 0 means any.
	BatchID int64
}

// LeaseRenewParams are the parameters of Store.LeaseRenew.
type LeaseRenewParams struct {
	TenantID      string
	BatchID       int64
	ChunkNo       int64
	Token         int64
	LeaseDuration time.Duration
}

// RowOutcome is what the engine decided for one processed row.
type RowOutcome struct {
	RowNo    int64
	State    rows.State // succeeded, failed, retrying, unknown or dead
	ResultID string
	Error    *rows.FieldError
	// RetryDelay is how long from now (database clock) a retrying row waits.
	RetryDelay time.Duration
	// EffectKey, when set, is the row's claimed effect key, which this
	// lease ran: the flush records the outcome on it (done with the result
	// id, failed, unknown; a retrying row keeps its claim, marked
	// unanswered unless NotApplied).
	EffectKey string
	// NotApplied, with EffectKey on a retrying row, says the run's error
	// was marked batch.NotApplied: the call had no effect. Without it, a
	// cancel that ends the row's retries makes it unknown, not cancelled.
	NotApplied bool
}

// ChunkFlushParams are the parameters of Store.ChunkFlush.
type ChunkFlushParams struct {
	TenantID string
	BatchID  int64
	ChunkNo  int64
	Token    int64
	Outcomes []RowOutcome
	// Deferred is Lease.Deferred: the outcomes apply to rows still due
	// (valid or retrying), and each counts an attempt.
	Deferred bool
	// EffectFunc, when set, runs inside the flush's transaction after the
	// fencing token is checked, and its outcomes join Outcomes: the writes
	// of a transactional processor commit with the outcomes or not at all.
	// An error from it rolls the whole flush back and is returned. It is
	// not run when the batch was cancelled.
	EffectFunc func(ctx context.Context, tx Tx) ([]RowOutcome, error)
	// Unworked are rows this lease marked processing and did not work
	// (shutdown, a pause): they go back to their state before the claim
	// and get back the attempt the claim counted.
	Unworked []int64
	// InFlight are rows whose processor was called and cut off when the
	// batch stopped: the effect may have happened. They are given back as
	// Unworked rows are (worked again, under the same effect key), unless
	// the batch was cancelled: then they are unknown, to be reconciled,
	// never cancelled, which would say the effect did not happen.
	InFlight []int64
	// Released are effect keys this lease claimed first (EffectNew) for
	// Unworked rows it never ran: their claims are dropped, so nothing
	// takes those rows for ones whose effect may have happened. A key a
	// lease found already claimed (EffectMine) is never released: an
	// earlier worker may have run it.
	Released []string
	// Release ends the lease after the flush, so the chunk's remaining due
	// rows can be claimed again at once.
	Release bool
}

// FlushResult reports the batch after a flush.
type FlushResult struct {
	Counts   rows.Counts
	Finished bool
	EventSeq int64
	// Cancelled reports that the batch had been cancelled: the flush ran no
	// EffectFunc, and recorded its rows as cancelled (a succeeded one as
	// unknown: its effect may have happened after the cancel).
	Cancelled bool
}

// EffectRef is one row's effect to claim.
type EffectRef struct {
	RowNo int64
	Key   string
	// Digest is the SHA-256 of the row's payload: the same key with
	// another payload is a key reused.
	Digest string
}

// EffectsClaimParams are the parameters of Store.EffectsClaim.
type EffectsClaimParams struct {
	TenantID string
	BatchID  int64
	ChunkNo  int64
	Token    int64
	Effects  []EffectRef
	// RunFor is how long a run of these keys may be under way at most
	// (the kind's timeout, and the grace its processor gives a call to
	// stop): until then after this claim, no other lease runs a key that
	// has not answered (Running). 0 sets no bound.
	RunFor time.Duration
}

// EffectStatus is what claiming an effect key found.
type EffectStatus string

// The statuses.
const (
	// EffectNew: the key was free and is now this row's; run the effect.
	EffectNew EffectStatus = "new"
	// EffectMine: the key is this row's from an earlier attempt, not done;
	// run the effect again (the downstream applies the key once).
	EffectMine EffectStatus = "mine"
	// EffectDone: the key's effect is done, with ResultID; do not run it.
	EffectDone EffectStatus = "done"
	// EffectPending: another row holds the key and has not finished; try
	// again later.
	EffectPending EffectStatus = "pending"
	// EffectReused: the key was claimed with another payload.
	EffectReused EffectStatus = "reused"
)

// EffectClaim is the result of claiming one row's effect key.
type EffectClaim struct {
	RowNo    int64
	Status   EffectStatus
	ResultID string
	// Holder is the batch and row that hold the key (for Pending, Reused
	// and Done by another row).
	HolderBatch int64
	HolderRow   int64
	// Running, with EffectPending, is a key of this very row whose last
	// run, under an earlier lease, never answered and may still be under
	// way (within its RunFor): the row waits for it to end rather than
	// run the effect a second time beside it.
	Running bool
	// Unanswered, with EffectMine, is a key of this very row that an
	// earlier lease ran without an answer recorded (its worker died or
	// lost its lease first), or that failed with an error to retry not
	// marked NotApplied: that run's effect may have happened, so a
	// failure of this run cannot make the row dead, only unknown.
	Unanswered bool
}

// BatchControlParams name a batch for cancel, pause and resume.
type BatchControlParams struct {
	TenantID string
	ID       int64
}

// PauseParams pause or resume a kind, or a whole tenant.
type PauseParams struct {
	TenantID string
	// Kind pauses one kind of the tenant; "" pauses the whole tenant.
	Kind   string
	Paused bool
}

// RowsRetryParams are the parameters of Store.RowsRetry.
type RowsRetryParams struct {
	TenantID string
	BatchID  int64
	// States are the states to retry: failed, dead (and unknown, for a
	// person who knows the effect did not happen).
	States []rows.State
	// Actor is recorded in the batch's history with the states and the
	// number of rows made due.
	Actor string
}

// RowSettleParams are the parameters of Store.RowSettle: a person, or a
// kind's reconciliation, settling an unknown row.
type RowSettleParams struct {
	TenantID string
	BatchID  int64
	RowNo    int64
	// State is succeeded, failed, or valid (to be worked again).
	State    rows.State
	ResultID string
	// Reason is recorded as the row's error when it failed, and in the
	// batch's history either way.
	Reason string
	// Actor is who settled the row (a person, or "reconcile" when the
	// kind's ReconcileFunc answered), for the batch's history.
	Actor string
}

// WorkerCreateParams are the parameters of Store.WorkerCreate.
type WorkerCreateParams struct {
	Name      string
	TokenHash string
	TenantIDs []string
}

// WorkerListParams are the parameters of Store.WorkerList.
type WorkerListParams struct {
	// TenantID, when set, keeps the credentials that may work that
	// tenant: its own and those of every tenant. "" lists them all.
	TenantID string
}

// WorkerRevokeParams are the parameters of Store.WorkerRevoke.
type WorkerRevokeParams struct {
	// Name is the credential's name, unique across tenants.
	Name string
}

// ErrBatchStopped is returned by LeaseRenew when the lease still holds
// but its batch was cancelled or paused: the worker stops, and its flush
// records what was done.
var ErrBatchStopped = errors.New("batch cancelled or paused")

// ErrTransient marks an error a retry may clear: a dropped connection, a
// server restart, a serialisation failure, a deadlock, a busy database.
// Stores wrap such errors with it; match with errors.Is.
var ErrTransient = errors.New("transient database error")

// RowsCountParams are the parameters of Store.RowsCount.
type RowsCountParams struct {
	TenantID string
	BatchID  int64
}

// Tx is a store's transaction as a processor writes in it (a
// TxProcessor): statements with $1, $2 placeholders, which both stores
// accept.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	Query(ctx context.Context, sql string, args ...any) (TxRows, error)
	QueryRow(ctx context.Context, sql string, args ...any) TxRow
	// Engine names the database, for the statements that differ.
	Engine() batchtype.Dialect
}

// TxRows is a result set of a Tx query.
type TxRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// TxRow is a single-row result of a Tx query.
type TxRow interface {
	Scan(dest ...any) error
}

// ErrSchemaNewer is returned by Migrate, and by a read-only open, when the
// database has migrations this build does not know: an older binary must
// not write to a schema it does not understand.
var ErrSchemaNewer = errors.New("database schema is newer than this build")

// Store is the durable truth of batches and rows. Every method that reads or
// writes rows filters by tenant. Implementations: store/sqlite,
// store/postgres; both pass store/storetest.
//
// A store checks nothing of the row state machine: the engine decides every
// transition (rows.Transition) before it asks the store to write it, so
// the rule lives in one place.
type Store interface {
	// Migrate brings the schema up to date, serialised against concurrent
	// migrators. It returns ErrSchemaNewer, changing nothing, when the
	// database is ahead of this build.
	Migrate(ctx context.Context) error
	// SchemaStatus reads the schema's version without changing anything,
	// for read-only callers that must not migrate.
	SchemaStatus(ctx context.Context) (batchtype.SchemaStatus, error)
	// BatchIngest creates a batch and writes all its rows with their
	// validation outcome, its chunks (counts from an aggregate over the rows)
	// and a first event, in one transaction.
	BatchIngest(ctx context.Context, params BatchIngestParams) (*batchtype.Batch, error)
	// IngestProgress appends an ingest_progress event, carrying what the
	// importer read so far, to a batch whose ingest has not committed, and
	// renews the ingest's lease. A batch that is no longer ingesting (its
	// ingest committed or failed), or is another tenant's, is ErrNotFound
	// and nothing is written: an event never follows the batch's started
	// event.
	IngestProgress(ctx context.Context, params IngestProgressParams) (*batchtype.Event, error)
	// IngestAbandoned removes the tenant's batch, with its rows, when its
	// ingest never ended and its lease ran out (its importer died), and
	// reports whether it did. An ingest that ends meanwhile is kept.
	IngestAbandoned(ctx context.Context, params BatchGetParams) (bool, error)
	// BatchGet returns a batch with its totals, or ErrNotFound.
	BatchGet(ctx context.Context, params BatchGetParams) (*batchtype.Batch, error)
	// BatchFind returns the tenant's batch with the idempotency key or,
	// without one, the newest of the kind with the source digest; or
	// ErrNotFound.
	BatchFind(ctx context.Context, params BatchFindParams) (*batchtype.Batch, error)
	// BatchList lists a tenant's batches, newest first, with totals.
	BatchList(ctx context.Context, params BatchListParams) ([]*batchtype.Batch, error)
	// ChunkClaim leases the oldest-served claimable chunk (due rows and no
	// live lease), marks its due rows processing and returns them. It
	// returns ErrNoWork when nothing is claimable.
	ChunkClaim(ctx context.Context, params ChunkClaimParams) (*Lease, error)
	// ChunkNextDue returns the open chunk of a running, unpaused batch in
	// scope that is due soonest, or ErrNoWork when no such chunk is left:
	// what a worker that found nothing to claim is waiting for.
	ChunkNextDue(ctx context.Context, params ChunkNextDueParams) (*batchtype.ChunkDue, error)
	// LeaseRenew extends a lease; ErrLeaseLost when the token is stale,
	// ErrBatchStopped when its batch was cancelled or paused.
	LeaseRenew(ctx context.Context, params LeaseRenewParams) error
	// LeaseCheck answers what LeaseRenew would, without writing:
	// ErrLeaseLost, ErrBatchStopped, or nil while the lease holds and its
	// batch may be worked. It is cheap enough to ask twice a second, so
	// that a worker learns of a cancel or a pause at once, not at its next
	// renewal. LeaseDuration is ignored.
	LeaseCheck(ctx context.Context, params LeaseRenewParams) error
	// ChunkFlush records outcomes under the lease: it locks the chunk row and
	// checks the token (ErrLeaseLost: nothing written), updates the rows,
	// overwrites the chunk's counts from its rows, appends an event and
	// finishes the batch when no row is open.
	ChunkFlush(ctx context.Context, params ChunkFlushParams) (*FlushResult, error)
	// EffectsClaim claims the effect keys of a leased chunk's rows, in one
	// transaction fenced by the token (ErrLeaseLost: nothing claimed),
	// and says for each row what it found.
	EffectsClaim(ctx context.Context, params EffectsClaimParams) ([]EffectClaim, error)
	// BatchCancel cancels a running batch for good: no new claims, open
	// rows not under a live lease become cancelled at once, the others
	// when their lease's flush comes (or expires). ErrNotFound for another
	// tenant's batch or an unknown id.
	BatchCancel(ctx context.Context, params BatchControlParams) (*batchtype.Batch, error)
	// BatchPause pauses (paused true) or resumes a batch. A batch whose
	// failures pass its bound (Batch.MaxFailed) is not resumed:
	// ErrPastBound.
	BatchPause(ctx context.Context, params BatchControlParams, paused bool) (*batchtype.Batch, error)
	// BatchLimit sets a batch's failure bound (Batch.MaxFailed; the zero
	// Threshold lifts it). A running batch whose failures pass the new
	// bound is paused in the same transaction, as a flush would.
	BatchLimit(ctx context.Context, params BatchControlParams, maxFailed batchtype.Threshold) (*batchtype.Batch, error)
	// Pause pauses or resumes a kind of a tenant, or the whole tenant.
	Pause(ctx context.Context, params PauseParams) error
	// Paused lists a tenant's paused kinds ("" for the whole tenant).
	Paused(ctx context.Context, tenantID string) ([]string, error)
	// RowsRetry makes a batch's rows in the given states due again, with
	// their attempts reset, and returns how many.
	RowsRetry(ctx context.Context, params RowsRetryParams) (int64, error)
	// RowSettle settles one unknown row.
	RowSettle(ctx context.Context, params RowSettleParams) error
	// KindsOpen lists the kinds of the running batches in scope.
	KindsOpen(ctx context.Context, tenantIDs []string) ([]string, error)
	// WorkerCreate stores a worker credential (its token's hash).
	WorkerCreate(ctx context.Context, params WorkerCreateParams) error
	// WorkerAuth returns the credential with that token hash, or
	// ErrNotFound.
	WorkerAuth(ctx context.Context, tokenHash string) (*batchtype.Worker, error)
	// WorkerList lists worker credentials by name, revoked ones too.
	WorkerList(ctx context.Context, params WorkerListParams) ([]batchtype.Worker, error)
	// WorkerRevoke revokes a worker credential for good: WorkerAuth no
	// longer finds it. Revoking it again keeps the first time; an unknown
	// name is ErrNotFound.
	WorkerRevoke(ctx context.Context, params WorkerRevokeParams) error
	// RowsList pages through a batch's rows in row order.
	RowsList(ctx context.Context, params RowsListParams) ([]batchtype.Row, error)
	// RowsCount counts a batch's rows by state with a fresh aggregate over
	// the rows, bypassing the chunk counters. It is the invariant's check.
	RowsCount(ctx context.Context, params RowsCountParams) (rows.Counts, error)
	// EventsList returns a batch's events after a cursor, in sequence
	// order: ErrNotFound for another tenant's batch or an unknown id,
	// ErrCursorExpired when events after the cursor were trimmed.
	EventsList(ctx context.Context, params EventsListParams) ([]batchtype.Event, error)
	// EventsTrim deletes old events and returns how many.
	EventsTrim(ctx context.Context, params EventsTrimParams) (int64, error)
	// BatchRerun writes a re-run in one transaction: the replaced rows,
	// the added ones, a recount of every chunk, the history entry and an
	// event; a cancelled batch runs again. ErrBatchBusy when rows are
	// processing or unknown, ErrConflict when a replaced row changed.
	BatchRerun(ctx context.Context, params BatchRerunParams) (*batchtype.Batch, error)
	// RowReview writes a reviewer's edit or skip of one row under its
	// chunk's lock (a worker may hold other rows of it), the chunk's
	// recount, the history entry and an event.
	RowReview(ctx context.Context, params RowReviewParams) error
	// HistoryList lists a batch's re-runs, edits and skips, oldest first.
	HistoryList(ctx context.Context, params HistoryListParams) ([]batchtype.HistoryEntry, error)
	// RowsBulk skips or retries every row a filter selects, or counts them.
	RowsBulk(ctx context.Context, params RowsBulkParams) (int64, error)
	// RowsEdit writes a bulk edit's rows, validated by the engine.
	RowsEdit(ctx context.Context, params RowsEditParams) (int64, error)
	// Close releases the store's resources.
	Close() error
}

// EventsListParams are the parameters of Store.EventsList.
type EventsListParams struct {
	TenantID string
	BatchID  int64
	// AfterSeq is the cursor: events with seq > AfterSeq. 0 lists the log
	// from its start.
	AfterSeq int64
	// Limit caps the page. Defaults to 500.
	Limit int
}

// ErrCursorExpired is returned by EventsList when events after the cursor
// were trimmed: the log can no longer be replayed from there, and the
// caller must read the batch afresh. The error is a *CursorExpiredError.
var ErrCursorExpired = errors.New("event cursor expired")

// ErrCursorAhead is returned by EventsList for a cursor beyond the batch's
// newest event: it was not read from this log.
var ErrCursorAhead = errors.New("event cursor is ahead of the batch's log")

// CursorExpiredError says where a batch's log stands when a cursor
// expired: what is left of it, so the reader can go on from there.
type CursorExpiredError struct {
	BatchID int64
	After   int64 // the cursor asked for
	// Oldest is the oldest event kept, 0 when none is.
	Oldest int64
	// Head is the batch's newest sequence number.
	Head int64
}

func (e *CursorExpiredError) Error() string {
	return fmt.Sprintf("events of batch %d after %d (oldest kept %d, newest %d): %v", e.BatchID, e.After, e.Oldest, e.Head, ErrCursorExpired)
}

// Unwrap makes the error match ErrCursorExpired.
func (e *CursorExpiredError) Unwrap() error { return ErrCursorExpired }

// EventsTrimParams are the parameters of Store.EventsTrim.
type EventsTrimParams struct {
	// OlderThan trims events older than this (database clock); 0 trims
	// none by age.
	OlderThan time.Duration
	// FinishedKeepLast trims every event of a finished or cancelled batch
	// but its last.
	FinishedKeepLast bool
}

// EventNotifier is a store that tells of events as they commit, across
// processes where it can (PostgreSQL's LISTEN/NOTIFY), within its own
// process otherwise (SQLite). Notifications are hints: a broadcaster
// reads the log itself, and polls as well.
type EventNotifier interface {
	// NotifyEvents calls f with the batch and sequence number of each
	// event committed, until ctx is done. A zero batch id means anything
	// may have changed (the notifications were interrupted). f must not
	// block.
	NotifyEvents(ctx context.Context, f func(batchID, seq int64)) error
}

// RerunRow is a row a re-run parsed again, with its new outcome.
type RerunRow struct {
	RowNo  int64
	State  rows.State // valid or invalid
	Values []string
	Errors []rows.FieldError
}

// BatchRerunParams are the parameters of Store.BatchRerun.
type BatchRerunParams struct {
	TenantID string
	BatchID  int64
	// Replace are stored rows parsed again: each must still be neither
	// protected (succeeded, skipped), reviewed, processing nor unknown, or
	// the re-run writes nothing and is ErrConflict.
	Replace []RerunRow
	// Add are new rows, numbered and chunked after the batch's own.
	Add []IngestRow
	// Header, when set, replaces the batch's header: the file had a
	// column of the kind the batch's header lacked, appended to it.
	Header []string
	// ErrorCounts, when set, replace the batch's counts of field errors.
	ErrorCounts []rows.ErrorCount
	// Actor and Detail are recorded in the batch's history.
	Actor  string
	Detail json.RawMessage
	// KindVersion, when set, becomes the batch's (Batch.KindVersion): the
	// rows were validated again under that version of a stored kind.
	KindVersion int64
	// Conventions, when set, become the batch's (Batch.Conventions): the
	// re-run declared another locale, date order or mapping.
	Conventions *rows.Conventions
	// Warnings, when set, replace the batch's: those the re-run's
	// conventions settled are gone.
	Warnings *[]batchtype.Warning
}

// ErrBatchBusy is returned by a re-run of a batch with rows under a
// worker's lease (processing) or whose outcome is unknown: the first must
// be waited for, the second reconciled.
var ErrBatchBusy = errors.New("batch has rows processing or unknown")

// RowReviewParams are the parameters of Store.RowReview: a reviewer's
// edit (new values, validated again) or skip of one row.
type RowReviewParams struct {
	TenantID string
	BatchID  int64
	RowNo    int64
	// From is the state the engine judged the row in: if the row is in
	// another state by now, nothing is written (ErrConflict).
	From rows.State
	// State is valid or invalid for an edit, skipped for a skip.
	State  rows.State
	Values []string // nil keeps the stored values (a skip)
	Errors []rows.FieldError
	Actor  string
	Action string // "edit" or "skip"
	Detail json.RawMessage
}

// HistoryListParams are the parameters of Store.HistoryList.
type HistoryListParams struct {
	TenantID string
	BatchID  int64
	// AfterID pages: entries with id > AfterID.
	AfterID int64
	// Limit caps the page. Defaults to 100.
	Limit int
}
