package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/sqlite"
	"github.com/rowfate/rowfate/webhook"
	"github.com/rowfate/rowfate/webhook/outbox"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

type store interface {
	driver.Store
	driver.ServiceStore
}

func stores(t *testing.T) map[string]func(t *testing.T) store {
	return map[string]func(t *testing.T) store{
		"SQLite": func(t *testing.T) store {
			s, err := sqlite.Open(testdb.SQLitePath(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s
		},
		"PostgreSQL": func(t *testing.T) store {
			pool := testdb.PostgresPool(t)
			s := postgres.New(pool, &postgres.Config{Schema: testdb.SchemaOf(pool.Config())})
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

// receiver verifies every request on its raw body and answers with the
// status its script gives for the nth request (200 past its end).
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	ids    []string
	script []int
	hang   time.Duration
	n      atomic.Int64
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id, err := webhook.Verify(r.Header, body, []string{secret}, nil)
	if err != nil {
		rc.t.Errorf("a delivery does not verify: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var msg struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.Type == "" {
		rc.t.Errorf("body %s: %v", body, err)
	}
	n := int(rc.n.Add(1)) - 1
	rc.mu.Lock()
	rc.ids = append(rc.ids, id)
	rc.mu.Unlock()
	if rc.hang > 0 && n == 0 {
		time.Sleep(rc.hang)
	}
	status := http.StatusOK
	if n < len(rc.script) {
		status = rc.script[n]
	}
	if status >= 300 && status < 400 {
		w.Header().Set("Location", "http://elsewhere.example/")
	}
	w.WriteHeader(status)
	fmt.Fprint(w, "answer ", status)
}

// finished makes a batch of the tenant end (cancelled), which queues one
// delivery per endpoint in the same transaction.
func finished(t *testing.T, s store, url string) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := s.EndpointCreate(ctx, driver.EndpointCreateParams{TenantID: "acme", URL: url, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	seq := func(yield func(driver.IngestRow, error) bool) {
		yield(driver.IngestRow{RowNo: 2, State: rows.StateValid, Values: []string{"x"}}, nil)
	}
	b, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "acme", Kind: "k", SourceName: "f.csv", Header: []string{"a"}, Rows: seq})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: "acme", ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	return b.ID
}

func sender(t *testing.T, s store, max int, timeout time.Duration) *outbox.Sender {
	t.Helper()
	snd, err := outbox.New(outbox.Config{Store: s, MaxAttempts: max, BackoffFunc: func(int) time.Duration { return time.Millisecond },
		Client:       &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		PollInterval: 10 * time.Millisecond, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return snd
}

// drain sends until nothing is due for a while.
func drain(t *testing.T, snd *outbox.Sender) {
	t.Helper()
	idle := 0
	for deadline := time.Now().Add(20 * time.Second); idle < 20; {
		n, err := snd.SendOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
		if time.Now().After(deadline) {
			t.Fatal("the outbox did not drain")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func deliveries(t *testing.T, s store) []driver.Delivery {
	t.Helper()
	ds, err := s.DeliveriesList(context.Background(), driver.DeliveriesListParams{TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestSender: deliveries are signed, retried with the same id, dead after
// their attempts, and a redirect or a hang is a failed attempt.
func TestSender(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name     string
				script   []int
				hang     time.Duration
				max      int
				status   string
				attempts int
			}{
				{"first try", nil, 0, 8, driver.DeliveryDelivered, 1},
				{"third try", []int{500, 503}, 0, 8, driver.DeliveryDelivered, 3},
				{"dead", []int{500, 500, 500, 500}, 0, 3, driver.DeliveryDead, 3},
				{"redirect not followed", []int{302}, 0, 8, driver.DeliveryDelivered, 2},
				{"hang past the timeout", nil, time.Second, 8, driver.DeliveryDelivered, 2},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					s := open(t)
					rc := &receiver{t: t, script: tc.script, hang: tc.hang}
					srv := httptest.NewServer(rc)
					defer srv.Close()
					id := finished(t, s, srv.URL+"/hook")
					drain(t, sender(t, s, tc.max, 300*time.Millisecond))
					ds := deliveries(t, s)
					if len(ds) != 1 || ds[0].BatchID != id || ds[0].Status != tc.status || ds[0].Attempts != tc.attempts {
						t.Fatalf("deliveries = %+v, want one %s after %d attempts", ds, tc.status, tc.attempts)
					}
					if tc.status == driver.DeliveryDead && (ds[0].LastStatus != 500 || ds[0].LastError == "") {
						t.Errorf("a dead delivery keeps its last answer: %+v", ds[0])
					}
					rc.mu.Lock()
					defer rc.mu.Unlock()
					if len(rc.ids) != tc.attempts {
						t.Errorf("the receiver saw %d requests, want %d", len(rc.ids), tc.attempts)
					}
					for _, got := range rc.ids {
						if got != ds[0].MessageID() {
							t.Errorf("webhook-id %q, want %q on every attempt", got, ds[0].MessageID())
						}
					}
				})
			}
		})
	}
}

// TestSendersShareTheOutbox: two senders on one PostgreSQL outbox send
// each message once while its lease holds.
func TestSendersShareTheOutbox(t *testing.T) {
	t.Parallel()
	s := stores(t)["PostgreSQL"](t)
	rc := &receiver{t: t}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	for range 20 {
		finished(t, s, srv.URL+"/hook")
	}
	// Each batch's cancel queued a delivery to every endpoint made so
	// far: 1 + 2 + ... + 20.
	const want = 20 * 21 / 2
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		snd := sender(t, s, 8, 5*time.Second)
		wg.Go(func() { _ = snd.Run(ctx) })
	}
	for deadline := time.Now().Add(30 * time.Second); rc.n.Load() < want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	wg.Wait()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	seen := map[string]int{}
	for _, id := range rc.ids {
		seen[id]++
	}
	if len(seen) != want || len(rc.ids) != want {
		t.Fatalf("%d requests for %d messages, want %d once each", len(rc.ids), len(seen), want)
	}
}

// TestRunStops: Run returns promptly when its context ends.
func TestRunStops(t *testing.T) {
	t.Parallel()
	s := stores(t)["SQLite"](t)
	snd := sender(t, s, 8, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- snd.Run(ctx) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not stop")
	}
}
