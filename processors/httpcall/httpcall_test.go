package httpcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
)

// order is the row type of the tests.
type order struct {
	Ref    string  `json:"ref"`
	Amount float64 `json:"amount"`
	Note   string  `json:"note,omitempty"`
}

var testRow = order{Ref: "A-1", Amount: 12.5, Note: "ünïcode"}

// rowInfo is the row the tests process, at the given attempt.
func rowInfo(attempt int) batch.RowInfo {
	return batch.RowInfo{TenantID: "acme", BatchID: 7, RowNo: 12, Attempt: attempt, EffectKey: "acme/7/12"}
}

func rowCtx(ctx context.Context, attempt int) context.Context {
	return batch.ContextWithRow(ctx, rowInfo(attempt))
}

// ledger is a downstream API that honours Idempotency-Key the way the
// package expects: it applies each key's effect once, answers every later
// request with that key with the same id, and refuses a key reused with
// another body.
type ledger struct {
	mu       sync.Mutex
	ids      map[string]string
	bodies   map[string]string
	applied  int
	requests int
	header   http.Header
	body     []byte
	// stallFirst makes the first application never answer: the effect is
	// done, the answer lost (the caller's deadline passes).
	stallFirst bool
}

func newLedger() *ledger {
	return &ledger{ids: map[string]string{}, bodies: map[string]string{}}
}

func (l *ledger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "Idempotency-Key required", http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.requests++
	l.header = r.Header.Clone()
	l.body = body
	id, seen := l.ids[key]
	if seen && l.bodies[key] != string(body) {
		l.mu.Unlock()
		http.Error(w, "key reused with another body", http.StatusUnprocessableEntity)
		return
	}
	stall := false
	if !seen {
		l.applied++
		id = fmt.Sprintf("ord_%d", l.applied)
		l.ids[key] = id
		l.bodies[key] = string(body)
		stall = l.stallFirst && l.applied == 1
	}
	l.mu.Unlock()
	if stall {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"id":%q,"status":"created"}`, id)
}

func (l *ledger) counts() (applied, requests int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applied, l.requests
}

func newProcessor(t *testing.T, cfg Config[order]) *Processor[order] {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func TestIdempotencyKeyAppliesOnce(t *testing.T) {
	t.Parallel()
	l := newLedger()
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{URL: srv.URL + "/orders"})

	id1, err := p.Process(rowCtx(t.Context(), 1), testRow)
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	id2, err := p.Process(rowCtx(t.Context(), 2), testRow)
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	if id1 != "ord_1" || id2 != id1 {
		t.Errorf("ids = %q, %q; want ord_1 twice", id1, id2)
	}
	if applied, requests := l.counts(); applied != 1 || requests != 2 {
		t.Errorf("applied %d times in %d requests; want 1 in 2", applied, requests)
	}
}

// TestInterruptedBeforeAck: a worker's call applies the effect, but its
// answer never arrives (the deadline passes, or the worker dies before its
// flush); after the lease is lost a second worker runs the row again. The
// effect key makes the downstream answer with the first id, without a
// second application.
func TestInterruptedBeforeAck(t *testing.T) {
	t.Parallel()
	l := newLedger()
	l.stallFirst = true
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)

	first := newProcessor(t, Config[order]{URL: srv.URL})
	ctx, cancel := context.WithTimeout(rowCtx(t.Context(), 1), 200*time.Millisecond)
	defer cancel()
	_, err := first.Process(ctx, testRow)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first worker: err = %v; want a deadline (unknown)", err)
	}

	// Another worker, another processor, the same row after a reclaim.
	second := newProcessor(t, Config[order]{URL: srv.URL})
	id, err := second.Process(rowCtx(t.Context(), 2), testRow)
	if err != nil {
		t.Fatalf("second worker: %v", err)
	}
	if id != "ord_1" {
		t.Errorf("second worker's id = %q; want ord_1, the first application's", id)
	}
	if applied, requests := l.counts(); applied != 1 || requests != 2 {
		t.Errorf("applied %d times in %d requests; want 1 in 2", applied, requests)
	}
}

func TestRequest(t *testing.T) {
	t.Parallel()
	l := newLedger()
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{
		URL:    srv.URL + "/orders?api_key=s3cret",
		Header: http.Header{"Authorization": {"Bearer tok"}},
	})
	if _, err := p.Process(rowCtx(t.Context(), 3), testRow); err != nil {
		t.Fatalf("Process: %v", err)
	}
	l.mu.Lock()
	h, body := l.header, l.body
	l.mu.Unlock()
	for name, want := range map[string]string{
		"Idempotency-Key":   "acme/7/12",
		"Content-Type":      "application/json",
		"X-Rowfate-Tenant":  "acme",
		"X-Rowfate-Batch":   "7",
		"X-Rowfate-Row":     "12",
		"X-Rowfate-Attempt": "3",
		"Authorization":     "Bearer tok",
	} {
		if got := h.Values(name); len(got) != 1 || got[0] != want {
			t.Errorf("header %s = %q; want [%q]", name, got, want)
		}
	}
	var got order
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, body)
	}
	if got != testRow {
		t.Errorf("body = %+v; want %+v", got, testRow)
	}
	want, _ := json.Marshal(testRow)
	if !bytes.Equal(body, want) {
		t.Errorf("body = %s; want %s", body, want)
	}
}

func TestBodyFunc(t *testing.T) {
	t.Parallel()
	l := newLedger()
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{URL: srv.URL, BodyFunc: func(o order) (any, error) {
		return map[string]any{"reference": o.Ref, "cents": int(o.Amount * 100)}, nil
	}})
	if _, err := p.Process(rowCtx(t.Context(), 1), testRow); err != nil {
		t.Fatalf("Process: %v", err)
	}
	l.mu.Lock()
	body := string(l.body)
	l.mu.Unlock()
	if want := `{"cents":1250,"reference":"A-1"}`; body != want {
		t.Errorf("body = %s; want %s", body, want)
	}

	bad := newProcessor(t, Config[order]{URL: srv.URL, BodyFunc: func(order) (any, error) {
		return nil, errors.New("no currency")
	}})
	_, err := bad.Process(rowCtx(t.Context(), 1), testRow)
	if !batch.IsPermanent(err) || !strings.Contains(err.Error(), "no currency") {
		t.Errorf("BodyFunc error: err = %v; want permanent, saying why", err)
	}
	if _, requests := l.counts(); requests != 1 {
		t.Errorf("%d requests; want 1 (none for the row that did not encode)", requests)
	}
}

func TestClassification(t *testing.T) {
	t.Parallel()
	type answer struct {
		status int
		header map[string]string
		body   string
	}
	long := strings.Repeat("x", 2000)
	for _, tc := range []struct {
		name           string
		answer         answer
		wantID         string
		wantPermanent  bool
		wantNotApplied bool // the server turned the request away
		wantStatus     int
		wantRetryAfter time.Duration
		wantMsg        string
	}{
		{name: "200 id", answer: answer{status: 200, body: `{"id":"x"}`}, wantID: "x"},
		{name: "200 numeric id", answer: answer{status: 200, body: `{"id":42}`}, wantID: "42"},
		{name: "200 id over Location", answer: answer{status: 200, header: map[string]string{"Location": "/o/1"}, body: `{"id":"x"}`}, wantID: "x"},
		{name: "201 Location", answer: answer{status: 201, header: map[string]string{"Location": "/orders/9"}}, wantID: "/orders/9"},
		{name: "201 empty id, Location", answer: answer{status: 201, header: map[string]string{"Location": "/orders/9"}, body: `{"id":""}`}, wantID: "/orders/9"},
		{name: "202 not JSON, Location", answer: answer{status: 202, header: map[string]string{"Location": "/q/3"}, body: "accepted"}, wantID: "/q/3"},
		{name: "200 not JSON", answer: answer{status: 200, body: "<html>ok</html>"}, wantID: "200"},
		{name: "204", answer: answer{status: 204}, wantID: "204"},
		{name: "400", answer: answer{status: 400, body: `{"error":"amount must be positive"}`}, wantPermanent: true, wantStatus: 400, wantMsg: "amount must be positive"},
		{name: "404", answer: answer{status: 404, body: "no such route"}, wantPermanent: true, wantStatus: 404, wantMsg: "404 Not Found"},
		{name: "422", answer: answer{status: 422, body: "bad ref"}, wantPermanent: true, wantStatus: 422, wantMsg: "bad ref"},
		{name: "302 not followed", answer: answer{status: 302, header: map[string]string{"Location": "/elsewhere"}}, wantPermanent: true, wantStatus: 302},
		{name: "409", answer: answer{status: 409, body: "in flight"}, wantStatus: 409, wantMsg: "same idempotency key is in flight"},
		{name: "408", answer: answer{status: 408}, wantStatus: 408, wantNotApplied: true},
		{name: "425", answer: answer{status: 425}, wantStatus: 425, wantNotApplied: true},
		{name: "429 Retry-After", answer: answer{status: 429, header: map[string]string{"Retry-After": "7"}}, wantStatus: 429, wantRetryAfter: 7 * time.Second, wantMsg: "retry after 7s", wantNotApplied: true},
		{name: "503", answer: answer{status: 503, body: "maintenance"}, wantStatus: 503, wantMsg: "maintenance", wantNotApplied: true},
		{name: "500 long body", answer: answer{status: 500, body: long}, wantStatus: 500, wantMsg: strings.Repeat("x", maxExcerpt)},
		{name: "502", answer: answer{status: 502}, wantStatus: 502},
		{name: "504", answer: answer{status: 504}, wantStatus: 504},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.answer.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.answer.status)
				_, _ = io.WriteString(w, tc.answer.body)
			}))
			t.Cleanup(srv.Close)
			p := newProcessor(t, Config[order]{URL: srv.URL})
			id, err := p.Process(rowCtx(t.Context(), 1), testRow)
			if tc.wantStatus == 0 {
				if err != nil || id != tc.wantID {
					t.Fatalf("Process = %q, %v; want %q, nil", id, err, tc.wantID)
				}
				return
			}
			if err == nil {
				t.Fatalf("Process = %q, nil; want an error", id)
			}
			if got := batch.IsPermanent(err); got != tc.wantPermanent {
				t.Errorf("IsPermanent = %v; want %v (err %v)", got, tc.wantPermanent, err)
			}
			if got := batch.IsNotApplied(err); got != tc.wantNotApplied {
				t.Errorf("IsNotApplied = %v; want %v (err %v)", got, tc.wantNotApplied, err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err %v is a deadline; the answer arrived", err)
			}
			var serr *StatusError
			if !errors.As(err, &serr) {
				t.Fatalf("err %v is not a *StatusError", err)
			}
			if serr.StatusCode != tc.wantStatus || serr.RetryAfter != tc.wantRetryAfter {
				t.Errorf("StatusError = %d, retry after %s; want %d, %s", serr.StatusCode, serr.RetryAfter, tc.wantStatus, tc.wantRetryAfter)
			}
			if len(serr.Body) > maxExcerpt {
				t.Errorf("body excerpt is %d bytes; want at most %d", len(serr.Body), maxExcerpt)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q; want it to contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestRetryAfterDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{URL: srv.URL})
	p.now = func() time.Time { return now }
	_, err := p.Process(rowCtx(t.Context(), 1), testRow)
	var serr *StatusError
	if !errors.As(err, &serr) || serr.RetryAfter != 90*time.Second {
		t.Fatalf("err = %v; want a StatusError asking for 1m30s", err)
	}
	if batch.IsPermanent(err) || !strings.Contains(err.Error(), "retry after 1m30s") {
		t.Errorf("err = %v; want retryable, saying the wait", err)
	}
}

// sleepy never answers: it returns when the client has gone away, or the
// test server closes. It reads the body first: the server notices a
// client gone only once the body is consumed.
func sleepy(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

func TestDeadlineIsUnknown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(sleepy))
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{URL: srv.URL})
	ctx, cancel := context.WithTimeout(rowCtx(t.Context(), 1), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Process(ctx, testRow)
	if !errors.Is(err, context.DeadlineExceeded) || batch.IsPermanent(err) {
		t.Fatalf("err = %v; want a deadline, not permanent", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("Process took %s after a 150ms deadline", d)
	}
}

func TestClientTimeoutIsUnknown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(sleepy))
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{URL: srv.URL, Client: &http.Client{Timeout: 150 * time.Millisecond}})
	_, err := p.Process(rowCtx(t.Context(), 1), testRow)
	if !errors.Is(err, context.DeadlineExceeded) || batch.IsPermanent(err) {
		t.Fatalf("err = %v; want a deadline, not permanent", err)
	}
}

// TestDeadlineBeforeSendIsRetryable: a deadline that passes while the
// connection is still being made sent nothing, so the row is retried, not
// left unknown.
func TestDeadlineBeforeSendIsRetryable(t *testing.T) {
	t.Parallel()
	dialing := make(chan struct{}, 1)
	// The transport goes on dialling after the request gave up, with a
	// context of its own: the dial ends with the test.
	over := make(chan struct{})
	t.Cleanup(func() { close(over) })
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			select {
			case dialing <- struct{}{}:
			default:
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-over:
				return nil, errors.New("the test is over")
			}
		},
	}}
	p := newProcessor(t, Config[order]{URL: "http://api.invalid/orders", Client: client})
	ctx, cancel := context.WithTimeout(rowCtx(t.Context(), 1), 150*time.Millisecond)
	defer cancel()
	_, err := p.Process(ctx, testRow)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || batch.IsPermanent(err) || !batch.IsNotApplied(err) {
		t.Fatalf("err = %v; want retryable and not applied, not a deadline", err)
	}
	select {
	case <-dialing:
	default:
		t.Fatal("the transport never dialled: the test did not test a deadline during the dial")
	}

	expired, cancel2 := context.WithDeadline(rowCtx(t.Context(), 1), time.Now().Add(-time.Second))
	defer cancel2()
	if _, err := p.Process(expired, testRow); err == nil || errors.Is(err, context.DeadlineExceeded) || batch.IsPermanent(err) || !batch.IsNotApplied(err) {
		t.Errorf("already expired ctx: err = %v; want retryable and not applied, not a deadline", err)
	}
}

// TestRefusedConnectionNotApplied: no connection, no request: a row whose
// retries end on it had no effect (batch.NotApplied).
func TestRefusedConnectionNotApplied(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens on its port any more
	p := newProcessor(t, Config[order]{URL: url})
	_, err := p.Process(rowCtx(t.Context(), 1), testRow)
	if err == nil || batch.IsPermanent(err) || errors.Is(err, context.DeadlineExceeded) || !batch.IsNotApplied(err) {
		t.Fatalf("err = %v; want retryable and not applied", err)
	}
}

func TestCancelReturnsCtxError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(sleepy))
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{URL: srv.URL})
	ctx, cancel := context.WithCancel(rowCtx(t.Context(), 1))
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := p.Process(ctx, testRow)
	if !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || batch.IsPermanent(err) {
		t.Fatalf("err = %v; want context.Canceled only", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("Process took %s to stop after cancel", d)
	}
}

// hijack answers with raw bytes, then closes the connection.
func hijack(t *testing.T, raw string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_, _ = buf.WriteString(raw)
		_ = buf.Flush()
		_ = conn.Close()
	}
}

func TestConnectionClosedIsRetryable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, raw string }{
		{"before the status", ""},
		{"mid-headers", "HTTP/1.1 200 OK\r\nContent-Ty"},
		{"mid-body of a 2xx", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(hijack(t, tc.raw))
			t.Cleanup(srv.Close)
			p := newProcessor(t, Config[order]{URL: srv.URL})
			id, err := p.Process(rowCtx(t.Context(), 1), testRow)
			if err == nil {
				t.Fatalf("Process = %q, nil; want an error", id)
			}
			if batch.IsPermanent(err) || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v; want retryable", err)
			}
			// The request went out: the server may have acted on it.
			if batch.IsNotApplied(err) {
				t.Errorf("err = %v; marked not applied, but the request was sent", err)
			}
		})
	}
}

func TestNoRowInfoSendsNothing(t *testing.T) {
	t.Parallel()
	l := newLedger()
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{URL: srv.URL})
	for name, ctx := range map[string]context.Context{
		"no RowInfo":      t.Context(),
		"empty EffectKey": batch.ContextWithRow(t.Context(), batch.RowInfo{TenantID: "acme", BatchID: 1, RowNo: 2, Attempt: 1}),
	} {
		_, err := p.Process(ctx, testRow)
		if !errors.Is(err, ErrNoEffectKey) || !batch.IsPermanent(err) {
			t.Errorf("%s: err = %v; want permanent ErrNoEffectKey", name, err)
		}
	}
	bad := rowInfo(1)
	bad.EffectKey = "acme/7/12\r\nX-Evil: 1"
	if _, err := p.Process(batch.ContextWithRow(t.Context(), bad), testRow); !batch.IsPermanent(err) {
		t.Errorf("effect key with CRLF: err = %v; want permanent", err)
	}
	if _, requests := l.counts(); requests != 0 {
		t.Errorf("%d requests reached the server; want 0", requests)
	}
}

// TestSecretsStayOut: neither the query (an API key) nor user info of the
// URL appears in an error, whatever the failure.
func TestSecretsStayOut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(hijack(t, ""))
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{URL: strings.Replace(srv.URL, "http://", "http://user:pw0rd@", 1) + "/orders?api_key=s3cret"})
	_, err := p.Process(rowCtx(t.Context(), 1), testRow)
	if err == nil {
		t.Fatal("Process: want an error from a closed connection")
	}
	if msg := err.Error(); strings.Contains(msg, "s3cret") || strings.Contains(msg, "pw0rd") || !strings.Contains(msg, "/orders") {
		t.Errorf("err = %q; want the path without the query or password", msg)
	}
}

func TestLargeAnswerIsBounded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/orders/big")
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte("y"), 32<<10)
		for i := 0; i < 32<<10 && r.Context().Err() == nil; i++ { // up to 1 GiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	p := newProcessor(t, Config[order]{URL: srv.URL})
	ctx, cancel := context.WithTimeout(rowCtx(t.Context(), 1), 10*time.Second)
	defer cancel()
	id, err := p.Process(ctx, testRow)
	if err != nil || id != "/orders/big" {
		t.Fatalf("Process = %q, %v; want the Location", id, err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config[order]{
		"empty URL":        {},
		"relative URL":     {URL: "/orders"},
		"ftp URL":          {URL: "ftp://example.com/x"},
		"no host":          {URL: "http:///x"},
		"reserved header":  {URL: "https://example.com", Header: http.Header{"idempotency-key": {"k"}}},
		"rowfate header":   {URL: "https://example.com", Header: http.Header{"X-Rowfate-Row": {"1"}}},
		"host header":      {URL: "https://example.com", Header: http.Header{"Host": {"other"}}},
		"bad header name":  {URL: "https://example.com", Header: http.Header{"Bad Name": {"v"}}},
		"bad header value": {URL: "https://example.com", Header: http.Header{"Authorization": {"a\nb"}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded; want an error", name)
		}
	}
	if _, err := New(Config[order]{URL: "https://example.com/orders", Header: http.Header{"Authorization": {"Bearer t"}}}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}
