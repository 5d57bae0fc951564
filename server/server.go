// Package server is Rowfate's HTTP service: the live progress of batches
// over a websocket, and health endpoints. `batchctl serve` runs it.
//
// Every request is authenticated before anything else, and every batch is
// looked up with the caller's tenant, so another tenant's batch is
// indistinguishable from one that does not exist. Routes are registered on
// one http.ServeMux in routes, so that the API grows there.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/progress"
)

// Store is what the server reads of the store.
type Store interface {
	EventsList(ctx context.Context, params driver.EventsListParams) ([]driver.Event, error)
	SchemaStatus(ctx context.Context) (driver.SchemaStatus, error)
}

// Config configures a Server.
type Config struct {
	// Store is read for readiness. Required.
	Store Store
	// Broadcaster streams batch events. Required.
	Broadcaster *progress.Broadcaster
	// Auth authenticates every request but the health checks. Required.
	Auth Authenticator
	// AllowedOrigins are the browser origins ("https://admin.example.com")
	// whose pages may open a websocket, besides the server's own. A
	// request with no Origin header (not a browser) is not checked.
	AllowedOrigins []string
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Websocket tunes the event streams; zero values take defaults.
	Websocket WebsocketConfig
}

// WebsocketConfig tunes the websocket connections.
type WebsocketConfig struct {
	// PingInterval is how often the server pings. Defaults to 20s.
	PingInterval time.Duration
	// PongWait is how long the server waits for any frame, a pong
	// included, before it closes the connection (code 4002). Defaults to
	// 3 × PingInterval.
	PongWait time.Duration
	// WriteTimeout bounds one write. Defaults to 10s.
	WriteTimeout time.Duration
	// ReadLimit is the largest frame a client may send (it has nothing to
	// say but control frames); a larger one closes the connection with
	// code 1009. Defaults to 4 KiB.
	ReadLimit int64
}

// Close codes of the event stream, besides the standard ones.
const (
	// CloseSlowConsumer: the client did not keep up; resume from the
	// cursor of the last event received.
	CloseSlowConsumer = 4001
	// ClosePongTimeout: the client answered no ping in PongWait.
	ClosePongTimeout = 4002
	// CloseNotFound: the batch is gone.
	CloseNotFound = 4004
)

// Server serves the HTTP API.
type Server struct {
	cfg Config
	mux *http.ServeMux
	// base is cancelled by Shutdown, to close the event streams, which
	// http.Server.Shutdown does not (it does not track hijacked
	// connections).
	base     context.Context
	shutdown context.CancelFunc
}

// New returns a Server for a config.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Broadcaster == nil || cfg.Auth == nil {
		return nil, errors.New("server: Config.Store, Broadcaster and Auth are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ws := &cfg.Websocket
	if ws.PingInterval <= 0 {
		ws.PingInterval = 20 * time.Second
	}
	if ws.PongWait <= 0 {
		ws.PongWait = 3 * ws.PingInterval
	}
	if ws.WriteTimeout <= 0 {
		ws.WriteTimeout = 10 * time.Second
	}
	if ws.ReadLimit <= 0 {
		ws.ReadLimit = 4 << 10
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	s.base, s.shutdown = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /livez", s.livez)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.Handle("GET /v1/batches/{id}/events", s.authed(s.events))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Shutdown closes the event streams (code 1001, going away); their clients
// resume from their cursors elsewhere. Call it with http.Server.Shutdown.
func (s *Server) Shutdown() { s.shutdown() }

func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is ready when the database answers and its schema is the one this
// build knows.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := s.cfg.Store.SchemaStatus(ctx)
	switch {
	case err != nil:
		s.cfg.Logger.Warn("readiness: database", "err", err)
		writeError(w, http.StatusServiceUnavailable, "database_unreachable", "the database does not answer")
	case st.Current != st.Latest:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "schema_not_current", "schema_version": st.Current, "latest": st.Latest})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "schema_version": st.Current})
	}
}

// principalKey carries the authenticated Principal in a request's context.
type principalKey struct{}

// authed runs h for authenticated requests only.
func (s *Server) authed(h func(http.ResponseWriter, *http.Request, Principal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.cfg.Auth.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rowfate"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required")
			return
		}
		h(w, r, p)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is the body of every error response: a stable code and a
// message for people.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]apiError{"error": {Code: code, Message: msg}})
}
