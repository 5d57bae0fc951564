package customers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/validate"
)

// BenchmarkValidateCustomers measures the four validation phases for one
// customers row (one op = one row), on rows like fixtures/customers.csv:
// mostly valid, one in ten with an error. Report rows/s on one core with
//
//	go test -run '^$' -bench ValidateCustomers -benchmem -count 6 -cpu 1 ./processors/customers
//
// allocs/op is allocations per row.
func BenchmarkValidateCustomers(b *testing.B) {
	p, err := validate.New[customers.Customer]()
	if err != nil {
		b.Fatal(err)
	}
	m, err := p.Binder().Map([]string{"email", "name", "country", "signup_date", "amount"})
	if err != nil {
		b.Fatal(err)
	}
	const n = 1000
	recs := make([]rows.Record, n)
	for i := range recs {
		recs[i] = rows.Record{Row: int64(i + 2), Values: []string{
			fmt.Sprintf("user%d@example.com", i), fmt.Sprintf("Customer %d", i), "FR",
			fmt.Sprintf("2021-%02d-%02d", i%12+1, i%28+1), fmt.Sprintf("%d.%02d", i%1000, i%100),
		}}
		if i%10 == 9 {
			recs[i].Values[0] = "not-an-email"
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	invalid := 0
	for i := 0; b.Loop(); i++ {
		if _, errs := p.Run(ctx, m, recs[i%n]); len(errs) > 0 {
			invalid++
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	if b.N >= n && invalid == 0 {
		b.Fatal("no row was invalid: the benchmark does not exercise errors")
	}
}
