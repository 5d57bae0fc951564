package batch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/rows"
)

// BenchmarkBulkSet times Engine.BulkRows on PostgreSQL over a keyed kind's
// 1,000,000-row batch with 100,000 invalid rows (a negative amount): one
// op fixes every invalid row's amount (they become valid, so their emails
// are checked against the batch's keys), the next breaks them again with
// a replace (they become invalid): each op reads, validates and writes
// 100,000 rows. With -short (make test runs every benchmark once) the
// batch has 10,000 rows.
func BenchmarkBulkSet(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 10_000
	}
	ctx := context.Background()
	s := teststore.PostgresCustomPlans(b)
	reg := batch.NewRegistry()
	if err := batch.Register(reg, batch.Kind[member]{Name: "members", KeyName: "email",
		KeyFunc:   func(m member) string { return strings.ToLower(m.Email) },
		Processor: batch.ProcessFunc[member](func(_ context.Context, m member) (string, error) { return m.Email, nil })}); err != nil {
		b.Fatal(err)
	}
	e, err := batch.NewEngine(batch.Config{Store: s, Registry: reg, LeaseDuration: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	var in strings.Builder
	in.WriteString("email,name,amount\n")
	for i := range n {
		amount := "1"
		if i%10 == 9 {
			amount = "-1"
		}
		fmt.Fprintf(&in, "m%d@example.com,Member %d,%s\n", i, i, amount)
	}
	bt, err := e.Import(ctx, batch.ImportParams{Kind: "members", SourceName: "m.csv", Source: strings.NewReader(in.String())})
	if err != nil {
		b.Fatal(err)
	}
	fix := batch.BulkRowsParams{BatchID: bt.ID, Action: batch.BulkSet, Filter: batch.RowFilter{States: []rows.State{rows.StateInvalid}, Column: "amount"}, Column: "amount", Value: "5"}
	brk := batch.BulkRowsParams{BatchID: bt.ID, Action: batch.BulkReplace, Filter: batch.RowFilter{States: []rows.State{rows.StateValid}}, Column: "amount", Find: "5", Replace: "-5"}
	i := 0
	for b.Loop() {
		p := fix
		if i%2 == 1 {
			p = brk
		}
		res, err := e.BulkRows(ctx, p)
		if err != nil || res.Changed != int64(n/10) {
			b.Fatalf("bulk %s: %+v, %v", p.Action, res, err)
		}
		i++
	}
	b.ReportMetric(float64(n/10)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
