package httpcall_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/httpcall"
)

// Order is a row of an orders file.
type Order struct {
	Ref    string  `col:"ref" validate:"required" json:"ref"`
	Amount float64 `col:"amount" validate:"gte=0" json:"amount"`
}

// Example wires the processor into a keyed kind: the engine claims each
// row's effect key before it runs the row, and the API applies each key
// once.
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id":"ord_%s"}`, r.Header.Get("X-Rowfate-Row"))
	}))
	defer api.Close()

	p, err := httpcall.New(httpcall.Config[Order]{
		URL:    api.URL + "/orders",
		Header: http.Header{"Authorization": {"Bearer token"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	reg := batch.NewRegistry()
	if err := batch.Register(reg, batch.Kind[Order]{
		Name:         "orders",
		Processor:    p,
		KeyedEffects: true,
		Timeout:      10 * time.Second,
	}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reg.Kinds()[0].Guarantee)

	// The engine calls Process with the row's RowInfo in ctx.
	ctx := batch.ContextWithRow(context.Background(), batch.RowInfo{TenantID: "acme", BatchID: 1, RowNo: 2, Attempt: 1, EffectKey: "acme/1/2"})
	id, err := p.Process(ctx, Order{Ref: "A-1", Amount: 9.5})
	fmt.Println(id, err)
	// Output:
	// once-per-effect-key
	// ord_2 <nil>
}
