package server

import (
	"encoding/json"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/rows"
)

// The API's JSON is written here, from the engine's records: what a field
// is called on the wire, and when it is left out, is the API's promise
// (openapi.yaml), so it is owned where it is served, not by the records.

// BatchView is a batch as the API shows it: the stored batch with its
// totals, and how long it ran.
type BatchView struct {
	ID           int64             `json:"id"`
	TenantID     string            `json:"tenant_id"`
	Kind         string            `json:"kind"`
	SourceName   string            `json:"source_name"`
	SourceDigest string            `json:"source_digest"`
	Status       string            `json:"status"`
	Header       []string          `json:"header"`
	Counts       rows.Counts       `json:"counts"`
	SkippedEmpty int64             `json:"skipped_empty"`
	Warnings     []WarningView     `json:"warnings,omitempty"`
	ErrorCounts  []rows.ErrorCount `json:"error_counts,omitempty"`
	Conventions  rows.Conventions  `json:"conventions,omitzero"`
	Recalc       map[string]string `json:"recalc,omitzero"`
	KindVersion  int64             `json:"kind_version,omitempty"`
	// Reused says an import found this batch by its idempotency key
	// instead of importing the file again.
	Reused bool `json:"reused,omitempty"`
	Paused bool `json:"paused"`
	// MaxFailed is its bound on failed and dead rows; "" for none.
	MaxFailed  string     `json:"max_failed,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// ValuesPurgedAt and ValuesPurgedBy ("policy" or "command") say when
	// and how the rows' values were dropped; absent while they are kept.
	ValuesPurgedAt *time.Time `json:"values_purged_at,omitempty"`
	ValuesPurgedBy string     `json:"values_purged_by,omitempty"`
	// Total is every row; Done are the rows no worker will touch again
	// (terminal or unknown); Open are the rest.
	Total int64 `json:"total"`
	Done  int64 `json:"done"`
	Open  int64 `json:"open"`
	// DurationSeconds is from creation to finish, or to now while the
	// batch runs.
	DurationSeconds float64 `json:"duration_seconds"`
}

func view(b *batchtype.Batch) *BatchView {
	if b == nil {
		return nil
	}
	end := time.Now()
	if b.FinishedAt != nil {
		end = *b.FinishedAt
	}
	total, open := b.Counts.Total(), b.Counts.Open()
	return &BatchView{ID: b.ID, TenantID: b.TenantID, Kind: b.Kind, SourceName: b.SourceName, SourceDigest: b.SourceDigest,
		Status: string(b.Status), Header: b.Header, Counts: b.Counts, SkippedEmpty: b.SkippedEmpty, Warnings: viewWarnings(b.Warnings),
		ErrorCounts: b.ErrorCounts, Conventions: b.Conventions, Recalc: b.Recalc, KindVersion: b.KindVersion, Reused: b.Reused,
		Paused: b.Paused, MaxFailed: b.MaxFailed.String(), CreatedAt: b.CreatedAt, FinishedAt: b.FinishedAt,
		ValuesPurgedAt: b.ValuesPurgedAt, ValuesPurgedBy: b.ValuesPurgedBy,
		Total: total, Done: total - open, Open: open, DurationSeconds: max(0, end.Sub(b.CreatedAt).Seconds())}
}

// RowView is a row as the API shows it: its state, attempts, errors and
// cells.
type RowView struct {
	BatchID  int64             `json:"batch_id"`
	RowNo    int64             `json:"row_no"`
	ChunkNo  int64             `json:"chunk_no"`
	State    rows.State        `json:"state"`
	Values   []string          `json:"values"`
	Errors   []rows.FieldError `json:"errors,omitempty"`
	ResultID string            `json:"result_id,omitempty"`
	Attempts int               `json:"attempts"`
	Reviewed bool              `json:"reviewed,omitempty"`
	Updated  time.Time         `json:"updated_at"`
	// ValuesPurged: Values is null because they were purged.
	ValuesPurged bool `json:"values_purged,omitempty"`
}

func viewRow(r *batchtype.Row) *RowView {
	if r == nil {
		return nil
	}
	return &RowView{BatchID: r.BatchID, RowNo: r.RowNo, ChunkNo: r.ChunkNo, State: r.State, Values: r.Values, Errors: r.Errors,
		ResultID: r.ResultID, Attempts: r.Attempts, Reviewed: r.Reviewed, Updated: r.Updated, ValuesPurged: r.ValuesPurged}
}

func viewRows(rs []batchtype.Row) []*RowView {
	out := make([]*RowView, len(rs))
	for i := range rs {
		out[i] = viewRow(&rs[i])
	}
	return out
}

// HistoryView is a history entry as the API shows it.
type HistoryView struct {
	ID      int64           `json:"id"`
	BatchID int64           `json:"batch_id"`
	RowNo   int64           `json:"row_no,omitempty"` // 0 for the batch
	Action  string          `json:"action"`
	Actor   string          `json:"actor"`
	Detail  json.RawMessage `json:"detail"`
	At      time.Time       `json:"at"`
}

func viewHistory(hs []batchtype.HistoryEntry) []HistoryView {
	out := make([]HistoryView, len(hs))
	for i, h := range hs {
		out[i] = HistoryView{ID: h.ID, BatchID: h.BatchID, RowNo: h.RowNo, Action: h.Action, Actor: h.Actor, Detail: h.Detail, At: h.At}
	}
	return out
}

// EventView is an event as the stream sends it.
type EventView struct {
	BatchID       int64       `json:"batch_id"`
	Seq           int64       `json:"seq"`
	Type          string      `json:"type"`
	Status        string      `json:"status"`
	Paused        bool        `json:"paused,omitempty"`
	Counts        rows.Counts `json:"counts"`
	Total         int64       `json:"total"`
	Done          int64       `json:"done"`
	RowsPerSecond float64     `json:"rows_per_second"`
	ETASeconds    *float64    `json:"eta_seconds,omitempty"`
	Final         bool        `json:"final"`
	Reason        string      `json:"reason,omitempty"`
	At            time.Time   `json:"at"`
	// Ingest is on ingest_progress events only.
	Ingest *IngestView `json:"ingest,omitempty"`
}

// IngestView is an ingest_progress event's count of what the importer read
// (batchtype.IngestProgress).
type IngestView struct {
	RowsRead  int64 `json:"rows_read"`
	Invalid   int64 `json:"invalid"`
	BytesRead int64 `json:"bytes_read"`
	Size      int64 `json:"size,omitempty"`
}

func toIngestView(in *batchtype.IngestProgress) *IngestView {
	if in == nil {
		return nil
	}
	return &IngestView{RowsRead: in.RowsRead, Invalid: in.Invalid, BytesRead: in.BytesRead, Size: in.Size}
}

func viewEvent(ev *batchtype.Event) *EventView {
	if ev == nil {
		return nil
	}
	return &EventView{BatchID: ev.BatchID, Seq: ev.Seq, Type: string(ev.Type), Status: string(ev.Status), Paused: ev.Paused,
		Counts: ev.Counts, Total: ev.Total, Done: ev.Done, RowsPerSecond: ev.RowsPerSecond, ETASeconds: ev.ETASeconds, Final: ev.Final, Reason: ev.Reason, At: ev.At,
		Ingest: toIngestView(ev.Ingest)}
}

// StreamMessage is one text frame of the event stream: an event, a
// cursor that expired, or the batch not found.
type StreamMessage struct {
	Type   string     `json:"type"`
	Event  *EventView `json:"event,omitempty"`
	Replay bool       `json:"replay,omitempty"`
	Cursor int64      `json:"cursor"`
}

func viewMessage(m progress.Message) StreamMessage {
	return StreamMessage{Type: string(m.Type), Event: viewEvent(m.Event), Replay: m.Replay, Cursor: m.Cursor}
}

// EndpointView is a webhook endpoint as the API shows it; the secret only
// when it was just created.
type EndpointView struct {
	ID        int64     `json:"id"`
	TenantID  string    `json:"tenant_id"`
	URL       string    `json:"url"`
	Secret    string    `json:"secret,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func viewEndpoint(e *batchtype.Endpoint) EndpointView {
	return EndpointView{ID: e.ID, TenantID: e.TenantID, URL: e.URL, Secret: e.Secret, CreatedAt: e.CreatedAt}
}

// DeliveryView is a webhook delivery as the API shows it: never its body
// or its endpoint's secret.
type DeliveryView struct {
	ID            int64      `json:"id"`
	TenantID      string     `json:"tenant_id"`
	EndpointID    int64      `json:"endpoint_id"`
	BatchID       int64      `json:"batch_id"`
	EventSeq      int64      `json:"event_seq"`
	EventType     string     `json:"event_type"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	LastStatus    int        `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	DoneAt        *time.Time `json:"done_at,omitempty"`
}

func viewDelivery(d *batchtype.Delivery) DeliveryView {
	return DeliveryView{ID: d.ID, TenantID: d.TenantID, EndpointID: d.EndpointID, BatchID: d.BatchID, EventSeq: d.EventSeq,
		EventType: d.EventType, Status: d.Status, Attempts: d.Attempts, NextAttemptAt: d.NextAttemptAt, LastStatus: d.LastStatus,
		LastError: d.LastError, CreatedAt: d.CreatedAt, DoneAt: d.DoneAt}
}

// MappingView is how a file's header maps onto a kind's columns: what
// matched, what is unknown (an import ignores it), what is missing, and
// why an import would reject the header ("" when it would not).
type MappingView struct {
	Kind        string              `json:"kind"`
	Matched     []rows.MappedColumn `json:"matched"`
	Unknown     []string            `json:"unknown"`
	Missing     []MissingView       `json:"missing"`
	Error       string              `json:"error,omitempty"`
	Suggestions []rows.Suggestion   `json:"suggestions,omitempty"`
	// rejected is the engine's verdict on the header.
	rejected bool
}

// MissingView is a kind's column the header lacks; Required says an
// import rejects the file without it.
type MissingView struct {
	Column   string `json:"column"`
	Required bool   `json:"required"`
}

func viewMapping(m *batch.HeaderMapping) *MappingView {
	if m == nil {
		return nil
	}
	v := &MappingView{Kind: m.Kind, Matched: m.Matched, Unknown: m.Unknown, Error: m.Error, Suggestions: m.Suggestions,
		rejected: m.Rejected()}
	if m.Missing != nil {
		v.Missing = make([]MissingView, len(m.Missing))
		for i, c := range m.Missing {
			v.Missing[i] = MissingView{Column: c.Column, Required: c.Required}
		}
	}
	return v
}

// mappingRejected reports whether an import would reject the previewed
// file's header.
func (pv *PreviewView) mappingRejected() bool { return pv.Mapping != nil && pv.Mapping.rejected }

// WarningView is a problem of a file that did not reject it, with the
// import options that would settle it: a client shows them as its
// controls (the admin page) or its fields (decimal_comma, date_order, ...).
type WarningView struct {
	Message string      `json:"message"`
	Hints   []rows.Hint `json:"hints,omitempty"`
}

func viewWarnings(ws []batchtype.Warning) []WarningView {
	if ws == nil {
		return nil
	}
	out := make([]WarningView, len(ws))
	for i, w := range ws {
		out[i] = WarningView{Message: w.Message, Hints: w.Hints}
	}
	return out
}

// RowOutcomeView is the outcome a previewed row would have: valid, or
// invalid with every one of its errors.
type RowOutcomeView struct {
	Row    int64             `json:"row"`
	State  rows.State        `json:"state"`
	Errors []rows.FieldError `json:"errors"`
}
