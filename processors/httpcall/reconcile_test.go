package httpcall

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rowfate/rowfate/batch"
)

// statusAPI is a downstream's status endpoint: it answers for each
// Idempotency-Key what became of it, and keeps the last request.
type statusAPI struct {
	mu      sync.Mutex
	answers map[string]func(http.ResponseWriter)
	method  string
	header  http.Header
}

func (s *statusAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.method, s.header = r.Method, r.Header.Clone()
	answer, ok := s.answers[r.Header.Get(HeaderIdempotencyKey)]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no route", http.StatusNotFound)
		return
	}
	answer(w)
}

func reply(status int, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

// TestReconcile: Reconcile asks the status URL with the row's
// Idempotency-Key; an id settles the row succeeded, the documented "never
// applied" answer settles it failed (permanent), and anything else leaves
// it unknown: an error that is not permanent.
func TestReconcile(t *testing.T) {
	t.Parallel()
	api := &statusAPI{answers: map[string]func(http.ResponseWriter){
		"acme/applied":          reply(http.StatusOK, `{"id":"crm-7","status":"applied"}`),
		"acme/number":           reply(http.StatusOK, `{"id":42}`),
		"acme/location":         func(w http.ResponseWriter) { w.Header().Set("Location", "/customers/9"); w.WriteHeader(http.StatusOK) },
		"acme/never":            reply(http.StatusNotFound, `{"applied":false}`),
		"acme/gone":             reply(http.StatusGone, `{"applied":false,"reason":"expired"}`),
		"acme/no-id":            reply(http.StatusOK, `{"status":"processing"}`),
		"acme/204":              reply(http.StatusNoContent, ``),
		"acme/in-flight":        reply(http.StatusConflict, `{"error":"in flight"}`),
		"acme/down":             reply(http.StatusServiceUnavailable, `down`),
		"acme/redirect":         func(w http.ResponseWriter) { w.Header().Set("Location", "/elsewhere"); w.WriteHeader(http.StatusFound) },
		"acme/applied-true-404": reply(http.StatusNotFound, `{"applied":true}`),
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	p := newProcessor(t, Config[order]{URL: srv.URL + "/customers", StatusURL: srv.URL + "/customers/status?k=secret",
		Header: http.Header{"Authorization": {"Bearer tok"}}})
	for _, tc := range []struct {
		key           string
		wantID        string
		wantPermanent bool
	}{
		{key: "acme/applied", wantID: "crm-7"},
		{key: "acme/number", wantID: "42"},
		{key: "acme/location", wantID: "/customers/9"},
		{key: "acme/never", wantPermanent: true},
		{key: "acme/gone", wantPermanent: true},
		// A 404 without the documented body may be a wrong URL, or a
		// proxy's: it must not fail rows whose effect may have happened.
		{key: "acme/unrouted"},
		{key: "acme/applied-true-404"},
		{key: "acme/no-id"},
		{key: "acme/204"},
		{key: "acme/in-flight"},
		{key: "acme/down"},
		{key: "acme/redirect"},
	} {
		info := rowInfo(3)
		info.EffectKey = tc.key
		id, err := p.Reconcile(batch.ContextWithRow(t.Context(), info), testRow)
		if id != tc.wantID || (err == nil) != (tc.wantID != "") || batch.IsPermanent(err) != tc.wantPermanent {
			t.Errorf("%s: Reconcile = %q, %v (permanent %v); want %q, permanent %v", tc.key, id, err, batch.IsPermanent(err), tc.wantID, tc.wantPermanent)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the status URL's query: %v", tc.key, err)
		}
	}
	api.mu.Lock()
	method, h := api.method, api.header
	api.mu.Unlock()
	if method != http.MethodGet || h.Get(HeaderTenant) != "acme" || h.Get(HeaderBatch) != "7" || h.Get(HeaderRow) != "12" || h.Get("Authorization") != "Bearer tok" {
		t.Errorf("status request: %s with %v; want a GET with the row's headers and Config.Header", method, h)
	}

	// Without a key, a status URL or an answer, it cannot tell.
	if _, err := p.Reconcile(t.Context(), testRow); err == nil || batch.IsPermanent(err) {
		t.Errorf("Reconcile without a row: %v; want an error that is not permanent", err)
	}
	noStatus := newProcessor(t, Config[order]{URL: srv.URL})
	if _, err := noStatus.Reconcile(rowCtx(t.Context(), 1), testRow); err == nil || batch.IsPermanent(err) {
		t.Errorf("Reconcile without Config.StatusURL: %v; want an error that is not permanent", err)
	}
	closed := httptest.NewServer(api)
	closed.Close()
	offline := newProcessor(t, Config[order]{URL: closed.URL, StatusURL: closed.URL})
	if _, err := offline.Reconcile(rowCtx(t.Context(), 1), testRow); err == nil || batch.IsPermanent(err) {
		t.Errorf("Reconcile of an API that is down: %v; want an error that is not permanent", err)
	}
	cancelled, cancel := context.WithCancel(rowCtx(t.Context(), 1))
	cancel()
	if _, err := p.Reconcile(cancelled, testRow); err == nil || batch.IsPermanent(err) {
		t.Errorf("Reconcile with a cancelled context: %v; want an error that is not permanent", err)
	}
	if _, err := New(Config[order]{URL: srv.URL, StatusURL: "ftp://example.com/status"}); err == nil {
		t.Error("New accepted an ftp StatusURL")
	}
}
