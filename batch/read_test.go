package batch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
)

// TestReadsThroughTheEngine: what a front end reads — a batch, batches,
// rows, a row, events, history, a batch by its key — comes through the
// engine, for its tenant only, with the store's not-found.
func TestReadsThroughTheEngine(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		src := "email,name,country,signup_date,amount\na@x.io,Ann,FR,2021-01-02,1\nnot-an-email,Bob,FR,2021-01-02,2\nc@x.io,Cid,FR,2021-01-02,3\n"
		b, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "r.csv", Source: strings.NewReader(src), IdempotencyKey: "k-1"})
		if err != nil {
			t.Fatal(err)
		}

		got, err := e.Batch(ctx, batch.BatchParams{ID: b.ID})
		if err != nil || got.ID != b.ID || got.Counts.Total() != 3 {
			t.Fatalf("Batch = %+v, %v", got, err)
		}
		if _, err := e.Batch(ctx, batch.BatchParams{TenantID: "other", ID: b.ID}); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("another tenant's Batch: %v, want ErrNotFound", err)
		}
		bs, err := e.Batches(ctx, batch.BatchesParams{Kind: customers.Name})
		if err != nil || len(bs) != 1 || bs[0].ID != b.ID {
			t.Errorf("Batches = %v, %v", bs, err)
		}
		if bs, err := e.Batches(ctx, batch.BatchesParams{TenantID: "other"}); err != nil || len(bs) != 0 {
			t.Errorf("another tenant's Batches = %v, %v", bs, err)
		}
		if k, err := e.BatchByKey(ctx, batch.BatchByKeyParams{IdempotencyKey: "k-1"}); err != nil || k.ID != b.ID {
			t.Errorf("BatchByKey = %+v, %v", k, err)
		}
		if _, err := e.BatchByKey(ctx, batch.BatchByKeyParams{TenantID: "other", IdempotencyKey: "k-1"}); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("another tenant's BatchByKey: %v, want ErrNotFound", err)
		}

		invalid, err := e.Rows(ctx, batch.RowsParams{BatchID: b.ID, State: rows.StateInvalid})
		if err != nil || len(invalid) != 1 || invalid[0].RowNo != 3 {
			t.Fatalf("Rows(invalid) = %+v, %v", invalid, err)
		}
		page, err := e.Rows(ctx, batch.RowsParams{BatchID: b.ID, AfterRowNo: 2, Limit: 1})
		if err != nil || len(page) != 1 || page[0].RowNo != 3 {
			t.Errorf("Rows after 2, one = %+v, %v", page, err)
		}
		r, err := e.Row(ctx, batch.RowParams{BatchID: b.ID, RowNo: 4})
		if err != nil || r.RowNo != 4 || r.Values[0] != "c@x.io" {
			t.Errorf("Row 4 = %+v, %v", r, err)
		}
		for _, p := range []batch.RowParams{{BatchID: b.ID, RowNo: 9}, {BatchID: b.ID, RowNo: 1}, {TenantID: "other", BatchID: b.ID, RowNo: 2}} {
			if r, err := e.Row(ctx, p); !errors.Is(err, batch.ErrNotFound) {
				t.Errorf("Row(%+v) = %+v, %v; want ErrNotFound", p, r, err)
			}
		}

		if err := e.SkipRow(ctx, batch.SkipRowParams{BatchID: b.ID, RowNo: 3, Reason: "a test", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		h, err := e.History(ctx, batch.HistoryParams{BatchID: b.ID})
		if err != nil || len(h) != 1 || h[0].Action != "skip" || h[0].RowNo != 3 {
			t.Errorf("History = %+v, %v", h, err)
		}
		if h, err := e.History(ctx, batch.HistoryParams{TenantID: "other", BatchID: b.ID}); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("another tenant's History = %+v, %v; want ErrNotFound", h, err)
		}
		if evs, err := e.Events(ctx, batch.EventsParams{TenantID: "other", BatchID: b.ID}); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("another tenant's Events = %+v, %v; want ErrNotFound", evs, err)
		}
		evs, err := e.Events(ctx, batch.EventsParams{BatchID: b.ID})
		if err != nil || len(evs) < 2 || evs[len(evs)-1].Type != "skipped" {
			t.Errorf("Events = %+v, %v", evs, err)
		}
		if st, err := e.SchemaStatus(ctx); err != nil || st.Current == 0 || st.Current != st.Latest {
			t.Errorf("SchemaStatus = %+v, %v", st, err)
		}
	})
}

// bareStore is a store with nothing but the engine's seam: no tokens,
// webhooks or totals.
type bareStore struct{ batch.Store }

// TestServiceThroughTheEngine: tokens, webhook endpoints and worker
// credentials go through the engine too, for their tenant; a store that
// keeps no tokens or webhooks says so (ErrNoService) rather than failing
// later.
func TestServiceThroughTheEngine(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		tok, err := e.TokenCreate(ctx, batch.TokenCreateParams{TenantID: "acme", Name: "ops", Role: batchtype.RoleAdmin, TokenHash: "h1"})
		if err != nil || tok.TenantID != "acme" {
			t.Fatalf("TokenCreate = %+v, %v", tok, err)
		}
		if got, err := e.TokenAuth(ctx, batch.TokenAuthParams{TokenHash: "h1"}); err != nil || got.ID != tok.ID {
			t.Errorf("TokenAuth = %+v, %v", got, err)
		}
		if err := e.TokenRevoke(ctx, batch.TokenRevokeParams{TenantID: "other", ID: tok.ID}); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("another tenant's TokenRevoke: %v, want ErrNotFound", err)
		}
		if err := e.TokenRevoke(ctx, batch.TokenRevokeParams{TenantID: "acme", ID: tok.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.TokenAuth(ctx, batch.TokenAuthParams{TokenHash: "h1"}); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("TokenAuth of a revoked token: %v, want ErrNotFound", err)
		}
		if ts, err := e.Tokens(ctx, batch.TokensParams{TenantID: "acme"}); err != nil || len(ts) != 1 || ts[0].RevokedAt == nil {
			t.Errorf("Tokens = %+v, %v", ts, err)
		}
		ep, err := e.EndpointCreate(ctx, batch.EndpointCreateParams{TenantID: "acme", URL: "https://hooks.example.com/x", Secret: "whsec_x"})
		if err != nil {
			t.Fatal(err)
		}
		if eps, err := e.Endpoints(ctx, batch.EndpointsParams{TenantID: "other"}); err != nil || len(eps) != 0 {
			t.Errorf("another tenant's Endpoints = %+v, %v", eps, err)
		}
		if err := e.EndpointDisable(ctx, batch.EndpointDisableParams{TenantID: "acme", ID: ep.ID}); err != nil {
			t.Fatal(err)
		}
		if ds, err := e.Deliveries(ctx, batch.DeliveriesParams{TenantID: "acme"}); err != nil || len(ds) != 0 {
			t.Errorf("Deliveries = %+v, %v", ds, err)
		}
		if err := e.WorkerCreate(ctx, batch.WorkerCreateParams{Name: "w1", TokenHash: "wh", TenantIDs: []string{"acme"}}); err != nil {
			t.Fatal(err)
		}
		if w, err := e.WorkerAuth(ctx, batch.WorkerAuthParams{TokenHash: "wh"}); err != nil || w.Name != "w1" {
			t.Errorf("WorkerAuth = %+v, %v", w, err)
		}
		if err := e.WorkerRevoke(ctx, batch.WorkerRevokeParams{Name: "w1"}); err != nil {
			t.Fatal(err)
		}
		if ws, err := e.Workers(ctx, batch.WorkersParams{TenantID: "acme"}); err != nil || len(ws) != 1 || ws[0].RevokedAt == nil {
			t.Errorf("Workers = %+v, %v", ws, err)
		}
		if _, err := e.RowTotals(ctx); err != nil {
			t.Errorf("RowTotals: %v", err)
		}

		bare := newEngine(t, bareStore{bd.store}, batch.NewRegistry(), 0)
		if _, err := bare.TokenCreate(ctx, batch.TokenCreateParams{Name: "x", Role: batchtype.RoleAdmin, TokenHash: "h2"}); !errors.Is(err, batch.ErrNoService) {
			t.Errorf("TokenCreate on a bare store: %v, want ErrNoService", err)
		}
		if _, err := bare.RowTotals(ctx); !errors.Is(err, batch.ErrNoService) {
			t.Errorf("RowTotals on a bare store: %v, want ErrNoService", err)
		}
	})
}
