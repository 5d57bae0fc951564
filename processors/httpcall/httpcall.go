// Package httpcall is a processor for kinds whose effect is an HTTP API: it
// POSTs each row as JSON to one URL and returns the id the API answers with.
//
// It is meant for kinds with Kind.KeyedEffects set. Every request carries
// the row's effect key as its Idempotency-Key, the same on every attempt and
// after any reclaim of the row's chunk, so an API that honours the header
// applies each row's effect once however often the row is sent: after a
// retry, after a timeout whose answer was lost, after a worker that died
// between the call and the flush. An API that ignores the header makes the
// kind at-least-once, whatever the engine does.
//
// # Request
//
// One POST to Config.URL per row, with the body BodyFunc(row) as JSON (the
// row itself by default) and these headers, besides Config.Header:
//
//	Idempotency-Key    RowInfo.EffectKey
//	Content-Type       application/json
//	X-Rowfate-Tenant   RowInfo.TenantID
//	X-Rowfate-Batch    RowInfo.BatchID
//	X-Rowfate-Row      RowInfo.RowNo
//	X-Rowfate-Attempt  RowInfo.Attempt
//
// A context without a batch.RowInfo, or with an empty effect key, sends
// nothing: Process returns a permanent error matching ErrNoEffectKey, since
// a request without its key is exactly the duplicate this package prevents.
//
// # Answers
//
// The engine turns what Process returns into the row's outcome; Process
// classifies the answer like this:
//
//	2xx                         success. The id is the response body's "id"
//	                            field when the body is a JSON object whose
//	                            "id" is a non-empty string or a number (as
//	                            written); else the Location header; else the
//	                            status code, as in "204". A body that is not
//	                            JSON is fine.
//	409 Conflict                retryable: a request with the same key is
//	                            still in flight downstream.
//	408, 425, 429, 5xx          retryable. A Retry-After is reported in the
//	                            error (StatusError.RetryAfter); the engine's
//	                            backoff is what waits, Process never sleeps.
//	                            408, 425, 429 and 503 say the server turned
//	                            the request away before acting on it: they
//	                            are marked batch.NotApplied, so a row whose
//	                            retries end on them is dead (or cancelled),
//	                            not unknown. Any other 5xx may come after
//	                            the effect (a gateway's 502 or 504, a 500
//	                            after the commit).
//	other 4xx                   batch.Permanent: the row is failed.
//	3xx and anything else       batch.Permanent. The default client does not
//	                            follow redirects (a POST redirected with 301,
//	                            302 or 303 is re-sent as a GET without its
//	                            body, and its answer would pass for the
//	                            effect); point Config.URL at the final
//	                            address.
//
// Every non-2xx error is a *StatusError (wrapped) carrying the status and
// the first 512 bytes of the body, so the row's stored error says what the
// API said.
//
// When no answer arrives:
//
//	ctx cancelled               ctx's error (context.Canceled): the engine
//	                            stopped the work and records nothing.
//	deadline, request may       an error wrapping context.DeadlineExceeded,
//	have been sent              so the row is unknown (the effect may have
//	                            happened) and is reconciled. A client
//	                            Timeout counts as a deadline too.
//	deadline before a           retryable and batch.NotApplied: nothing was
//	connection was made         sent, so nothing can have happened.
//	no connection made          retryable and batch.NotApplied, likewise (a
//	                            refused connection, a failed DNS lookup).
//	any other network error     retryable; the key makes the resend safe.
//	2xx whose body broke off    as a network error after sending: the effect
//	                            happened but its id was lost in transit.
//
// A row that BodyFunc or encoding/json cannot encode, or whose effect key
// or tenant holds a control character (no header can carry it), is
// batch.Permanent, and nothing is sent.
//
// # Reconciling
//
// With Config.StatusURL, Reconcile (a Kind.ReconcileFunc) asks the API
// what became of a row whose outcome is unknown: one GET to StatusURL
// with the row's Idempotency-Key and X-Rowfate- headers (and
// Config.Header), no body. The answer:
//
//	2xx with an id              the effect happened: the row succeeded with
//	                            that id (the body's "id", else Location).
//	404 or 410 with a JSON      the effect never happened, and the API will
//	object whose "applied"      refuse that key from now on (a request
//	is false                    still in flight with it must not apply
//	                            later): the row failed for good.
//	anything else               it cannot tell (a 2xx without an id, a bare
//	                            404, which may be a wrong URL, a 409 for a
//	                            key in flight, an error, no answer): the
//	                            row stays unknown, to be asked again.
//
// At most 64 KiB of a response body is read (a longer 2xx body is not JSON
// to the parser, and its id comes from Location or the status); the body is
// always drained, within a bound, and closed. Bodies, header values and the
// URL's query (which may hold an API key) are never logged nor put in
// errors, except the 512-byte excerpt of a non-2xx answer.
package httpcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rowfate/rowfate/batch"
)

// The headers Process sets on every request. Config.Header must not set
// them.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderTenant         = "X-Rowfate-Tenant"
	HeaderBatch          = "X-Rowfate-Batch"
	HeaderRow            = "X-Rowfate-Row"
	HeaderAttempt        = "X-Rowfate-Attempt"
)

const (
	// defaultClientTimeout bounds a request of the default client. The
	// engine already bounds each call with the kind's Timeout (30s by
	// default) through ctx, which normally fires first; this backstop is
	// for callers outside the engine. It is longer than the kind's default
	// so that the kind's setting, not this one, decides.
	defaultClientTimeout = 60 * time.Second
	// maxResponse bounds how much of a response body is read, and again
	// how much more is drained to reuse the connection.
	maxResponse = 64 << 10
	// maxExcerpt bounds the part of a non-2xx body put in the row's error.
	maxExcerpt = 512
)

// ErrNoEffectKey is returned, marked permanent, when Process is called with
// a context that carries no batch.RowInfo or an empty effect key: the engine
// always provides one, and a test builds one with batch.ContextWithRow.
var ErrNoEffectKey = errors.New("no effect key in the context (batch.RowInfo)")

// Config configures a Processor.
type Config[T any] struct {
	// URL is where every row is POSTed: an absolute http or https URL.
	// Required.
	URL string
	// Client sends the requests. Defaults to a client with a 60s timeout
	// that does not follow redirects. The kind's Timeout, applied by the
	// engine through ctx, is usually the tighter bound.
	Client *http.Client
	// Header is sent with every request (an Authorization token, say). It
	// must not set the headers Process sets itself, nor Host,
	// Content-Length, Transfer-Encoding or Connection, which the client
	// would silently drop or override. Optional.
	Header http.Header
	// BodyFunc shapes a row into the value sent as JSON. Defaults to the
	// row itself.
	BodyFunc func(T) (any, error)
	// StatusURL is where Reconcile asks what became of a row whose
	// outcome is unknown: an absolute http or https URL, sent a GET with
	// the row's Idempotency-Key (see the package documentation for the
	// answers). Optional: without it, Reconcile answers that it cannot
	// tell.
	StatusURL string
	// Logger receives one debug record per call: the row, the status and
	// the duration, never a body or a header. Defaults to a logger that
	// discards.
	Logger *slog.Logger
}

func (c *Config[T]) validate() (target, status *url.URL, err error) {
	if c.URL == "" {
		return nil, nil, errors.New("httpcall: Config.URL is required")
	}
	if target, err = checkURL("URL", c.URL); err != nil {
		return nil, nil, err
	}
	if c.StatusURL != "" {
		if status, err = checkURL("StatusURL", c.StatusURL); err != nil {
			return nil, nil, err
		}
	}
	for name, values := range c.Header {
		if !validHeaderName(name) {
			return nil, nil, fmt.Errorf("httpcall: Config.Header: %q is not a valid header name", name)
		}
		if reservedHeader(name) {
			return nil, nil, fmt.Errorf("httpcall: Config.Header must not set %s: the processor or the client sets it", http.CanonicalHeaderKey(name))
		}
		for _, v := range values {
			if !validHeaderValue(v) {
				// The value may be a secret: name the header only.
				return nil, nil, fmt.Errorf("httpcall: Config.Header: the value of %s holds a control character", http.CanonicalHeaderKey(name))
			}
		}
	}
	return target, status, nil
}

// checkURL parses the URL of Config's field and checks that it is an
// absolute http or https URL.
func checkURL(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the URL, query and all; say only that it is bad.
		return nil, fmt.Errorf("httpcall: Config.%s does not parse as a URL", field)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("httpcall: Config.%s must be an absolute http or https URL, not scheme %q", field, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("httpcall: Config.%s has no host", field)
	}
	return u, nil
}

// shown is a URL as errors and logs show it: without user info, query or
// fragment, which may hold a credential.
func shown(u *url.URL) string { return u.Scheme + "://" + u.Host + u.EscapedPath() }

// Processor POSTs rows to an HTTP API; see the package documentation for
// the request it sends and how it classifies the answer. It is safe for
// concurrent use.
type Processor[T any] struct {
	url string
	// target is the URL without user info, query or fragment: what errors
	// and logs show, since the rest may hold a credential.
	target string
	client *http.Client
	header http.Header
	body   func(T) (any, error)
	logger *slog.Logger
	// statusURL is Config.StatusURL, and statusTarget how it is shown;
	// both empty without one.
	statusURL    string
	statusTarget string
	// now reads the clock, for Retry-After dates.
	now func() time.Time
}

// New returns a Processor for a validated config.
func New[T any](cfg Config[T]) (*Processor[T], error) {
	u, status, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	p := &Processor[T]{
		url:    cfg.URL,
		target: shown(u),
		client: cfg.Client,
		header: cfg.Header.Clone(),
		body:   cfg.BodyFunc,
		logger: cfg.Logger,
		now:    time.Now,
	}
	if p.client == nil {
		p.client = &http.Client{
			Timeout: defaultClientTimeout,
			// Following a redirect would turn the POST into a GET
			// without its body (301, 302, 303): the answer of the new
			// address would be taken for an effect that never happened.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if status != nil {
		p.statusURL, p.statusTarget = cfg.StatusURL, shown(status)
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	return p, nil
}

// Process POSTs row and returns the id of what the API made of it.
func (p *Processor[T]) Process(ctx context.Context, row T) (string, error) {
	info, ok := batch.RowFrom(ctx)
	if !ok || info.EffectKey == "" {
		return "", batch.Permanent(fmt.Errorf("post %s: %w", p.target, ErrNoEffectKey))
	}
	for _, v := range []string{info.EffectKey, info.TenantID} {
		if !validHeaderValue(v) {
			// Derived from the row's data (Kind.EffectKeyFunc): the same
			// on every attempt, so retrying cannot help.
			return "", batch.Permanent(fmt.Errorf("post %s: the effect key or tenant holds a control character and cannot be sent as a header", p.target))
		}
	}
	body, err := p.encode(row)
	if err != nil {
		return "", batch.Permanent(fmt.Errorf("post %s: encode row: %w", p.target, err))
	}
	if err := ctx.Err(); err != nil {
		return "", p.notSent(ctx, err)
	}

	var sent sendTrace
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, sent.hooks()), http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return "", batch.Permanent(fmt.Errorf("post %s: build request: %w", p.target, unwrapURL(err)))
	}
	p.setHeaders(req, info)
	req.Header.Set("Content-Type", "application/json")

	log := p.logger.With("tenant_id", info.TenantID, "batch_id", info.BatchID, "row_no", info.RowNo, "attempt", info.Attempt)
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		err = p.transportError(ctx, err, sent.mayHaveSent())
		log.DebugContext(ctx, "http call without answer", "duration", time.Since(start), "err", err)
		return "", err
	}
	data, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	// Drain a bounded tail so the connection can be reused; a longer body
	// costs the connection, not the worker's memory or time.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	_ = resp.Body.Close()
	log.DebugContext(ctx, "http call", "status", resp.StatusCode, "duration", time.Since(start))

	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if readErr != nil {
			// The API applied the effect, but its answer broke off:
			// asking again with the same key returns the id.
			return "", p.transportError(ctx, readErr, true)
		}
		return idOf(resp, data), nil
	}
	// A body cut short still leaves the status, which is what decides.
	serr := p.statusError(resp, data)
	if retryableStatus(resp.StatusCode) {
		err := fmt.Errorf("post %s: %w", p.target, serr)
		if turnedAway(resp.StatusCode) {
			return "", batch.NotApplied(err)
		}
		return "", err
	}
	return "", batch.Permanent(fmt.Errorf("post %s: %w", p.target, serr))
}

// setHeaders sets Config.Header and the row's headers on req.
func (p *Processor[T]) setHeaders(req *http.Request, info batch.RowInfo) {
	for name, values := range p.header {
		req.Header[name] = values
	}
	req.Header.Set(HeaderIdempotencyKey, info.EffectKey)
	req.Header.Set(HeaderTenant, info.TenantID)
	req.Header.Set(HeaderBatch, strconv.FormatInt(info.BatchID, 10))
	req.Header.Set(HeaderRow, strconv.FormatInt(info.RowNo, 10))
	req.Header.Set(HeaderAttempt, strconv.Itoa(info.Attempt))
}

// encode returns the JSON body for row, shaped by BodyFunc when set.
func (p *Processor[T]) encode(row T) ([]byte, error) {
	var v any = row
	if p.body != nil {
		var err error
		if v, err = p.body(row); err != nil {
			return nil, err
		}
	}
	return json.Marshal(v)
}

// notSent is the error for a call given up before any request left: a
// cancelled ctx is returned as is; a deadline that passed before sending
// is retryable, since nothing can have happened downstream.
func (p *Processor[T]) notSent(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("post %s: %w", p.target, ctx.Err())
	}
	// %v, not %w: wrapping the deadline would make the row unknown.
	return batch.NotApplied(fmt.Errorf("post %s: deadline passed before the request was sent, safe to retry: %v", p.target, err))
}

// transportError classifies a failure to get an answer (or all of a 2xx
// answer). mayHaveSent is false only when the call is known to have
// stopped before a connection was made.
func (p *Processor[T]) transportError(ctx context.Context, err error, mayHaveSent bool) error {
	// The *url.Error quotes the whole URL, query included: drop it.
	cause := unwrapURL(err)
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("post %s: %w", p.target, ctx.Err())
	case !isTimeout(ctx, err) && !mayHaveSent:
		// No connection was made: the request cannot have arrived.
		return batch.NotApplied(fmt.Errorf("post %s: %w", p.target, cause))
	case !isTimeout(ctx, err):
		return fmt.Errorf("post %s: %w", p.target, cause)
	case !mayHaveSent:
		return p.notSent(ctx, cause)
	}
	if errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("post %s: the request may have reached the server: %w", p.target, cause)
	}
	// A client Timeout or a transport timeout is a deadline too, though
	// not every Go version wraps context.DeadlineExceeded in it.
	return fmt.Errorf("post %s: the request may have reached the server: %w (%w)", p.target, context.DeadlineExceeded, cause)
}

// isTimeout reports whether err is a deadline: ctx's own, the client's
// Timeout, or a transport's (net.Error.Timeout).
func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// unwrapURL returns the error inside a *url.Error, whose message carries
// the full URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// sendTrace records whether a request may have left the process. Only a
// transport that reported starting to get a connection and never got one
// is known not to have sent anything; a transport that reports nothing
// (a custom RoundTripper) may have sent it.
type sendTrace struct {
	getConn, gotConn atomic.Bool
}

func (s *sendTrace) hooks() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn: func(string) { s.getConn.Store(true) },
		GotConn: func(httptrace.GotConnInfo) { s.gotConn.Store(true) },
	}
}

func (s *sendTrace) mayHaveSent() bool { return !s.getConn.Load() || s.gotConn.Load() }

// turnedAway reports whether a retryable status says the server did not
// act on the request: it timed out reading it (408), would not take it
// yet (425), rate-limited it (429) or could not handle it (503).
func turnedAway(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	}
	return false
}

// retryableStatus reports whether a non-2xx status may go away by itself.
func retryableStatus(code int) bool {
	switch {
	case code == http.StatusConflict, // the same key in flight
		code == http.StatusRequestTimeout,
		code == http.StatusTooEarly,
		code == http.StatusTooManyRequests,
		code >= 500 && code <= 599:
		return true
	}
	return false
}

// idOf returns the id of a 2xx answer: the body's "id", else Location,
// else the status code.
func idOf(resp *http.Response, body []byte) string {
	if id, ok := jsonID(body); ok {
		return id
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		return loc
	}
	return strconv.Itoa(resp.StatusCode)
}

// jsonID returns the "id" field of a JSON object: a non-empty string, or a
// number as written.
func jsonID(body []byte) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return "", false
	}
	raw, ok := obj["id"]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		s = strings.TrimSpace(s)
		return s, s != ""
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	return "", false
}
