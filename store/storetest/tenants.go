package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// testCrossTenant calls every tenant-scoped method as tenant "other" with
// tenant t1's ids: each returns not-found or nothing, and t1's batch,
// rows, events, tokens and endpoints are unchanged.
func testCrossTenant(t *testing.T, s driver.Store) {
	ctx := context.Background()
	const other = "other"
	b := ingest(t, s, tenant, 4, 2, 3)
	l := claim(t, s, driver.ChunkClaimParams{BatchID: b.ID})
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, driver.ErrNotFound) && !errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("%s as another tenant = %v, want not found", what, err)
		}
	}
	_, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: other, ID: b.ID})
	notFound("BatchGet", err)
	_, err = s.BatchFind(ctx, driver.BatchFindParams{TenantID: other, Kind: b.Kind, SourceDigest: b.SourceDigest})
	notFound("BatchFind", err)
	if bs, err := s.BatchList(ctx, driver.BatchListParams{TenantID: other}); err != nil || len(bs) != 0 {
		t.Errorf("BatchList as another tenant = %d batches, %v", len(bs), err)
	}
	notFound("LeaseRenew", s.LeaseRenew(ctx, driver.LeaseRenewParams{TenantID: other, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, LeaseDuration: time.Minute}))
	_, err = s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: other, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token,
		Outcomes: []driver.RowOutcome{{RowNo: l.Rows[0].RowNo, State: rows.StateSucceeded, ResultID: "forged"}}})
	notFound("ChunkFlush", err)
	_, err = s.EffectsClaim(ctx, driver.EffectsClaimParams{TenantID: other, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token,
		Effects: []driver.EffectRef{{RowNo: l.Rows[0].RowNo, Key: "k", Digest: "d"}}})
	notFound("EffectsClaim", err)
	_, err = s.BatchCancel(ctx, driver.BatchControlParams{TenantID: other, ID: b.ID})
	notFound("BatchCancel", err)
	_, err = s.BatchPause(ctx, driver.BatchControlParams{TenantID: other, ID: b.ID}, true)
	notFound("BatchPause", err)
	if n, err := s.RowsRetry(ctx, driver.RowsRetryParams{TenantID: other, BatchID: b.ID, States: []rows.State{rows.StateFailed, rows.StateDead, rows.StateUnknown}}); err == nil && n != 0 {
		t.Errorf("RowsRetry as another tenant retried %d rows", n)
	}
	if err := s.RowSettle(ctx, driver.RowSettleParams{TenantID: other, BatchID: b.ID, RowNo: 2, State: rows.StateSucceeded, ResultID: "x"}); err == nil {
		t.Error("RowSettle as another tenant succeeded")
	}
	if rs, err := s.RowsList(ctx, driver.RowsListParams{TenantID: other, BatchID: b.ID}); err != nil || len(rs) != 0 {
		t.Errorf("RowsList as another tenant = %d rows, %v", len(rs), err)
	}
	if c, err := s.RowsCount(ctx, driver.RowsCountParams{TenantID: other, BatchID: b.ID}); err != nil || c.Total() != 0 {
		t.Errorf("RowsCount as another tenant = %v, %v", c, err)
	}
	_, err = s.EventsList(ctx, driver.EventsListParams{TenantID: other, BatchID: b.ID})
	notFound("EventsList", err)
	_, err = s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: other, BatchID: b.ID, Replace: []driver.RerunRow{{RowNo: 3, State: rows.StateValid, Values: []string{"x"}}}})
	if err == nil {
		t.Error("BatchRerun as another tenant succeeded")
	}
	if err := s.RowReview(ctx, driver.RowReviewParams{TenantID: other, BatchID: b.ID, RowNo: 3, From: rows.StateInvalid, State: rows.StateSkipped, Action: "skip"}); err == nil {
		t.Error("RowReview as another tenant succeeded")
	}
	if h, err := s.HistoryList(ctx, driver.HistoryListParams{TenantID: other, BatchID: b.ID}); err == nil && len(h) != 0 {
		t.Errorf("HistoryList as another tenant = %d entries", len(h))
	}
	if ss, ok := s.(driver.ServiceStore); ok {
		tok, err := ss.TokenCreate(ctx, driver.TokenCreateParams{TenantID: tenant, Name: "n", Role: batchtype.RoleAdmin, TokenHash: "cross-tenant-hash"})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := ss.EndpointCreate(ctx, driver.EndpointCreateParams{TenantID: tenant, URL: "https://t1.example/hook", Secret: "whsec_eA=="})
		if err != nil {
			t.Fatal(err)
		}
		notFound("TokenRevoke", ss.TokenRevoke(ctx, other, tok.ID))
		notFound("EndpointDisable", ss.EndpointDisable(ctx, other, ep.ID))
		if ts, _ := ss.TokenList(ctx, other); len(ts) != 0 {
			t.Errorf("TokenList as another tenant = %d", len(ts))
		}
		if es, _ := ss.EndpointList(ctx, other); len(es) != 0 {
			t.Errorf("EndpointList as another tenant = %d", len(es))
		}
		if ds, _ := ss.DeliveriesList(ctx, driver.DeliveriesListParams{TenantID: other}); len(ds) != 0 {
			t.Errorf("DeliveriesList as another tenant = %d", len(ds))
		}
		if _, err := ss.TokenAuth(ctx, "cross-tenant-hash"); err != nil {
			t.Errorf("the token was touched: %v", err)
		}
	}
	// Nothing of t1's changed.
	got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	if err != nil || got.Status != batchtype.StatusRunning || got.Paused {
		t.Fatalf("t1's batch after the attempts: %+v, %v", got, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateProcessing: 1, rows.StateValid: 2, rows.StateInvalid: 1})
	if h, _ := s.HistoryList(ctx, driver.HistoryListParams{TenantID: tenant, BatchID: b.ID}); len(h) != 0 {
		t.Errorf("t1's history: %d entries", len(h))
	}
}
