package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/filestore"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/server"
)

const (
	tenant = "t1"
	token  = "s3cret-token"
)

// store is what the tests need of a store.
type store interface {
	driver.Store
}

// harness is a running server on a store.
type harness struct {
	store store
	srv   *server.Server
	http  *httptest.Server
	url   string // ws://host
}

type options struct {
	progress  progress.Config
	websocket server.WebsocketConfig
	origins   []string
	// listen, when set, wraps the server's listener.
	listen func(net.Listener) net.Listener
}

func start(t testing.TB, s store, o options) *harness {
	t.Helper()
	bc := progress.New(s, &o.progress)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = bc.Run(ctx) }()
	// The stream needs no kinds: an engine with none is the server's door
	// to the events.
	eng, err := batch.NewEngine(batch.Config{Store: s, Registry: batch.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	files, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Engine: eng, Files: files, Broadcaster: bc, Auth: server.NewStaticToken(token, tenant),
		AllowedOrigins: o.origins, Websocket: o.websocket})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv)
	if o.listen != nil {
		hs.Listener = o.listen(hs.Listener)
	}
	hs.Start()
	t.Cleanup(func() {
		srv.Shutdown()
		hs.Close()
		cancel()
		<-done
	})
	return &harness{store: s, srv: srv, http: hs, url: "ws" + strings.TrimPrefix(hs.URL, "http")}
}

// dial opens a batch's stream with the token.
func (h *harness) dial(t testing.TB, id, cursor int64) *websocket.Conn {
	t.Helper()
	c, resp, err := h.dialWith(id, cursor, http.Header{"Authorization": {"Bearer " + token}}, nil)
	if err != nil {
		t.Fatalf("dial batch %d: %v (%s)", id, err, body(resp))
	}
	return c
}

func (h *harness) dialWith(id, cursor int64, hdr http.Header, d *websocket.Dialer) (*websocket.Conn, *http.Response, error) {
	if d == nil {
		d = &websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	}
	return d.Dial(fmt.Sprintf("%s/v1/batches/%d/events?cursor=%d", h.url, id, cursor), hdr)
}

func body(resp *http.Response) string {
	if resp == nil {
		return "no response"
	}
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// ingest stores a batch of n valid rows in chunks of size.
func ingest(t testing.TB, s driver.Store, tenantID string, n, size int) *batchtype.Batch {
	t.Helper()
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			if !yield(driver.IngestRow{RowNo: int64(i + 2), ChunkNo: int64(i / size), State: rows.StateValid, Values: []string{fmt.Sprint(i)}}, nil) {
				return
			}
		}
	}
	b, err := s.BatchIngest(context.Background(), driver.BatchIngestParams{TenantID: tenantID, Kind: "k", SourceName: "f.csv", Header: []string{"a"}, Rows: seq})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// work claims and flushes a batch's chunks until none is left.
func work(ctx context.Context, s driver.Store, id int64, pause time.Duration) error {
	for ctx.Err() == nil {
		l, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", BatchID: id, LeaseDuration: time.Minute})
		if errors.Is(err, driver.ErrNoWork) {
			return nil
		}
		if err != nil {
			return err
		}
		out := make([]driver.RowOutcome, len(l.Rows))
		for i, r := range l.Rows {
			out[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateSucceeded, ResultID: "x"}
		}
		if _, err := s.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: l.TenantID, BatchID: id, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: out, Release: true}); err != nil {
			return err
		}
		time.Sleep(pause)
	}
	return ctx.Err()
}

func read(t testing.TB, c *websocket.Conn) (server.StreamMessage, error) {
	t.Helper()
	var m server.StreamMessage
	_, b, err := c.ReadMessage()
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %s: %v", b, err)
	}
	return m, nil
}

func closeCode(err error) int {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}

// TestRefusedBeforeUpgrade: a missing or wrong token, a cross-origin page,
// another tenant's batch, an unknown one, a bad cursor: each is refused
// with its status before any websocket exists.
func TestRefusedBeforeUpgrade(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	h := start(t, s, options{origins: []string{"https://admin.example.com"}})
	mine := ingest(t, s, tenant, 10, 10)
	theirs := ingest(t, s, "t2", 10, 10)
	auth := http.Header{"Authorization": {"Bearer " + token}}
	with := func(kv ...string) http.Header {
		hdr := auth.Clone()
		for i := 0; i < len(kv); i += 2 {
			hdr.Set(kv[i], kv[i+1])
		}
		return hdr
	}
	for _, tc := range []struct {
		name   string
		id     int64
		cursor int64
		hdr    http.Header
		status int
		code   string
	}{
		{"no token", mine.ID, 0, http.Header{}, 401, "unauthorized"},
		{"wrong token", mine.ID, 0, http.Header{"Authorization": {"Bearer nope"}}, 401, "unauthorized"},
		{"not bearer", mine.ID, 0, http.Header{"Authorization": {"Basic " + token}}, 401, "unauthorized"},
		{"cross origin", mine.ID, 0, with("Origin", "https://evil.example.com"), 403, "origin_not_allowed"},
		{"allowed origin's other port", mine.ID, 0, with("Origin", "https://admin.example.com:8443"), 403, "origin_not_allowed"},
		{"another tenant's batch", theirs.ID, 0, auth, 404, "not_found"},
		{"unknown batch", theirs.ID + 100, 0, auth, 404, "not_found"},
		{"cursor ahead", mine.ID, 50, auth, 400, "cursor_ahead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, resp, err := h.dialWith(tc.id, tc.cursor, tc.hdr, nil)
			if err == nil {
				c.Close()
				t.Fatal("upgraded")
			}
			if resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("status = %s, want %d", body(resp), tc.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q, want application/problem+json", ct)
			}
			var e server.Problem
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Code != tc.code || e.Status != tc.status {
				t.Fatalf("problem = %+v (%v), want code %q", e, err, tc.code)
			}
		})
	}
	// Not a websocket at all: 426, with the same checks before it.
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/batches/%d/events", h.http.URL, mine.ID), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("plain GET = %s, %v", body(resp), err)
	}
	resp.Body.Close()

	// Allowed: the listed origin, the server's own, no origin, and the
	// token as a subprotocol (what a browser can send).
	for _, hdr := range []http.Header{with("Origin", "https://admin.example.com"), with("Origin", h.http.URL), auth,
		{"Sec-WebSocket-Protocol": {"rowfate.v1, bearer." + token}}} {
		c, resp, err := h.dialWith(mine.ID, 0, hdr, nil)
		if err != nil {
			t.Fatalf("dial with %v: %v (%s)", hdr, err, body(resp))
		}
		if hdr.Get("Sec-WebSocket-Protocol") != "" && c.Subprotocol() != "rowfate.v1" {
			t.Fatalf("subprotocol = %q", c.Subprotocol())
		}
		if m, err := read(t, c); err != nil || m.Event == nil || m.Event.Seq != 1 || !m.Replay {
			t.Fatalf("first message = %+v, %v", m, err)
		}
		c.Close()
	}
}

// TestOversizeFrame: a client frame above the read limit closes the
// stream with 1009.
func TestOversizeFrame(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	h := start(t, s, options{websocket: server.WebsocketConfig{ReadLimit: 1024}})
	b := ingest(t, s, tenant, 10, 10)
	c := h.dial(t, b.ID, 1)
	defer c.Close()
	if err := c.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("x", 2048))); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(testenv.Patience(t)))
	for {
		_, err := read(t, c)
		if err == nil {
			continue
		}
		if closeCode(err) != websocket.CloseMessageTooBig {
			t.Fatalf("after an oversize frame: %v, want close 1009", err)
		}
		return
	}
}

// TestMissedPongs: a client that answers no ping is closed with 4002; one
// that does (gorilla's default) stays.
func TestMissedPongs(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	// A pong wait of seconds, not milliseconds: the client that answers
	// must not miss it on a loaded machine, and the one that does not
	// answer is told apart by the close code, not by a time.
	const pongWait = 2 * time.Second
	h := start(t, s, options{websocket: server.WebsocketConfig{PingInterval: 100 * time.Millisecond, PongWait: pongWait}})
	b := ingest(t, s, tenant, 10, 10)
	start := time.Now() // before the upgrade, so the close comes pongWait after it at the soonest
	silent := h.dial(t, b.ID, 1)
	defer silent.Close()
	silent.SetPingHandler(func(string) error { return nil })
	polite := h.dial(t, b.ID, 1)
	defer polite.Close()
	politeErr := make(chan error, 1)
	go func() {
		_, _, err := polite.ReadMessage()
		politeErr <- err
	}()
	_ = silent.SetReadDeadline(time.Now().Add(testenv.Patience(t)))
	_, _, err := silent.ReadMessage()
	if closeCode(err) != server.ClosePongTimeout {
		t.Fatalf("silent client: %v, want close 4002", err)
	}
	if el := time.Since(start); el < pongWait {
		t.Fatalf("closed after %v, before the pong wait", el)
	}
	// The polite client has answered pings for as long as the silent one
	// lasted, and a pong wait more.
	select {
	case err := <-politeErr:
		t.Fatalf("a client that answers pings was closed: %v", err)
	case <-time.After(pongWait):
	}
}

// smallBuffers makes the server's sockets hold little unsent data, so a
// client that stops reading blocks the server's writes quickly instead of
// filling the kernel's buffers. It records since when a write of the
// server's has been blocked.
type smallBuffers struct {
	net.Listener
	// writing is the start (Unix nanoseconds) of the write under way on
	// the last connection accepted, 0 when none is.
	writing *atomic.Int64
	// closed is set when the server has closed a connection it accepted.
	closed *atomic.Bool
}

func newSmallBuffers(l net.Listener) smallBuffers {
	return smallBuffers{Listener: l, writing: &atomic.Int64{}, closed: &atomic.Bool{}}
}

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return timedWrites{Conn: c, writing: l.writing, closed: l.closed}, nil
}

// blockedFor is how long the server's write under way has been blocked.
func (l smallBuffers) blockedFor() time.Duration {
	if start := l.writing.Load(); start != 0 {
		return time.Since(time.Unix(0, start))
	}
	return 0
}

// timedWrites records when each of its writes starts and ends, and when
// the server closes it.
type timedWrites struct {
	net.Conn
	writing *atomic.Int64
	closed  *atomic.Bool
}

func (c timedWrites) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (c timedWrites) Write(p []byte) (int, error) {
	c.writing.Store(time.Now().UnixNano())
	defer c.writing.Store(0)
	return c.Conn.Write(p)
}

// TestSlowClient: a client that stops reading is closed with 4001 once the
// stream's buffer stays full, and resumes from its last cursor with
// nothing missed and nothing twice.
func TestSlowClient(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	b := ingest(t, s, tenant, 3000, 10)
	if err := work(context.Background(), s, b.ID, 0); err != nil {
		t.Fatal(err)
	}
	var sb smallBuffers
	h := start(t, s, options{
		progress: progress.Config{Buffer: 2, SendTimeout: 100 * time.Millisecond},
		listen:   func(l net.Listener) net.Listener { sb = newSmallBuffers(l); return sb },
		// The server's blocked write waits for the client however long
		// the machine takes to get there; only then does it send 4001.
		websocket: server.WebsocketConfig{WriteTimeout: testenv.Patience(t)},
	})
	d := &websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 1024,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4096)
			}
			return c, err
		}}
	c, resp, err := h.dialWith(b.ID, 0, http.Header{"Authorization": {"Bearer " + token}}, d)
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, body(resp))
	}
	// Read nothing until the server's writes have been blocked for twenty
	// times the send timeout (the subscription behind them has ended), or
	// until the server has closed the stream: on a loaded machine its own
	// writer can fall behind the subscription before the socket fills, and
	// then 4001 goes out without a write ever blocking.
	testenv.Until(t, func() bool { return sb.blockedFor() > 2*time.Second || sb.closed.Load() },
		func() string { return "the server's writes to block or the stream to close" })
	var last int64
	for {
		m, err := read(t, c)
		if err != nil {
			if closeCode(err) != server.CloseSlowConsumer {
				t.Fatalf("stalled client: %v, want close 4001", err)
			}
			break
		}
		if m.Event.Seq != last+1 {
			t.Fatalf("seq %d after %d", m.Event.Seq, last)
		}
		last = m.Event.Seq
	}
	c.Close()
	t.Logf("the stalled client got %d of 301 events before 4001", last)
	if last >= 301 {
		t.Fatalf("a stalled client got all %d events: the test did not stall it", last)
	}
	// The resumed client reads at once; on a loaded machine the server's
	// writer may still fall behind its two-event buffer and close it with
	// 4001 again: it resumes from its cursor, as a client must, and still
	// gets every event once, in order.
	c = h.dial(t, b.ID, last)
	defer func() { c.Close() }()
	for resumes := 0; last < 301; {
		m, err := read(t, c)
		if err != nil && closeCode(err) == server.CloseSlowConsumer && resumes < 100 {
			resumes++
			c.Close()
			c = h.dial(t, b.ID, last)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Event.Seq != last+1 {
			t.Fatalf("after resuming: seq %d after %d", m.Event.Seq, last)
		}
		last = m.Event.Seq
	}
}

// TestShutdownClosesStreams: a server shutting down closes its streams
// with 1001, so clients resume elsewhere.
func TestShutdownClosesStreams(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	h := start(t, s, options{})
	b := ingest(t, s, tenant, 10, 10)
	c := h.dial(t, b.ID, 1)
	defer c.Close()
	h.srv.Shutdown()
	_ = c.SetReadDeadline(time.Now().Add(testenv.Patience(t)))
	if _, err := read(t, c); closeCode(err) != websocket.CloseGoingAway {
		t.Fatalf("on shutdown: %v, want close 1001", err)
	}
}

// TestHealth: livez always; readyz when the database answers with the
// current schema.
func TestHealth(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	h := start(t, s, options{})
	for _, path := range []string{"/livez", "/readyz"} {
		resp, err := http.Get(h.http.URL + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s = %s, %v", path, body(resp), err)
		}
		resp.Body.Close()
	}
	s.Close()
	resp, err := http.Get(h.http.URL + "/readyz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz on a closed database = %s, %v", body(resp), err)
	}
	resp.Body.Close()
}
