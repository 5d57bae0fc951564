package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/metrics"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/sqlite"
)

// Thing is the tests' row: its word says what the processor does.
type Thing struct {
	Word string `col:"word" validate:"required"`
}

// txThings runs the same function as a TxProcessor: its outcomes come
// back from inside the flush's transaction (ChunkFlushParams.EffectFunc).
type txThings func(ctx context.Context, th Thing) (string, error)

func (f txThings) Process(ctx context.Context, th Thing) (string, error) { return f(ctx, th) }

func (f txThings) ProcessTx(ctx context.Context, _ batch.Tx, ths []Thing) ([]batch.Result, error) {
	out := make([]batch.Result, len(ths))
	for i, th := range ths {
		out[i].ID, out[i].Err = f(ctx, th)
	}
	return out, nil
}

func setup(t *testing.T, lease time.Duration, proc batch.Processor[Thing]) (*sqlite.Store, *batch.Engine, *metrics.Metrics) {
	t.Helper()
	s := teststore.SQLite(t)
	m, err := metrics.New(metrics.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	reg := batch.NewRegistry()
	if err := batch.Register(reg, batch.Kind[Thing]{Name: "things", MaxAttempts: 2, ChunkSize: 10,
		BackoffFunc: func(int) time.Duration { return time.Millisecond },
		Processor:   proc}); err != nil {
		t.Fatal(err)
	}
	e, err := batch.NewEngine(batch.Config{Store: s, Registry: reg, Observer: m, LeaseDuration: lease, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s, e, m
}

// scrape reads the handler's exposition.
func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse the exposition: %v", err)
	}
	return fams
}

// value is the value of the family's series with those labels (name=value
// pairs); -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// answer fails "fail" for good, "retry" for now, and succeeds the rest.
func answer(_ context.Context, th Thing) (string, error) {
	switch th.Word {
	case "fail":
		return "", batch.Permanent(errors.New("no"))
	case "retry":
		return "", errors.New("downstream busy")
	}
	return "id-" + th.Word, nil
}

// TestMetricsOfARun: claims, outcomes by state (retries, dead), the rows
// by state from the store, and the event lag, after a real run on SQLite,
// of a plain kind and of a transactional one.
func TestMetricsOfARun(t *testing.T) {
	t.Parallel()
	t.Run("Plain", func(t *testing.T) { t.Parallel(); testRun(t, batch.ProcessFunc[Thing](answer)) })
	t.Run("Transactional", func(t *testing.T) { t.Parallel(); testRun(t, txThings(answer)) })
}

func testRun(t *testing.T, proc batch.Processor[Thing]) {
	s, e, m := setup(t, time.Minute, proc)
	var csv strings.Builder
	csv.WriteString("word\n")
	for i := range 30 {
		switch i % 6 {
		case 0:
			csv.WriteString("fail\n")
		case 1:
			csv.WriteString("retry\n")
		case 2:
			csv.WriteString("\n,\n") // one blank line (skipped), one invalid row
		default:
			fmt.Fprintf(&csv, "w%d\n", i)
		}
	}
	ctx := context.Background()
	b, err := e.Import(ctx, batch.ImportParams{Kind: "things", SourceName: "t.csv", Source: strings.NewReader(csv.String())})
	if err != nil {
		t.Fatal(err)
	}
	bc := progress.New(s, &progress.Config{PollInterval: 10 * time.Millisecond, LagFunc: m.ObserveEventLag})
	bctx, stop := context.WithCancel(ctx)
	defer stop()
	go bc.Run(bctx)
	sub, err := bc.Subscribe(bctx, progress.SubscribeParams{TenantID: batch.DefaultTenant, BatchID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range sub.C {
		}
	}()
	if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
	counts, err := s.RowsCount(ctx, driver.RowsCountParams{TenantID: batch.DefaultTenant, BatchID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	// The feed reads the live events a moment after they commit.
	var fams map[string]*dto.MetricFamily
	testenv.Until(t, func() bool {
		fams = scrape(t, m)
		return value(fams, "rowfate_event_lag_seconds") > 0
	}, func() string { return "an event lag observed" })
	want := map[string]float64{"succeeded": 15, "failed": 5, "retrying": 5, "dead": 5}
	for st, n := range want {
		if got := value(fams, "rowfate_row_outcomes_total", "kind", "things", "state", st); got != n {
			t.Errorf("outcomes %s = %v, want %v", st, got, n)
		}
	}
	if got := value(fams, "rowfate_chunk_claims_total", "kind", "things"); got < 3 {
		t.Errorf("claims = %v, want at least one per chunk (3)", got)
	}
	for _, st := range rows.States {
		if got := value(fams, "rowfate_rows", "state", string(st)); got != float64(counts[st]) {
			t.Errorf("rows %s = %v, the aggregate says %d", st, got, counts[st])
		}
	}
	if v := value(fams, "rowfate_store_up"); v != 1 {
		t.Errorf("store up = %v", v)
	}
	if value(fams, "rowfate_event_lag_seconds") <= 0 {
		t.Error("no event lag observed")
	}
	if value(fams, "go_goroutines") <= 0 {
		t.Error("no Go runtime metrics")
	}
}

// TestMetricsLeaseLost: a renewal that finds the chunk claimed by another
// worker counts a lost lease, and the stale worker records nothing.
func TestMetricsLeaseLost(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	s, e, m := setup(t, 300*time.Millisecond, batch.ProcessFunc[Thing](func(ctx context.Context, th Thing) (string, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	ctx := context.Background()
	b, err := e.Import(ctx, batch.ImportParams{Kind: "things", SourceName: "t.csv", Source: strings.NewReader("word\na\nb\n")})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.Work(wctx, batch.WorkParams{BatchID: b.ID, Workers: 1, Grace: time.Millisecond})
		done <- err
	}()
	<-started
	// Another worker takes the chunk once its lease has run out.
	if _, err := s.DB().Exec(`UPDATE batch_chunks SET lease_expires_at = 0 WHERE batch_id = ?`, b.ID); err != nil {
		t.Fatal(err)
	}
	other, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "other", BatchID: b.ID, LeaseDuration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, func() bool { return value(scrape(t, m), "rowfate_lease_losses_total", "kind", "things") >= 1 }, func() string { return "a lease loss counted" })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, m)
	if v := value(fams, "rowfate_row_outcomes_total", "kind", "things"); v > 0 {
		t.Errorf("the stale worker recorded %v outcomes", v)
	}
	if other.Token <= 1 {
		t.Errorf("the other claim's token %d", other.Token)
	}
}

// TestMetricsStaleAck: a worker whose lease expired and was claimed
// again while its processor ran has its flush refused by the token check,
// and the refusal is counted by kind. The lease is long, so no renewal
// finds out first: the flush is the fence.
func TestMetricsStaleAck(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 1), make(chan struct{})
	s, e, m := setup(t, time.Minute, batch.ProcessFunc[Thing](func(ctx context.Context, th Thing) (string, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return "id-" + th.Word, nil
	}))
	ctx := context.Background()
	b, err := e.Import(ctx, batch.ImportParams{Kind: "things", SourceName: "t.csv", Source: strings.NewReader("word\na\n")})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.Work(wctx, batch.WorkParams{BatchID: b.ID, Workers: 1})
		done <- err
	}()
	<-started
	if _, err := s.DB().Exec(`UPDATE batch_chunks SET lease_expires_at = 0 WHERE batch_id = ?`, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "other", BatchID: b.ID, LeaseDuration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	close(release)
	testenv.Until(t, func() bool { return value(scrape(t, m), "rowfate_stale_acks_rejected_total", "kind", "things") == 1 }, func() string { return "a stale ack counted" })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, m)
	if v := value(fams, "rowfate_row_outcomes_total", "kind", "things"); v != -1 {
		t.Errorf("the refused flush counted %v outcomes", v)
	}
	if v := value(fams, "rowfate_lease_losses_total", "kind", "things"); v != -1 {
		t.Errorf("lease losses = %v: no renewal ran", v)
	}
}

// TestMetricsLabels: no series is labelled by tenant or batch, and every
// family is Rowfate's, the Go runtime's or the process's.
func TestMetricsLabels(t *testing.T) {
	t.Parallel()
	m, err := metrics.New(metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.ChunkClaimed("things")
	m.RowsRecorded("things", rows.StateDead, 2)
	m.ObserveEventLag(-time.Second) // a clock behind the database's
	fams := scrape(t, m)
	for name, f := range fams {
		if !strings.HasPrefix(name, "rowfate_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
			t.Errorf("family %s", name)
		}
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if n := l.GetName(); n == "tenant" || n == "tenant_id" || n == "batch" || n == "batch_id" {
					t.Errorf("%s is labelled %s", name, n)
				}
			}
		}
	}
	if _, ok := fams["rowfate_rows"]; ok {
		t.Error("rows by state exported without a store")
	}
	if v := value(fams, "rowfate_row_outcomes_total", "kind", "things", "state", "dead"); v != 2 {
		t.Errorf("dead = %v, want 2", v)
	}
	if f := fams["rowfate_event_lag_seconds"]; f == nil || f.Metric[0].Histogram.GetSampleSum() != 0 {
		t.Errorf("a negative lag is not observed as 0: %v", f)
	}
}
