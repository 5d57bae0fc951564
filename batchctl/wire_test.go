package batchctl

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/rows"
)

// TestWireShapes: the CLI's JSON of each record, full and zero, byte for
// byte as it was when the records carried the JSON tags themselves; a
// change here is a change scripts see.
func TestWireShapes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 10, 4, 5, 6000000, time.UTC)
	fin := at.Add(90 * time.Second)
	eta := 12.5
	full := &batchtype.Batch{ID: 7, TenantID: "acme", Kind: "customers", SourceName: "c.csv", SourceDigest: "ab12", Status: batchtype.StatusFinished,
		Header: []string{"email", "name"}, Counts: rows.Counts{rows.StateSucceeded: 3, rows.StateInvalid: 1}, SkippedEmpty: 2,
		Warnings: []batchtype.Warning{{Message: "w1"}, {Message: "w2", Hints: []rows.Hint{{Option: rows.OptionDateOrder, Values: []string{"dmy", "mdy"}}}}}, ErrorCounts: []rows.ErrorCount{{Column: "email", Code: "email", Count: 1}},
		Conventions: rows.Conventions{DateOrder: "dmy", CommaColumns: []string{"amount"}}, Width: 3, Recalc: map[string]string{"where": "x"},
		KindVersion: 2, Reused: true, Paused: true, CreatedAt: at, FinishedAt: &fin}
	ev := &batchtype.Event{BatchID: 7, Seq: 4, Type: batchtype.EventType("progress"), Status: batchtype.StatusRunning, Paused: true,
		Counts: rows.Counts{rows.StateValid: 2}, Total: 2, Done: 1, RowsPerSecond: 1.5, ETASeconds: &eta, Final: true, At: at}
	for i, tc := range []struct {
		v    any
		want string
	}{
		{toBatchJSON(full),
			`{"id":7,"tenant_id":"acme","kind":"customers","source_name":"c.csv","source_digest":"ab12","status":"finished","header":["email","name"],"counts":{"invalid":1,"succeeded":3},"skipped_empty":2,"warnings":[{"message":"w1"},{"message":"w2","hints":[{"option":"date_order","values":["dmy","mdy"]}]}],"error_counts":[{"column":"email","code":"email","count":1}],"conventions":{"date_order":"dmy","comma_columns":["amount"]},"recalc":{"where":"x"},"kind_version":2,"reused":true,"paused":true,"created_at":"2026-12-03T10:04:05.006Z","finished_at":"2026-12-03T10:05:35.006Z"}`},
		{toBatchJSON(&batchtype.Batch{CreatedAt: at, FinishedAt: &at}),
			`{"id":0,"tenant_id":"","kind":"","source_name":"","source_digest":"","status":"","header":null,"counts":null,"skipped_empty":0,"paused":false,"created_at":"2026-12-03T10:04:05.006Z","finished_at":"2026-12-03T10:04:05.006Z"}`},
		{toRowJSON(&batchtype.Row{BatchID: 7, RowNo: 2, State: rows.StateInvalid, Values: []string{"a", ""}, Errors: []rows.FieldError{{Column: "email", Code: "email", Message: "bad"}}, ResultID: "r1", Attempts: 2, Reviewed: true, Updated: at}),
			`{"batch_id":7,"row_no":2,"chunk_no":0,"state":"invalid","values":["a",""],"errors":[{"column":"email","code":"email","message":"bad"}],"result_id":"r1","attempts":2,"reviewed":true,"updated_at":"2026-12-03T10:04:05.006Z"}`},
		{toRowJSON(&batchtype.Row{}),
			`{"batch_id":0,"row_no":0,"chunk_no":0,"state":"","values":null,"attempts":0,"updated_at":"0001-01-01T00:00:00Z"}`},
		{toHistoryJSON([]batchtype.HistoryEntry{{ID: 3, BatchID: 7, RowNo: 2, Action: "edit", Actor: "ann", Detail: json.RawMessage(`{"a":1}`), At: at}})[0],
			`{"id":3,"batch_id":7,"row_no":2,"action":"edit","actor":"ann","detail":{"a":1},"at":"2026-12-03T10:04:05.006Z"}`},
		{toHistoryJSON([]batchtype.HistoryEntry{{Detail: json.RawMessage(`{}`)}})[0],
			`{"id":0,"batch_id":0,"action":"","actor":"","detail":{},"at":"0001-01-01T00:00:00Z"}`},
		{toMessageJSON(progress.Message{Type: progress.MessageEvent, Event: ev, Replay: true, Cursor: 4}),
			`{"type":"event","event":{"batch_id":7,"seq":4,"type":"progress","status":"running","paused":true,"counts":{"valid":2},"total":2,"done":1,"rows_per_second":1.5,"eta_seconds":12.5,"final":true,"at":"2026-12-03T10:04:05.006Z"},"replay":true,"cursor":4}`},
		{toMessageJSON(progress.Message{Type: progress.MessageEvent, Event: &batchtype.Event{}}),
			`{"type":"event","event":{"batch_id":0,"seq":0,"type":"","status":"","counts":null,"total":0,"done":0,"rows_per_second":0,"final":false,"at":"0001-01-01T00:00:00Z"},"cursor":0}`},
		{toMessageJSON(progress.Message{Type: progress.MessageCursorExpired, Cursor: 9}),
			`{"type":"cursor_expired","cursor":9}`},
		{toEndpointsJSON([]batchtype.Endpoint{{ID: 1, TenantID: "acme", URL: "https://x", Secret: "whsec_1", CreatedAt: at}, {}}),
			`[{"id":1,"tenant_id":"acme","url":"https://x","secret":"whsec_1","created_at":"2026-12-03T10:04:05.006Z"},{"id":0,"tenant_id":"","url":"","created_at":"0001-01-01T00:00:00Z"}]`},
		{toDeliveriesJSON([]batchtype.Delivery{{ID: 1, TenantID: "acme", EndpointID: 2, BatchID: 7, EventSeq: 4, EventType: "finished", Payload: "p", Status: "dead", Attempts: 8, NextAttemptAt: &at, LastStatus: 500, LastError: "boom", CreatedAt: at, DoneAt: &fin, URL: "u", Secret: "s"}, {}}),
			`[{"id":1,"tenant_id":"acme","endpoint_id":2,"batch_id":7,"event_seq":4,"event_type":"finished","status":"dead","attempts":8,"next_attempt_at":"2026-12-03T10:04:05.006Z","last_status":500,"last_error":"boom","created_at":"2026-12-03T10:04:05.006Z","done_at":"2026-12-03T10:05:35.006Z"},{"id":0,"tenant_id":"","endpoint_id":0,"batch_id":0,"event_seq":0,"event_type":"","status":"","attempts":0,"created_at":"0001-01-01T00:00:00Z"}]`},
		{toTokensJSON([]batchtype.Token{{ID: 1, TenantID: "acme", Name: "ci", Role: "admin", CreatedAt: at, RevokedAt: &fin}, {}}),
			`[{"id":1,"tenant_id":"acme","name":"ci","role":"admin","created_at":"2026-12-03T10:04:05.006Z","revoked_at":"2026-12-03T10:05:35.006Z"},{"id":0,"tenant_id":"","name":"","role":"","created_at":"0001-01-01T00:00:00Z"}]`},
		{toKindDefinitionJSON(&batchtype.KindDefinition{Name: "orders", Version: 2, Format: "tableschema", Definition: "{}", CreatedAt: at, RemovedAt: &fin}),
			`{"name":"orders","version":2,"format":"tableschema","definition":"{}","created_at":"2026-12-03T10:04:05.006Z","removed_at":"2026-12-03T10:05:35.006Z"}`},
		{toKindDefinitionJSON(&batchtype.KindDefinition{}),
			`{"name":"","version":0,"format":"","definition":"","created_at":"0001-01-01T00:00:00Z"}`},
		{toBatchesJSON(nil),
			`null`},
		{toRowsJSON([]batchtype.Row{}),
			`[]`},
		{toHistoryJSON(nil),
			`[]`},
		{toTokensJSON(nil),
			`[]`},
		{toDryRunJSON(&batch.DryRunResult{Kind: "customers", SourceName: "c.csv", SourceInfo: rows.SourceInfo{Format: "csv", Encoding: "utf-8", Delimiter: ","},
			Header: []string{"email"}, Counts: rows.Counts{rows.StateValid: 2, rows.StateInvalid: 1}, SkippedEmpty: 1, Warnings: []batchtype.Warning{{Message: "w"}},
			Conventions: rows.Conventions{DateOrder: "dmy"}, Errors: []rows.FieldError{{Row: 3, Column: "email", Code: "email", Message: "bad", Hints: []rows.Hint{{Option: rows.OptionLocale, Values: []string{"de"}}}}},
			ErrorTotal: 1, ErrorCounts: []rows.ErrorCount{{Column: "email", Code: "email", Count: 1}}}),
			`{"kind":"customers","source_name":"c.csv","format":"csv","encoding":"utf-8","delimiter":",","header":["email"],"counts":{"invalid":1,"valid":2},"skipped_empty":1,"warnings":[{"message":"w"}],"conventions":{"date_order":"dmy"},"errors":[{"row":3,"column":"email","code":"email","message":"bad","hints":[{"option":"locale","values":["de"]}]}],"error_total":1,"error_counts":[{"column":"email","code":"email","count":1}]}`},
		{toDryRunJSON(&batch.DryRunResult{}),
			`{"kind":"","source_name":"","format":"","header":null,"counts":null,"skipped_empty":0,"error_total":0}`},
		{toKindsJSON([]batch.KindInfo{{Name: "customers", Description: "d", Direction: "import", Guarantee: batch.ExactlyOnce, Source: "schema v3",
			Columns: []rows.Column{{Name: "email", Field: "Email"}}, Required: []string{"email"}}, {}}),
			`[{"name":"customers","description":"d","direction":"import","guarantee":"exactly-once","source":"schema v3","columns":[{"name":"email","field":"Email"}],"required":["email"]},{"name":"","description":"","direction":"","columns":null,"required":null}]`},
		{toMappingJSON(testMapping),
			`{"kind":"customers","matched":[{"header":"E-Mail","column":"email","field":"Email"}],"unknown":["x"],"missing":[{"column":"name","required":true}],"error":"dup","suggestions":[{"header":"x","column":"name"}]}`},
		{toMappingJSON(&batch.HeaderMapping{}),
			`{"kind":"","matched":null,"unknown":null,"missing":null}`},
		{toMappingJSON(nil),
			`null`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%d: %T\n got %s\nwant %s", i, tc.v, got, tc.want)
		}
	}
}

// testMapping is a header mapping with every field set.
var testMapping = &batch.HeaderMapping{Kind: "customers", Matched: []rows.MappedColumn{{Header: "E-Mail", Column: "email", Field: "Email"}},
	Unknown: []string{"x"}, Missing: []batch.MissingColumn{{Column: "name", Required: true}}, Error: "dup",
	Suggestions: []rows.Suggestion{{Header: "x", Column: "name"}}}
