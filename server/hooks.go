package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/webhook"
	"github.com/rowfate/rowfate/webhook/outbox"
)

// HooksConfig configures POST /v1/hooks/import, the signed webhook that
// starts an import ("a file is ready").
type HooksConfig struct {
	// Secrets are each tenant's active signing secrets (whsec_...):
	// several at once while one is rotated out. The secret that verifies
	// a request decides its tenant. Without any, the endpoint answers
	// hooks_disabled.
	Secrets map[string][]string
	// FetchPrefixes are the URL prefixes a hook's file may be fetched
	// from ("https://files.example.com/exports/"). A URL under none of
	// them is refused before any connection: the service never fetches
	// what a sender points it at elsewhere.
	FetchPrefixes []string
	// Client fetches the files. Defaults to one with a 2-minute timeout
	// that follows no redirects.
	Client *http.Client
	// Tolerance is how far a hook's timestamp may be from the server's
	// clock, either way. Defaults to webhook.DefaultTolerance (5 min).
	Tolerance time.Duration
	// Now is the server's clock for the timestamp check. Defaults to
	// time.Now.
	Now func() time.Time
}

func (h *HooksConfig) validate() error {
	for tenant, secrets := range h.Secrets {
		for _, sec := range secrets {
			if _, err := webhook.DecodeSecret(sec); err != nil {
				return fmt.Errorf("server: hook secret of tenant %q: %w", tenant, err)
			}
		}
	}
	for _, p := range h.FetchPrefixes {
		u, err := url.Parse(p)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("server: hook fetch prefix %q is not an http(s) URL with a host", p)
		}
	}
	if h.Client == nil {
		h.Client = &http.Client{Timeout: 2 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if h.Now == nil {
		h.Now = time.Now
	}
	return nil
}

// maxHookBody bounds an incoming hook's body: it names a file, it does
// not carry one.
const maxHookBody = 64 << 10

// HookImport is the body of POST /v1/hooks/import, in the Standard
// Webhooks shape.
type HookImport struct {
	// Type is "file.ready".
	Type string         `json:"type"`
	Data HookImportData `json:"data"`
}

// HookImportData says which file to import as which kind.
type HookImportData struct {
	Kind string `json:"kind"`
	// URL is where the file is; it must start with one of the
	// configured fetch prefixes.
	URL string `json:"url"`
	// Name is the file's name (defaults to the URL's last segment).
	Name    string        `json:"name,omitempty"`
	Options ImportOptions `json:"options,omitzero"`
}

// hookImport verifies a signed request on its raw bytes before it parses
// anything, drops a webhook id seen before, fetches the file it names from
// an allowed place and imports it for the tenant whose secret signed it.
func (s *Server) hookImport(w http.ResponseWriter, r *http.Request, _ Principal) error {
	h := &s.cfg.Hooks
	if len(h.Secrets) == 0 {
		return problemf(http.StatusNotFound, "hooks_disabled", "incoming webhooks are not configured (serve --hook-secret TENANT=whsec_...)")
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHookBody))
	if err != nil {
		return fmt.Errorf("hook body: %w", err)
	}
	tenant, id, err := s.verifyHook(r.Header, raw)
	if err != nil {
		return problemf(http.StatusUnauthorized, "bad_signature", "the webhook does not verify: %v", err)
	}
	ctx := driver.WithTenant(r.Context(), tenant)
	r = r.WithContext(ctx)
	key := "hook:" + id
	if len(key) > 255 {
		return badRequestf("webhook-id is longer than 250 characters")
	}
	if b, err := s.store().BatchFind(ctx, batch.BatchFindParams{TenantID: tenant, IdempotencyKey: key}); err == nil {
		return &problemError{Problem{Status: http.StatusConflict, Code: "replayed", BatchID: b.ID,
			Detail: fmt.Sprintf("webhook %s was received before: it started batch %d", id, b.ID)}}
	} else if !errors.Is(err, batch.ErrNotFound) {
		return err
	}
	var msg HookImport
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&msg); err != nil {
		return badRequestf("hook body: %v", jsonProblem(err))
	}
	if msg.Type != "file.ready" {
		return badRequestf("hook type %q: want file.ready", msg.Type)
	}
	d := msg.Data
	if !s.registry().Has(d.Kind) {
		return problemf(http.StatusNotFound, "unknown_kind", "no import kind %q", d.Kind)
	}
	if !s.fetchAllowed(d.URL) {
		return problemf(http.StatusForbidden, "forbidden", "%q is not under an allowed fetch prefix (serve --hook-fetch-prefix)", d.URL)
	}
	name := d.Name
	if name == "" {
		if u, err := url.Parse(d.URL); err == nil {
			name = u.Path
		}
	}
	up, err := s.fetch(r, d.URL, fileName(name))
	if err != nil {
		return err
	}
	params := batch.ImportParams{TenantID: tenant, Kind: d.Kind, SourceName: up.Name, IdempotencyKey: key, Read: rows.ReadOptions{TmpDir: s.cfg.TmpDir}}
	if err := d.Options.apply(&params); err != nil {
		return err
	}
	b, err := s.importKept(r, up, params)
	if err != nil {
		return err
	}
	if b.Reused {
		// The same id arrived twice at once; the other one imported.
		return &problemError{Problem{Status: http.StatusConflict, Code: "replayed", BatchID: b.ID,
			Detail: fmt.Sprintf("webhook %s was received before: it started batch %d", id, b.ID)}}
	}
	s.cfg.Logger.Info("hook import", "tenant_id", tenant, "webhook_id", id, "batch_id", b.ID)
	w.Header().Set("Location", fmt.Sprintf("/v1/batches/%d", b.ID))
	writeJSON(w, http.StatusCreated, view(b))
	return nil
}

// verifyHook returns the tenant whose secret signed the request and the
// webhook's id. Tenants are tried in a fixed order; each comparison is
// constant-time.
func (s *Server) verifyHook(hdr http.Header, raw []byte) (tenant, id string, err error) {
	h := &s.cfg.Hooks
	tenants := make([]string, 0, len(h.Secrets))
	for t := range h.Secrets {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	opts := &webhook.Options{Tolerance: h.Tolerance, Now: h.Now}
	for _, t := range tenants {
		id, err = webhook.Verify(hdr, raw, h.Secrets[t], opts)
		if err == nil {
			return t, id, nil
		}
		if !errors.Is(err, webhook.ErrSignature) {
			return "", "", err // a missing header or a stale timestamp: no secret helps
		}
	}
	return "", "", err
}

// fetchAllowed reports whether u is under one of the fetch prefixes,
// compared on the parsed URL so that "https://files.example.com.evil/"
// or a user-info trick does not pass for "https://files.example.com/".
func (s *Server) fetchAllowed(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return false
	}
	for _, p := range s.cfg.Hooks.FetchPrefixes {
		pu, _ := url.Parse(p)
		if strings.EqualFold(u.Scheme, pu.Scheme) && strings.EqualFold(u.Host, pu.Host) && strings.HasPrefix(u.EscapedPath(), pu.EscapedPath()) {
			return true
		}
	}
	return false
}

// fetch streams the hook's file into the file store.
func (s *Server) fetch(r *http.Request, u, name string) (*upload, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u, nil)
	if err != nil {
		return nil, badRequestf("hook url %q: %v", u, err)
	}
	resp, err := s.cfg.Hooks.Client.Do(req)
	if err != nil {
		return nil, problemf(http.StatusBadGateway, "unavailable", "fetch %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, problemf(http.StatusBadGateway, "unavailable", "fetch %s: %s", u, resp.Status)
	}
	return s.keep(resp.Body, name)
}

// listEndpoints lists the tenant's webhook endpoints (never their secrets).
func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request, p Principal) error {
	eps, err := s.cfg.Service.EndpointList(r.Context(), p.TenantID)
	if err != nil {
		return err
	}
	if eps == nil {
		eps = []driver.Endpoint{}
	}
	for i := range eps {
		eps[i].Secret = ""
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": eps})
	return nil
}

// createEndpoint adds a webhook endpoint; its secret is in this answer
// only.
func (s *Server) createEndpoint(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req struct {
		URL string `json:"url"`
	}
	if err := decodeJSON(w, r, &req, maxJSONBody, false); err != nil {
		return err
	}
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return badRequestf("url %q: want an http(s) URL with a host and no user info", req.URL)
	}
	secret := outbox.NewSecret()
	ep, err := s.cfg.Service.EndpointCreate(r.Context(), driver.EndpointCreateParams{TenantID: p.TenantID, URL: u.String(), Secret: secret})
	if err != nil {
		return err
	}
	ep.Secret = secret
	w.Header().Set("Location", fmt.Sprintf("/v1/webhooks/%d", ep.ID))
	writeJSON(w, http.StatusCreated, ep)
	return nil
}

// deleteEndpoint disables an endpoint: no new deliveries go to it.
func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	if err := s.cfg.Service.EndpointDisable(r.Context(), p.TenantID, id); err != nil {
		return notFoundAs(err, "no webhook endpoint %d", id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listDeliveries lists the tenant's webhook deliveries, newest first.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, p Principal) error {
	limit, before, err := pageParams(r, "before", 50, 500)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	if status != "" && !slices.Contains([]string{driver.DeliveryPending, driver.DeliveryDelivered, driver.DeliveryDead}, status) {
		return badRequestf("status=%q: want pending, delivered or dead", status)
	}
	ds, err := s.cfg.Service.DeliveriesList(r.Context(), driver.DeliveriesListParams{TenantID: p.TenantID, Status: status, BeforeID: before, Limit: int(limit) + 1})
	if err != nil {
		return err
	}
	ds, next := keyset(ds, limit, func(d driver.Delivery) int64 { return d.ID })
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": ds, "next_before": next})
	return nil
}
