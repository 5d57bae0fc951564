package server_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
)

// BenchmarkWorkWatched measures the engine's throughput working a
// 20,000-row batch on PostgreSQL while 0 or 50 websocket clients watch it:
// what the streams cost the workers. Run the two side by side, several
// times, and compare medians:
//
//	go test -run '^$' -bench WorkWatched -count 6 ./server
func BenchmarkWorkWatched(b *testing.B) {
	const rowsPerBatch = 20_000
	for _, subscribers := range []int{0, 50} {
		b.Run(fmt.Sprintf("subscribers=%d", subscribers), func(b *testing.B) {
			s := teststore.Postgres(b)
			h := start(b, s, options{})
			e := engine(b, s, 500)
			var total int64
			for b.Loop() {
				b.StopTimer()
				bt := importOrders(b, e, rowsPerBatch)
				var wg sync.WaitGroup
				for range subscribers {
					c := h.dial(b, bt.ID, 0)
					wg.Go(func() {
						defer c.Close()
						if g := follow(b, c); g.err != nil {
							b.Error(g.err)
						}
					})
				}
				b.StartTimer()
				stats, err := e.Work(context.Background(), batch.WorkParams{BatchID: bt.ID, TenantIDs: []string{tenant}, Workers: 2, UntilDone: true})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				total += stats.Rows
				wg.Wait()
				checkDone(b, s, bt.ID)
				b.StartTimer()
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func checkDone(b *testing.B, s driver.Store, id int64) {
	bt, err := s.BatchGet(context.Background(), driver.BatchGetParams{TenantID: tenant, ID: id})
	if err != nil || bt.Status != batchtype.StatusFinished {
		b.Fatalf("batch %d: %+v, %v", id, bt, err)
	}
}

// BenchmarkAPIBigBatch measures what the admin page asks of the API on a
// big batch on PostgreSQL: the batch (counts summed over its count groups), the
// first page of its rows, a page from its middle, the first page of its
// invalid rows (one row in 1,000 is invalid, so the page walks 50,000
// rows), and the batch list. The batch has ROWFATE_BENCH_ROWS rows
// (default 100,000; BENCHMARKS.md quotes 1,000,000):
//
//	ROWFATE_BENCH_ROWS=1000000 go test -run '^$' -bench APIBigBatch -count 6 ./server
func BenchmarkAPIBigBatch(b *testing.B) {
	n := 100_000
	if v := os.Getenv("ROWFATE_BENCH_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			b.Fatalf("ROWFATE_BENCH_ROWS=%q: want a number of rows, 1000 or more", v)
		}
	}
	s := teststore.Postgres(b)
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			r := driver.IngestRow{RowNo: int64(i + 2), ChunkNo: int64(i / 1000), State: rows.StateValid,
				Values: []string{fmt.Sprintf("c%d@example.com", i), "Some One", "PT", "2020-01-01", "1.00"}}
			if i%1000 == 999 {
				r.State, r.Errors = rows.StateInvalid, []rows.FieldError{{Row: r.RowNo, Column: "email", Code: "email", Message: "email: must be a valid email"}}
			}
			if !yield(r, nil) {
				return
			}
		}
	}
	bt, err := s.BatchIngest(context.Background(), driver.BatchIngestParams{TenantID: "acme", Kind: "customers", SourceName: "big.csv",
		Header: []string{"email", "name", "country", "signup_date", "amount"}, Rows: seq})
	if err != nil {
		b.Fatal(err)
	}
	if bt.Counts.Total() != int64(n) {
		b.Fatalf("ingested %d rows, want %d", bt.Counts.Total(), n)
	}
	pool := testdb.PostgresPool(b)
	db := stdlib.OpenDBFromPool(pool)
	b.Cleanup(func() { db.Close() })
	h := newAPI(b, s, db, customers.Postgres, apiOptions{})
	h.unchecked = true
	base := fmt.Sprintf("/v1/batches/%d", bt.ID)
	for _, bc := range []struct{ name, path string }{
		{"batch", base},
		{"rows/first", base + "/rows?limit=50"},
		{"rows/middle", fmt.Sprintf("%s/rows?limit=50&after=%d", base, n/2)},
		{"rows/invalid", base + "/rows?state=invalid&limit=50"},
		{"batches", "/v1/batches?limit=50"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if a := h.get(bc.path, adminA); a.status != 200 {
					b.Fatal(a)
				}
			}
		})
	}
}
