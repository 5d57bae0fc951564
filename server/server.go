// Package server is Rowfate's HTTP service, which `batchctl serve` runs:
// the JSON API under /v1 (uploads, batches, rows, actions, downloads,
// webhooks), the live progress of batches over a websocket, the admin page,
// an OpenAPI document, health checks and Prometheus metrics.
//
// Every request but the health checks, the OpenAPI document, the admin
// page's static files and the signed incoming webhook is authenticated
// before anything else, and every batch is looked up with the caller's
// tenant, so another tenant's batch is indistinguishable from one that
// does not exist. The request's context carries the tenant
// (batch.WithTenant), so that a store that enforces tenants in the
// database (PostgreSQL's row-level security) does so underneath the
// queries' own filters. A viewer reads; only an admin acts.
//
// Routes are one table (routes), from which the mux is built and against
// which the OpenAPI document is checked. Errors are RFC 9457 problem
// details with a stable code (Problem, ProblemCodes).
package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/filestore"
	"github.com/rowfate/rowfate/progress"
)

// Config configures a Server.
type Config struct {
	// Engine serves the API: uploads, batches, rows, actions, webhooks,
	// readiness. It is the server's one door to the data. Required.
	Engine *batch.Engine
	// Files keeps uploaded files and exports, each under its tenant and
	// content-addressed within it: the original file of a batch is
	// downloadable while it is kept. Required for the API.
	Files *filestore.Store
	// TmpDir holds temporary files (spooled uploads, workbooks being
	// read). Defaults to the system's.
	TmpDir string
	// MaxUpload is the largest file a request may upload. Defaults to
	// 1 GiB.
	MaxUpload int64
	// BodyIdleTimeout is how long a request body may send nothing before
	// the connection is closed: a client that trickles its body (a
	// slow-loris) holds a connection that long at most, while a large
	// upload that keeps sending takes as long as it needs. Defaults to 30s.
	BodyIdleTimeout time.Duration
	// Broadcaster streams batch events. Required.
	Broadcaster *progress.Broadcaster
	// Auth authenticates every request but the health checks. Required.
	Auth Authenticator
	// AllowedOrigins are the browser origins ("https://admin.example.com")
	// whose pages may open a websocket, besides the server's own. A
	// request with no Origin header (not a browser) is not checked.
	AllowedOrigins []string
	// Hooks configures the incoming webhook that starts an import.
	Hooks HooksConfig
	// AllowPrivateWebhooks lets tenants add webhook endpoints at
	// loopback, private, link-local and other non-public addresses. Off,
	// such an endpoint is refused (destination_not_allowed): a tenant
	// must not make the service post into the network it runs in. The
	// sender (outbox.Config.AllowPrivate) checks again at each dial.
	AllowPrivateWebhooks bool
	// Metrics, when set, is served at GET /metrics.
	Metrics http.Handler
	// NoAdmin leaves the admin page out.
	NoAdmin bool
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
	// AuthInterval is how often an open stream's credential is
	// authenticated again: a stream whose token was revoked meanwhile is
	// closed (code 4003) within about this long. An error other than a
	// refused credential (the database is down) leaves the stream open
	// until the next check. Defaults to 2s.
	AuthInterval time.Duration
}

// Close codes of the event stream, besides the standard ones.
const (
	// CloseSlowConsumer: the client did not keep up; resume from the
	// cursor of the last event received.
	CloseSlowConsumer = 4001
	// ClosePongTimeout: the client answered no ping in PongWait.
	ClosePongTimeout = 4002
	// CloseRevoked: the stream's credential no longer authenticates (an
	// API token revoked while the stream was open). Reconnecting needs a
	// valid token.
	CloseRevoked = 4003
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
	if cfg.Engine == nil || cfg.Broadcaster == nil || cfg.Auth == nil || cfg.Files == nil {
		return nil, errors.New("server: Config.Engine, Files, Broadcaster and Auth are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxUpload <= 0 {
		cfg.MaxUpload = 1 << 30
	}
	if cfg.BodyIdleTimeout <= 0 {
		cfg.BodyIdleTimeout = 30 * time.Second
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
	if ws.AuthInterval <= 0 {
		ws.AuthInterval = 2 * time.Second
	}
	if err := cfg.Hooks.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	s.base, s.shutdown = context.WithCancel(context.Background())
	for _, rt := range s.routes() {
		s.mux.Handle(rt.Method+" "+rt.Path, s.handler(rt))
	}
	return s, nil
}

// Access says who may call a route.
type Access int

// The access levels.
const (
	// Public: anyone (health checks, the OpenAPI document, the page).
	Public Access = iota
	// Viewer: any valid token.
	Viewer
	// Admin: a token with the admin role.
	Admin
	// Signed: a request signed with a webhook secret (incoming hooks).
	Signed
)

// Route is one endpoint: its method, its path pattern (http.ServeMux's
// syntax), who may call it, and its OpenAPI operation id.
type Route struct {
	Method      string
	Path        string
	Access      Access
	OperationID string
	h           func(w http.ResponseWriter, r *http.Request, p Principal) error
}

// Routes lists the server's endpoints, in the order they are documented.
func (s *Server) Routes() []Route { return s.routes() }

func (s *Server) routes() []Route {
	rs := []Route{
		{"GET", "/livez", Public, "livez", s.livez},
		{"GET", "/readyz", Public, "readyz", s.readyz},
		{"GET", "/v1/openapi.json", Public, "openapi", s.openapi},
		{"GET", "/v1/batches/{id}/events", Viewer, "streamEvents", s.eventsRoute},
	}
	if s.cfg.Metrics != nil {
		rs = append(rs, Route{"GET", "/metrics", Public, "metrics", func(w http.ResponseWriter, r *http.Request, _ Principal) error {
			s.cfg.Metrics.ServeHTTP(w, r)
			return nil
		}})
	}
	rs = append(rs,
		Route{"GET", "/v1/me", Viewer, "getMe", s.me},
		Route{"GET", "/v1/kinds", Viewer, "listKinds", s.kinds},
		Route{"GET", "/v1/kinds/{kind}/template", Viewer, "getTemplate", s.template},
		Route{"GET", "/v1/batches", Viewer, "listBatches", s.listBatches},
		Route{"POST", "/v1/batches", Admin, "createBatch", s.createBatch},
		Route{"POST", "/v1/batches/preview", Viewer, "previewBatch", s.preview},
		Route{"GET", "/v1/batches/{id}", Viewer, "getBatch", s.getBatch},
		Route{"POST", "/v1/batches/{id}/cancel", Admin, "cancelBatch", s.cancel},
		Route{"POST", "/v1/batches/{id}/pause", Admin, "pauseBatch", s.pause},
		Route{"POST", "/v1/batches/{id}/resume", Admin, "resumeBatch", s.resume},
		Route{"POST", "/v1/batches/{id}/limit", Admin, "limitBatch", s.limit},
		Route{"POST", "/v1/batches/{id}/retry", Admin, "retryBatch", s.retry},
		Route{"POST", "/v1/batches/{id}/rerun", Admin, "rerunBatch", s.rerun},
		Route{"GET", "/v1/batches/{id}/rows", Viewer, "listRows", s.listRows},
		Route{"POST", "/v1/batches/{id}/rows/bulk", Admin, "bulkRows", s.bulkRows},
		Route{"GET", "/v1/batches/{id}/rows/{row}", Viewer, "getRow", s.getRow},
		Route{"POST", "/v1/batches/{id}/rows/{row}/edit", Admin, "editRow", s.editRow},
		Route{"POST", "/v1/batches/{id}/rows/{row}/skip", Admin, "skipRow", s.skipRow},
		Route{"GET", "/v1/batches/{id}/history", Viewer, "listHistory", s.history},
		Route{"GET", "/v1/batches/{id}/report", Viewer, "getErrorReport", s.report},
		Route{"GET", "/v1/batches/{id}/file", Viewer, "getBatchFile", s.file},
		Route{"POST", "/v1/exports", Admin, "createExport", s.export},
		Route{"POST", "/v1/recalculations", Admin, "createRecalculation", s.recalc},
		Route{"POST", "/v1/hooks/import", Signed, "hookImport", s.hookImport},
	)
	rs = append(rs,
		Route{"GET", "/v1/webhooks", Viewer, "listWebhooks", s.listEndpoints},
		Route{"POST", "/v1/webhooks", Admin, "createWebhook", s.createEndpoint},
		Route{"DELETE", "/v1/webhooks/{id}", Admin, "deleteWebhook", s.deleteEndpoint},
		Route{"GET", "/v1/webhooks/deliveries", Viewer, "listDeliveries", s.listDeliveries},
	)
	if !s.cfg.NoAdmin {
		rs = append(rs,
			Route{"GET", "/{$}", Public, "adminPage", s.adminIndex},
			Route{"GET", "/assets/{file}", Public, "adminAsset", s.adminAsset},
		)
	}
	return rs
}

// ServeHTTP implements http.Handler. A request no route takes is
// answered as a problem too: 404, or 405 with the Allow header when the
// path exists with other methods.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r) // which sets the path values
		return
	}
	c := &captured{header: http.Header{}}
	h.ServeHTTP(c, r)
	switch c.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", c.header.Get("Allow"))
		writeProblem(w, r, Problem{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Detail: r.Method + " " + r.URL.Path + ": allowed: " + c.header.Get("Allow")})
	case 0, http.StatusNotFound:
		writeProblem(w, r, Problem{Status: http.StatusNotFound, Code: "not_found", Detail: "no such endpoint: " + r.Method + " " + r.URL.Path})
	default:
		// A redirect (a cleaned path): pass it on.
		for k, v := range c.header {
			w.Header()[k] = v
		}
		w.WriteHeader(c.status)
	}
}

// captured takes the answer of the mux's own error handlers, to answer
// as a problem instead.
type captured struct {
	header http.Header
	status int
}

func (c *captured) Header() http.Header         { return c.header }
func (c *captured) Write(b []byte) (int, error) { return len(b), nil }
func (c *captured) WriteHeader(status int)      { c.status = status }

// Shutdown closes the event streams (code 1001, going away); their clients
// resume from their cursors elsewhere. Call it with http.Server.Shutdown.
func (s *Server) Shutdown() { s.shutdown() }

// handler authenticates and authorises a route's requests, puts the
// tenant in their context and turns a handler's error into its problem.
func (s *Server) handler(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p Principal
		if rt.Access == Viewer || rt.Access == Admin {
			var err error
			p, err = s.cfg.Auth.Authenticate(r)
			if err != nil {
				if !errors.Is(err, ErrUnauthenticated) {
					s.cfg.Logger.Error("authenticate", "err", err)
					writeProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Code: "unavailable", Detail: "credentials cannot be checked now"})
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="rowfate"`)
				writeProblem(w, r, Problem{Status: http.StatusUnauthorized, Code: "unauthorized", Detail: "a valid bearer token is required (Authorization: Bearer TOKEN; batchctl token create makes one)"})
				return
			}
			if rt.Access == Admin && !p.CanAct() {
				writeProblem(w, r, Problem{Status: http.StatusForbidden, Code: "forbidden", Detail: "this token's role is " + p.Role + ": it reads, an admin token acts"})
				return
			}
			r = r.WithContext(batch.WithTenant(r.Context(), p.TenantID))
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &idleBody{rc: http.NewResponseController(w), body: r.Body, idle: s.cfg.BodyIdleTimeout}
		}
		if err := rt.h(w, r, p); err != nil {
			s.fail(w, r, err)
		}
	})
}

// fail answers with err's problem, and logs an error nobody expected.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	pr, ok := problemFor(err)
	if !ok {
		s.cfg.Logger.Error("request", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeProblem(w, r, pr)
}

func (s *Server) livez(w http.ResponseWriter, _ *http.Request, _ Principal) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz is ready when the database answers and its schema is the one this
// build knows.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ Principal) error {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := s.cfg.Engine.SchemaStatus(ctx)
	switch {
	case err != nil:
		s.cfg.Logger.Warn("readiness: database", "err", err)
		writeProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Code: "database_unreachable", Detail: "the database does not answer"})
	case st.Current != st.Latest:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "schema_not_current", "schema_version": st.Current, "latest": st.Latest})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "schema_version": st.Current})
	}
	return nil
}

// eventsRoute adapts the websocket handler, which answers its own errors.
func (s *Server) eventsRoute(w http.ResponseWriter, r *http.Request, p Principal) error {
	s.events(w, r, p)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// idleBody moves a request's read deadline ahead before each read of its
// body: a body that keeps coming is read to its end, one that stops for
// longer than idle fails the read and the connection closes.
type idleBody struct {
	rc   *http.ResponseController
	body io.ReadCloser
	idle time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	return b.body.Read(p)
}

func (b *idleBody) Close() error { return b.body.Close() }
