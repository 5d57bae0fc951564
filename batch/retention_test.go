package batch_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// TestPurgedBatch: a purged batch reads back with its outcomes and errors
// and without values, says so, and everything that needs the values
// refuses it, naming the batch and the date.
func TestPurgedBatch(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		src, err := os.ReadFile("../fixtures/customers.csv")
		if err != nil {
			t.Fatal(err)
		}
		before := importAndWork(t, e, bd, "customers.csv", src)
		b := before
		if _, err := e.Purge(ctx, batch.PurgeParams{}); !errors.Is(err, batch.ErrInvalidRequest) {
			t.Fatalf("purge of nothing named = %v, want ErrInvalidRequest", err)
		}
		ps, err := e.Purge(ctx, batch.PurgeParams{BatchID: b.ID, Actor: "ops"})
		if err != nil || len(ps) != 1 || ps[0].Rows != before.Counts.Total() {
			t.Fatalf("purge = %+v, %v", ps, err)
		}
		got, err := e.Batch(ctx, batch.BatchParams{ID: b.ID})
		if err != nil || got.ValuesPurgedAt == nil || got.ValuesPurgedBy != batchtype.PurgedByCommand || got.Counts.Total() != before.Counts.Total() {
			t.Fatalf("purged batch = %+v, %v", got, err)
		}
		page, err := e.Rows(ctx, batch.RowsParams{BatchID: b.ID, State: rows.StateInvalid, Limit: 5})
		if err != nil || len(page) == 0 {
			t.Fatalf("invalid rows = %d, %v", len(page), err)
		}
		for _, r := range page {
			if !r.ValuesPurged || r.Values != nil || len(r.Errors) == 0 {
				t.Fatalf("purged invalid row = %+v", r)
			}
		}
		date := got.ValuesPurgedAt.UTC().Format("2006-01-02")
		refused := func(what string, err error) {
			t.Helper()
			var pe *batch.ValuesPurgedError
			if !errors.As(err, &pe) || pe.BatchID != b.ID || !strings.Contains(err.Error(), date) || !strings.Contains(err.Error(), "by command") {
				t.Fatalf("%s of a purged batch = %v, want a ValuesPurgedError naming batch %d and %s", what, err, b.ID, date)
			}
		}
		var report bytes.Buffer
		_, err = e.ErrorReport(ctx, batch.ErrorReportParams{BatchID: b.ID}, &report)
		refused("error report", err)
		if report.Len() != 0 {
			t.Fatalf("a refused report wrote %d bytes", report.Len())
		}
		_, err = e.Rerun(ctx, batch.RerunParams{BatchID: b.ID})
		refused("re-run", err)
		_, err = e.Retry(ctx, batch.RetryParams{TenantID: batch.DefaultTenant, BatchID: b.ID, States: []rows.State{rows.StateFailed}})
		refused("retry", err)
		_, err = e.EditRow(ctx, batch.EditRowParams{BatchID: b.ID, RowNo: page[0].RowNo, Set: map[string]string{"email": "a@example.com"}})
		refused("edit", err)
		again, err := e.Purge(ctx, batch.PurgeParams{BatchID: b.ID})
		if err != nil || len(again) != 1 || !again[0].Already {
			t.Fatalf("second purge = %+v, %v", again, err)
		}
		hist, err := e.History(ctx, batch.HistoryParams{BatchID: b.ID})
		if err != nil || len(hist) != 1 || hist[0].Action != "purge" || hist[0].Actor != "ops" {
			t.Fatalf("history = %+v, %v", hist, err)
		}
	})
}
