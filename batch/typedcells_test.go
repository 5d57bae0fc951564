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

type amountRow struct {
	Ref    string       `col:"ref" validate:"required"`
	Amount rows.Decimal `col:"amount"`
}

// TestTypedCellsUnderLocale: a mixed workbook imports in one pass with
// the locale de: the text cells are read in it, the cells Excel stored as
// numbers as the numbers they hold (issue 27, item 7: they were refused
// for their decimal point), and the worker binds the stored rows alike.
func TestTypedCellsUnderLocale(t *testing.T) {
	t.Parallel()
	f := excelize.NewFile()
	for i, row := range [][]any{{"ref", "amount"}, {"typed", 1234.5}, {"text", "1.234,5"}, {"whole", 7}, {"small", 0.125}} {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		if err := f.SetSheetRow("Sheet1", cell, &row); err != nil {
			t.Fatal(err)
		}
	}
	var book bytes.Buffer
	if err := f.Write(&book); err != nil {
		t.Fatal(err)
	}
	f.Close()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		reg := batch.NewRegistry()
		proc := batch.ProcessFunc[amountRow](func(_ context.Context, r amountRow) (string, error) {
			return r.Amount.String(), nil // the amount the worker bound
		})
		if err := batch.Register(reg, batch.Kind[amountRow]{Name: "amounts", Processor: proc}); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, bd.store, reg, 0)
		p := batch.ImportParams{Kind: "amounts", SourceName: "mixed.xlsx", Source: bytes.NewReader(book.Bytes())}
		if err := (batch.FileOptions{Locale: "de"}).Apply(&p); err != nil {
			t.Fatal(err)
		}
		b, err := e.Import(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if b.Counts[rows.StateValid] != 4 {
			t.Fatalf("counts %v, want 4 valid", b.Counts)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		list, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"typed": "1234.5", "text": "1234.5", "whole": "7", "small": "0.125"}
		for _, r := range list {
			if r.State != rows.StateSucceeded || r.ResultID != want[r.Values[0]] {
				t.Errorf("row %s: %s %q %v, want succeeded with %s", r.Values[0], r.State, r.ResultID, r.Errors, want[r.Values[0]])
			}
		}
	})
}
