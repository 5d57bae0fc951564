package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// TestMaxFailed: a batch whose worked rows fail past its bound is paused by
// the flush that passes it, before all its rows ran, with a paused event
// that says why and a batch.paused webhook; it is not resumed while its
// failures pass the bound; a raised bound lets it resume and finish, and a
// bound tightened on a running batch pauses it at once. Both stores.
func TestMaxFailed(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		p := &outcomeProcessor{calls: map[string]int{}}
		reg := batch.NewRegistry()
		if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "outcomes", Processor: p, ChunkSize: 10}); err != nil {
			t.Fatal(err)
		}
		svc := bd.store.(driver.ServiceStore)
		if _, err := svc.EndpointCreate(ctx, driver.EndpointCreateParams{TenantID: batch.DefaultTenant, URL: "https://example.com/hook", Secret: "s"}); err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		if err := batch.Register(reg, batch.Kind[outcomeRow]{Name: "stopper", ChunkSize: 10,
			Processor: batch.ProcessFunc[outcomeRow](func(_ context.Context, r outcomeRow) (string, error) {
				switch {
				case r.Key == "x3":
					stop() // the worker stops after this row
				case r.Mode == "permanent":
					return "", batch.Permanent(errors.New("declined"))
				}
				return "id-" + r.Key, nil
			})}); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, bd.store, reg, 0)
		// 200 rows, every other one declined for good, and one invalid row
		// (not counted: it is not a row to work).
		var src strings.Builder
		src.WriteString("key,mode\n")
		for i := range 200 {
			mode := "ok"
			if i%2 == 1 {
				mode = "permanent"
			}
			fmt.Fprintf(&src, "k%d,%s\n", i, mode)
		}
		src.WriteString("bad,bogus\n")
		bound, err := batch.ParseThreshold("10%")
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Import(ctx, batch.ImportParams{Kind: "outcomes", SourceName: "o.csv", Source: strings.NewReader(src.String()), MaxFailed: bound})
		if err != nil {
			t.Fatal(err)
		}
		if b.MaxFailed != bound {
			t.Fatalf("MaxFailed = %v, want %v", b.MaxFailed, bound)
		}
		// UntilDone returns: a batch paused by its bound waits for a person.
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true, Workers: 1}); err != nil {
			t.Fatal(err)
		}
		b, err = e.Batch(ctx, batch.BatchParams{ID: b.ID})
		if err != nil {
			t.Fatal(err)
		}
		failures, worked := batchtype.FailureBound(b.Counts)
		if !b.Paused || b.Status != batchtype.StatusRunning || worked != 200 || failures <= 20 || b.Counts.Open() == 0 {
			t.Fatalf("after the bound: paused %v status %s counts %v", b.Paused, b.Status, b.Counts)
		}
		// One worker, chunks of 10 with 5 failures each: the fifth chunk
		// passes 20 failures, and its flush pauses the batch.
		if failures != 25 {
			t.Errorf("failures = %d, want 25 (the flush that passed the bound paused the batch)", failures)
		}
		evs, err := e.Events(ctx, batch.EventsParams{BatchID: b.ID})
		if err != nil {
			t.Fatal(err)
		}
		var paused *batchtype.Event
		for i := range evs {
			if evs[i].Type == batchtype.EventPaused {
				paused = &evs[i]
			}
		}
		if paused == nil || !paused.Paused || paused.Reason != "25 of 200 rows failed, more than its max-failed 10%" {
			t.Fatalf("paused event: %+v", paused)
		}
		ds, err := svc.DeliveriesList(ctx, driver.DeliveriesListParams{TenantID: batch.DefaultTenant})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].EventType != string(batchtype.EventPaused) || ds[0].BatchID != b.ID {
			t.Fatalf("deliveries: %+v", ds)
		}
		var hook struct {
			Type string `json:"type"`
			Data struct {
				Reason string `json:"reason"`
				Paused bool   `json:"paused"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(ds[0].Payload), &hook); err != nil || hook.Type != "batch.paused" || !hook.Data.Paused || hook.Data.Reason != paused.Reason {
			t.Fatalf("webhook payload %s: %v", ds[0].Payload, err)
		}

		// Resuming as it is would pause it again at once: refused.
		if _, err := e.PauseBatch(ctx, batch.DefaultTenant, b.ID, false); !errors.Is(err, batch.ErrPastBound) {
			t.Fatalf("resume past the bound: %v, want ErrPastBound", err)
		}
		// A bound the failures do not pass lets it go on; it pauses again
		// when they pass that one.
		raised, _ := batch.ParseThreshold("40")
		if b, err = e.Limit(ctx, batch.DefaultTenant, b.ID, raised); err != nil || !b.Paused || b.MaxFailed != raised {
			t.Fatalf("limit: %+v, %v", b, err)
		}
		if _, err := e.PauseBatch(ctx, batch.DefaultTenant, b.ID, false); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true, Workers: 1}); err != nil {
			t.Fatal(err)
		}
		b, _ = e.Batch(ctx, batch.BatchParams{ID: b.ID})
		if failures, _ := batchtype.FailureBound(b.Counts); !b.Paused || failures != 45 {
			t.Fatalf("after the raised bound: paused %v counts %v", b.Paused, b.Counts)
		}
		// Lifted: it finishes, every row worked.
		if _, err := e.Limit(ctx, batch.DefaultTenant, b.ID, batch.Threshold{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.PauseBatch(ctx, batch.DefaultTenant, b.ID, false); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		b, _ = e.Batch(ctx, batch.BatchParams{ID: b.ID})
		if b.Status != batchtype.StatusFinished || b.Counts[rows.StateFailed] != 100 || b.Counts[rows.StateSucceeded] != 100 {
			t.Fatalf("lifted: status %s counts %v", b.Status, b.Counts)
		}

		// A bound tightened on a running batch past it pauses it at once:
		// a worker stopped after its first rows, one of them failed.
		src.Reset()
		src.WriteString("key,mode\nx1,permanent\nx2,ok\nx3,ok\n")
		for i := range 30 {
			fmt.Fprintf(&src, "y%d,ok\n", i)
		}
		b2, err := e.Import(ctx, batch.ImportParams{Kind: "stopper", SourceName: "o2.csv", Source: strings.NewReader(src.String())})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(wctx, batch.WorkParams{BatchID: b2.ID, Workers: 1}); err != nil {
			t.Fatal(err)
		}
		if b2, _ = e.Batch(ctx, batch.BatchParams{ID: b2.ID}); b2.Counts[rows.StateFailed] != 1 || b2.Status != batchtype.StatusRunning {
			t.Fatalf("stopped worker: status %s counts %v", b2.Status, b2.Counts)
		}
		none, _ := batch.ParseThreshold("0")
		b2, err = e.Limit(ctx, batch.DefaultTenant, b2.ID, none)
		if err != nil || !b2.Paused || b2.Status != batchtype.StatusRunning {
			t.Fatalf("tightened: %+v, %v", b2, err)
		}
		evs, _ = e.Events(ctx, batch.EventsParams{BatchID: b2.ID})
		if last := evs[len(evs)-1]; last.Type != batchtype.EventPaused || last.Reason != "1 of 33 rows failed, more than its max-failed 0" {
			t.Fatalf("last event: %+v", last)
		}
	})
}
