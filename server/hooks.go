package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
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
	// what a sender points it at elsewhere. Both are compared in
	// canonical form (see canonicalURL): scheme, host and port exactly,
	// and the path with its dot segments resolved after decoding. A
	// prefix whose path does not end in a slash ends at a segment
	// boundary: "/exports" takes "/exports/a.csv", not "/exports-old/".
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

	// prefixes are FetchPrefixes in canonical form.
	prefixes []fetchURL
}

func (h *HooksConfig) validate() error {
	for tenant, secrets := range h.Secrets {
		for _, sec := range secrets {
			if _, err := webhook.DecodeSecret(sec); err != nil {
				return fmt.Errorf("server: hook secret of tenant %q: %w", tenant, err)
			}
		}
	}
	h.prefixes = nil
	for _, p := range h.FetchPrefixes {
		u, err := canonicalURL(p)
		if err == nil && strings.ContainsAny(p, "?#") {
			err = errors.New("a prefix has no query or fragment")
		}
		if err != nil {
			return fmt.Errorf("server: hook fetch prefix %q is not an http(s) URL with a host: %w", p, err)
		}
		h.prefixes = append(h.prefixes, u)
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
	// URL is where the file is; it must be under one of the configured
	// fetch prefixes, compared in canonical form, and the file is fetched
	// from its canonical form.
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
	ctx := batch.WithTenant(r.Context(), tenant)
	r = r.WithContext(ctx)
	key := "hook:" + id
	if len(key) > 255 {
		return badRequestf("webhook-id is longer than 250 characters")
	}
	if b, err := s.cfg.Engine.BatchByKey(ctx, batch.BatchByKeyParams{TenantID: tenant, IdempotencyKey: key}); err == nil {
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
	u, err := s.fetchURL(d.URL)
	if err != nil {
		return problemf(http.StatusForbidden, "forbidden", "%q is not under an allowed fetch prefix (serve --hook-fetch-prefix): %v", d.URL, err)
	}
	name := d.Name
	if name == "" {
		name = u.path
	}
	up, err := s.fetch(r, tenant, u, fileName(name))
	if err != nil {
		return err
	}
	params := batch.ImportParams{TenantID: tenant, Kind: d.Kind, SourceName: up.Name, IdempotencyKey: key, Read: rows.ReadOptions{TmpDir: s.cfg.TmpDir}}
	if err := d.Options.apply(&params); err != nil {
		return err
	}
	b, err := s.importKept(r, tenant, up, params)
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

// fetchURL returns the canonical form of a hook's file URL when it is
// under one of the fetch prefixes, or why not.
func (s *Server) fetchURL(raw string) (fetchURL, error) {
	u, err := canonicalURL(raw)
	if err != nil {
		return fetchURL{}, err
	}
	for _, p := range s.cfg.Hooks.prefixes {
		if p.contains(u) {
			return u, nil
		}
	}
	return fetchURL{}, errors.New("under no prefix")
}

// fetch streams the hook's file, from its canonical URL, into the
// tenant's files. Why a fetch failed is logged, not answered: the answer
// says that it failed.
func (s *Server) fetch(r *http.Request, tenant string, u fetchURL, name string) (*upload, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, badRequestf("hook url: %v", err)
	}
	resp, err := s.cfg.Hooks.Client.Do(req)
	if err != nil {
		s.cfg.Logger.Warn("hook import: fetch", "tenant_id", tenant, "err", err)
		return nil, problemf(http.StatusBadGateway, "unavailable", "fetch %s: could not connect", u)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, problemf(http.StatusBadGateway, "unavailable", "fetch %s: %s", u, resp.Status)
	}
	return s.keep(tenant, resp.Body, name)
}

// listEndpoints lists the tenant's webhook endpoints (never their secrets).
func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request, p Principal) error {
	eps, err := s.cfg.Engine.Endpoints(r.Context(), batch.EndpointsParams{TenantID: p.TenantID})
	if err != nil {
		return err
	}
	out := make([]EndpointView, len(eps))
	for i := range eps {
		out[i] = viewEndpoint(&eps[i])
		out[i].Secret = ""
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": out})
	return nil
}

// createEndpoint adds a webhook endpoint; its secret is in this answer
// only. An endpoint at a loopback, private, link-local or otherwise
// non-public address is refused unless Config.AllowPrivateWebhooks: a
// tenant must not make the service post into its own network. The
// sender checks again at each dial, after resolving the name.
func (s *Server) createEndpoint(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req struct {
		URL string `json:"url"`
	}
	if err := decodeJSON(w, r, &req, maxJSONBody, false); err != nil {
		return err
	}
	u, err := outbox.CheckURL(req.URL, s.cfg.AllowPrivateWebhooks)
	switch {
	case errors.Is(err, outbox.ErrDestinationNotAllowed):
		return problemf(http.StatusBadRequest, "destination_not_allowed", "url %q: %v", req.URL, err)
	case err != nil:
		return badRequestf("url %q: %v", req.URL, err)
	}
	secret := outbox.NewSecret()
	ep, err := s.cfg.Engine.EndpointCreate(r.Context(), batch.EndpointCreateParams{TenantID: p.TenantID, URL: u, Secret: secret})
	if err != nil {
		return err
	}
	ep.Secret = secret
	w.Header().Set("Location", fmt.Sprintf("/v1/webhooks/%d", ep.ID))
	writeJSON(w, http.StatusCreated, viewEndpoint(ep))
	return nil
}

// deleteEndpoint disables an endpoint: no new deliveries go to it.
func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	if err := s.cfg.Engine.EndpointDisable(r.Context(), batch.EndpointDisableParams{TenantID: p.TenantID, ID: id}); err != nil {
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
	if status != "" && !slices.Contains([]string{batchtype.DeliveryPending, batchtype.DeliveryDelivered, batchtype.DeliveryDead}, status) {
		return badRequestf("status=%q: want pending, delivered or dead", status)
	}
	ds, err := s.cfg.Engine.Deliveries(r.Context(), batch.DeliveriesParams{TenantID: p.TenantID, Status: status, BeforeID: before, Limit: int(limit) + 1})
	if err != nil {
		return err
	}
	ds, next := keyset(ds, limit, func(d batchtype.Delivery) int64 { return d.ID })
	out := make([]DeliveryView, len(ds))
	for i := range ds {
		out[i] = viewDelivery(&ds[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": out, "next_before": next})
	return nil
}

// fetchURL is a URL in canonical form: the scheme and host in lower case,
// the port explicit, the path decoded with its dot segments resolved, and
// no user info or fragment. Hook URLs are compared with the fetch
// prefixes in this form, and fetched in it, so that the file server
// cannot read a path other than the one that was allowed.
type fetchURL struct {
	scheme, host, port string
	// path is decoded, absolute, without dot segments.
	path     string
	rawQuery string
}

// String is the URL to fetch: the path escaped again, the port left out
// when it is the scheme's.
func (u fetchURL) String() string {
	host := u.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if u.port != defaultPort(u.scheme) {
		host += ":" + u.port
	}
	return (&url.URL{Scheme: u.scheme, Host: host, Path: u.path, RawQuery: u.rawQuery}).String()
}

// contains reports whether u is under the prefix p.
func (p fetchURL) contains(u fetchURL) bool {
	if u.scheme != p.scheme || u.host != p.host || u.port != p.port {
		return false
	}
	if strings.HasSuffix(p.path, "/") {
		return strings.HasPrefix(u.path, p.path)
	}
	return u.path == p.path || strings.HasPrefix(u.path, p.path+"/")
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// canonicalURL puts an http(s) URL in canonical form, or says why it
// cannot be trusted to mean one path. Servers differ in how they read a
// path: some decode %2F into a separator, some treat a backslash as
// one, some decode twice, some read "..;x" as "..". Rather than guess
// which reading the file server has, what could be read two ways is
// refused: encoded slashes and backslashes, a backslash, a percent sign
// left after decoding (a double encoding), control characters, and dot
// segments with parameters. What is left has one meaning: its dot
// segments, encoded or not, are resolved (RFC 3986, 5.2.4) after
// decoding.
func canonicalURL(raw string) (fetchURL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return fetchURL{}, errors.New("not a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return fetchURL{}, errors.New("not an http(s) URL")
	}
	if u.Opaque != "" || u.Host == "" {
		return fetchURL{}, errors.New("no host")
	}
	if u.User != nil {
		return fetchURL{}, errors.New("user info")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" || strings.ContainsAny(host, "%/\\") {
		return fetchURL{}, errors.New("not a host name or address")
	}
	port := defaultPort(scheme)
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fetchURL{}, errors.New("not a port")
		}
		port = strconv.Itoa(n)
	}
	escaped := strings.ToLower(u.EscapedPath())
	if strings.Contains(escaped, "%2f") || strings.Contains(escaped, "%5c") {
		return fetchURL{}, errors.New("an encoded slash or backslash in the path")
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") {
		return fetchURL{}, errors.New("a relative path")
	}
	for _, c := range p {
		switch {
		case c == '\\':
			return fetchURL{}, errors.New("a backslash in the path")
		case c == '%':
			return fetchURL{}, errors.New("a percent sign in the decoded path (a double encoding)")
		case c < 0x20 || c == 0x7f:
			return fetchURL{}, errors.New("a control character in the path")
		}
	}
	resolved, err := resolveDots(p)
	if err != nil {
		return fetchURL{}, err
	}
	return fetchURL{scheme: scheme, host: host, port: port, path: resolved, rawQuery: u.RawQuery}, nil
}

// resolveDots removes the dot segments of an absolute, decoded path, as
// RFC 3986 (5.2.4) does: "/a/b/../c/./d" is "/a/c/d", and ".." above the
// root stays at the root. A dot segment with parameters ("..;x"), which
// some servers read as the dot segment, is refused.
func resolveDots(p string) (string, error) {
	segs := strings.Split(p, "/")[1:]
	out := make([]string, 0, len(segs))
	for i, seg := range segs {
		last := i == len(segs)-1
		if name, _, params := strings.Cut(seg, ";"); params && (name == "." || name == "..") {
			return "", errors.New("a dot segment with parameters in the path")
		}
		switch seg {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
			continue
		}
		if last {
			out = append(out, "") // "/a/b/.." is the folder "/a/"
		}
	}
	return "/" + strings.Join(out, "/"), nil
}
