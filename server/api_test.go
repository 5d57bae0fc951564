package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/filestore"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/processors"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/server"
	"github.com/rowfate/rowfate/store/postgres"
)

// The API tests' tokens: admin and viewer of tenant acme, admin of globex.
const (
	adminA  = "rft_admin-of-acme"
	viewerA = "rft_viewer-of-acme"
	adminB  = "rft_admin-of-globex"
)

const customersFixture = "../fixtures/customers.csv"

// apiHarness is a server with the built-in kinds on a real store, the
// OpenAPI document every answer is checked against, and three tokens.
type apiHarness struct {
	t      testing.TB
	store  driver.Store
	eng    *batch.Engine
	srv    *httptest.Server
	router routers.Router
	// files is the file store.
	files *filestore.Store
	// unchecked skips the OpenAPI check of answers (benchmarks).
	unchecked bool
}

type apiOptions struct {
	maxUpload int64
	hooks     server.HooksConfig
	idle      time.Duration
	// allowPrivateWebhooks is Config.AllowPrivateWebhooks.
	allowPrivateWebhooks bool
}

func newAPI(t testing.TB, s driver.Store, db *sql.DB, dialect customers.Dialect, o apiOptions) *apiHarness {
	t.Helper()
	ctx := context.Background()
	cfg := processors.Config{DB: db, Dialect: dialect}
	if err := processors.EnsureSchema(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	reg, err := processors.Registry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := batch.NewEngine(batch.Config{Store: s, Registry: reg, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ss := s.(driver.ServiceStore)
	for _, tok := range []struct{ tenant, role, token string }{{"acme", batchtype.RoleAdmin, adminA}, {"acme", batchtype.RoleViewer, viewerA}, {"globex", batchtype.RoleAdmin, adminB}} {
		if _, err := ss.TokenCreate(ctx, driver.TokenCreateParams{TenantID: tok.tenant, Name: tok.role + "-" + tok.tenant, Role: tok.role, TokenHash: server.TokenHash(tok.token)}); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bc := progress.New(s, &progress.Config{Rate: 1000, PollInterval: 50 * time.Millisecond})
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = bc.Run(bctx) }()
	srv, err := server.New(server.Config{Engine: eng, Files: files, TmpDir: t.TempDir(), MaxUpload: o.maxUpload, BodyIdleTimeout: o.idle, Broadcaster: bc,
		Auth: server.StoredTokens{Source: eng}, Hooks: o.hooks, AllowPrivateWebhooks: o.allowPrivateWebhooks, Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "# metrics\n") })})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Shutdown()
		hs.Close()
		cancel()
		<-done
	})
	doc, err := openapi3.NewLoader().LoadFromData(server.OpenAPI)
	if err != nil {
		t.Fatalf("load the OpenAPI document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: hs.URL}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &apiHarness{t: t, store: s, eng: eng, srv: hs, router: router, files: files}
}

func sqliteAPI(t testing.TB, o apiOptions) *apiHarness {
	t.Helper()
	s := teststore.SQLite(t)
	return newAPI(t, s, s.DB(), customers.SQLite, o)
}

// postgresRLSAPI is postgresAPI with every request's statements run as
// a tenant role under row-level security (serve --tenant-role).
func postgresRLSAPI(t testing.TB, o apiOptions) *apiHarness {
	t.Helper()
	pool := testdb.PostgresPool(t)
	schema := testdb.SchemaOf(pool.Config())
	role := schema + "_tenant"
	testdb.DropRoles(t, role)
	s := postgres.New(pool, &postgres.Config{Schema: schema, TenantRole: role})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTenantRole(context.Background()); err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { db.Close() })
	return newAPI(t, s, db, customers.Postgres, o)
}

// postgresAPI is a server on PostgreSQL, the store and the kinds' tables
// in one schema (an export reads the customers the workers wrote).
func postgresAPI(t testing.TB, o apiOptions) *apiHarness {
	t.Helper()
	pool := testdb.PostgresPool(t)
	s := postgres.New(pool, &postgres.Config{Schema: testdb.SchemaOf(pool.Config())})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { db.Close() })
	return newAPI(t, s, db, customers.Postgres, o)
}

// answer is a response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, a.body) }

// problem decodes a problem answer.
func (a answer) problem(t testing.TB) server.Problem {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json: %s", ct, a)
	}
	var p server.Problem
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != a.status || p.Type != server.ProblemTypePrefix+p.Code || p.Title == "" {
		t.Errorf("problem %+v does not match status %d", p, a.status)
	}
	return p
}

func (a answer) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
}

// req is one request.
type req struct {
	method, path, token string
	contentType         string
	body                []byte
	header              http.Header
}

// do sends a request and checks the answer against the OpenAPI document:
// its status is documented for the operation, and a JSON body matches the
// documented schema.
func (h *apiHarness) do(r req) answer {
	h.t.Helper()
	hr, err := http.NewRequest(r.method, h.srv.URL+r.path, bytes.NewReader(r.body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range r.header {
		hr.Header[k] = v
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.contentType != "" {
		hr.Header.Set("Content-Type", r.contentType)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		h.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: body}
	if !h.unchecked {
		h.conforms(hr, a)
	}
	return a
}

// conforms checks an answer against the OpenAPI document.
func (h *apiHarness) conforms(hr *http.Request, a answer) {
	h.t.Helper()
	route, params, err := h.router.FindRoute(hr)
	if err != nil {
		if a.status == http.StatusNotFound || a.status == http.StatusMethodNotAllowed {
			return // an endpoint that does not exist
		}
		h.t.Errorf("%s %s: not in the OpenAPI document: %v", hr.Method, hr.URL.Path, err)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: hr, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: a.status, Header: a.header, Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(a.body)
	if ct := a.header.Get("Content-Type"); !strings.Contains(ct, "json") {
		// Files and pages: their status and media type are checked, their
		// bytes by the tests that download them.
		in.Options.ExcludeResponseBody = true
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		h.t.Errorf("%s %s answered %d, which the OpenAPI document does not describe: %v\nbody: %.600s", hr.Method, hr.URL.Path, a.status, err, a.body)
	}
}

func (h *apiHarness) get(path, token string) answer {
	h.t.Helper()
	return h.do(req{method: "GET", path: path, token: token})
}

func (h *apiHarness) postJSON(path, token string, v any, header ...string) answer {
	h.t.Helper()
	var body []byte
	if v != nil {
		var err error
		if body, err = json.Marshal(v); err != nil {
			h.t.Fatal(err)
		}
	}
	r := req{method: "POST", path: path, token: token, body: body, header: http.Header{}}
	if v != nil {
		r.contentType = "application/json"
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.header.Set(header[i], header[i+1])
	}
	return h.do(r)
}

// multipartBody builds a form with fields and a file.
func multipartBody(t testing.TB, fields map[string]string, name string, file []byte) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if name != "" {
		f, err := w.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(file)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), w.FormDataContentType()
}

func (h *apiHarness) upload(path, token string, fields map[string]string, name string, file []byte, header ...string) answer {
	h.t.Helper()
	body, ct := multipartBody(h.t, fields, name, file)
	r := req{method: "POST", path: path, token: token, body: body, contentType: ct, header: http.Header{}}
	for i := 0; i+1 < len(header); i += 2 {
		r.header.Set(header[i], header[i+1])
	}
	return h.do(r)
}

// apiBatch is what the tests read of a batch.
type apiBatch struct {
	ID           int64            `json:"id"`
	TenantID     string           `json:"tenant_id"`
	Kind         string           `json:"kind"`
	Status       string           `json:"status"`
	Paused       bool             `json:"paused"`
	SourceName   string           `json:"source_name"`
	SourceDigest string           `json:"source_digest"`
	Counts       map[string]int64 `json:"counts"`
	Total        int64            `json:"total"`
	Done         int64            `json:"done"`
}

func (h *apiHarness) batchOf(a answer, want int) apiBatch {
	h.t.Helper()
	if a.status != want {
		h.t.Fatalf("answer %s, want %d", a, want)
	}
	var b apiBatch
	a.decode(h.t, &b)
	return b
}

// work runs the workers until the batch is done.
func (h *apiHarness) work(id int64) {
	h.t.Helper()
	if _, err := h.eng.Work(context.Background(), batch.WorkParams{BatchID: id, TenantIDs: []string{"acme", "globex"}, UntilDone: true}); err != nil {
		h.t.Fatal(err)
	}
}

func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(customersFixture)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAPIAuth: health checks and the document are public; everything else
// wants a live token, and acting wants an admin's.
func TestAPIAuth(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	for _, path := range []string{"/livez", "/readyz", "/v1/openapi.json", "/metrics", "/", "/assets/app.js", "/assets/app.css"} {
		if a := h.get(path, ""); a.status != http.StatusOK {
			t.Errorf("GET %s without a token: %s", path, a)
		}
	}
	if a := h.get("/", ""); !strings.Contains(a.header.Get("Content-Security-Policy"), "default-src 'none'") || !strings.Contains(string(a.body), "/assets/app.js") {
		t.Errorf("the admin page: CSP %q, body %.200s", a.header.Get("Content-Security-Policy"), a.body)
	}
	// The page's modules: each served as JavaScript, or the browser
	// refuses to run it.
	for _, js := range []string{"app", "core", "import", "grid", "bulk"} {
		if a := h.get("/assets/"+js+".js", ""); a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), "text/javascript") {
			t.Errorf("GET /assets/%s.js: %d, Content-Type %q", js, a.status, a.header.Get("Content-Type"))
		}
	}
	if a := h.get("/assets/nope.js", ""); a.status != http.StatusNotFound {
		t.Errorf("a missing asset: %s", a)
	}
	for _, tok := range []string{"", "rft_wrong", "Basic abc"} {
		a := h.get("/v1/batches", tok)
		if a.status != http.StatusUnauthorized || a.problem(t).Code != "unauthorized" || a.header.Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: %s", tok, a)
		}
	}
	var me map[string]string
	h.get("/v1/me", viewerA).decode(t, &me)
	if me["tenant_id"] != "acme" || me["role"] != "viewer" {
		t.Errorf("me = %v", me)
	}
	// A viewer reads but does not act: every acting route is 403 before
	// anything is looked at.
	body, ct := multipartBody(t, map[string]string{"kind": "customers"}, "c.csv", fixture(t))
	for _, r := range []req{
		{method: "POST", path: "/v1/batches", body: body, contentType: ct},
		{method: "POST", path: "/v1/batches/1/cancel"}, {method: "POST", path: "/v1/batches/1/pause"}, {method: "POST", path: "/v1/batches/1/resume"},
		{method: "POST", path: "/v1/batches/1/retry"}, {method: "POST", path: "/v1/batches/1/rerun"},
		{method: "POST", path: "/v1/batches/1/rows/2/edit"}, {method: "POST", path: "/v1/batches/1/rows/2/skip"},
		{method: "POST", path: "/v1/exports"}, {method: "POST", path: "/v1/recalculations"},
		{method: "POST", path: "/v1/webhooks"}, {method: "DELETE", path: "/v1/webhooks/1"},
	} {
		r.token = viewerA
		if a := h.do(r); a.status != http.StatusForbidden || a.problem(t).Code != "forbidden" {
			t.Errorf("viewer %s %s: %s", r.method, r.path, a)
		}
	}
	// A revoked token fails from the next request on.
	ss := h.store.(driver.ServiceStore)
	tok, err := server.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	created, err := ss.TokenCreate(context.Background(), driver.TokenCreateParams{TenantID: "acme", Name: "tmp", Role: batchtype.RoleAdmin, TokenHash: server.TokenHash(tok)})
	if err != nil {
		t.Fatal(err)
	}
	if a := h.get("/v1/me", tok); a.status != http.StatusOK {
		t.Fatalf("a new token: %s", a)
	}
	if err := ss.TokenRevoke(context.Background(), "acme", created.ID); err != nil {
		t.Fatal(err)
	}
	if a := h.get("/v1/me", tok); a.status != http.StatusUnauthorized {
		t.Errorf("a revoked token: %s", a)
	}
	// Unknown endpoints and methods are problems too.
	if a := h.get("/v1/nope", adminA); a.status != http.StatusNotFound || a.problem(t).Code != "not_found" {
		t.Errorf("unknown path: %s", a)
	}
	if a := h.do(req{method: "PUT", path: "/v1/batches", token: adminA}); a.status != http.StatusMethodNotAllowed || a.problem(t).Code != "method_not_allowed" || a.header.Get("Allow") == "" {
		t.Errorf("wrong method: %s %v", a, a.header)
	}
	if a := h.get("/v1/batches/abc", adminA); a.status != http.StatusBadRequest || a.problem(t).Code != "bad_batch_id" {
		t.Errorf("bad id: %s", a)
	}
	if a := h.get("/v1/batches/999", adminA); a.status != http.StatusNotFound || a.problem(t).Code != "not_found" {
		t.Errorf("no such batch: %s", a)
	}
}

// TestAPIImport: preview, import by upload with an idempotency key, by
// multipart and by JSON rows; list, read, work, and download.
func TestAPIImport(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQLTenantRole": postgresRLSAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testAPIImport(t, mk(t, apiOptions{}))
		})
	}
}

// onBothStores runs test in parallel on SQLite and on PostgreSQL under a
// tenant role (row-level security), each with a harness of its own.
func onBothStores(t *testing.T, o apiOptions, test func(t *testing.T, h *apiHarness)) {
	t.Helper()
	for name, mk := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQLTenantRole": postgresRLSAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, mk(t, o))
		})
	}
}

func testAPIImport(t *testing.T, h *apiHarness) {
	file := fixture(t)

	// Preview: the mapping, the first rows and a dry run's counts.
	a := h.upload("/v1/batches/preview", viewerA, map[string]string{"kind": "customers"}, "customers.csv", file)
	if a.status != http.StatusOK {
		t.Fatalf("preview: %s", a)
	}
	var pv struct {
		Upload  string           `json:"upload"`
		Format  string           `json:"format"`
		Header  []string         `json:"header"`
		Counts  map[string]int64 `json:"counts"`
		Rows    []json.RawMessage
		Mapping struct {
			Matched []struct{ Header, Column string }
			Missing []struct{ Column string }
		}
		Rejected string
	}
	a.decode(t, &pv)
	if pv.Counts["valid"] != 285 || pv.Counts["invalid"] != 15 || len(pv.Rows) != 10 || pv.Format != "csv" || len(pv.Mapping.Matched) != 5 || pv.Rejected != "" {
		t.Fatalf("preview = %+v", pv)
	}
	if st, _ := h.batches(adminA, ""); len(st) != 0 {
		t.Fatalf("a preview made a batch: %v", st)
	}

	// Import the previewed upload, with an idempotency key: twice is once.
	first := h.batchOf(h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "upload": pv.Upload, "source_name": "customers.csv"}, "Idempotency-Key", "k-1"), http.StatusCreated)
	if first.Total != 300 || first.Counts["invalid"] != 15 || first.SourceName != "customers.csv" || first.TenantID != "acme" {
		t.Fatalf("imported %+v", first)
	}
	again := h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "upload": pv.Upload, "source_name": "customers.csv"}, "Idempotency-Key", "k-1")
	if b := h.batchOf(again, http.StatusOK); b.ID != first.ID || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the same key again: %s", again)
	}
	other := append(bytes.Clone(file), "new.customer@example.com,New Customer,PT,2021-01-01,1.00\n"...)
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "customers.csv", other, "Idempotency-Key", "k-1"); a.status != http.StatusConflict || a.problem(t).Code != "idempotency_key_reused" {
		t.Fatalf("the same key with other content: %s", a)
	}

	// Work it; read it; list it.
	h.work(first.ID)
	got := h.batchOf(h.get(fmt.Sprintf("/v1/batches/%d", first.ID), viewerA), http.StatusOK)
	if got.Status != "finished" || got.Done != 300 || got.Counts["succeeded"] != 285 {
		t.Fatalf("after the work: %+v", got)
	}

	// Multipart straight in, with options; JSON rows.
	mp := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "date_order": "dmy", "new_batch": "true"}, "more.csv",
		[]byte("email,name,country,signup_date,amount\nm1@example.com,M One,PT,03/04/2020,1.00\n")), http.StatusCreated)
	if mp.Total != 1 || mp.Counts["valid"] != 1 {
		t.Fatalf("multipart import: %+v", mp)
	}
	js := h.batchOf(h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "source_name": "api.csv", "rows": []map[string]any{
		{"email": "j1@example.com", "name": "J One", "country": "PT", "signup_date": "2020-01-01", "amount": 12.5},
		{"email": "not-an-email", "name": "J Two", "country": "PT", "signup_date": "2020-01-01", "amount": 3},
	}}), http.StatusCreated)
	if js.Total != 2 || js.Counts["valid"] != 1 || js.Counts["invalid"] != 1 || js.SourceName != "api.csv" {
		t.Fatalf("JSON rows: %+v", js)
	}
	for _, bad := range []string{
		`{"kind":"customers","rows":[{"email":"a@example.com"},{"name":"x"}]}`,
		`{"kind":"customers","rows":[{"email":null}]}`,
		`{"kind":"customers","rows":[{"email":{"x":1}}]}`,
		`{"kind":"customers","rows":[]}`,
		`{"kind":"customers"}`,
		`{"kind":"customers","upload":"ab","bogus":1}`,
		`{"kind":`,
	} {
		if a := h.do(req{method: "POST", path: "/v1/batches", token: adminA, contentType: "application/json", body: []byte(bad)}); a.status != http.StatusBadRequest {
			t.Errorf("body %s: %s", bad, a)
		}
	}
	if a := h.postJSON("/v1/batches", adminA, map[string]any{"kind": "nope", "upload": pv.Upload}); a.status != http.StatusNotFound || a.problem(t).Code != "unknown_kind" {
		t.Errorf("unknown kind: %s", a)
	}
	if a := h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "upload": strings.Repeat("0", 64)}); a.status != http.StatusNotFound || a.problem(t).Code != "file_not_kept" {
		t.Errorf("unknown upload: %s", a)
	}
	if a := h.do(req{method: "POST", path: "/v1/batches", token: adminA, contentType: "text/csv", body: file}); a.status != http.StatusUnsupportedMediaType {
		t.Errorf("text/csv body: %s", a)
	}

	// Lists: newest first, keyset pages, filters.
	page1, next := h.batches(adminA, "?limit=2")
	if len(page1) != 2 || page1[0].ID != js.ID || next == nil {
		t.Fatalf("page 1: %v next %v", page1, next)
	}
	page2, next2 := h.batches(adminA, fmt.Sprintf("?limit=2&before=%d", *next))
	if len(page2) != 1 || page2[0].ID != first.ID || next2 != nil {
		t.Fatalf("page 2: %v next %v", page2, next2)
	}
	if fin, _ := h.batches(adminA, "?status=finished"); len(fin) != 1 || fin[0].ID != first.ID {
		t.Errorf("finished: %v", fin)
	}
	if a := h.get("/v1/batches?status=bogus", adminA); a.status != http.StatusBadRequest {
		t.Errorf("bad status filter: %s", a)
	}
	if a := h.get("/v1/batches?limit=0", adminA); a.status != http.StatusBadRequest {
		t.Errorf("limit 0: %s", a)
	}

	// Downloads: the original file byte for byte, the error report, the
	// template.
	orig := h.get(fmt.Sprintf("/v1/batches/%d/file", first.ID), viewerA)
	if orig.status != http.StatusOK || !bytes.Equal(orig.body, file) || !strings.Contains(orig.header.Get("Content-Disposition"), "customers.csv") {
		t.Fatalf("original file: %d, %d bytes, %v", orig.status, len(orig.body), orig.header)
	}
	rep := h.get(fmt.Sprintf("/v1/batches/%d/report?format=csv", first.ID), viewerA)
	if rep.status != http.StatusOK || !strings.HasPrefix(rep.header.Get("Content-Type"), "text/csv") || strings.Count(string(rep.body), "\n") < 16 || !strings.HasPrefix(strings.SplitN(string(rep.body), "\n", 3)[1], "email,name") {
		t.Fatalf("csv report: %s", rep)
	}
	xl := h.get(fmt.Sprintf("/v1/batches/%d/report?format=xlsx&states=invalid", first.ID), viewerA)
	if xl.status != http.StatusOK || !bytes.HasPrefix(xl.body, []byte("PK")) {
		t.Fatalf("xlsx report: %d %v", xl.status, xl.header)
	}
	if a := h.get(fmt.Sprintf("/v1/batches/%d/report?format=pdf", first.ID), viewerA); a.status != http.StatusBadRequest {
		t.Errorf("pdf report: %s", a)
	}
	tpl := h.get("/v1/kinds/customers/template?format=csv", viewerA)
	if tpl.status != http.StatusOK || !strings.Contains(string(tpl.body), "email") {
		t.Errorf("template: %s", tpl)
	}
	if a := h.get("/v1/kinds/nope/template", viewerA); a.status != http.StatusNotFound {
		t.Errorf("template of no kind: %s", a)
	}
	var kinds struct{ Kinds []server.KindView }
	h.get("/v1/kinds", viewerA).decode(t, &kinds)
	if !slices.ContainsFunc(kinds.Kinds, func(k server.KindView) bool {
		return k.Name == "customers" && k.Direction == "import" && slices.Contains(k.Required, "email")
	}) {
		t.Errorf("kinds: %+v", kinds)
	}
}

// batches lists the token's batches.
func (h *apiHarness) batches(token, query string) ([]apiBatch, *int64) {
	h.t.Helper()
	a := h.get("/v1/batches"+query, token)
	if a.status != http.StatusOK {
		h.t.Fatalf("list: %s", a)
	}
	var page struct {
		Batches    []apiBatch `json:"batches"`
		NextBefore *int64     `json:"next_before"`
	}
	a.decode(h.t, &page)
	return page.Batches, page.NextBefore
}

// apiRow is what the tests read of a row.
type apiRow struct {
	RowNo    int64           `json:"row_no"`
	State    string          `json:"state"`
	Values   []string        `json:"values"`
	Errors   json.RawMessage `json:"errors"`
	Attempts int             `json:"attempts"`
	Reviewed bool            `json:"reviewed"`
}

// TestAPIRowsAndActions: rows by state in pages, one row, edit, skip,
// history, retry, re-run, pause, resume, cancel, export, recalculation.
func TestAPIRowsAndActions(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQLTenantRole": postgresRLSAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testAPIRowsAndActions(t, mk(t, apiOptions{}))
		})
	}
}

func testAPIRowsAndActions(t *testing.T, h *apiHarness) {
	b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "customers.csv", fixture(t)), http.StatusCreated)
	h.work(b.ID)
	base := fmt.Sprintf("/v1/batches/%d", b.ID)

	var invalid []apiRow
	for after := int64(0); ; {
		a := h.get(fmt.Sprintf("%s/rows?state=invalid&limit=4&after=%d", base, after), viewerA)
		var page struct {
			Rows      []apiRow `json:"rows"`
			NextAfter *int64   `json:"next_after"`
		}
		a.decode(t, &page)
		invalid = append(invalid, page.Rows...)
		if page.NextAfter == nil {
			break
		}
		after = *page.NextAfter
	}
	if len(invalid) != 15 || invalid[0].State != "invalid" || len(invalid[0].Errors) < 3 {
		t.Fatalf("%d invalid rows: %+v", len(invalid), invalid)
	}
	if a := h.get(base+"/rows?state=bogus", viewerA); a.status != http.StatusBadRequest {
		t.Errorf("bad state: %s", a)
	}
	var one apiRow
	h.get(fmt.Sprintf("%s/rows/%d", base, invalid[0].RowNo), viewerA).decode(t, &one)
	if one.RowNo != invalid[0].RowNo || one.State != "invalid" {
		t.Fatalf("row: %+v", one)
	}
	if a := h.get(base+"/rows/99999", viewerA); a.status != http.StatusNotFound {
		t.Errorf("no such row: %s", a)
	}

	// Edit an invalid row into a valid one; skip another; a completed
	// row is locked.
	fix := map[string]any{"set": map[string]string{"email": "fixed.row@example.com", "name": "Fixed Row", "country": "PT", "signup_date": "2020-02-02", "amount": "10.00"}}
	ed := h.postJSON(fmt.Sprintf("%s/rows/%d/edit", base, invalid[0].RowNo), adminA, fix)
	var edited apiRow
	ed.decode(t, &edited)
	if ed.status != http.StatusOK || edited.State != "valid" || !edited.Reviewed {
		t.Fatalf("edit: %s", ed)
	}
	if a := h.postJSON(fmt.Sprintf("%s/rows/%d/edit", base, invalid[1].RowNo), adminA, map[string]any{"set": map[string]string{"no such column": "x"}}); a.status != http.StatusBadRequest {
		t.Errorf("edit of no column: %s", a)
	}
	if a := h.postJSON(fmt.Sprintf("%s/rows/%d/edit", base, invalid[1].RowNo), adminA, map[string]any{"set": map[string]string{}}); a.status != http.StatusBadRequest {
		t.Errorf("empty edit: %s", a)
	}
	sk := h.postJSON(fmt.Sprintf("%s/rows/%d/skip", base, invalid[1].RowNo), adminA, map[string]string{"reason": "duplicate"})
	var skipped apiRow
	sk.decode(t, &skipped)
	if sk.status != http.StatusOK || skipped.State != "skipped" {
		t.Fatalf("skip: %s", sk)
	}
	if a := h.postJSON(fmt.Sprintf("%s/rows/%d/skip", base, invalid[2].RowNo), adminA, map[string]string{"reason": " "}); a.status != http.StatusBadRequest {
		t.Errorf("skip without a reason: %s", a)
	}
	if a := h.postJSON(fmt.Sprintf("%s/rows/%d/skip", base, invalid[1].RowNo), adminA, map[string]string{"reason": "again"}); a.status != http.StatusConflict || a.problem(t).Code != "row_locked" {
		t.Errorf("skip of a skipped row: %s", a)
	}
	var hist apiHistory
	h.get(base+"/history", viewerA).decode(t, &hist)
	if len(hist.History) != 2 || hist.History[0].Action != "edit" || hist.History[1].Action != "skip" || hist.History[0].Actor != "api:admin-acme" {
		t.Fatalf("history: %+v", hist)
	}

	// Re-run: the stored rows again (nothing protected changes).
	var rr struct {
		Batch    apiBatch `json:"batch"`
		Reparsed int64    `json:"reparsed"`
	}
	a := h.postJSON(base+"/rerun", adminA, nil)
	a.decode(t, &rr)
	if a.status != http.StatusOK || rr.Reparsed != 13 || rr.Batch.Counts["skipped"] != 1 {
		t.Fatalf("rerun: %s", a)
	}
	// Re-run with a corrected file: the error report, fixed.
	rep := h.get(base+"/report", viewerA).body
	fixed := strings.Replace(string(rep), "not-an-email", "now.valid@example.com", 1)
	a = h.upload(base+"/rerun", adminA, nil, "errors-fixed.csv", []byte(fixed))
	if a.status != http.StatusOK {
		t.Fatalf("rerun with a file: %s", a)
	}

	// Retry with nothing to retry; a state that cannot be retried.
	var ret struct {
		Retried int64 `json:"retried"`
	}
	a = h.postJSON(base+"/retry", adminA, map[string]any{"states": []string{"failed", "dead"}})
	a.decode(t, &ret)
	if a.status != http.StatusOK || ret.Retried != 0 {
		t.Errorf("retry: %s", a)
	}
	if a := h.postJSON(base+"/retry", adminA, map[string]any{"states": []string{"succeeded"}}); a.status != http.StatusBadRequest {
		t.Errorf("retry of succeeded rows: %s", a)
	}

	// The same file again is the batch it made (200), not a second run of
	// its rows; new_batch asks for one.
	if again := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "c2.csv", fixture(t)), http.StatusOK); again.ID != b.ID {
		t.Errorf("the same file again: batch %d, want %d", again.ID, b.ID)
	}
	// Pause, resume and cancel a batch nobody works.
	nb := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "new_batch": "true"}, "c2.csv", fixture(t)), http.StatusCreated)
	nbase := fmt.Sprintf("/v1/batches/%d", nb.ID)
	if p := h.batchOf(h.postJSON(nbase+"/pause", adminA, nil), http.StatusOK); !p.Paused {
		t.Errorf("pause: %+v", p)
	}
	if p := h.batchOf(h.postJSON(nbase+"/resume", adminA, nil), http.StatusOK); p.Paused {
		t.Errorf("resume: %+v", p)
	}
	if c := h.batchOf(h.postJSON(nbase+"/cancel", adminA, nil), http.StatusOK); c.Status != "cancelled" || c.Counts["cancelled"] != 285 {
		t.Errorf("cancel: %+v", c)
	}

	// Export to a kept file; a recalculation.
	ex := h.batchOf(h.postJSON("/v1/exports", adminA, map[string]string{"kind": "customers", "format": "xlsx"}), http.StatusCreated)
	if ex.Total == 0 || ex.Counts["succeeded"] != ex.Total {
		t.Fatalf("export: %+v", ex)
	}
	dl := h.get(fmt.Sprintf("/v1/batches/%d/file", ex.ID), viewerA)
	if dl.status != http.StatusOK || !bytes.HasPrefix(dl.body, []byte("PK")) {
		t.Fatalf("export download: %d %v", dl.status, dl.header)
	}
	if a := h.postJSON("/v1/exports", adminA, map[string]string{"kind": "nope"}); a.status != http.StatusNotFound {
		t.Errorf("export of no kind: %s", a)
	}
	var recalcKind string
	for _, k := range h.eng.Registry().Kinds() {
		if k.Direction == batch.DirectionRecalc {
			recalcKind = k.Name
		}
	}
	rc := h.batchOf(h.postJSON("/v1/recalculations", adminA, map[string]any{"kind": recalcKind}), http.StatusCreated)
	if rc.Kind != recalcKind || rc.Total == 0 {
		t.Errorf("recalculation: %+v", rc)
	}
	if a := h.postJSON("/v1/recalculations", adminA, map[string]any{"kind": "customers"}); a.status != http.StatusNotFound {
		t.Errorf("recalculation of an import kind: %s", a)
	}
	// A filter that matches nothing creates no batch, and says so.
	if a := h.postJSON("/v1/recalculations", adminA, map[string]any{"kind": recalcKind, "params": map[string]string{"where": "country = 'XX'"}}); a.status != http.StatusUnprocessableEntity || a.problem(t).Code != "no_match" {
		t.Errorf("recalculation matching no row: %s", a)
	}
}

// TestAPIUploadLimits: a body over the limit is 413 and keeps nothing; a
// file rejected as a whole is 422 and makes no batch.
func TestAPIUploadLimits(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{maxUpload: 4 << 10})
	big := bytes.Repeat([]byte("x"), 8<<10)
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "big.csv", big); a.status != http.StatusRequestEntityTooLarge || a.problem(t).Code != "too_large" {
		t.Errorf("oversize: %s", a)
	}
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 1, 2, 0xff}, 100)...)
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "photo.csv", png); a.status != http.StatusUnprocessableEntity || a.problem(t).Code != "file_rejected" {
		t.Errorf("a PNG named .csv: %s", a)
	}
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "nohdr.csv", []byte("a,b\n1,2\n")); a.status != http.StatusUnprocessableEntity {
		t.Errorf("no customers header: %s", a)
	}
	// More invalid rows than max_invalid allows: rejected whole.
	bad := []byte("email,name,country,signup_date,amount\nnot-an-email,Ann,FR,2020-01-02,1\nb@example.com,Bo,FR,2020-01-02,1\n")
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "max_invalid": "0"}, "bad.csv", bad); a.status != http.StatusUnprocessableEntity ||
		a.problem(t).Code != "file_rejected" || !strings.Contains(a.problem(t).Detail, "1 of 2 rows are invalid") {
		t.Errorf("max_invalid 0: %s", a)
	}
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "max_invalid": "many"}, "bad.csv", bad); a.status != http.StatusBadRequest {
		t.Errorf("max_invalid many: %s", a)
	}
	if a := h.upload("/v1/batches/preview", adminA, map[string]string{"kind": "customers"}, "photo.csv", png); a.status != http.StatusOK || !strings.Contains(string(a.body), `"rejected"`) {
		t.Errorf("preview of a PNG: %s", a)
	}
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "", nil); a.status != http.StatusBadRequest {
		t.Errorf("no file part: %s", a)
	}
	if bs, _ := h.batches(adminA, ""); len(bs) != 0 {
		t.Errorf("rejected uploads left batches: %+v", bs)
	}
}

// TestAPIWebhookEndpoints: endpoints per tenant, the secret shown once,
// and the deliveries a finished batch queues.
func TestAPIWebhookEndpoints(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	a := h.postJSON("/v1/webhooks", adminA, map[string]string{"url": "https://hooks.example.com/rowfate"})
	var ep struct {
		ID     int64  `json:"id"`
		Secret string `json:"secret"`
	}
	a.decode(t, &ep)
	if a.status != http.StatusCreated || !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("create: %s", a)
	}
	if a := h.postJSON("/v1/webhooks", adminA, map[string]string{"url": "ftp://x"}); a.status != http.StatusBadRequest {
		t.Errorf("ftp URL: %s", a)
	}
	l := h.get("/v1/webhooks", viewerA)
	if l.status != http.StatusOK || strings.Contains(string(l.body), ep.Secret) || !strings.Contains(string(l.body), "hooks.example.com") {
		t.Errorf("list: %s", l)
	}
	b := h.batchOf(h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "rows": []map[string]string{{"email": "w@example.com", "name": "W", "country": "PT", "signup_date": "2020-01-01", "amount": "1"}}}), http.StatusCreated)
	h.work(b.ID)
	var ds struct {
		Deliveries []struct {
			BatchID   int64  `json:"batch_id"`
			EventType string `json:"event_type"`
			Status    string `json:"status"`
		} `json:"deliveries"`
	}
	h.get("/v1/webhooks/deliveries", viewerA).decode(t, &ds)
	if len(ds.Deliveries) != 1 || ds.Deliveries[0].BatchID != b.ID || ds.Deliveries[0].Status != "pending" {
		t.Errorf("deliveries: %+v", ds)
	}
	for _, path := range []string{"/v1/webhooks/deliveries", "/v1/webhooks"} {
		if a := h.get(path, adminB); a.status != http.StatusOK || strings.Contains(string(a.body), "hooks.example.com") || strings.Contains(string(a.body), fmt.Sprintf(`"batch_id":%d`, b.ID)) {
			t.Errorf("globex's %s shows acme's: %s", path, a)
		}
	}
	if a := h.do(req{method: "DELETE", path: fmt.Sprintf("/v1/webhooks/%d", ep.ID), token: adminB}); a.status != http.StatusNotFound {
		t.Errorf("another tenant's delete: %s", a)
	}
	if a := h.do(req{method: "DELETE", path: fmt.Sprintf("/v1/webhooks/%d", ep.ID), token: adminA}); a.status != http.StatusNoContent {
		t.Errorf("delete: %s", a)
	}
	if a := h.do(req{method: "DELETE", path: fmt.Sprintf("/v1/webhooks/%d", ep.ID), token: adminA}); a.status != http.StatusNotFound {
		t.Errorf("delete again: %s", a)
	}
}

// TestAPICrossTenant: tenant globex's admin cannot read, act on or
// subscribe to tenant acme's batch through any endpoint, on both stores.
func TestAPICrossTenant(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQL": postgresAPI, "PostgreSQLTenantRole": postgresRLSAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := mk(t, apiOptions{})
			b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "customers.csv", fixture(t)), http.StatusCreated)
			base := fmt.Sprintf("/v1/batches/%d", b.ID)
			mp, ct := multipartBody(t, nil, "fix.csv", fixture(t))
			for _, r := range []req{
				{method: "GET", path: base}, {method: "GET", path: base + "/rows"}, {method: "GET", path: base + "/rows/2"},
				{method: "GET", path: base + "/history"}, {method: "GET", path: base + "/report"}, {method: "GET", path: base + "/file"},
				{method: "POST", path: base + "/cancel"}, {method: "POST", path: base + "/pause"}, {method: "POST", path: base + "/resume"},
				{method: "POST", path: base + "/retry"}, {method: "POST", path: base + "/rerun"},
				{method: "POST", path: base + "/rerun", body: mp, contentType: ct},
				{method: "POST", path: base + "/rows/2/edit", contentType: "application/json", body: []byte(`{"set":{"name":"x"}}`)},
				{method: "POST", path: base + "/rows/2/skip", contentType: "application/json", body: []byte(`{"reason":"x"}`)},
			} {
				r.token = adminB
				if a := h.do(r); a.status != http.StatusNotFound || a.problem(t).Code != "not_found" {
					t.Errorf("globex %s %s: %s", r.method, r.path, a)
				}
			}
			// The websocket is refused before the upgrade.
			hdr := http.Header{"Authorization": {"Bearer " + adminB}}
			wsURL := "ws" + strings.TrimPrefix(h.srv.URL, "http") + base + "/events"
			if c, resp, err := (&websocketDialer).Dial(wsURL, hdr); err == nil {
				c.Close()
				t.Error("globex opened acme's event stream")
			} else if resp == nil || resp.StatusCode != http.StatusNotFound {
				t.Errorf("globex's stream: %v %v", resp, err)
			}
			if bs, _ := h.batches(adminB, ""); len(bs) != 0 {
				t.Errorf("globex lists %v", bs)
			}
			// Nothing changed for acme.
			got := h.batchOf(h.get(base, adminA), http.StatusOK)
			if got.Status != "running" || got.Paused || got.Counts["skipped"] != 0 || got.Counts["cancelled"] != 0 {
				t.Errorf("acme's batch after globex's attempts: %+v", got)
			}
			var hist struct{ History []json.RawMessage }
			h.get(base+"/history", adminA).decode(t, &hist)
			if len(hist.History) != 0 {
				t.Errorf("history after globex's attempts: %s", hist.History)
			}
		})
	}
}

// TestOpenAPIMatchesRoutes: every route is documented with its operation
// id, nothing is documented that is not routed, and the problem codes are
// the ones the server answers with.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{hooks: server.HooksConfig{Secrets: map[string][]string{"acme": {testSecret}}}})
	doc, err := openapi3.NewLoader().LoadFromData(server.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Engine: h.eng, Files: h.files, Broadcaster: progress.New(h.store, nil), Auth: server.Insecure{TenantID: "x"}, Metrics: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	routed := map[string]string{}
	for _, r := range srv.Routes() {
		path := strings.TrimSuffix(r.Path, "{$}")
		routed[r.Method+" "+path] = r.OperationID
		item := doc.Paths.Find(path)
		if item == nil {
			t.Errorf("%s %s is not in the document", r.Method, path)
			continue
		}
		op := item.GetOperation(r.Method)
		switch {
		case op == nil:
			t.Errorf("%s %s: the document has the path, not the method", r.Method, path)
		case op.OperationID != r.OperationID:
			t.Errorf("%s %s: operationId %q, the route says %q", r.Method, path, op.OperationID, r.OperationID)
		case r.Access == server.Public || r.Access == server.Signed:
			if op.Security == nil || len(*op.Security) != 0 {
				t.Errorf("%s %s needs no token; the document says it does", r.Method, path)
			}
		default:
			if op.Security != nil && len(*op.Security) == 0 {
				t.Errorf("%s %s needs a token; the document says it does not", r.Method, path)
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if _, ok := routed[method+" "+path]; !ok {
				t.Errorf("the document has %s %s, which is not routed", method, path)
			}
		}
	}
	var codes []string
	for _, v := range doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum {
		codes = append(codes, v.(string))
	}
	for code := range server.ProblemCodes {
		if !slices.Contains(codes, code) {
			t.Errorf("problem code %q is not in the document", code)
		}
	}
	if len(codes) != len(server.ProblemCodes) {
		t.Errorf("the document has %d problem codes, the server %d", len(codes), len(server.ProblemCodes))
	}
	a := h.get("/v1/openapi.json", "")
	if !bytes.Equal(a.body, server.OpenAPI) {
		t.Error("GET /v1/openapi.json is not the embedded document")
	}
}

// TestAPIUploadStreams: a 48 MiB upload (96 MiB in make test-long) goes
// to the file store without the server holding it: the heap grows by a
// fraction of the file.
//
// It runs alone (not in parallel): the heap is the process's.
func TestAPIUploadStreams(t *testing.T) {
	h := sqliteAPI(t, apiOptions{})
	size := testenv.Pick(48<<20, 96<<20)
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		mw.WriteField("kind", "no-such-kind") // refused after the file is kept
		f, _ := mw.CreateFormFile("file", "big.csv")
		line := []byte("someone@example.com,Some One,PT,2020-01-01,1.00\n")
		for n := 0; n < size; n += len(line) {
			if _, err := f.Write(line); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := sampleHeap(t)
	hr, _ := http.NewRequest("POST", h.srv.URL+"/v1/batches", pr)
	hr.Header.Set("Authorization", "Bearer "+adminA)
	hr.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	grown := int64(peak()) - int64(before.HeapInuse)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d, want 404 unknown_kind", resp.StatusCode)
	}
	t.Logf("heap in use grew by %.1f MiB during a %d MiB upload", float64(grown)/(1<<20), size>>20)
	if grown > 24<<20 {
		t.Errorf("the heap grew by %d MiB during a %d MiB upload: the file is being held", grown>>20, size>>20)
	}
}

// sampleHeap samples the heap in use every 5 ms until the
// returned function is called, which returns the peak.
func sampleHeap(t *testing.T) func() uint64 {
	t.Helper()
	done := make(chan struct{})
	out := make(chan uint64)
	go func() {
		var peak uint64
		var m runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-done:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-out }
}

// TestSlowBody: a client that sends part of its upload and then nothing
// is cut off once the body has been idle for BodyIdleTimeout; the server
// keeps nothing of it.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{idle: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/batches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000\r\n\r\n", adminA)
	fmt.Fprint(conn, "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.csv\"\r\n\r\nemail,name\r\n")
	// The server answers, or closes; a connection still open when the
	// test's patience runs out was held by the stalled body.
	_ = conn.SetReadDeadline(time.Now().Add(testenv.Patience(t)))
	resp, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a stalled body held the connection for %v", testenv.Patience(t))
	}
	if bs, _ := h.batches(adminA, ""); len(bs) != 0 {
		t.Errorf("a cut-off upload made a batch: %+v (%s)", bs, resp)
	}
}

// FuzzUpload: whatever a client sends as a multipart upload, the server
// answers with a documented 4xx or a batch, never a 500 or a panic.
func FuzzUpload(f *testing.F) {
	body, ct := multipartBody(f, map[string]string{"kind": "customers"}, "c.csv", []byte("email,name,country,signup_date,amount\na@example.com,A,PT,2020-01-01,1\n"))
	f.Add(body, ct)
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.csv\"\r\n\r\nemail\r\n--B--\r\n"), "multipart/form-data; boundary=B")
	f.Add([]byte("--B\r\n\r\n--B"), "multipart/form-data; boundary=B")
	f.Add([]byte(""), "multipart/form-data")
	f.Add([]byte("{}"), "multipart/form-data; boundary=\"\"")
	h := sqliteAPI(f, apiOptions{maxUpload: 1 << 16})
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		for _, path := range []string{"/v1/batches", "/v1/batches/preview"} {
			req, err := http.NewRequest("POST", h.srv.URL+path, bytes.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("Authorization", "Bearer "+adminA)
			req.Header.Set("Content-Type", ct)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("POST %s with %q: %d", path, ct, resp.StatusCode)
			}
		}
	})
}
