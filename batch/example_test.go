package batch_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/sqlite"
)

// Order is a row type: col tags bind the file's columns, validate tags are
// the declarative phase.
type Order struct {
	Ref string `col:"ref" validate:"required"`
	Qty int    `col:"quantity,alias=qty" validate:"gte=1"`
}

// Example imports a CSV into the embedded SQLite store, works its valid rows
// and reads the outcome back.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rowfate-example")
	defer os.RemoveAll(dir)

	store, err := sqlite.Open(filepath.Join(dir, "rowfate.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	reg := batch.NewRegistry()
	err = batch.Register(reg, batch.Kind[Order]{
		Name: "orders",
		Processor: batch.ProcessFunc[Order](func(ctx context.Context, o Order) (string, error) {
			return "order-" + o.Ref, nil // the engine records the outcome
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	engine, err := batch.NewEngine(batch.Config{Store: store, Registry: reg})
	if err != nil {
		log.Fatal(err)
	}

	src := strings.NewReader("ref,qty\nA1,2\nA2,0\n,5\n")
	b, err := engine.Import(ctx, batch.ImportParams{Kind: "orders", SourceName: "orders.csv", Source: src})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := engine.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); err != nil {
		log.Fatal(err)
	}
	b, _ = engine.Batch(ctx, batch.BatchParams{ID: b.ID})
	fmt.Println(b.Status, b.Counts[rows.StateSucceeded], "succeeded,", b.Counts[rows.StateInvalid], "invalid")

	bad, _ := engine.Rows(ctx, batch.RowsParams{BatchID: b.ID, State: rows.StateInvalid})
	for _, r := range bad {
		fmt.Printf("row %d: %s\n", r.RowNo, rows.FieldErrors(r.Errors).Error())
	}
	// Output:
	// finished 1 succeeded, 2 invalid
	// row 3: qty: must be ≥ 1
	// row 4: ref: is required
}
