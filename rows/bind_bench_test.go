package rows_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rowfate/rowfate/rows"
)

// benchCustomer is a customers-like row: text, an upper-cased code, a date
// and an exact amount.
type benchCustomer struct {
	Email      string       `col:"email"`
	Name       string       `col:"name"`
	Country    string       `col:"country,upper"`
	SignupDate time.Time    `col:"signup_date"`
	Amount     rows.Decimal `col:"amount"`
}

// BenchmarkBind measures Mapping.Bind of one 5-column customers-like record
// (email, name, country, signup_date as time.Time, amount as rows.Decimal)
// into a struct: one op = one row bound, every cell valid. The binder and
// the mapping are built once, as the engine does per file. For real
// figures:
//
//	go test -run '^$' -bench Bind -benchmem -count 6 -cpu 1 ./rows
//
// allocs/op is allocations per row.
func BenchmarkBind(b *testing.B) {
	bd, err := rows.NewBinder(reflect.TypeFor[benchCustomer]())
	if err != nil {
		b.Fatal(err)
	}
	m, err := bd.Map([]string{"email", "name", "country", "signup_date", "amount"})
	if err != nil {
		b.Fatal(err)
	}
	if len(m.Missing) > 0 || len(m.Unknown) > 0 {
		b.Fatalf("mapping: missing %v, unknown %v", m.Missing, m.Unknown)
	}
	const n = 1000
	recs := make([][]string, n)
	for i := range recs {
		recs[i] = []string{
			fmt.Sprintf("user%d@example.com", i), fmt.Sprintf("Customer %d", i), "fr",
			fmt.Sprintf("2021-%02d-%02d", i%12+1, i%28+1), fmt.Sprintf("%d.%02d", i%1000, i%100),
		}
	}
	var (
		dst  benchCustomer
		last int
	)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		last = i % n
		dst = benchCustomer{}
		if errs := m.Bind(int64(last+2), recs[last], &dst); len(errs) > 0 {
			b.Fatalf("row %d: %v", last+2, rows.FieldErrors(errs))
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	// The last row bound is the one expected, converted.
	want := benchCustomer{
		Email: recs[last][0], Name: recs[last][1], Country: "FR",
		SignupDate: time.Date(2021, time.Month(last%12+1), last%28+1, 0, 0, 0, 0, time.UTC),
		Amount:     rows.NewDecimal(int64(last%1000*100+last%100), 2),
	}
	if dst.Email != want.Email || dst.Name != want.Name || dst.Country != want.Country ||
		!dst.SignupDate.Equal(want.SignupDate) || dst.Amount.Cmp(want.Amount) != 0 {
		b.Fatalf("bound %+v, want %+v", dst, want)
	}
}
