package batchctl

import (
	"encoding/json"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/rows"
)

// The CLI's JSON (-o json, -o jsonl) is written here, from the engine's
// records: scripts read these names, so they are the CLI's promise and
// owned by it, not by the records.

// batchJSON is a batch as -o json prints it.
type batchJSON struct {
	ID           int64             `json:"id"`
	TenantID     string            `json:"tenant_id"`
	Kind         string            `json:"kind"`
	SourceName   string            `json:"source_name"`
	SourceDigest string            `json:"source_digest"`
	Status       string            `json:"status"`
	Header       []string          `json:"header"`
	Counts       rows.Counts       `json:"counts"`
	SkippedEmpty int64             `json:"skipped_empty"`
	Warnings     []warningJSON     `json:"warnings,omitempty"`
	ErrorCounts  []rows.ErrorCount `json:"error_counts,omitempty"`
	Conventions  rows.Conventions  `json:"conventions,omitzero"`
	Recalc       map[string]string `json:"recalc,omitzero"`
	KindVersion  int64             `json:"kind_version,omitempty"`
	Reused       bool              `json:"reused,omitempty"`
	Paused       bool              `json:"paused"`
	MaxFailed    string            `json:"max_failed,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
	FinishedAt   *time.Time        `json:"finished_at,omitempty"`
	// ValuesPurgedAt and ValuesPurgedBy say when and how the rows'
	// values were dropped (batchctl purge, a retention policy).
	ValuesPurgedAt *time.Time `json:"values_purged_at,omitempty"`
	ValuesPurgedBy string     `json:"values_purged_by,omitempty"`
}

func toBatchJSON(b *batchtype.Batch) *batchJSON {
	if b == nil {
		return nil
	}
	return &batchJSON{ID: b.ID, TenantID: b.TenantID, Kind: b.Kind, SourceName: b.SourceName, SourceDigest: b.SourceDigest,
		Status: string(b.Status), Header: b.Header, Counts: b.Counts, SkippedEmpty: b.SkippedEmpty, Warnings: toWarningsJSON(b.Warnings),
		ErrorCounts: b.ErrorCounts, Conventions: b.Conventions, Recalc: b.Recalc, KindVersion: b.KindVersion, Reused: b.Reused,
		Paused: b.Paused, MaxFailed: b.MaxFailed.String(), CreatedAt: b.CreatedAt, FinishedAt: b.FinishedAt,
		ValuesPurgedAt: b.ValuesPurgedAt, ValuesPurgedBy: b.ValuesPurgedBy}
}

func toBatchesJSON(bs []*batchtype.Batch) []*batchJSON {
	if bs == nil {
		return nil
	}
	out := make([]*batchJSON, len(bs))
	for i, b := range bs {
		out[i] = toBatchJSON(b)
	}
	return out
}

// rowJSON is a row as -o json prints it.
type rowJSON struct {
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
	// ValuesPurged: values is null because they were purged.
	ValuesPurged bool `json:"values_purged,omitempty"`
}

func toRowJSON(r *batchtype.Row) *rowJSON {
	if r == nil {
		return nil
	}
	return &rowJSON{BatchID: r.BatchID, RowNo: r.RowNo, ChunkNo: r.ChunkNo, State: r.State, Values: r.Values, Errors: r.Errors,
		ResultID: r.ResultID, Attempts: r.Attempts, Reviewed: r.Reviewed, Updated: r.Updated, ValuesPurged: r.ValuesPurged}
}

func toRowsJSON(rs []batchtype.Row) []*rowJSON {
	if rs == nil {
		return nil
	}
	out := make([]*rowJSON, len(rs))
	for i := range rs {
		out[i] = toRowJSON(&rs[i])
	}
	return out
}

// historyJSON is a history entry as -o json prints it.
type historyJSON struct {
	ID      int64           `json:"id"`
	BatchID int64           `json:"batch_id"`
	RowNo   int64           `json:"row_no,omitempty"` // 0 for the batch
	Action  string          `json:"action"`
	Actor   string          `json:"actor"`
	Detail  json.RawMessage `json:"detail"`
	At      time.Time       `json:"at"`
}

func toHistoryJSON(hs []batchtype.HistoryEntry) []historyJSON {
	out := make([]historyJSON, len(hs))
	for i, h := range hs {
		out[i] = historyJSON{ID: h.ID, BatchID: h.BatchID, RowNo: h.RowNo, Action: h.Action, Actor: h.Actor, Detail: h.Detail, At: h.At}
	}
	return out
}

// eventJSON is an event as -o jsonl prints it.
type eventJSON struct {
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
	Ingest *ingestJSON `json:"ingest,omitempty"`
}

// ingestJSON is an ingest_progress event's count of what the importer read
// (batchtype.IngestProgress).
type ingestJSON struct {
	RowsRead  int64 `json:"rows_read"`
	Invalid   int64 `json:"invalid"`
	BytesRead int64 `json:"bytes_read"`
	Size      int64 `json:"size,omitempty"`
}

func toIngestJSON(in *batchtype.IngestProgress) *ingestJSON {
	if in == nil {
		return nil
	}
	return &ingestJSON{RowsRead: in.RowsRead, Invalid: in.Invalid, BytesRead: in.BytesRead, Size: in.Size}
}

// messageJSON is one line of -o jsonl: an event, a cursor that expired,
// or the batch gone.
type messageJSON struct {
	Type   string     `json:"type"`
	Event  *eventJSON `json:"event,omitempty"`
	Replay bool       `json:"replay,omitempty"`
	Cursor int64      `json:"cursor"`
}

func toMessageJSON(m progress.Message) messageJSON {
	out := messageJSON{Type: string(m.Type), Replay: m.Replay, Cursor: m.Cursor}
	if ev := m.Event; ev != nil {
		out.Event = &eventJSON{BatchID: ev.BatchID, Seq: ev.Seq, Type: string(ev.Type), Status: string(ev.Status), Paused: ev.Paused,
			Counts: ev.Counts, Total: ev.Total, Done: ev.Done, RowsPerSecond: ev.RowsPerSecond, ETASeconds: ev.ETASeconds, Final: ev.Final, Reason: ev.Reason, At: ev.At,
			Ingest: toIngestJSON(ev.Ingest)}
	}
	return out
}

// tokenJSON is an API token as `token list -o json` prints it (never the
// token).
type tokenJSON struct {
	ID        int64      `json:"id"`
	TenantID  string     `json:"tenant_id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

func toTokensJSON(ts []batchtype.Token) []tokenJSON {
	out := make([]tokenJSON, len(ts))
	for i, t := range ts {
		out[i] = tokenJSON{ID: t.ID, TenantID: t.TenantID, Name: t.Name, Role: t.Role, CreatedAt: t.CreatedAt, RevokedAt: t.RevokedAt}
	}
	return out
}

// endpointJSON is a webhook endpoint as `webhooks list -o json` prints it.
type endpointJSON struct {
	ID        int64     `json:"id"`
	TenantID  string    `json:"tenant_id"`
	URL       string    `json:"url"`
	Secret    string    `json:"secret,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func toEndpointsJSON(eps []batchtype.Endpoint) []endpointJSON {
	out := make([]endpointJSON, len(eps))
	for i, e := range eps {
		out[i] = endpointJSON{ID: e.ID, TenantID: e.TenantID, URL: e.URL, Secret: e.Secret, CreatedAt: e.CreatedAt}
	}
	return out
}

// deliveryJSON is a webhook delivery as `webhooks deliveries -o json`
// prints it: never its body or its endpoint's secret.
type deliveryJSON struct {
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

func toDeliveriesJSON(ds []batchtype.Delivery) []deliveryJSON {
	out := make([]deliveryJSON, len(ds))
	for i, d := range ds {
		out[i] = deliveryJSON{ID: d.ID, TenantID: d.TenantID, EndpointID: d.EndpointID, BatchID: d.BatchID, EventSeq: d.EventSeq,
			EventType: d.EventType, Status: d.Status, Attempts: d.Attempts, NextAttemptAt: d.NextAttemptAt, LastStatus: d.LastStatus,
			LastError: d.LastError, CreatedAt: d.CreatedAt, DoneAt: d.DoneAt}
	}
	return out
}

// kindDefinitionJSON is a stored kind definition as `kind show -o json`
// prints it.
type kindDefinitionJSON struct {
	Name       string     `json:"name"`
	Version    int64      `json:"version"`
	Format     string     `json:"format"`
	Definition string     `json:"definition"`
	CreatedAt  time.Time  `json:"created_at"`
	RemovedAt  *time.Time `json:"removed_at,omitempty"`
}

func toKindDefinitionJSON(d *batchtype.KindDefinition) kindDefinitionJSON {
	return kindDefinitionJSON{Name: d.Name, Version: d.Version, Format: d.Format, Definition: d.Definition, CreatedAt: d.CreatedAt, RemovedAt: d.RemovedAt}
}

// dryRunJSON is a dry run as -o json prints it.
type dryRunJSON struct {
	Kind       string `json:"kind"`
	SourceName string `json:"source_name"`
	rows.SourceInfo
	Header       []string          `json:"header"`
	Counts       rows.Counts       `json:"counts"`
	SkippedEmpty int64             `json:"skipped_empty"`
	Warnings     []warningJSON     `json:"warnings,omitempty"`
	Conventions  rows.Conventions  `json:"conventions,omitzero"`
	Errors       []rows.FieldError `json:"errors,omitempty"`
	ErrorTotal   int64             `json:"error_total"`
	ErrorCounts  []rows.ErrorCount `json:"error_counts,omitempty"`
}

func toDryRunJSON(r *batch.DryRunResult) *dryRunJSON {
	return &dryRunJSON{Kind: r.Kind, SourceName: r.SourceName, SourceInfo: r.SourceInfo, Header: r.Header, Counts: r.Counts,
		SkippedEmpty: r.SkippedEmpty, Warnings: toWarningsJSON(r.Warnings), Conventions: r.Conventions, Errors: r.Errors,
		ErrorTotal: r.ErrorTotal, ErrorCounts: r.ErrorCounts}
}

// kindJSON is a kind as `kinds -o json` prints it.
type kindJSON struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Direction   string          `json:"direction"`
	Guarantee   batch.Guarantee `json:"guarantee,omitempty"`
	Source      string          `json:"source,omitempty"`
	Columns     []rows.Column   `json:"columns"`
	Required    []string        `json:"required"`
}

func toKindsJSON(ks []batch.KindInfo) []kindJSON {
	out := make([]kindJSON, len(ks))
	for i, k := range ks {
		out[i] = kindJSON{Name: k.Name, Description: k.Description, Direction: k.Direction, Guarantee: k.Guarantee,
			Source: k.Source, Columns: k.Columns, Required: k.Required}
	}
	return out
}

// mappingJSON is how a header maps onto a kind's columns, as `preview
// --kind -o json` prints it.
type mappingJSON struct {
	Kind        string              `json:"kind"`
	Matched     []rows.MappedColumn `json:"matched"`
	Unknown     []string            `json:"unknown"`
	Missing     []missingJSON       `json:"missing"`
	Error       string              `json:"error,omitempty"`
	Suggestions []rows.Suggestion   `json:"suggestions,omitempty"`
}

type missingJSON struct {
	Column   string `json:"column"`
	Required bool   `json:"required"`
}

func toMappingJSON(m *batch.HeaderMapping) *mappingJSON {
	if m == nil {
		return nil
	}
	out := &mappingJSON{Kind: m.Kind, Matched: m.Matched, Unknown: m.Unknown, Error: m.Error, Suggestions: m.Suggestions}
	if m.Missing != nil {
		out.Missing = make([]missingJSON, len(m.Missing))
		for i, c := range m.Missing {
			out.Missing[i] = missingJSON{Column: c.Column, Required: c.Required}
		}
	}
	return out
}

// previewJSON is what `preview -o json` prints.
type previewJSON struct {
	File string `json:"file"`
	rows.SourceInfo
	Header []string      `json:"header"`
	Rows   []rows.Record `json:"rows"`
	Kind   *mappingJSON  `json:"kind,omitempty"`
}

func toPreviewJSON(p *previewResult) *previewJSON {
	return &previewJSON{File: p.File, SourceInfo: p.SourceInfo, Header: p.Header, Rows: p.Rows, Kind: toMappingJSON(p.Kind)}
}

// warningJSON is a warning with the options that would settle it.
type warningJSON struct {
	Message string      `json:"message"`
	Hints   []rows.Hint `json:"hints,omitempty"`
}

func toWarningsJSON(ws []batchtype.Warning) []warningJSON {
	if ws == nil {
		return nil
	}
	out := make([]warningJSON, len(ws))
	for i, w := range ws {
		out[i] = warningJSON{Message: w.Message, Hints: w.Hints}
	}
	return out
}

// templateColumnJSON is a template's column as `template -o json` prints
// it: what the file's header cell, example cell, note and dropdown say.
type templateColumnJSON struct {
	Name     string   `json:"name"`
	Example  string   `json:"example"`
	Required bool     `json:"required"`
	Enum     []string `json:"enum,omitempty"`
	Note     string   `json:"note,omitempty"`
}

func toTemplateJSON(cols []rows.TemplateColumn) []templateColumnJSON {
	out := make([]templateColumnJSON, len(cols))
	for i, c := range cols {
		out[i] = templateColumnJSON{Name: c.Name, Example: c.Example, Required: c.Required, Enum: c.Enum, Note: c.Note}
	}
	return out
}

// errorJSON is a failed command's error as -o json prints it on stderr.
type errorJSON struct {
	Command string      `json:"command"`
	Error   string      `json:"error"`
	Exit    int         `json:"exit"`
	File    string      `json:"file,omitempty"`
	Line    int64       `json:"line,omitempty"`
	Hints   []rows.Hint `json:"hints,omitempty"`
	Notes   []string    `json:"notes,omitempty"`
}

// bulkJSON is a bulk row command's outcome as -o json prints it: the
// API's answer to POST /v1/batches/{id}/rows/bulk.
type bulkJSON struct {
	Action  string `json:"action"`
	Preview bool   `json:"preview"`
	Matched int64  `json:"matched"`
	Changed int64  `json:"changed"`
	Valid   int64  `json:"valid"`
	Invalid int64  `json:"invalid"`
}
