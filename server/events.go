package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/progress"
)

// events streams a batch's events over a websocket:
// GET /v1/batches/{id}/events?cursor=N. Everything is checked before the
// upgrade, in this order: the token (401), the request (400), the origin
// (403), the batch with the caller's tenant (404); a refused request
// never becomes a websocket. Then each message is a progress.Message as a
// JSON text frame: the replay of the log after the cursor, then the live
// stream. The client sends nothing but control frames.
//
// The credential is checked again every AuthInterval while the stream is
// open: a token revoked after the upgrade closes its streams (4003)
// rather than letting them run for as long as the connection lasts.
func (s *Server) events(w http.ResponseWriter, r *http.Request, p Principal) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "bad_batch_id", fmt.Sprintf("batch id %q is not a positive integer", r.PathValue("id")))
		return
	}
	var cursor int64
	if v := r.URL.Query().Get("cursor"); v != "" {
		if cursor, err = strconv.ParseInt(v, 10, 64); err != nil || cursor < 0 {
			writeError(w, http.StatusBadRequest, "bad_cursor", fmt.Sprintf("cursor %q is not the seq of an event (0 or more)", v))
			return
		}
	}
	if !s.originAllowed(r) {
		writeError(w, http.StatusForbidden, "origin_not_allowed", fmt.Sprintf("origin %q may not open this stream (serve --allowed-origin)", r.Header.Get("Origin")))
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		w.Header().Set("Upgrade", "websocket")
		writeError(w, http.StatusUpgradeRequired, "websocket_required", "this endpoint streams over a websocket")
		return
	}
	// The stream's goroutines end before the handler returns: the
	// context is cancelled first, then they are waited for.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.base, cancel)()
	sub, err := s.cfg.Broadcaster.Subscribe(ctx, progress.SubscribeParams{TenantID: p.TenantID, BatchID: id, Cursor: cursor})
	switch {
	case errors.Is(err, batch.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no batch %d", id))
		return
	case errors.Is(err, batch.ErrCursorAhead):
		writeError(w, http.StatusBadRequest, "cursor_ahead", fmt.Sprintf("cursor %d is beyond batch %d's newest event", cursor, id))
		return
	case err != nil:
		s.cfg.Logger.Error("subscribe to batch events", "batch", id, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "the batch's events cannot be read now")
		return
	}
	defer sub.Close()
	up := websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		Subprotocols:     []string{subprotocol},
		// The origin was checked above, against the allowlist.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the client
	}
	defer conn.Close()
	s.stream(ctx, cancel, conn, sub, cursor, s.revoked(ctx, &wg, r, p))
}

// revoked authenticates the stream's request again every AuthInterval
// until ctx ends; the channel is closed when its credential is refused or
// now acts for another tenant. The check runs on a context without the
// request's tenant, as the first one did, and a failure to check (the
// database is down) is logged and tried again at the next interval. Its
// goroutine, in wg, ends with ctx.
func (s *Server) revoked(ctx context.Context, wg *sync.WaitGroup, r *http.Request, p Principal) <-chan struct{} {
	out := make(chan struct{})
	every := s.cfg.Websocket.AuthInterval
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			actx, cancel := context.WithTimeout(s.base, every)
			stop := context.AfterFunc(ctx, cancel)
			again, err := s.cfg.Auth.Authenticate(r.WithContext(actx))
			stop()
			cancel()
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, ErrUnauthenticated), err == nil && again.TenantID != p.TenantID:
				s.cfg.Logger.Info("event stream: credential revoked", "tenant_id", p.TenantID, "name", p.Name)
				close(out)
				return
			case err != nil:
				s.cfg.Logger.Warn("event stream: authenticate again", "tenant_id", p.TenantID, "err", err)
			}
		}
	})
	return out
}

// stream runs a connection: a reader goroutine that takes the client's
// control frames and notices its silence, and this goroutine, the one
// writer, which sends the messages and the pings, and closes the stream
// when its credential is revoked.
func (s *Server) stream(ctx context.Context, cancel context.CancelFunc, conn *websocket.Conn, sub *progress.Subscription, cursor int64, revoked <-chan struct{}) {
	cfg := s.cfg.Websocket
	conn.SetReadLimit(cfg.ReadLimit)
	readErr := make(chan error, 1)
	go func() {
		defer cancel()
		_ = conn.SetReadDeadline(time.Now().Add(cfg.PongWait))
		conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(cfg.PongWait)) })
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				readErr <- err
				return
			}
			// Anything the client sends shows it is alive.
			_ = conn.SetReadDeadline(time.Now().Add(cfg.PongWait))
		}
	}()
	closeWith := func(code int, text string) {
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(cfg.WriteTimeout))
	}
	ping := time.NewTicker(cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case m, ok := <-sub.C:
			if !ok {
				switch err := sub.Err(); {
				case errors.Is(err, progress.ErrSlowConsumer):
					closeWith(CloseSlowConsumer, fmt.Sprintf("too slow; resume from cursor %d", cursor))
				case errors.Is(err, batch.ErrNotFound):
					closeWith(CloseNotFound, "the batch is gone")
				case err != nil:
					s.cfg.Logger.Error("batch events", "err", err)
					closeWith(websocket.CloseInternalServerErr, fmt.Sprintf("cannot read events; resume from cursor %d", cursor))
				default:
					s.closeDone(ctx, conn, readErr, closeWith)
				}
				return
			}
			b, err := json.Marshal(viewMessage(m))
			if err != nil {
				return
			}
			_ = conn.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
			if err := conn.WriteMessage(websocket.TextMessage, b); err != nil {
				return
			}
			cursor = m.Cursor
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(cfg.WriteTimeout)); err != nil {
				return
			}
		case <-revoked:
			closeWith(CloseRevoked, "the token is no longer valid")
			return
		case <-ctx.Done():
			s.closeDone(ctx, conn, readErr, closeWith)
			return
		}
	}
}

// closeDone closes a stream whose context ended: the server is shutting
// down (1001), or the reader stopped because the client went silent
// (4002) or closed (the connection answered that already).
func (s *Server) closeDone(ctx context.Context, conn *websocket.Conn, readErr <-chan error, closeWith func(int, string)) {
	if s.base.Err() != nil {
		closeWith(websocket.CloseGoingAway, "server shutting down; resume from your cursor")
		return
	}
	select {
	case err := <-readErr:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			closeWith(ClosePongTimeout, "no pong in time")
		}
	default:
	}
}

// originAllowed checks a browser's Origin: the server's own host, or one
// of the allowed origins exactly (scheme, host and port). A request with
// no Origin is not from a browser page, which is what the check guards
// against.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	norm := strings.ToLower(u.Scheme + "://" + u.Host)
	return slices.ContainsFunc(s.cfg.AllowedOrigins, func(a string) bool {
		return strings.ToLower(strings.TrimRight(a, "/")) == norm
	})
}
