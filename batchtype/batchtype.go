// Package batchtype holds the records the engine hands its callers: a
// batch, a row, an event, a history entry, and the service's credentials,
// endpoints, deliveries and stored kinds. It imports nothing of the engine
// (as River's rivertype), so that a front end, a store and the engine speak
// of the same values without one depending on another. The records carry
// no JSON tags: the HTTP API and the CLI each write their own wire shapes.
package batchtype

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/rowfate/rowfate/rows"
)

// Status is a batch's lifecycle state, persisted as text (append-only).
type Status string

// Batch statuses.
const (
	// StatusIngesting: the batch's file is still being read; its rows
	// are not stored yet, and no worker sees it. A failed ingest removes
	// the batch.
	StatusIngesting Status = "ingesting"
	// StatusRunning: some rows are still open (valid, processing, retrying).
	StatusRunning Status = "running"
	// StatusFinished: every row has reached a terminal state (or unknown).
	StatusFinished Status = "finished"
	// StatusCancelled: cancelled for good; no row succeeds after it.
	StatusCancelled Status = "cancelled"
)

// Batch is one import, export or recalculation, with totals derived from its
// rows.
type Batch struct {
	ID           int64
	TenantID     string
	Kind         string
	SourceName   string
	SourceDigest string // hex sha256 of the source bytes
	// OptionsDigest is a digest of the options an import was given that
	// change what its rows become (how the file is read, its declared
	// conventions, strict); "" when it was given none. An import with its
	// idempotency key and other options is refused, as one with other
	// content is.
	OptionsDigest string
	Status        Status
	Header        []string
	// Counts are the batch totals: the sum of its count groups', each
	// overwritten from its chunks, and theirs from their rows.
	Counts rows.Counts
	// SkippedEmpty is how many empty rows of the source were skipped.
	SkippedEmpty int64
	// Warnings are problems of the source that did not reject it (unknown
	// columns, which were ignored). They are stored with the batch
	// (batches.options) and come back on every read.
	Warnings []Warning
	// ErrorCounts counts the field errors its rows had at ingest, by
	// column and code, most frequent first.
	ErrorCounts []rows.ErrorCount
	// Conventions are how its file writes numbers and dates and which
	// file columns feed which of the kind's, as declared or settled at
	// ingest; every later read of its rows uses them.
	Conventions rows.Conventions
	// Width is the most cells a row of its file had (more than the
	// header when rows were ragged).
	Width int
	// Recalc, for a recalculation, are the parameters its rows were
	// queried with; for a filtered export, its filter (where, batch,
	// state: batch.ExportFilter.Params); nil for an import or an
	// unfiltered export.
	Recalc map[string]string
	// KindVersion is the version of a stored kind definition (a schema
	// kind's) the batch was validated with at ingest; 0 for a Go kind.
	KindVersion int64
	// KindDefinition is the definition of a kind made for this batch's
	// import alone (batchctl import --schema: a Table Schema), which no
	// registry keeps: its re-runs, retries and reports are read with it.
	KindDefinition string
	// Export says the batch is an export: its source is the file it wrote,
	// so an import of that file is told it was exported, not imported.
	// False for an export recorded before exports were marked.
	Export bool
	// Reused is set by an import that found this batch by its
	// idempotency key instead of importing the file again. Not stored.
	Reused bool
	// Paused is set while the batch is paused: no chunk of it is claimed.
	Paused bool
	// MaxFailed bounds its failed and dead rows (FailureBound): the flush
	// that passes it pauses the batch, with an event and a webhook, and it
	// is not resumed while they pass it. The zero value is no bound.
	MaxFailed  Threshold
	CreatedAt  time.Time
	FinishedAt *time.Time
	// ValuesPurgedAt is when its rows' values were dropped (a retention
	// policy or a purge command, ValuesPurgedBy: "policy" or "command");
	// nil while they are kept. A purged batch keeps its rows' outcomes,
	// errors and counts; whatever needs the values refuses it.
	ValuesPurgedAt *time.Time
	ValuesPurgedBy string
}

// Warning is a problem of a source that did not reject it, in words, with
// the import options that would settle it, if any (rows.Hint): each front
// end shows those its own way.
type Warning struct {
	Message string
	Hints   []rows.Hint
}

// String returns the message.
func (w Warning) String() string { return w.Message }

// Row is one stored row with its outcome.
type Row struct {
	BatchID  int64
	RowNo    int64
	ChunkNo  int64
	State    rows.State
	Values   []string
	Errors   []rows.FieldError
	ResultID string
	Attempts int
	// Reviewed is set once a reviewer edited the row: a re-run keeps it
	// as it is, like a completed row.
	Reviewed bool
	Updated  time.Time
	// ValuesPurged says its values were dropped with its batch's
	// (Batch.ValuesPurgedAt): Values is nil, never an empty row.
	ValuesPurged bool
}

// Worker is a worker credential: a name, the tenants it may work (nil:
// every tenant), never its token or the token's hash.
type Worker struct {
	Name      string
	TenantIDs []string
	// CreatedAt and RevokedAt are read by WorkerList; WorkerAuth finds
	// only credentials that are not revoked.
	CreatedAt time.Time
	RevokedAt *time.Time
}

// SchemaStatus is where a database's schema stands against the migrations
// this build knows.
type SchemaStatus struct {
	// Current is the highest migration applied; 0 when the database has
	// no schema of ours.
	Current int
	// Latest is the highest migration this build knows.
	Latest int
}

// EventType says what changed a batch. Every change appends one event to
// the batch's log, with the next sequence number.
type EventType string

// The event types. Progress events may be coalesced by a broadcaster (each
// carries the batch's totals, so the latest says all the earlier ones
// said); every other type is a lifecycle event, never dropped.
const (
	// EventStarted: the batch was imported; its rows are stored.
	EventStarted EventType = "started"
	// EventProgress: a worker recorded outcomes.
	EventProgress EventType = "progress"
	// EventIngestProgress: the importer read more of the batch's file
	// (Event.Ingest); the batch is ingesting. Written at a bounded rate,
	// never per row, and never after EventStarted.
	EventIngestProgress EventType = "ingest_progress"
	// EventFinished: the change that closed the batch's last open row.
	EventFinished EventType = "finished"
	// EventCancelled, EventPaused, EventResumed: a person's control.
	EventCancelled EventType = "cancelled"
	EventPaused    EventType = "paused"
	EventResumed   EventType = "resumed"
	// EventRetried: rows were made due again; a finished batch runs again.
	EventRetried EventType = "retried"
	// EventSettled: an unknown row was settled.
	EventSettled EventType = "settled"
	// EventRerun: the batch was re-run; EventEdited, EventSkipped: a
	// reviewer edited or skipped a row.
	EventRerun   EventType = "rerun"
	EventEdited  EventType = "edited"
	EventSkipped EventType = "skipped"
)

// Lifecycle reports whether events of type t must reach every subscriber:
// all but progress and ingest progress.
func (t EventType) Lifecycle() bool { return t != EventProgress && t != EventIngestProgress }

// Event is one entry of a batch's event log: what changed it and its state
// right after, as committed with the change.
type Event struct {
	BatchID int64
	Seq     int64
	Type    EventType
	Status  Status
	Paused  bool
	// Counts are the batch's totals by row state.
	Counts rows.Counts
	// Total is every row; Done are the rows no worker will touch again
	// (terminal or unknown).
	Total int64
	Done  int64
	// RowsPerSecond is the rate rows were done at over the last few
	// events; 0 when nothing moved.
	RowsPerSecond float64
	// ETASeconds estimates the seconds left at that rate; nil when the
	// batch is not running or nothing moved.
	ETASeconds *float64
	// Final is set on the event after which nothing changes unless a
	// person acts: the batch is finished, cancelled with no row left under
	// a worker's lease, or paused by its failure bound (a resume follows
	// it then).
	Final bool
	// Reason says why, on an event the engine caused rather than a person:
	// a pause by the batch's failure bound (Batch.MaxFailed).
	Reason string
	At     time.Time
	// Ingest is what the importer had read when it wrote an
	// EventIngestProgress event; nil on every other event.
	Ingest *IngestProgress
}

// IngestProgress is how far the import of a batch's file has got. The
// counts are the reader's, not the store's: the rows are not stored
// until the ingest commits.
type IngestProgress struct {
	// RowsRead are the data rows read so far.
	RowsRead int64
	// Invalid are the rows read so far that failed validation. Rows that
	// repeat an earlier row's key are found when every row is written, so
	// they are not among them.
	Invalid int64
	// BytesRead are the bytes of the file read so far, and Size the
	// file's size, 0 when it is not known: BytesRead/Size is how far the
	// ingest has got.
	BytesRead, Size int64
}

// Coalescable reports whether a later event may stand in for e: a progress
// event that does not end the batch.
func (e Event) Coalescable() bool { return !e.Type.Lifecycle() && !e.Final }

// HistoryEntry is one recorded re-run, edit or skip.
type HistoryEntry struct {
	ID      int64
	BatchID int64
	RowNo   int64 // 0 for the batch
	Action  string
	Actor   string
	Detail  json.RawMessage
	At      time.Time
}

// Roles of API tokens.
const (
	// RoleAdmin reads and acts.
	RoleAdmin = "admin"
	// RoleViewer reads only.
	RoleViewer = "viewer"
)

// Token is an API token as stored: never the token itself.
type Token struct {
	ID        int64
	TenantID  string
	Name      string
	Role      string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// Endpoint is a tenant's webhook endpoint.
type Endpoint struct {
	ID       int64
	TenantID string
	URL      string
	// Secret signs the deliveries (whsec_...). It is returned once, when
	// the endpoint is created, and is not in listings.
	Secret    string
	CreatedAt time.Time
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryDead      = "dead"
)

// Delivery is one webhook message to one endpoint.
type Delivery struct {
	ID         int64
	TenantID   string
	EndpointID int64
	BatchID    int64
	EventSeq   int64
	EventType  string
	// Payload is the body sent, the same bytes on every attempt.
	Payload       string
	Status        string
	Attempts      int
	NextAttemptAt *time.Time
	LastStatus    int
	LastError     string
	CreatedAt     time.Time
	DoneAt        *time.Time
	// URL and Secret are the endpoint's, for the sender (DeliveriesClaim).
	URL    string
	Secret string
}

// MessageID is the delivery's webhook-id: the same on every attempt, so
// that a receiver drops the ones it has seen.
func (d *Delivery) MessageID() string {
	return "msg_rowfate_" + strconv.FormatInt(d.ID, 10)
}

// KindDefinition is one stored version of a kind's definition.
type KindDefinition struct {
	Name    string
	Version int64
	// Format is what Definition is in: "tableschema".
	Format string
	// Definition is the definition as it was put, byte for byte.
	Definition string
	CreatedAt  time.Time
	// RemovedAt is set on the version current when the kind was removed.
	RemovedAt *time.Time
}

// ChunkDue is an open chunk of a running batch that no worker can claim
// yet: its rows are due later (retries), or a worker holds its lease.
type ChunkDue struct {
	BatchID int64
	ChunkNo int64
	// DueAt is when its earliest open row is due.
	DueAt time.Time
	// LeaseOwner holds the chunk until LeaseExpiresAt; "" when no lease
	// is held.
	LeaseOwner     string
	LeaseExpiresAt time.Time
}

// Dialect names the SQL database under the engine. A kind that writes
// tables of its own picks its SQL by it (batch.Tx.Engine).
type Dialect string

// The dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)
