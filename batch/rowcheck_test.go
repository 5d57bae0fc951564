package batch_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

type skuRow struct {
	SKU string `col:"sku,alias=article" validate:"required"`
	Qty int    `col:"qty" validate:"gte=0"`
}

// TestNaturalKey runs the duplicate check through Registry.DryRun, which
// validates exactly as Import does and needs no store.
func TestNaturalKey(t *testing.T) {
	t.Parallel()
	nop := batch.ProcessFunc[skuRow](func(context.Context, skuRow) (string, error) { return "", nil })
	reg := batch.NewRegistry()
	for _, k := range []batch.Kind[skuRow]{
		{Name: "named", Processor: nop, KeyName: "sku", KeyFunc: func(r skuRow) string { return strings.ToUpper(r.SKU) }},
		{Name: "unnamed", Processor: nop, KeyFunc: func(r skuRow) string { return r.SKU }},
		{Name: "panics", Processor: nop, KeyFunc: func(r skuRow) string {
			if r.SKU == "boom" {
				panic("key of boom")
			}
			return r.SKU
		}},
		{Name: "nokey", Processor: nop},
	} {
		if err := batch.Register(reg, k); err != nil {
			t.Fatal(err)
		}
	}
	const file = "Article,qty\n" +
		"a1,1\n" + // row 2
		"A1,2\n" + // row 3: same key as row 2 when upper-cased
		"b1,-1\n" + // row 4: invalid, takes no part
		"b1,3\n" + // row 5: the first valid b1
		"b1,4\n" + // row 6
		"boom,5\n" + // row 7
		"a1,6\n" // row 8
	run := func(kind string) map[int64]rows.FieldError {
		res, err := reg.DryRun(context.Background(), batch.ImportParams{Kind: kind, SourceName: "skus.csv", Source: strings.NewReader(file)})
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		out := map[int64]rows.FieldError{}
		for _, fe := range res.Errors {
			out[fe.Row] = fe
		}
		if res.Counts.Total() != 7 || int(res.Counts[rows.StateInvalid]) != len(out) {
			t.Errorf("%s: counts %v with errors %v", kind, res.Counts, res.Errors)
		}
		return out
	}

	got := run("named")
	for row, want := range map[int64]string{3: "same Article as row 2", 6: "same Article as row 5", 8: "same Article as row 2"} {
		fe := got[row]
		if fe.Code != rows.CodeDuplicateKey || fe.Message != want || fe.Column != "Article" || fe.Field != "SKU" {
			t.Errorf("named: row %d error %+v, want duplicate_key %q on column Article", row, fe, want)
		}
	}
	if len(got) != 4 || got[4].Code != "gte" {
		t.Errorf("named: errors %v, want rows 3, 4 (gte), 6, 8", got)
	}

	got = run("unnamed")
	if fe := got[8]; fe.Code != rows.CodeDuplicateKey || fe.Message != "same key as row 2" || fe.Column != "" {
		t.Errorf("unnamed: row 8 error %+v", fe)
	}
	if _, dup := got[3]; dup {
		t.Error("unnamed: A1 and a1 are different keys without the named kind's upper-casing")
	}

	got = run("panics")
	if fe := got[7]; fe.Code != rows.CodePanic || !strings.Contains(fe.Message, "key of boom") {
		t.Errorf("panics: row 7 error %+v, want a panic row error", fe)
	}

	if got := run("nokey"); len(got) != 1 {
		t.Errorf("nokey: errors %v, want only the gte of row 4", got)
	}
}
