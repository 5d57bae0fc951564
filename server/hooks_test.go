package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/rowfate/rowfate/server"
	"github.com/rowfate/rowfate/webhook"
)

var websocketDialer = websocket.Dialer{HandshakeTimeout: 10 * time.Second}

// The incoming hook secrets of tenant acme: the current one and the one
// being rotated out.
const (
	testSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rotatedSecret = "whsec_dGhlIG9sZCBzZWNyZXQgYmVpbmcgcm90YXRlZA=="
	globexSecret  = "whsec_Z2xvYmV4J3Mgb3duIHNlY3JldCBmb3IgaG9va3M="
)

// hookHarness is a server with incoming hooks and a file server they
// fetch from.
type hookHarness struct {
	*apiHarness
	files   *httptest.Server
	fetches atomic.Int64
	// private counts the fetches of the file outside the prefix.
	private atomic.Int64
	now     time.Time
}

func newHookHarness(t *testing.T) *hookHarness {
	t.Helper()
	hh := &hookHarness{now: time.Now()}
	file := fixture(t)
	// The file server resolves its paths as static file servers do
	// (backslashes are slashes, dot segments are resolved), and has a
	// private file outside the fetch prefix.
	hh.files = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hh.fetches.Add(1)
		switch path.Clean(strings.ReplaceAll(r.URL.Path, `\`, "/")) {
		case "/exports/customers.csv":
			w.Write(file)
		case "/private/secret.csv":
			hh.private.Add(1)
			w.Write(file)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hh.files.Close)
	hh.apiHarness = sqliteAPI(t, apiOptions{hooks: server.HooksConfig{
		Secrets:       map[string][]string{"acme": {testSecret, rotatedSecret}, "globex": {globexSecret}},
		FetchPrefixes: []string{hh.files.URL + "/exports/"},
		Now:           func() time.Time { return hh.now },
	}})
	return hh
}

func (hh *hookHarness) body(url string) []byte {
	b, _ := json.Marshal(server.HookImport{Type: "file.ready", Data: server.HookImportData{Kind: "customers", URL: url, Name: "customers.csv"}})
	return b
}

// send posts body signed with secret, as id, at time at.
func (hh *hookHarness) send(t *testing.T, secret, id string, at time.Time, body, sent []byte) answer {
	t.Helper()
	hdr := http.Header{}
	if err := webhook.SetHeaders(hdr, secret, id, at, body); err != nil {
		t.Fatal(err)
	}
	if sent == nil {
		sent = body
	}
	return hh.do(req{method: "POST", path: "/v1/hooks/import", contentType: "application/json", body: sent, header: hdr})
}

// TestHookImport: a signed "file is ready" starts an import for the
// tenant whose secret signed it; a bad signature, a timestamp 301 s off
// either way, a replayed id and a re-serialised body are refused, a
// rotated secret is accepted.
func TestHookImport(t *testing.T) {
	t.Parallel()
	hh := newHookHarness(t)
	good := hh.body(hh.files.URL + "/exports/customers.csv")

	a := hh.send(t, testSecret, "msg_1", hh.now, good, nil)
	b := hh.batchOf(a, http.StatusCreated)
	if b.TenantID != "acme" || b.Total != 300 || b.SourceName != "customers.csv" {
		t.Fatalf("hook import: %+v", b)
	}
	fetched := hh.fetches.Load()

	for _, tc := range []struct {
		name   string
		secret string
		id     string
		at     time.Time
		sent   []byte
		status int
		code   string
	}{
		{"replayed id", testSecret, "msg_1", hh.now, nil, http.StatusConflict, "replayed"},
		{"bad signature", "whsec_" + strings.Repeat("QUFB", 8), "msg_2", hh.now, nil, http.StatusUnauthorized, "bad_signature"},
		{"timestamp 301 s old", testSecret, "msg_3", hh.now.Add(-301 * time.Second), nil, http.StatusUnauthorized, "bad_signature"},
		{"timestamp 301 s ahead", testSecret, "msg_4", hh.now.Add(301 * time.Second), nil, http.StatusUnauthorized, "bad_signature"},
		{"re-serialised body", testSecret, "msg_5", hh.now, reserialise(t, good), http.StatusUnauthorized, "bad_signature"},
	} {
		a := hh.send(t, tc.secret, tc.id, tc.at, good, tc.sent)
		if p := a.problem(t); a.status != tc.status || p.Code != tc.code {
			t.Errorf("%s: %s, want %d %s", tc.name, a, tc.status, tc.code)
		}
		if tc.code == "replayed" && a.problem(t).BatchID != b.ID {
			t.Errorf("the replay names batch %d, want %d", a.problem(t).BatchID, b.ID)
		}
	}
	if n := hh.fetches.Load(); n != fetched {
		t.Errorf("refused hooks fetched the file %d times", n-fetched)
	}
	// A timestamp 299 s off is inside the tolerance; the secret being
	// rotated out still verifies, for the same tenant.
	if r := hh.batchOf(hh.send(t, rotatedSecret, "msg_6", hh.now.Add(-299*time.Second), good, nil), http.StatusCreated); r.TenantID != "acme" {
		t.Errorf("rotated secret: %+v", r)
	}
	// Another tenant's secret imports for that tenant.
	if g := hh.batchOf(hh.send(t, globexSecret, "msg_7", hh.now, good, nil), http.StatusCreated); g.TenantID != "globex" {
		t.Errorf("globex's hook: %+v", g)
	}
	// Missing headers.
	if a := hh.do(req{method: "POST", path: "/v1/hooks/import", contentType: "application/json", body: good}); a.status != http.StatusUnauthorized {
		t.Errorf("unsigned: %s", a)
	}
}

// reserialise decodes and encodes a JSON body again: the same data in
// other bytes, which must not verify.
func reserialise(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestHookFetchAllowlist: a hook's file comes only from under a fetch
// prefix, compared on the canonical URL: dot segments resolved after
// decoding, encoded slashes, backslashes and double encodings refused,
// scheme, host and port compared exactly. What is fetched is the
// canonical URL, so the file server cannot read the path otherwise.
func TestHookFetchAllowlist(t *testing.T) {
	t.Parallel()
	hh := newHookHarness(t)
	host := strings.TrimPrefix(hh.files.URL, "http://")
	hostname, port, _ := strings.Cut(host, ":")
	for i, u := range []string{
		hh.files.URL + "/elsewhere/customers.csv",
		"http://evil.example.com/exports/customers.csv",
		"http://" + host + ".evil.example.com/exports/customers.csv",
		"http://user@" + host + "/exports/customers.csv",
		"file:///etc/passwd",
		// Dot segments, plain and percent-encoded.
		hh.files.URL + "/exports/../private/secret.csv",
		hh.files.URL + "/exports/%2e%2e/private/secret.csv",
		hh.files.URL + "/exports/%2E%2E/private/secret.csv",
		hh.files.URL + "/exports/.%2e/private/secret.csv",
		hh.files.URL + "/exports/%2e./private/secret.csv",
		hh.files.URL + "/exports/./../private/secret.csv",
		hh.files.URL + "/exports/sub/../../private/secret.csv",
		hh.files.URL + "/exports/%2e%2e%2fprivate/secret.csv",
		hh.files.URL + "/exports/..%2fprivate/secret.csv",
		hh.files.URL + "/exports/..%2Fprivate/secret.csv",
		hh.files.URL + "/exports/..%5cprivate/secret.csv",
		hh.files.URL + "/exports/%252e%252e/private/secret.csv",
		hh.files.URL + "/exports/..;/private/secret.csv",
		hh.files.URL + "/exports/%00/../../private/secret.csv",
		hh.files.URL + "/exports",
		hh.files.URL + "/exportsX/customers.csv",
		// Another port, another spelling of the host.
		"http://" + hostname + ":1/exports/customers.csv",
		"http://localhost:" + port + "/exports/customers.csv",
		"https://" + host + "/exports/customers.csv",
		"http:" + "//" + host + "@evil.example.com/exports/customers.csv",
		"http:/" + host + "/exports/customers.csv",
		"http:" + host + "/exports/customers.csv",
	} {
		a := hh.send(t, testSecret, fmt.Sprintf("msg_allow_%d", i), hh.now, hh.body(u), nil)
		if a.status != http.StatusForbidden {
			t.Errorf("%s: %s", u, a)
		}
	}
	if n := hh.fetches.Load(); n != 0 {
		t.Errorf("fetched %d times from outside the prefixes (%d of them the private file)", n, hh.private.Load())
	}
	// Spellings of an allowed file: fetched at its canonical URL.
	for i, u := range []string{
		"HTTP://" + strings.ToUpper(hostname) + ":" + port + "/exports/customers.csv",
		hh.files.URL + "/exports/./customers.csv",
		hh.files.URL + "/exports/sub/../customers.csv",
		hh.files.URL + "/exports/customers%2ecsv",
	} {
		a := hh.send(t, testSecret, fmt.Sprintf("msg_canonical_%d", i), hh.now, hh.body(u), nil)
		if a.status != http.StatusCreated {
			t.Errorf("%s: %s", u, a)
		}
	}
	if n := hh.private.Load(); n != 0 {
		t.Errorf("the private file was fetched %d times", n)
	}
	// Hooks not configured: the endpoint says so.
	plain := sqliteAPI(t, apiOptions{})
	if a := plain.do(req{method: "POST", path: "/v1/hooks/import", contentType: "application/json", body: []byte("{}")}); a.status != http.StatusNotFound || a.problem(t).Code != "hooks_disabled" {
		t.Errorf("no hooks: %s", a)
	}
}
