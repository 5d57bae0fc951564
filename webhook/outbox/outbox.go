// Package outbox delivers Rowfate's outgoing webhooks from the durable
// outbox: the transaction that finishes or cancels a batch writes one
// pending delivery per endpoint of its tenant (driver.ServiceStore), and a
// Sender posts each, signed in the Standard Webhooks format, until the
// endpoint answers 2xx or the attempts run out and the delivery is dead.
//
// A delivery is claimed under a lease before it is sent, so that several
// senders (one per `batchctl serve` process) do not post it at the same
// time; a sender that dies leaves it due again when the lease ends. The
// delivery is therefore at least once: receivers drop a webhook-id they
// have seen (it is the same on every attempt), as the format asks.
package outbox

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/webhook"
)

// Store is what a Sender needs of the store.
type Store interface {
	DeliveriesClaim(ctx context.Context, params driver.DeliveriesClaimParams) ([]driver.Delivery, error)
	DeliveryRecord(ctx context.Context, params driver.DeliveryRecordParams) error
}

// Config configures a Sender.
type Config struct {
	// Store holds the outbox. Required.
	Store Store
	// Client posts the deliveries. Defaults to one with a 10s timeout
	// that follows no redirect: a 3xx is a failed attempt, so that an
	// endpoint cannot send the signed body elsewhere.
	Client *http.Client
	// MaxAttempts is how many attempts a delivery gets before it is dead.
	// Defaults to 8.
	MaxAttempts int
	// BackoffFunc is the wait after failed attempt n (1-based). Defaults
	// to 10s·2^(n-1), at most 1h, with ±20% jitter.
	BackoffFunc func(attempt int) time.Duration
	// Concurrency is how many deliveries are sent at once. Defaults to 4.
	Concurrency int
	// PollInterval is how often the outbox is read when it was empty.
	// Defaults to 1s.
	PollInterval time.Duration
	// Lease is how long a claimed delivery is this sender's; it must
	// outlast the client's timeout. Defaults to 1m.
	Lease time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Now is the clock of the webhook-timestamp. Defaults to time.Now.
	Now func() time.Time
}

// Sender delivers the outbox.
type Sender struct {
	cfg Config
}

// maxErrorBody is how much of a failed answer is kept as the delivery's
// last error.
const maxErrorBody = 512

// New returns a Sender for a config.
func New(cfg Config) (*Sender, error) {
	if cfg.Store == nil {
		return nil, errors.New("outbox: Config.Store is required")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.BackoffFunc == nil {
		cfg.BackoffFunc = DefaultBackoff
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sender{cfg: cfg}, nil
}

// DefaultBackoff waits 10s·2^(n-1) after failed attempt n, at most an
// hour, with ±20% jitter so that deliveries that failed together do not
// come back together.
func DefaultBackoff(attempt int) time.Duration {
	d := min(10*time.Second<<min(attempt-1, 20), time.Hour)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Run sends due deliveries until ctx is done; it returns nil then. A
// store error is logged and retried at the next poll: the outbox keeps
// what could not be sent.
func (s *Sender) Run(ctx context.Context) error {
	for {
		n, err := s.SendOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			s.cfg.Logger.Warn("webhook outbox", "err", err)
		}
		if n > 0 && err == nil {
			continue // there may be more due
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.cfg.PollInterval):
		}
	}
}

// SendOnce claims up to Concurrency due deliveries, sends them at once and
// records each attempt. It returns how many it sent.
func (s *Sender) SendOnce(ctx context.Context) (int, error) {
	ds, err := s.cfg.Store.DeliveriesClaim(ctx, driver.DeliveriesClaimParams{Limit: s.cfg.Concurrency, Lease: s.cfg.Lease})
	if err != nil {
		return 0, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i := range ds {
		wg.Go(func() {
			if err := s.deliver(ctx, &ds[i]); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return len(ds), first
}

// deliver makes one attempt and records it.
func (s *Sender) deliver(ctx context.Context, d *driver.Delivery) error {
	status, sendErr := s.post(ctx, d)
	if ctx.Err() != nil {
		// Stopping: the lease ends and the delivery is due again; an
		// attempt cut short is not counted.
		return nil
	}
	rec := driver.DeliveryRecordParams{ID: d.ID, HTTPStatus: status, Status: driver.DeliveryDelivered}
	attempt := d.Attempts + 1
	if sendErr != nil {
		rec.Error = sendErr.Error()
		rec.Status = driver.DeliveryPending
		rec.RetryIn = s.cfg.BackoffFunc(attempt)
		if attempt >= s.cfg.MaxAttempts {
			rec.Status, rec.RetryIn = driver.DeliveryDead, 0
		}
	}
	s.cfg.Logger.Info("webhook delivery", "delivery_id", d.ID, "tenant_id", d.TenantID, "batch_id", d.BatchID,
		"event_type", d.EventType, "attempt", attempt, "status", rec.Status, "http_status", status, "err", rec.Error)
	if err := s.cfg.Store.DeliveryRecord(ctx, rec); err != nil {
		return fmt.Errorf("record delivery %d: %w", d.ID, err)
	}
	return nil
}

// post sends a delivery and returns the endpoint's status; an error is an
// attempt that failed (no answer, or not 2xx).
func (s *Sender) post(ctx context.Context, d *driver.Delivery) (int, error) {
	if d.URL == "" {
		return 0, errors.New("the endpoint is gone")
	}
	body := []byte(d.Payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "rowfate-webhooks/1")
	if err := webhook.SetHeaders(req.Header, d.Secret, d.MessageID(), s.cfg.Now(), body); err != nil {
		return 0, fmt.Errorf("sign: %w", err)
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(snippet))
	}
	return resp.StatusCode, nil
}
