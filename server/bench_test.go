package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
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
			s := postgresStore(b)
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
						if g := follow(c); g.err != nil {
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
	if err != nil || bt.Status != driver.StatusFinished {
		b.Fatalf("batch %d: %+v, %v", id, bt, err)
	}
}
