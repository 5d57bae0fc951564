package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/rows"
)

// benchKindName is the trivial kind the engine benchmarks register.
const benchKindName = "bench_customers"

// benchRow is a customers-like row with no rule beyond a required email,
// so that what the benchmarks time is the engine and its store.
type benchRow struct {
	Email      string       `col:"email" validate:"required"`
	Name       string       `col:"name"`
	Country    string       `col:"country"`
	SignupDate time.Time    `col:"signup_date"`
	Amount     rows.Decimal `col:"amount"`
}

// benchRegistry registers the trivial kind: its processor returns an id at
// once and does nothing else.
func benchRegistry(tb testing.TB) *batch.Registry {
	tb.Helper()
	reg := batch.NewRegistry()
	err := batch.Register(reg, batch.Kind[benchRow]{
		Name: benchKindName,
		Processor: batch.ProcessFunc[benchRow](func(_ context.Context, r benchRow) (string, error) {
			return r.Email, nil
		}),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return reg
}

// benchStores are the stores the engine benchmarks run on. open returns a
// migrated store on a fresh database whose resources tb cleans up;
// PostgreSQL needs DATABASE_URL (testdb skips without it, or fails under
// ROWFATE_REQUIRE_POSTGRES=1).
var benchStores = []struct {
	name string
	open func(tb testing.TB) batch.Store
}{
	{"sqlite", func(tb testing.TB) batch.Store { return teststore.SQLite(tb) }},
	{"postgres", func(tb testing.TB) batch.Store { return teststore.Postgres(tb) }},
}

func benchEngine(tb testing.TB, s batch.Store) *batch.Engine {
	tb.Helper()
	e, err := batch.NewEngine(batch.Config{Store: s, Registry: benchRegistry(tb), PollInterval: 10 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// benchSource streams a CSV of n customers-like rows under the header
// email,name,country,signup_date,amount, generated as it is read, so
// that a million-row file takes no memory.
type benchSource struct {
	n, next int
	buf     bytes.Buffer
	line    []byte
}

func newBenchSource(n int) *benchSource {
	s := &benchSource{n: n}
	s.buf.WriteString("email,name,country,signup_date,amount\n")
	return s
}

func (s *benchSource) Read(p []byte) (int, error) {
	for s.buf.Len() < len(p) && s.next < s.n {
		i := s.next
		s.line = s.line[:0]
		s.line = append(s.line, "user"...)
		s.line = strconv.AppendInt(s.line, int64(i), 10)
		s.line = append(s.line, "@example.com,Customer "...)
		s.line = strconv.AppendInt(s.line, int64(i), 10)
		s.line = fmt.Appendf(s.line, ",FR,2021-%02d-%02d,%d.%02d\n", i%12+1, i%28+1, i%1000, i%100)
		s.buf.Write(s.line)
		s.next++
	}
	if s.buf.Len() == 0 {
		return 0, io.EOF
	}
	return s.buf.Read(p)
}

// benchImport ingests a generated file of n rows as the trivial kind and
// checks that every row is valid.
func benchImport(tb testing.TB, e *batch.Engine, n int) *batchtype.Batch {
	tb.Helper()
	bt, err := e.Import(context.Background(), batch.ImportParams{Kind: benchKindName, SourceName: fmt.Sprintf("bench-%d.csv", n), Source: newBenchSource(n)})
	if err != nil {
		tb.Fatal(err)
	}
	if got := bt.Counts[rows.StateValid]; got != int64(n) || bt.Counts.Total() != int64(n) {
		tb.Fatalf("import of %d rows: counts %v", n, bt.Counts)
	}
	return bt
}

// BenchmarkWorkChunk measures the engine working a batch with a processor
// that does nothing: one op = one 1,000-row chunk worked end to end by one
// worker (claim with its lease, bind and process each row, flush the
// outcomes and the chunk's counts), on each store. b.N chunks are imported
// outside the timer, then one Work call with UntilDone is timed. rows/s is
// the engine's own ceiling per worker, before any processor's cost. For
// real figures:
//
//	go test -run '^$' -bench WorkChunk -benchmem -count 6 ./batch
func BenchmarkWorkChunk(b *testing.B) {
	const chunk = 1000
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			e := benchEngine(b, st.open(b))
			ctx := context.Background()
			n := b.N * chunk
			bt := benchImport(b, e, n)
			b.ReportAllocs()
			b.ResetTimer()
			stats, err := e.Work(ctx, batch.WorkParams{BatchID: bt.ID, Workers: 1, UntilDone: true})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if stats.Rows != int64(n) || stats.Chunks != int64(b.N) || stats.LeaseLost != 0 || stats.Retries != 0 {
				b.Fatalf("worked %+v, want %d rows in %d chunks", stats, n, b.N)
			}
			got, err := e.Batch(ctx, batch.BatchParams{ID: bt.ID})
			if err != nil {
				b.Fatal(err)
			}
			if got.Status != batchtype.StatusFinished || got.Counts[rows.StateSucceeded] != int64(n) {
				b.Fatalf("batch after work: %s, counts %v", got.Status, got.Counts)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// outliving is a sub-benchmark's testing.TB whose resources (temporary
// folders, cleanups) belong to its parent: a sub-benchmark's function runs
// once per b.N it tries and cleans up after each, while the batch it reads
// is ingested once. Failures still go to the sub-benchmark; errors (which
// testdb reports only from cleanups) to the parent.
type outliving struct {
	testing.TB
	owner testing.TB
}

func (o outliving) Cleanup(f func())                  { o.owner.Cleanup(f) }
func (o outliving) TempDir() string                   { return o.owner.TempDir() }
func (o outliving) Error(args ...any)                 { o.owner.Error(args...) }
func (o outliving) Errorf(format string, args ...any) { o.owner.Errorf(format, args...) }

// BenchmarkStatus measures reading a batch with its counts by state, the
// store call `batchctl status` makes (Store.BatchGet), for batches of
// 10,000, 100,000 and 1,000,000 ingested rows (1,000,000 is left out with
// -short), each on a database of its own: one op = one BatchGet. The batch
// is ingested once per size (not worked), outside the timer. Status should
// take the same time whatever the row count. For real figures (the large
// ingests take a while; each is done once):
//
//	go test -run '^$' -bench Status -benchmem -count 6 ./batch
func BenchmarkStatus(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(pb *testing.B) {
			type ingested struct {
				s  batch.Store
				id int64
			}
			done := map[int]ingested{}
			for _, size := range []int{10_000, 100_000, 1_000_000} {
				pb.Run(fmt.Sprintf("rows=%d", size), func(b *testing.B) {
					if size >= 1_000_000 && testing.Short() {
						b.Skip("1,000,000 rows: not with -short")
					}
					in, ok := done[size]
					if !ok {
						tb := outliving{TB: b, owner: pb}
						in.s = st.open(tb)
						in.id = benchImport(b, benchEngine(tb, in.s), size).ID
						done[size] = in
					}
					ctx := context.Background()
					p := driver.BatchGetParams{TenantID: batch.DefaultTenant, ID: in.id}
					b.ReportAllocs()
					var last *batchtype.Batch
					for b.Loop() {
						bt, err := in.s.BatchGet(ctx, p)
						if err != nil {
							b.Fatal(err)
						}
						last = bt
					}
					if last == nil {
						b.Fatal("no batch read")
					}
					if last.Counts.Total() != int64(size) || last.Counts[rows.StateValid] != int64(size) {
						b.Fatalf("batch of %d rows read with counts %v", size, last.Counts)
					}
				})
			}
		})
	}
}
