package batch_test

import (
	"context"
	"errors"
	"iter"
	"reflect"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// idRow is a dynamic recalculation's row type, as reflect.StructOf would
// build it.
var idRow = reflect.StructOf([]reflect.StructField{{Name: "ID", Type: reflect.TypeFor[string](), Tag: `col:"id" validate:"required"`}})

func idRecalc(version int64, ids ...string) batch.DynamicRecalc {
	return batch.DynamicRecalc{
		Kind: batch.DynamicKind{Name: "ids", Description: "ids", Version: version, Type: idRow,
			ProcessTx: func(_ context.Context, _ batch.Tx, _ *rows.Mapping, rs []reflect.Value) ([]batch.Result, error) {
				out := make([]batch.Result, len(rs))
				for i, r := range rs {
					out[i].ID = r.Elem().Field(0).String()
				}
				return out, nil
			}},
		RowsFunc: func(context.Context, string, map[string]string) iter.Seq2[[]string, error] {
			return func(yield func([]string, error) bool) {
				for _, id := range ids {
					if !yield([]string{id}, nil) {
						return
					}
				}
			}
		},
	}
}

// TestDynamicRecalc: a recalculation registered at run time is listed as
// one, versioned, replaced and removed; its rows are worked in the flush
// transaction; a source that yields nothing creates no batch.
func TestDynamicRecalc(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		reg := batch.NewRegistry()
		if err := batch.RegisterDynamicRecalc(reg, idRecalc(1, "a", "b")); err != nil {
			t.Fatal(err)
		}
		if ks := reg.Kinds(); len(ks) != 1 || ks[0].Direction != batch.DirectionRecalc || !reg.IsRecalc("ids") {
			t.Fatalf("kinds: %+v", ks)
		}
		if v, ok := reg.DynamicRecalcVersion("ids"); !ok || v != 1 {
			t.Fatalf("version %d %v", v, ok)
		}
		if _, ok := reg.DynamicVersion("ids"); ok {
			t.Error("a recalculation is listed as a dynamic import kind")
		}
		if err := batch.RegisterDynamic(reg, idRecalc(2).Kind); err == nil {
			t.Error("an import kind replaced a recalculation")
		}
		e, err := batch.NewEngine(batch.Config{Store: bd.store, Registry: reg, LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Recalc(ctx, batch.RecalcParams{Kind: "ids", Params: map[string]string{"x": "1"}}); !errors.Is(err, batch.ErrBadParams) {
			t.Errorf("parameters to a recalculation without CheckParams: %v", err)
		}
		b, err := e.Recalc(ctx, batch.RecalcParams{Kind: "ids"})
		if err != nil || b.Counts.Total() != 2 {
			t.Fatalf("recalc: %+v %v", b, err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		if err := batch.RegisterDynamicRecalc(reg, idRecalc(2)); err != nil {
			t.Fatal(err)
		}
		if v, _ := reg.DynamicRecalcVersion("ids"); v != 2 {
			t.Errorf("version %d after the replacement", v)
		}
		if _, err := e.Recalc(ctx, batch.RecalcParams{Kind: "ids"}); !errors.Is(err, batch.ErrNoMatch) || !errors.Is(err, batch.ErrInvalidRequest) {
			t.Errorf("an empty source: %v, want ErrNoMatch", err)
		}
		reg.UnregisterDynamicRecalc("ids")
		if reg.IsRecalc("ids") || reg.Has("ids") {
			t.Error("unregistered, still there")
		}
	})
}
