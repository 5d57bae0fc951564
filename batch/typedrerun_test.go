package batch_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// workbook writes rows to a one-sheet workbook.
func workbook(t *testing.T, data [][]any) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for i, row := range data {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		if err := f.SetSheetRow("Sheet1", cell, &row); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestTypedCellsOnRerun: a corrected workbook re-run under the number
// format the batch keeps (de, declared at the import only) reads its typed
// number cells as the numbers they hold, as the import did.
func TestTypedCellsOnRerun(t *testing.T) {
	t.Parallel()
	first := workbook(t, [][]any{{"ref", "amount"}, {"typed", 1234.5}, {"bad", "x"}})
	fixed := workbook(t, [][]any{{"ref", "amount"}, {"typed", 1234.5}, {"bad", 99.5}})
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		reg := batch.NewRegistry()
		proc := batch.ProcessFunc[amountRow](func(_ context.Context, r amountRow) (string, error) { return r.Amount.String(), nil })
		if err := batch.Register(reg, batch.Kind[amountRow]{Name: "amounts", Processor: proc}); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, bd.store, reg, 0)
		p := batch.ImportParams{Kind: "amounts", SourceName: "first.xlsx", Source: bytes.NewReader(first)}
		if err := (batch.FileOptions{Locale: "de"}).Apply(&p); err != nil {
			t.Fatal(err)
		}
		b, err := e.Import(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if b.Counts[rows.StateInvalid] != 1 {
			t.Fatalf("import: %v, want the bad row invalid", b.Counts)
		}
		// No locale this time: the batch's own is the file's.
		if _, err := e.Rerun(ctx, batch.RerunParams{BatchID: b.ID, Source: bytes.NewReader(fixed), SourceName: "fixed.xlsx"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		list, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"typed": "1234.5", "bad": "99.5"}
		for _, r := range list {
			if r.State != rows.StateSucceeded || r.ResultID != want[r.Values[0]] {
				t.Errorf("row %s: %s %q %v, want succeeded with %s", r.Values[0], r.State, r.ResultID, r.Errors, want[r.Values[0]])
			}
		}
	})
}
