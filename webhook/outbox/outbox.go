// Package outbox delivers Rowfate's outgoing webhooks from the durable
// outbox: the transaction that finishes or cancels a batch writes one
// pending delivery per enabled endpoint of its tenant
// (driver.ServiceStore), and a Sender posts each, signed in the Standard
// Webhooks format, until the endpoint answers 2xx or the attempts run out
// and the delivery is dead.
//
// A delivery is claimed under a lease before it is sent, so that several
// senders (one per `batchctl serve` process) do not post it at the same
// time; a sender that dies leaves it due again when the lease ends. The
// delivery is therefore at least once: receivers drop a webhook-id they
// have seen (it is the same on every attempt), as the format asks.
//
// An endpoint is a tenant's URL, and the sender runs inside the
// operator's network: unless Config.AllowPrivate, it connects only to
// public addresses, checked at each dial after the name is resolved
// (CheckURL refuses the obvious ones when an endpoint is added). What an
// attempt's failure is recorded as, which the tenant reads, is a class
// ("could not connect"), never the system's error text, which would tell
// which ports of a host are open; the operator's log has the detail.
package outbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/webhook"
)

// Store is what a Sender needs of a store: its outbox. Every
// driver.ServiceStore is one.
type Store interface {
	DeliveriesClaim(ctx context.Context, params driver.DeliveriesClaimParams) ([]batchtype.Delivery, error)
	DeliveryRecord(ctx context.Context, params driver.DeliveryRecordParams) error
}

// UserAgent is the User-Agent of every delivery.
const UserAgent = "rowfate-webhooks/1"

const (
	// maxErrorBody is how much of an answer is read, for the delivery's
	// last error when it is not 2xx; the rest is never read, so an
	// endpoint cannot make a sender read an unbounded body.
	maxErrorBody = 512
	// recordRetryLimit bounds how long a transient database error is
	// retried when an attempt is recorded, as the engine's flushes are:
	// the attempt happened, and forgetting it sends the message again.
	recordRetryLimit = 2 * time.Minute
)

// Config configures a Sender. The zero value of every field but Store is
// its default.
type Config struct {
	// Store holds the outbox. Required.
	Store Store
	// Client posts the deliveries. Its Timeout must be set and shorter
	// than Lease, so that an attempt ends while the delivery is still
	// this sender's. Redirects are never followed, whatever its
	// CheckRedirect says: a 3xx is a failed attempt, so that an endpoint
	// cannot have the signed body sent elsewhere. Unless AllowPrivate,
	// its Transport must be nil or an *http.Transport, which is copied
	// and made to dial public addresses only, directly (no proxy).
	// Defaults to a client with a 10s timeout.
	Client *http.Client
	// AllowPrivate lets deliveries reach loopback, private, link-local
	// and other non-public addresses (PublicAddr): for endpoints on the
	// operator's own network, when every tenant is trusted with it. By
	// default each connection's address is checked after the name is
	// resolved, so a name that resolves, or comes to resolve, to such an
	// address is refused (ErrDestinationNotAllowed) however the endpoint
	// was stored.
	AllowPrivate bool
	// MaxAttempts is how many attempts a delivery gets; it is dead when
	// the last one fails. Defaults to 8.
	MaxAttempts int
	// BackoffFunc is the wait after failed attempt n (1 for the first).
	// Defaults to DefaultBackoff: 10s·2^(n-1), at most 1h, with jitter.
	BackoffFunc func(attempt int) time.Duration
	// Concurrency is how many deliveries are sent at once. Defaults to 4.
	Concurrency int
	// PollInterval is how often the outbox is read while it has nothing
	// due. Defaults to 1s.
	PollInterval time.Duration
	// Lease is how long a claimed delivery is this sender's before
	// another may claim it; it must be longer than Client.Timeout.
	// Defaults to 1m.
	Lease time.Duration
	// Logger logs each attempt (never a secret, nor the endpoint's URL,
	// which may carry a credential). Defaults to discarding.
	Logger *slog.Logger
	// NowFunc is the clock of the webhook-timestamp header. Defaults to
	// time.Now.
	NowFunc func() time.Time
}

func (c *Config) validate() error {
	if c.Store == nil {
		return errors.New("outbox: Config.Store is required")
	}
	if c.MaxAttempts < 0 || c.Concurrency < 0 || c.PollInterval < 0 || c.Lease < 0 {
		return fmt.Errorf("outbox: negative MaxAttempts (%d), Concurrency (%d), PollInterval (%s) or Lease (%s)",
			c.MaxAttempts, c.Concurrency, c.PollInterval, c.Lease)
	}
	if c.Client.Timeout <= 0 || c.Client.Timeout >= c.Lease {
		return fmt.Errorf("outbox: Client.Timeout (%s) must be set and shorter than Lease (%s): an attempt that outlives its lease is sent twice",
			c.Client.Timeout, c.Lease)
	}
	return nil
}

// Sender sends the outbox's deliveries. Several senders, in one process or
// many, may share a store.
type Sender struct {
	cfg Config
}

// New returns a Sender for cfg.
func New(cfg Config) (*Sender, error) {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	client := *cfg.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if !cfg.AllowPrivate {
		tr, err := publicTransport(client.Transport)
		if err != nil {
			return nil, err
		}
		client.Transport = tr
	}
	cfg.Client = &client
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.BackoffFunc == nil {
		cfg.BackoffFunc = DefaultBackoff
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 4
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Lease == 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Sender{cfg: cfg}, nil
}

// DefaultBackoff waits 10s·2^(n-1) after failed attempt n, ±20% so that
// deliveries that failed together do not come back together, and never
// more than an hour.
func DefaultBackoff(attempt int) time.Duration {
	d := min(10*time.Second<<min(max(attempt, 1)-1, 20), time.Hour)
	return min(time.Duration(float64(d)*(0.8+0.4*mrand.Float64())), time.Hour)
}

// NewSecret returns a new signing secret for an endpoint: "whsec_" and
// the standard base64 of 32 random bytes, the form webhook.DecodeSecret
// reads.
func NewSecret() string {
	var key [32]byte
	_, _ = rand.Read(key[:]) // never fails (crypto/rand, Go 1.24)
	return "whsec_" + base64.StdEncoding.EncodeToString(key[:])
}

// Run sends due deliveries, Concurrency at a time, until ctx is done, and
// then returns nil: the attempts in flight are cut short and not counted
// (their deliveries are due again when the lease ends). A transient
// database error in a claim is retried with backoff; any other database
// error ends the run and is returned.
func (s *Sender) Run(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		finished = make(chan error, s.cfg.Concurrency) // one per delivery in flight: never blocks
		inflight int
		retry    time.Duration // the wait after a transient claim error
		timer    = time.NewTimer(0)
		runErr   error
	)
	defer timer.Stop()
	claim := true
loop:
	for {
		if claim && inflight < s.cfg.Concurrency {
			ds, err := s.cfg.Store.DeliveriesClaim(sctx, driver.DeliveriesClaimParams{Limit: s.cfg.Concurrency - inflight, Lease: s.cfg.Lease})
			switch {
			case sctx.Err() != nil:
				break loop
			case errors.Is(err, driver.ErrTransient):
				retry = min(max(2*retry, 100*time.Millisecond), 30*time.Second)
				s.cfg.Logger.WarnContext(ctx, "webhook outbox: database error, retrying", "in", retry, "err", err)
				timer.Reset(retry)
			case err != nil:
				runErr = fmt.Errorf("claim webhook deliveries: %w", err)
				break loop
			default:
				retry = 0
				for i := range ds {
					inflight++
					wg.Go(func() { finished <- s.deliver(sctx, &ds[i]) })
				}
				if inflight < s.cfg.Concurrency {
					// Nothing more is due: wait for the poll, or for an
					// attempt to end (a quick retry may be due by then).
					timer.Reset(s.cfg.PollInterval)
				}
			}
		}
		claim = false
		select {
		case <-sctx.Done():
			break loop
		case err := <-finished:
			inflight--
			if err != nil {
				runErr = err
				break loop
			}
			claim = retry == 0
		case <-timer.C:
			claim = true
		}
	}
	cancel()
	wg.Wait()
	return runErr
}

// SendOnce claims up to Concurrency due deliveries, sends them at once and
// records each attempt; it returns how many it claimed. The error is the
// claim's or a record's.
func (s *Sender) SendOnce(ctx context.Context) (int, error) {
	ds, err := s.cfg.Store.DeliveriesClaim(ctx, driver.DeliveriesClaimParams{Limit: s.cfg.Concurrency, Lease: s.cfg.Lease})
	if err != nil {
		return 0, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for i := range ds {
		wg.Go(func() { errs[i] = s.deliver(ctx, &ds[i]) })
	}
	wg.Wait()
	return len(ds), errors.Join(errs...)
}

// deliver makes one attempt and records it. The error is the record's.
func (s *Sender) deliver(ctx context.Context, d *batchtype.Delivery) error {
	status, sendErr := s.post(ctx, d)
	if ctx.Err() != nil && status == 0 {
		// Stopping cut the attempt short: it is not counted, and the
		// delivery is due again when the lease ends.
		return nil
	}
	attempt := d.Attempts + 1 // the store counts the attempt it records
	rec := driver.DeliveryRecordParams{ID: d.ID, HTTPStatus: status, Status: batchtype.DeliveryDelivered}
	var cause error // what the log says of a failure the record names by its class
	if sendErr != nil {
		rec.Error = sendErr.Error()
		var ce *connectError
		if errors.As(sendErr, &ce) {
			cause = ce.err
		}
		var perm *permanentError
		switch {
		case errors.As(sendErr, &perm), attempt >= s.cfg.MaxAttempts:
			rec.Status = batchtype.DeliveryDead
		default:
			rec.Status, rec.RetryIn = batchtype.DeliveryPending, s.cfg.BackoffFunc(attempt)
		}
	}
	level := slog.LevelInfo
	if rec.Status != batchtype.DeliveryDelivered {
		level = slog.LevelWarn
	}
	attrs := []any{"delivery_id", d.ID, "endpoint_id", d.EndpointID, "tenant_id", d.TenantID,
		"batch_id", d.BatchID, "event_type", d.EventType, "attempt", attempt, "status", rec.Status, "http_status", status,
		"retry_in", rec.RetryIn, "err", rec.Error}
	if cause != nil {
		attrs = append(attrs, "cause", cause.Error())
	}
	s.cfg.Logger.Log(ctx, level, "webhook delivery", attrs...)
	// The attempt happened: record it even when ctx is done, and retry
	// what a database restart throws while the sender runs.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordRetryLimit)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err := s.cfg.Store.DeliveryRecord(rctx, rec)
		if err == nil {
			return nil
		}
		if !errors.Is(err, driver.ErrTransient) {
			return fmt.Errorf("record webhook delivery %d: %w", d.ID, err)
		}
		s.cfg.Logger.WarnContext(ctx, "webhook outbox: database error, retrying", "delivery_id", d.ID, "in", wait, "err", err)
		select {
		case <-rctx.Done():
			return fmt.Errorf("record webhook delivery %d: %w", d.ID, err)
		case <-ctx.Done():
			// Stopping: no more tries; the delivery is sent again when
			// its lease ends.
			return fmt.Errorf("record webhook delivery %d: %w", d.ID, err)
		case <-time.After(wait):
		}
	}
}

// permanentError is a delivery that no attempt can send: it is dead at
// once.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

// connectError is an attempt that got no answer. Its text, which is
// recorded and shown to the tenant, is only the class of the failure:
// the system's text (dial tcp 10.0.0.7:22: connect: connection refused)
// would let a tenant map which hosts and ports answer. err, the cause,
// goes to the operator's log only.
type connectError struct {
	class string
	err   error
}

func (e *connectError) Error() string { return "no answer: " + e.class }

func (e *connectError) Unwrap() error { return e.err }

// connectClass names why an attempt got no answer, in words that say
// nothing of the address or the port: whether the destination is
// refused, the connection could not be made, or it was made and no
// answer came in time.
func connectClass(err error, connected bool) string {
	var ne net.Error
	switch {
	case errors.Is(err, ErrDestinationNotAllowed):
		return "destination not allowed (not a public address)"
	case !connected:
		return "could not connect"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return "connection failed"
}

// post makes one attempt. It returns the endpoint's status (0 when no
// answer came) and, for an attempt that failed, why.
func (s *Sender) post(ctx context.Context, d *batchtype.Delivery) (int, error) {
	if d.URL == "" {
		return 0, &permanentError{"the endpoint is gone"}
	}
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return 0, &permanentError{"the endpoint's URL is not an http(s) URL with a host"}
	}
	body := []byte(d.Payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, &permanentError{"the endpoint's URL is not valid"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if err := webhook.SetHeaders(req.Header, d.Secret, d.MessageID(), s.cfg.NowFunc(), body); err != nil {
		// Never the secret itself in the error: it is stored and listed.
		return 0, &permanentError{"the endpoint's secret is not a whsec_ base64 secret"}
	}
	// Whether a connection was made tells a timeout waiting for the
	// answer from a connection that never was.
	var connected atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}))
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		class := connectClass(err, connected.Load())
		// *url.Error repeats the URL, which may carry a credential.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, &connectError{class: class, err: err}
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		return code, nil
	case code >= 300 && code <= 399:
		return code, fmt.Errorf("%s: redirect not followed (to %s)", resp.Status, clean([]byte(resp.Header.Get("Location"))))
	default:
		if msg := clean(snippet); msg != "" {
			return code, fmt.Errorf("%s: %s", resp.Status, msg)
		}
		return code, errors.New(resp.Status)
	}
}

// clean makes text from an endpoint's answer safe to store and print: at
// most maxErrorBody bytes of valid UTF-8 on one line, without control
// characters.
func clean(b []byte) string {
	if len(b) > maxErrorBody {
		b = b[:maxErrorBody]
	}
	s := strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return -1
		}
		return r
	}, strings.ToValidUTF8(string(b), ""))
	return strings.Join(strings.Fields(s), " ")
}
