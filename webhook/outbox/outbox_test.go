package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/webhook"
	"github.com/rowfate/rowfate/webhook/outbox"
)

const tenant = "acme"

// store is a store with its outbox: both stores are.
type store interface {
	driver.Store
	driver.ServiceStore
}

var engines = []string{"SQLite", "PostgreSQL"}

// openStore returns a migrated store of the engine. PostgreSQL comes from
// DATABASE_URL; without it the test skips, or fails under
// ROWFATE_REQUIRE_POSTGRES=1 (testdb).
func openStore(t *testing.T, engine string) store {
	t.Helper()
	switch engine {
	case "SQLite":
		return teststore.SQLite(t)
	case "PostgreSQL":
		return teststore.Postgres(t)
	}
	t.Fatalf("no engine %s", engine)
	return nil
}

// Answers of a receiver besides HTTP statuses.
const (
	// hang: answer nothing until the client gives up.
	hang = -1
	// endless: 500 with a body that never ends (endlessSize bytes: far
	// more than socket buffers hold).
	endless = -2

	endlessSize, endlessChunks = 72 << 20, 1024
)

// receiver is an endpoint that checks every request as a receiver must:
// webhook.Verify on the raw body, with the endpoint's secret, before
// anything else. It answers the nth request of a message with answers[n-1]
// (200 past the end).
type receiver struct {
	t       *testing.T
	secret  string
	answers []int
	// redirect is where a 3xx points.
	redirect string
	// started, when set, is told of each request as it arrives.
	started chan string

	mu         sync.Mutex
	ids        []string            // webhook-id of every verified request, in order
	bodies     map[string]string   // a message's body, as received
	timestamps map[string][]string // a message's webhook-timestamp, per request
	// endlessWrote is what an endless answer managed to write.
	endlessWrote atomic.Int64
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rc.t.Errorf("read the body: %v", err)
		return
	}
	id, err := webhook.Verify(r.Header, body, []string{rc.secret}, nil)
	if err != nil {
		rc.t.Errorf("a delivery does not verify: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("User-Agent") != outbox.UserAgent {
		rc.t.Errorf("%s with Content-Type %q, User-Agent %q", r.Method, r.Header.Get("Content-Type"), r.Header.Get("User-Agent"))
	}
	rc.mu.Lock()
	rc.ids = append(rc.ids, id)
	if prev, ok := rc.bodies[id]; ok && prev != string(body) {
		rc.t.Errorf("message %s: another body on a later attempt", id)
	}
	rc.bodies[id] = string(body)
	rc.timestamps[id] = append(rc.timestamps[id], r.Header.Get(webhook.HeaderTimestamp))
	n := len(rc.timestamps[id])
	rc.mu.Unlock()
	if rc.started != nil {
		rc.started <- id
	}
	answer := http.StatusOK
	if n <= len(rc.answers) {
		answer = rc.answers[n-1]
	}
	switch {
	case answer == hang:
		<-r.Context().Done()
	case answer == endless:
		w.WriteHeader(http.StatusInternalServerError)
		chunk := bytes.Repeat([]byte("overflow "), endlessSize/endlessChunks/9)
		for range endlessChunks {
			k, err := w.Write(chunk)
			rc.endlessWrote.Add(int64(k))
			if err != nil {
				return
			}
		}
	case answer >= 300 && answer <= 399:
		w.Header().Set("Location", rc.redirect)
		w.WriteHeader(answer)
	default:
		w.WriteHeader(answer)
		fmt.Fprintf(w, "answer %d\n\afrom the receiver", answer)
	}
}

// requests returns how many requests each message got.
func (rc *receiver) requests() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	got := map[string]int{}
	for _, id := range rc.ids {
		got[id]++
	}
	return got
}

// bundle is one test's store, receiver and endpoint.
type bundle struct {
	t        *testing.T
	s        store
	rc       *receiver
	endpoint *batchtype.Endpoint
	// logs is what the test's senders logged.
	logs *syncBuffer
}

// setup opens a store of the engine and registers a receiver answering
// answers as an endpoint of the tenant, with a secret made as batchctl
// makes them.
func setup(t *testing.T, engine string, answers ...int) *bundle {
	t.Helper()
	s := openStore(t, engine)
	rc := &receiver{t: t, secret: outbox.NewSecret(), answers: answers, bodies: map[string]string{}, timestamps: map[string][]string{}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	ep, err := s.EndpointCreate(context.Background(), driver.EndpointCreateParams{TenantID: tenant, URL: srv.URL + "/hook?token=in-the-url", Secret: rc.secret})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, s: s, rc: rc, endpoint: ep, logs: &syncBuffer{}}
	t.Cleanup(func() {
		// Nothing logged carries the secret or the endpoint's URL.
		if logs := b.logs.String(); strings.Contains(logs, rc.secret) || strings.Contains(logs, "in-the-url") {
			t.Errorf("the sender logged a secret or the endpoint's URL:\n%s", logs)
		}
	})
	return b
}

// endBatch stores a batch of one row and ends it as production does: a
// cancel, or a worker's flush that finishes it. The transaction that ends
// it queues one delivery per enabled endpoint of the tenant.
func (b *bundle) endBatch(finish bool) int64 {
	b.t.Helper()
	ctx := context.Background()
	seq := func(yield func(driver.IngestRow, error) bool) {
		yield(driver.IngestRow{RowNo: 2, State: rows.StateValid, Values: []string{"x"}}, nil)
	}
	bt, err := b.s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: tenant, Kind: "k", SourceName: "f.csv", Header: []string{"a"}, Rows: seq})
	if err != nil {
		b.t.Fatal(err)
	}
	if !finish {
		if _, err := b.s.BatchCancel(ctx, driver.BatchControlParams{TenantID: tenant, ID: bt.ID}); err != nil {
			b.t.Fatal(err)
		}
		return bt.ID
	}
	l, err := b.s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", BatchID: bt.ID, LeaseDuration: time.Minute})
	if err != nil {
		b.t.Fatal(err)
	}
	outs := make([]driver.RowOutcome, len(l.Rows))
	for i, r := range l.Rows {
		outs[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateSucceeded, ResultID: "x"}
	}
	if _, err := b.s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: tenant, BatchID: bt.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outs, Release: true}); err != nil {
		b.t.Fatal(err)
	}
	return bt.ID
}

// sender returns a Sender on the bundle's store with tiny backoffs,
// allowed to reach the receivers on 127.0.0.1; edit adjusts its config.
func (b *bundle) sender(edit func(*outbox.Config)) *outbox.Sender {
	b.t.Helper()
	cfg := outbox.Config{
		Store:        b.s,
		AllowPrivate: true,
		BackoffFunc:  func(int) time.Duration { return time.Millisecond },
		PollInterval: 10 * time.Millisecond,
		Client:       &http.Client{Timeout: 20 * time.Second}, // below the lease, as New requires
		Lease:        30 * time.Second,
		Logger:       slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&cfg)
	}
	snd, err := outbox.New(cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	return snd
}

// sendOnce runs one round and wants n deliveries claimed.
func (b *bundle) sendOnce(snd *outbox.Sender, n int) {
	b.t.Helper()
	got, err := snd.SendOnce(context.Background())
	if err != nil || got != n {
		b.t.Fatalf("SendOnce = %d, %v; want %d", got, err, n)
	}
}

// drain sends until no delivery is pending.
func (b *bundle) drain(snd *outbox.Sender) {
	b.t.Helper()
	for deadline := time.Now().Add(testenv.Patience(b.t)); len(b.deliveries(batchtype.DeliveryPending)) > 0; {
		if _, err := snd.SendOnce(context.Background()); err != nil {
			b.t.Fatal(err)
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("deliveries still pending: %+v", b.deliveries(batchtype.DeliveryPending))
		}
		time.Sleep(5 * time.Millisecond) // the retry is due 1ms after the attempt
	}
}

func (b *bundle) deliveries(status string) []batchtype.Delivery {
	b.t.Helper()
	ds, err := b.s.DeliveriesList(context.Background(), driver.DeliveriesListParams{TenantID: tenant, Status: status, Limit: 1000})
	if err != nil {
		b.t.Fatal(err)
	}
	return ds
}

// only returns the one delivery of the tenant.
func (b *bundle) only() batchtype.Delivery {
	b.t.Helper()
	ds := b.deliveries("")
	if len(ds) != 1 {
		b.t.Fatalf("%d deliveries, want 1: %+v", len(ds), ds)
	}
	return ds[0]
}

// wantRequests checks that the receiver got n requests, all of the
// delivery's message, with its payload byte for byte.
func (b *bundle) wantRequests(d batchtype.Delivery, n int) {
	b.t.Helper()
	if got := b.rc.requests(); len(got) != 1 || got[d.MessageID()] != n {
		b.t.Fatalf("requests per webhook-id %v, want %d of %s", got, n, d.MessageID())
	}
	b.rc.mu.Lock()
	defer b.rc.mu.Unlock()
	if body := b.rc.bodies[d.MessageID()]; body != d.Payload || !strings.Contains(body, `"batch_id":`+strconv.FormatInt(d.BatchID, 10)) {
		b.t.Errorf("body %s, want the payload %s", body, d.Payload)
	}
}

func TestSender(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			t.Run("DeliveredAtOnce", func(t *testing.T) {
				t.Parallel()
				b := setup(t, engine)
				start := time.Now()
				id := b.endBatch(true)
				b.sendOnce(b.sender(nil), 1)
				d := b.only()
				if d.BatchID != id || d.EventType != string(batchtype.EventFinished) || d.Status != batchtype.DeliveryDelivered ||
					d.Attempts != 1 || d.LastStatus != 200 || d.LastError != "" || d.DoneAt == nil {
					t.Fatalf("delivery %+v", d)
				}
				b.wantRequests(d, 1)
				b.rc.mu.Lock()
				ts, _ := strconv.ParseInt(b.rc.timestamps[d.MessageID()][0], 10, 64)
				b.rc.mu.Unlock()
				if ts < start.Unix() || ts > time.Now().Unix() {
					t.Errorf("webhook-timestamp %d is not the time of sending", ts)
				}
				// Delivered: never sent again.
				b.sendOnce(b.sender(nil), 0)
			})
			t.Run("RetriedWithTheSameID", func(t *testing.T) {
				t.Parallel()
				b := setup(t, engine, 500, 500)
				b.endBatch(false)
				snd := b.sender(nil)
				b.sendOnce(snd, 1)
				if d := b.only(); d.Status != batchtype.DeliveryPending || d.Attempts != 1 || d.LastStatus != 500 ||
					d.LastError != "500 Internal Server Error: answer 500 from the receiver" {
					t.Fatalf("after a 500: %+v", d)
				}
				b.drain(snd)
				d := b.only()
				if d.Status != batchtype.DeliveryDelivered || d.Attempts != 3 || d.LastStatus != 200 || d.EventType != string(batchtype.EventCancelled) {
					t.Fatalf("delivery %+v, want delivered on the third attempt", d)
				}
				b.wantRequests(d, 3)
			})
			t.Run("DeadAfterMaxAttempts", func(t *testing.T) {
				t.Parallel()
				b := setup(t, engine, 500, 500, 500, 500, 500)
				b.endBatch(false)
				b.drain(b.sender(func(c *outbox.Config) { c.MaxAttempts = 3 }))
				d := b.only()
				if d.Status != batchtype.DeliveryDead || d.Attempts != 3 || d.LastStatus != 500 || !strings.HasPrefix(d.LastError, "500 ") || d.DoneAt == nil {
					t.Fatalf("delivery %+v, want dead after 3 attempts", d)
				}
				b.wantRequests(d, 3)
				b.sendOnce(b.sender(nil), 0)
			})
			t.Run("RedirectNotFollowed", func(t *testing.T) {
				t.Parallel()
				var followed atomic.Int64
				elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Add(1) }))
				t.Cleanup(elsewhere.Close)
				b := setup(t, engine, http.StatusTemporaryRedirect)
				b.rc.redirect = elsewhere.URL
				b.endBatch(false)
				// Even a client that would follow it.
				snd := b.sender(func(c *outbox.Config) { c.Client = &http.Client{Timeout: 20 * time.Second} })
				b.sendOnce(snd, 1)
				if d := b.only(); d.Status != batchtype.DeliveryPending || d.Attempts != 1 || d.LastStatus != 307 || !strings.Contains(d.LastError, "redirect not followed") {
					t.Fatalf("after a 307: %+v", d)
				}
				b.drain(snd)
				if d := b.only(); d.Status != batchtype.DeliveryDelivered || d.Attempts != 2 {
					t.Fatalf("delivery %+v, want delivered on the second attempt", d)
				}
				if n := followed.Load(); n != 0 {
					t.Fatalf("the redirect was followed %d times", n)
				}
			})
			t.Run("HangPastTheTimeout", func(t *testing.T) {
				t.Parallel()
				b := setup(t, engine, hang)
				b.endBatch(false)
				snd := b.sender(func(c *outbox.Config) { c.Client = &http.Client{Timeout: 200 * time.Millisecond} })
				b.sendOnce(snd, 1)
				if d := b.only(); d.Status != batchtype.DeliveryPending || d.Attempts != 1 || d.LastStatus != 0 || d.LastError != "no answer: timed out" {
					t.Fatalf("after a hang: %+v", d)
				}
				b.drain(snd)
				d := b.only()
				if d.Status != batchtype.DeliveryDelivered || d.Attempts != 2 {
					t.Fatalf("delivery %+v, want delivered on the second attempt", d)
				}
				b.wantRequests(d, 2)
			})
			t.Run("EndlessAnswer", func(t *testing.T) {
				t.Parallel()
				b := setup(t, engine, endless)
				b.endBatch(false)
				b.sendOnce(b.sender(nil), 1)
				d := b.only()
				if d.Status != batchtype.DeliveryPending || d.LastStatus != 500 || len(d.LastError) > 600 || !strings.Contains(d.LastError, "overflow") {
					t.Fatalf("delivery %+v", d)
				}
				if wrote := b.rc.endlessWrote.Load(); wrote >= endlessSize {
					t.Fatalf("the sender read all %d bytes of the answer", wrote)
				}
			})
			t.Run("BadSecretIsDead", func(t *testing.T) {
				t.Parallel()
				b := setup(t, engine)
				// storetest's secrets are not base64: no attempt can sign.
				if _, err := b.s.EndpointCreate(context.Background(), driver.EndpointCreateParams{TenantID: tenant, URL: "http://127.0.0.1:1/", Secret: "whsec_a"}); err != nil {
					t.Fatal(err)
				}
				if err := b.s.EndpointDisable(context.Background(), tenant, b.endpoint.ID); err != nil {
					t.Fatal(err)
				}
				b.endBatch(false)
				b.sendOnce(b.sender(nil), 1)
				d := b.only()
				if d.Status != batchtype.DeliveryDead || d.Attempts != 1 || !strings.Contains(d.LastError, "secret") || strings.Contains(d.LastError, "whsec_a") {
					t.Fatalf("delivery %+v, want dead at once without the secret in its error", d)
				}
			})
		})
	}
}

// countingTransport counts the requests a sender made.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// TestSendersShareTheOutbox: two senders running on one PostgreSQL
// outbox send each message once per attempt: a claimed delivery is not
// sent by the other while its lease holds.
func TestSendersShareTheOutbox(t *testing.T) {
	t.Parallel()
	b := setup(t, "PostgreSQL", 500) // every message fails once
	for range 4 {
		if _, err := b.s.EndpointCreate(context.Background(), driver.EndpointCreateParams{TenantID: tenant, URL: b.deliveriesURL(), Secret: b.rc.secret}); err != nil {
			t.Fatal(err)
		}
	}
	const batches, endpoints = 30, 5
	for i := range batches {
		b.endBatch(i%2 == 0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		wg         sync.WaitGroup
		transports [2]countingTransport
		errs       [2]error
	)
	for i := range transports {
		snd := b.sender(func(c *outbox.Config) {
			c.Client = &http.Client{Timeout: 20 * time.Second, Transport: &transports[i]}
		})
		wg.Go(func() { errs[i] = snd.Run(ctx) })
	}
	for deadline := time.Now().Add(60 * time.Second); len(b.deliveries(batchtype.DeliveryDelivered)) < batches*endpoints; {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("%d of %d deliveries delivered", len(b.deliveries(batchtype.DeliveryDelivered)), batches*endpoints)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("sender %d: %v", i, err)
		}
	}
	got := b.rc.requests()
	if len(got) != batches*endpoints {
		t.Fatalf("%d messages received, want %d", len(got), batches*endpoints)
	}
	for id, n := range got {
		if n != 2 {
			t.Errorf("message %s received %d times, want twice (one failed attempt, one delivered)", id, n)
		}
	}
	for _, d := range b.deliveries("") {
		if d.Status != batchtype.DeliveryDelivered || d.Attempts != 2 {
			t.Errorf("delivery %+v, want delivered on the second attempt", d)
		}
	}
	if transports[0].n.Load() == 0 || transports[1].n.Load() == 0 {
		t.Errorf("requests per sender %d and %d: both should have worked", transports[0].n.Load(), transports[1].n.Load())
	}
}

// deliveriesURL is the receiver's address, for more endpoints.
func (b *bundle) deliveriesURL() string {
	b.t.Helper()
	eps, err := b.s.EndpointList(context.Background(), tenant)
	if err != nil || len(eps) == 0 {
		b.t.Fatalf("endpoints: %v", err)
	}
	return eps[0].URL
}

// TestRunStops: a cancelled ctx stops Run promptly, even with an attempt
// in flight, which is not counted.
func TestRunStops(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			b := setup(t, engine, hang)
			b.rc.started = make(chan string, 1)
			// The client would wait for the hanging endpoint longer than
			// waitRun waits for Run: only a Run that cuts the attempt
			// short stops in time.
			snd := b.sender(func(c *outbox.Config) {
				c.Client, c.Lease = &http.Client{Timeout: 2 * testenv.Patience(t)}, 3*testenv.Patience(t)
			})

			// Idle: nothing is due.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- snd.Run(ctx) }()
			time.Sleep(50 * time.Millisecond)
			cancel()
			waitRun(t, done)

			// Busy: the endpoint hangs.
			b.endBatch(false)
			ctx, cancel = context.WithCancel(context.Background())
			defer cancel()
			go func() { done <- snd.Run(ctx) }()
			select {
			case <-b.rc.started:
			case <-time.After(testenv.Patience(t)):
				t.Fatal("nothing was sent")
			}
			cancel()
			waitRun(t, done)
			if d := b.only(); d.Status != batchtype.DeliveryPending || d.Attempts != 0 {
				t.Fatalf("delivery %+v: an attempt cut short is not counted", d)
			}
		})
	}
}

func waitRun(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(testenv.Patience(t)):
		t.Fatal("Run did not stop")
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	s := openStore(t, "SQLite")
	for _, tc := range []struct {
		name string
		cfg  outbox.Config
		ok   bool
	}{
		{"defaults", outbox.Config{Store: s}, true},
		{"no store", outbox.Config{}, false},
		{"a timeout as long as the lease", outbox.Config{Store: s, Client: &http.Client{Timeout: time.Minute}}, false},
		{"a client without a timeout", outbox.Config{Store: s, Client: &http.Client{}}, false},
		{"a short lease", outbox.Config{Store: s, Lease: 5 * time.Second}, false},
		{"negative attempts", outbox.Config{Store: s, MaxAttempts: -1}, false},
	} {
		if _, err := outbox.New(tc.cfg); (err == nil) != tc.ok {
			t.Errorf("%s: New = %v", tc.name, err)
		}
	}
}

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempt  int
		min, max time.Duration
	}{
		{0, 8 * time.Second, 12 * time.Second},
		{1, 8 * time.Second, 12 * time.Second},
		{2, 16 * time.Second, 24 * time.Second},
		{4, 64 * time.Second, 96 * time.Second},
		{10, 48 * time.Minute, time.Hour},
		{1000, 48 * time.Minute, time.Hour},
	} {
		for range 50 {
			if d := outbox.DefaultBackoff(tc.attempt); d < tc.min || d > tc.max {
				t.Fatalf("DefaultBackoff(%d) = %s, want %s..%s", tc.attempt, d, tc.min, tc.max)
			}
		}
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := outbox.NewSecret(), outbox.NewSecret()
	key, err := webhook.DecodeSecret(a)
	if err != nil || len(key) != 32 || !strings.HasPrefix(a, "whsec_") || a == b {
		t.Fatalf("NewSecret = %q (%d bytes, %v), then %q", a, len(key), err, b)
	}
}

// syncBuffer is a log destination senders write to from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// flakyStore is a real store whose first claims fail as a restarting
// database does, and whose records fail for good when broken is set.
type flakyStore struct {
	store
	claimFails atomic.Int64
	broken     atomic.Bool
}

func (f *flakyStore) DeliveriesClaim(ctx context.Context, p driver.DeliveriesClaimParams) ([]batchtype.Delivery, error) {
	if f.claimFails.Add(-1) >= 0 {
		return nil, fmt.Errorf("claim: %w: connection reset", driver.ErrTransient)
	}
	return f.store.DeliveriesClaim(ctx, p)
}

func (f *flakyStore) DeliveryRecord(ctx context.Context, p driver.DeliveryRecordParams) error {
	if f.broken.Load() {
		return fmt.Errorf("record: relation webhook_deliveries does not exist")
	}
	return f.store.DeliveryRecord(ctx, p)
}

// TestRunErrors: a transient claim error is retried; any other database
// error ends Run with it.
func TestRunErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, "SQLite")
	fs := &flakyStore{store: b.s}
	fs.claimFails.Store(3)
	b.s = fs
	snd := b.sender(nil)
	b.endBatch(false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- snd.Run(ctx) }()
	testenv.Until(t, func() bool { return len(b.deliveries(batchtype.DeliveryDelivered)) > 0 }, func() string {
		return "a delivery through transient claim errors"
	})
	fs.broken.Store(true)
	b.endBatch(false)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("Run = %v, want the record's error", err)
		}
	case <-time.After(testenv.Patience(t)):
		t.Fatal("Run went on after a broken record")
	}
	if !strings.Contains(b.logs.String(), "retrying") {
		t.Errorf("the transient errors were not logged:\n%s", b.logs)
	}
}

// TestPrivateDestinations: the sender dials only public addresses unless
// AllowPrivate: a host whose name resolves to loopback is refused at the
// moment of the dial (so a DNS answer that changes after the endpoint
// was checked does not help), as is a loopback address given as such.
// The delivery's error, which the tenant reads, names the class of the
// failure, never the address, the port or the system's error text; the
// log keeps those.
func TestPrivateDestinations(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			b := setup(t, engine)
			u, err := url.Parse(b.endpoint.URL)
			if err != nil {
				t.Fatal(err)
			}
			// The receiver again, by a name that resolves to it; and a
			// closed port.
			for _, ep := range []string{"http://localhost:" + u.Port() + "/hook?token=in-the-url", "http://127.0.0.1:1/hook?token=in-the-url"} {
				if _, err := b.s.EndpointCreate(context.Background(), driver.EndpointCreateParams{TenantID: tenant, URL: ep, Secret: b.rc.secret}); err != nil {
					t.Fatal(err)
				}
			}
			b.endBatch(false)
			b.sendOnce(b.sender(func(c *outbox.Config) { c.AllowPrivate = false }), 3)
			if got := b.rc.requests(); len(got) != 0 {
				t.Fatalf("the sender reached a loopback address: %v", got)
			}
			for _, d := range b.deliveries("") {
				if d.Status != batchtype.DeliveryPending || d.Attempts != 1 || d.LastStatus != 0 || !strings.Contains(d.LastError, "destination not allowed") {
					t.Errorf("delivery %+v, want refused at the dial", d)
				}
				for _, detail := range []string{"127.0.0.1", "localhost", u.Port(), "dial", "refused", "::1"} {
					if strings.Contains(d.LastError, detail) {
						t.Errorf("the delivery's error %q shows %q", d.LastError, detail)
					}
				}
			}
			if logs := b.logs.String(); !strings.Contains(logs, "127.0.0.1") {
				t.Errorf("the log does not say which address was refused:\n%s", logs)
			}

			// Allowed: the receiver gets both, by address and by name;
			// the closed port is a connection that could not be made,
			// and nothing more is said of it but in the log.
			b.drain(b.sender(nil))
			if got := b.rc.requests(); len(got) != 2 {
				t.Fatalf("allowed, the receiver got %v", got)
			}
			if ds := b.deliveries(batchtype.DeliveryDelivered); len(ds) != 2 {
				t.Errorf("delivered: %+v", ds)
			}
			if ds := b.deliveries(batchtype.DeliveryDead); len(ds) != 1 || ds[0].LastError != "no answer: could not connect" {
				t.Errorf("the closed port's delivery: %+v", ds)
			}
			if logs := b.logs.String(); !strings.Contains(logs, "connection refused") {
				t.Errorf("the log does not keep why the connection failed:\n%s", logs)
			}
		})
	}
}

// TestCheckURL: the addresses a tenant may not add as an endpoint, and
// those it may; AllowPrivate takes any http(s) URL with a host.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"http://127.0.0.1/", "http://10.0.0.1/", "http://172.31.255.255/", "http://192.168.0.1/", "http://169.254.169.254/",
		"http://100.64.0.1/", "http://0.0.0.0/", "http://192.0.2.1/", "http://198.18.0.1/", "http://240.0.0.1/", "http://255.255.255.255/",
		"http://224.0.0.251/", "http://[::1]/", "http://[::]/", "http://[fe80::1]/", "http://[fe80::1%25eth0]/", "http://[fc00::1]/",
		"http://[fd12:3456::1]/", "http://[ff02::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:192.168.1.1]/",
		"http://[::127.0.0.1]/", "http://[64:ff9b::10.0.0.1]/", "http://[2002:a00:1::]/", "http://[2001:db8::1]/",
		"http://localhost/", "http://Localhost./", "http://db.localhost/", "http://2130706433/", "http://0x7f000001/",
		"http://127.1/", "http://0177.0.0.1/", "http://1.2.3.4.5/",
	} {
		if _, err := outbox.CheckURL(u, false); !errors.Is(err, outbox.ErrDestinationNotAllowed) {
			t.Errorf("%s: %v, want ErrDestinationNotAllowed", u, err)
		}
		if got, err := outbox.CheckURL(u, true); err != nil || got == "" {
			t.Errorf("%s allowed: %q, %v", u, got, err)
		}
	}
	for _, u := range []string{"https://hooks.example.com/rowfate", "http://93.184.216.34/", "https://[2606:4700::1111]/", "http://[64:ff9b::93.184.216.34]/", "https://x1.example/"} {
		if _, err := outbox.CheckURL(u, false); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"ftp://hooks.example.com/", "https://", "https://user:pw@hooks.example.com/", "hooks.example.com/x", "http://[::1"} {
		if _, err := outbox.CheckURL(u, true); err == nil || errors.Is(err, outbox.ErrDestinationNotAllowed) {
			t.Errorf("%s: %v, want a malformed URL", u, err)
		}
	}
	if _, err := outbox.New(outbox.Config{Store: openStore(t, "SQLite"), Client: &http.Client{Timeout: time.Second, Transport: &countingTransport{}}}); err == nil {
		t.Error("a transport whose dials cannot be checked was taken")
	}
}
