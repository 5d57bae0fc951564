package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

func runService(t *testing.T, newStore NewStoreFunc) {
	service := func(t *testing.T) (driver.Store, driver.ServiceStore) {
		s := newStore(t)
		ss, ok := s.(driver.ServiceStore)
		if !ok {
			t.Fatalf("%T does not implement driver.ServiceStore", s)
		}
		return s, ss
	}
	t.Run("Tokens", func(t *testing.T) { t.Parallel(); _, ss := service(t); testTokens(t, ss) })
	t.Run("WebhookOutbox", func(t *testing.T) { t.Parallel(); s, ss := service(t); testOutbox(t, s, ss) })
	t.Run("BatchListFilters", func(t *testing.T) { t.Parallel(); s, _ := service(t); testBatchListFilters(t, s) })
}

func testTokens(t *testing.T, s driver.ServiceStore) {
	ctx := context.Background()
	a, err := s.TokenCreate(ctx, driver.TokenCreateParams{TenantID: "acme", Name: "ci", Role: batchtype.RoleAdmin, TokenHash: "h1"})
	if err != nil || a.ID == 0 {
		t.Fatalf("create: %+v, %v", a, err)
	}
	if _, err := s.TokenCreate(ctx, driver.TokenCreateParams{TenantID: "acme", Name: "x", Role: "root", TokenHash: "h2"}); err == nil {
		t.Fatal("a token with role root was stored")
	}
	if _, err := s.TokenCreate(ctx, driver.TokenCreateParams{TenantID: "other", Name: "dup", Role: batchtype.RoleViewer, TokenHash: "h1"}); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("a second token with the same hash = %v, want ErrConflict", err)
	}
	if _, err := s.TokenCreate(ctx, driver.TokenCreateParams{TenantID: "other", Name: "v", Role: batchtype.RoleViewer, TokenHash: "h3"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.TokenAuth(ctx, "h1")
	if err != nil || got.TenantID != "acme" || got.Role != batchtype.RoleAdmin || got.Name != "ci" {
		t.Fatalf("auth = %+v, %v", got, err)
	}
	if _, err := s.TokenAuth(ctx, "nope"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("auth of an unknown hash = %v", err)
	}
	if err := s.TokenRevoke(ctx, "other", a.ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("revoke of another tenant's token = %v", err)
	}
	if _, err := s.TokenAuth(ctx, "h1"); err != nil {
		t.Fatalf("another tenant revoked the token: %v", err)
	}
	if err := s.TokenRevoke(ctx, "acme", a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TokenAuth(ctx, "h1"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("auth of a revoked token = %v", err)
	}
	list, err := s.TokenList(ctx, "acme")
	if err != nil || len(list) != 1 || list[0].RevokedAt == nil {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

func testOutbox(t *testing.T, s driver.Store, ss driver.ServiceStore) {
	ctx := context.Background()
	e1, err := ss.EndpointCreate(ctx, driver.EndpointCreateParams{TenantID: tenant, URL: "http://a.example/hook", Secret: "whsec_a"})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := ss.EndpointCreate(ctx, driver.EndpointCreateParams{TenantID: tenant, URL: "http://b.example/hook", Secret: "whsec_b"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := ss.EndpointCreate(ctx, driver.EndpointCreateParams{TenantID: tenant, URL: "http://gone.example/hook", Secret: "whsec_c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss.EndpointCreate(ctx, driver.EndpointCreateParams{TenantID: "other", URL: "http://o.example/hook", Secret: "whsec_o"}); err != nil {
		t.Fatal(err)
	}
	if err := ss.EndpointDisable(ctx, "other", gone.ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another tenant disabled an endpoint: %v", err)
	}
	if err := ss.EndpointDisable(ctx, tenant, gone.ID); err != nil {
		t.Fatal(err)
	}
	eps, err := ss.EndpointList(ctx, tenant)
	if err != nil || len(eps) != 2 || eps[0].Secret != "" {
		t.Fatalf("endpoints = %+v, %v (want 2, without secrets)", eps, err)
	}

	// Nothing is sent before a batch ends.
	b := ingest(t, s, tenant, 4, 2)
	if ds, err := ss.DeliveriesClaim(ctx, driver.DeliveriesClaimParams{Limit: 10, Lease: time.Minute}); err != nil || len(ds) != 0 {
		t.Fatalf("deliveries of a running batch: %+v, %v", ds, err)
	}
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	ds, err := ss.DeliveriesClaim(ctx, driver.DeliveriesClaimParams{Limit: 10, Lease: time.Minute})
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries after the cancel: %+v, %v (want one per enabled endpoint of the tenant)", ds, err)
	}
	for _, d := range ds {
		if d.BatchID != b.ID || d.EventType != string(batchtype.EventCancelled) || d.Attempts != 0 || d.Secret == "" || d.URL == "" {
			t.Fatalf("delivery %+v", d)
		}
		var body struct {
			Type string `json:"type"`
			Data struct {
				BatchID int64            `json:"batch_id"`
				Status  batchtype.Status `json:"status"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(d.Payload), &body); err != nil || body.Type != "batch.cancelled" || body.Data.BatchID != b.ID || body.Data.Status != batchtype.StatusCancelled {
			t.Fatalf("payload %s: %+v, %v", d.Payload, body, err)
		}
	}
	// Claimed: not handed out again while the lease holds.
	if again, err := ss.DeliveriesClaim(ctx, driver.DeliveriesClaimParams{Limit: 10, Lease: time.Minute}); err != nil || len(again) != 0 {
		t.Fatalf("claimed twice: %+v, %v", again, err)
	}
	byEndpoint := map[int64]batchtype.Delivery{}
	for _, d := range ds {
		byEndpoint[d.EndpointID] = d
	}
	ok, failing := byEndpoint[e1.ID], byEndpoint[e2.ID]
	if err := ss.DeliveryRecord(ctx, driver.DeliveryRecordParams{ID: ok.ID, Status: batchtype.DeliveryDelivered, HTTPStatus: 204}); err != nil {
		t.Fatal(err)
	}
	if err := ss.DeliveryRecord(ctx, driver.DeliveryRecordParams{ID: failing.ID, Status: batchtype.DeliveryPending, RetryIn: -time.Second, HTTPStatus: 500, Error: "500 Internal Server Error"}); err != nil {
		t.Fatal(err)
	}
	retry, err := ss.DeliveriesClaim(ctx, driver.DeliveriesClaimParams{Limit: 10, Lease: time.Minute})
	if err != nil || len(retry) != 1 || retry[0].ID != failing.ID || retry[0].Attempts != 1 || retry[0].Payload != failing.Payload {
		t.Fatalf("the retry: %+v, %v", retry, err)
	}
	if err := ss.DeliveryRecord(ctx, driver.DeliveryRecordParams{ID: failing.ID, Status: batchtype.DeliveryDead, HTTPStatus: 500, Error: "gave up"}); err != nil {
		t.Fatal(err)
	}
	// A late record of a delivery already settled changes nothing.
	if err := ss.DeliveryRecord(ctx, driver.DeliveryRecordParams{ID: ok.ID, Status: batchtype.DeliveryDead}); err != nil {
		t.Fatal(err)
	}
	list, err := ss.DeliveriesList(ctx, driver.DeliveriesListParams{TenantID: tenant})
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	states := map[int64]string{}
	for _, d := range list {
		states[d.ID] = d.Status
	}
	if states[ok.ID] != batchtype.DeliveryDelivered || states[failing.ID] != batchtype.DeliveryDead {
		t.Fatalf("states %v", states)
	}
	if dead, _ := ss.DeliveriesList(ctx, driver.DeliveriesListParams{TenantID: tenant, Status: batchtype.DeliveryDead}); len(dead) != 1 || dead[0].Attempts != 2 || dead[0].LastError != "gave up" {
		t.Fatalf("dead: %+v", dead)
	}
	if theirs, _ := ss.DeliveriesList(ctx, driver.DeliveriesListParams{TenantID: "other"}); len(theirs) != 0 {
		t.Fatalf("another tenant sees %d deliveries", len(theirs))
	}

	// A batch that finishes sends batch.finished.
	f := ingest(t, s, tenant, 2, 2)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: f.ID})
	outs := make([]driver.RowOutcome, len(l.Rows))
	for i, r := range l.Rows {
		outs[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateSucceeded, ResultID: "x"}
	}
	if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: f.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outs, Release: true}); err != nil {
		t.Fatal(err)
	}
	fin, err := ss.DeliveriesClaim(ctx, driver.DeliveriesClaimParams{Limit: 10, Lease: time.Minute})
	if err != nil || len(fin) != 2 || fin[0].EventType != string(batchtype.EventFinished) || fin[0].BatchID != f.ID {
		t.Fatalf("deliveries of the finished batch: %+v, %v", fin, err)
	}
}

func testBatchListFilters(t *testing.T, s driver.Store) {
	ctx := context.Background()
	a := ingest(t, s, tenant, 2, 2)
	b := ingest(t, s, tenant, 2, 2)
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: a.ID}); err != nil {
		t.Fatal(err)
	}
	got, err := s.BatchList(ctx, driver.BatchListParams{TenantID: tenant, Status: batchtype.StatusCancelled})
	if err != nil || len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("cancelled: %+v, %v", got, err)
	}
	got, err = s.BatchList(ctx, driver.BatchListParams{TenantID: tenant, Status: batchtype.StatusRunning})
	if err != nil || len(got) != 1 || got[0].ID != b.ID {
		t.Fatalf("running: %+v, %v", got, err)
	}
	if got, _ := s.BatchList(ctx, driver.BatchListParams{TenantID: tenant, Kind: "nope"}); len(got) != 0 {
		t.Fatalf("kind nope: %d batches", len(got))
	}
	if got, _ := s.BatchList(ctx, driver.BatchListParams{TenantID: tenant, Kind: a.Kind}); len(got) != 2 {
		t.Fatalf("kind %s: %d batches", a.Kind, len(got))
	}
	// Needs attention: an invalid row, or paused; not merely cancelled.
	c := ingest(t, s, tenant, 2, 2, 3)
	if got, err := s.BatchList(ctx, driver.BatchListParams{TenantID: tenant, NeedsAttention: true}); err != nil || len(got) != 1 || got[0].ID != c.ID {
		t.Fatalf("needs attention: %+v, %v", got, err)
	}
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: tenant, ID: b.ID}, true); err != nil {
		t.Fatal(err)
	}
	if got, err := s.BatchList(ctx, driver.BatchListParams{TenantID: tenant, NeedsAttention: true}); err != nil || len(got) != 2 || got[0].ID != c.ID || got[1].ID != b.ID {
		t.Fatalf("needs attention, one paused: %+v, %v", got, err)
	}
}
