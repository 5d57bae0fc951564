package batch_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
)

// filterRow is the row of the test's Go export kinds.
type filterRow struct {
	ID string `col:"id"`
}

// TestExportFilterSeam: the engine checks a filter before anything is
// written, resolves its batch into the result ids the source keeps, and
// records it on the export's batch; a source that cannot filter refuses
// every filter.
func TestExportFilterSeam(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		reg := customersRegistry(t, bd)
		var got batch.ExportFilter
		// A Go export of the customers import's rows, which yields the
		// result ids it was handed.
		if err := batch.RegisterExport(reg, batch.ExportKind[filterRow]{Name: customers.Name,
			CheckFilter: func(f batch.ExportFilter) error {
				if f.Where == "bad" {
					return errors.New("cannot read bad")
				}
				return nil
			},
			FilterRowsFunc: func(_ context.Context, f batch.ExportFilter) iter.Seq2[filterRow, error] {
				got = f
				return func(yield func(filterRow, error) bool) {
					for _, id := range slices.Sorted(maps.Keys(f.ResultIDs)) {
						if !yield(filterRow{ID: id}, nil) {
							return
						}
					}
				}
			}}); err != nil {
			t.Fatal(err)
		}
		if err := batch.RegisterExport(reg, batch.ExportKind[filterRow]{Name: "plain",
			RowsFunc: func(context.Context) iter.Seq2[filterRow, error] {
				return func(yield func(filterRow, error) bool) { yield(filterRow{ID: "x"}, nil) }
			}}); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, bd.store, reg, 0)
		imp := importAndWork(t, e, bd, "c.csv", []byte("email,name,country,signup_date,amount\n"+
			"a@x.com,A,DE,2024-01-02,1\nnot-an-email,B,DE,2024-01-02,1\nc@x.com,C,FR,2024-01-02,3\n"))
		rs, err := e.Rows(ctx, batch.RowsParams{BatchID: imp.ID, State: rows.StateSucceeded})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, r := range rs {
			want[r.ResultID] = true
		}
		if len(want) != 2 {
			t.Fatalf("the import's result ids: %v", want)
		}

		var file bytes.Buffer
		b, err := e.Export(ctx, customers.Name, batch.ExportParams{DestName: "out.csv", Dest: &file,
			Filter: batch.ExportFilter{Where: "anything", BatchID: imp.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got.ResultIDs, want) || got.Where != "anything" || b.Counts[rows.StateSucceeded] != 2 {
			t.Errorf("the source got %+v (want result ids %v); the batch counts %v", got, want, b.Counts)
		}
		if !maps.Equal(b.Recalc, map[string]string{"where": "anything", "batch": strconv.FormatInt(imp.ID, 10), "state": "succeeded"}) {
			t.Errorf("the batch records %v", b.Recalc)
		}
		b, err = e.Export(ctx, customers.Name, batch.ExportParams{DestName: "out.csv", Dest: &file,
			Filter: batch.ExportFilter{BatchID: imp.ID, State: rows.StateInvalid}})
		if err != nil || len(got.ResultIDs) != 0 || got.ResultIDs == nil || b.Counts.Total() != 0 {
			t.Errorf("the invalid rows name no row: %v, %+v, %v", err, got, b)
		}

		before, err := e.Batches(ctx, batch.BatchesParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name        string
			kind        string
			tenant      string
			f           batch.ExportFilter
			option      string
			unsupported bool
			notFound    bool
		}{
			{"plain where", "plain", "", batch.ExportFilter{Where: "id=x"}, batch.FilterWhere, true, false},
			{"plain batch", "plain", "", batch.ExportFilter{BatchID: imp.ID}, batch.FilterBatch, true, false},
			{"state without batch", customers.Name, "", batch.ExportFilter{State: rows.StateSucceeded}, batch.FilterState, false, false},
			{"unknown state", customers.Name, "", batch.ExportFilter{BatchID: imp.ID, State: "nope"}, batch.FilterState, false, false},
			{"refused where", customers.Name, "", batch.ExportFilter{Where: "bad"}, batch.FilterWhere, false, false},
			{"another tenant's batch", customers.Name, "other", batch.ExportFilter{BatchID: imp.ID}, batch.FilterBatch, false, true},
			{"a batch that is not there", customers.Name, "", batch.ExportFilter{BatchID: b.ID + 100}, batch.FilterBatch, false, true},
		} {
			var file bytes.Buffer
			_, err := e.Export(ctx, tc.kind, batch.ExportParams{TenantID: tc.tenant, DestName: "out.csv", Dest: &file, Filter: tc.f})
			var fe *batch.FilterError
			if !errors.As(err, &fe) || !errors.Is(err, batch.ErrBadFilter) || !errors.Is(err, batch.ErrBadParams) {
				t.Errorf("%s: want a *FilterError, got %v", tc.name, err)
				continue
			}
			if fe.Option != tc.option || fe.Unsupported != tc.unsupported || errors.Is(err, batch.ErrNotFound) != tc.notFound {
				t.Errorf("%s: %+v (%v)", tc.name, fe, err)
			}
			if file.Len() != 0 {
				t.Errorf("%s: %d bytes written", tc.name, file.Len())
			}
		}
		after, err := e.Batches(ctx, batch.BatchesParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Errorf("refused exports created %d batches", len(after)-len(before))
		}
		// The plain kind exports as ever without a filter.
		if b, err := e.Export(ctx, "plain", batch.ExportParams{DestName: "p.csv", Dest: &file}); err != nil || b.Counts.Total() != 1 || len(b.Recalc) != 0 {
			t.Errorf("plain export: %v, %+v", err, b)
		}
	})
}
