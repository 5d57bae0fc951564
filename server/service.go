package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/metrics"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/webhook/outbox"
)

// ServiceConfig is what a Service runs in one process: the HTTP server
// and everything that works beside it.
type ServiceConfig struct {
	// Store is the store the service's engine works on. The progress
	// broadcaster follows its event log and, when it keeps webhooks (an
	// outbox.Store, as both of Rowfate's stores do), the webhook sender
	// claims its deliveries. Required.
	Store batch.Store
	// Registry holds the kinds the service imports and works. Required.
	Registry *batch.Registry
	// Server configures the HTTP server. The Service sets its Engine,
	// Broadcaster, Metrics and Logger; Files and Auth are required.
	Server Config
	// Rate is how many live messages a second a stream gets at most
	// (progress.Config.Rate). Defaults to 4.
	Rate float64
	// Metrics serves Prometheus metrics at GET /metrics.
	Metrics bool
	// Workers is how many batch workers run in the process; 0 leaves the
	// batches to worker processes.
	Workers int
	// WorkerName names the engine's workers in leases and logs (a worker
	// credential's name). Defaults to "serve".
	WorkerName string
	// WorkerTenants limits the workers to these tenants (a worker
	// credential's); empty works every tenant.
	WorkerTenants []string
	// LeaseDuration is how long a claimed chunk is the process's without
	// a renewal. Defaults to the engine's.
	LeaseDuration time.Duration
	// Work runs the workers with the service's engine. Defaults to
	// Engine.Work. A front end that checks the workers' credential while
	// they run wraps it; when Work returns nil before the service stops,
	// the service goes on serving without workers, and an error stops
	// the service.
	Work func(ctx context.Context, eng *batch.Engine, params batch.WorkParams) error
	// EventRetention trims events older than this every 10 minutes; 0
	// keeps them. CompactFinished trims every event of a finished or
	// cancelled batch but its last.
	EventRetention  time.Duration
	CompactFinished bool
	// FileRetention removes kept files not used for this long, every
	// hour; 0 keeps them.
	FileRetention time.Duration
	// PurgeEvery is how often the tenants' retention policies are applied
	// (batch.Engine.Purge with Policy): the rows' values of the batches
	// past them are dropped. Defaults to 10 minutes; negative never.
	PurgeEvery time.Duration
	// AllowPrivateWebhooks lets the webhook sender reach non-public
	// addresses (outbox.Config.AllowPrivate); the server refuses such
	// endpoints unless it is set too (Config.AllowPrivateWebhooks).
	AllowPrivateWebhooks bool
	// ReloadKinds brings the registry's stored kinds up to the
	// database's (schemakind.Load) and says how many changed; it runs
	// every ReloadEvery (default 5s) so that kinds added or removed by
	// another process are served without a restart. Optional.
	ReloadKinds func(ctx context.Context) (int, error)
	ReloadEvery time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Service is Rowfate as one process: the HTTP API and admin page, the
// progress broadcaster, the webhook sender, event and file retention,
// stored-kind reload and, optionally, the batch workers. batchctl serve is
// its flags.
type Service struct {
	cfg    ServiceConfig
	engine *batch.Engine
	server *Server
	bc     *progress.Broadcaster
	sender *outbox.Sender
}

// NewService wires a Service: an engine with metrics, the broadcaster, the
// HTTP server and the webhook sender.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Store == nil || cfg.Registry == nil {
		return nil, errors.New("server: ServiceConfig.Store and Registry are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.WorkerName == "" {
		cfg.WorkerName = "serve"
	}
	if cfg.ReloadEvery <= 0 {
		cfg.ReloadEvery = 5 * time.Second
	}
	if cfg.Work == nil {
		cfg.Work = func(ctx context.Context, eng *batch.Engine, p batch.WorkParams) error {
			_, err := eng.Work(ctx, p)
			return err
		}
	}
	s := &Service{cfg: cfg}
	// The engine's observer is the metrics, which read the totals through
	// the engine in turn: the engine is made first without it, then again.
	eng, err := batch.NewEngine(batch.Config{Store: cfg.Store, Registry: cfg.Registry, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	m, err := metrics.New(metrics.Config{Store: eng, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	s.engine, err = batch.NewEngine(batch.Config{Store: cfg.Store, Registry: cfg.Registry, Logger: cfg.Logger,
		WorkerName: cfg.WorkerName, LeaseDuration: cfg.LeaseDuration, Observer: m})
	if err != nil {
		return nil, err
	}
	s.bc = progress.New(cfg.Store, &progress.Config{Rate: cfg.Rate, Logger: cfg.Logger, LagFunc: m.ObserveEventLag})
	sc := cfg.Server
	sc.Engine, sc.Broadcaster, sc.Logger = s.engine, s.bc, cfg.Logger
	if cfg.Metrics {
		sc.Metrics = m.Handler()
	}
	if s.server, err = New(sc); err != nil {
		return nil, err
	}
	// The webhook sender claims deliveries below the engine, as the
	// workers claim chunks.
	if ob, ok := cfg.Store.(outbox.Store); ok {
		if s.sender, err = outbox.New(outbox.Config{Store: ob, Logger: cfg.Logger, AllowPrivate: cfg.AllowPrivateWebhooks}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Engine is the service's engine: the one its API and its workers use.
func (s *Service) Engine() *batch.Engine { return s.engine }

// Handler is the HTTP server's handler, for a caller that serves it
// itself (Run serves it on a listener).
func (s *Service) Handler() http.Handler { return s.server }

// Run serves on ln and runs everything beside the server until ctx is
// done, then shuts down: the streams are closed, requests under way get
// 10 seconds, the workers give their rows back. It returns nil when ctx
// ended it, else the first error of a part that failed.
func (s *Service) Run(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.server, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.bc.Run(gctx) })
	if s.sender != nil {
		g.Go(func() error { return s.sender.Run(gctx) })
	}
	if s.cfg.ReloadKinds != nil {
		g.Go(func() error { s.every(gctx, s.cfg.ReloadEvery, false, s.reloadKinds); return nil })
	}
	if s.cfg.EventRetention > 0 || s.cfg.CompactFinished {
		g.Go(func() error { s.every(gctx, 10*time.Minute, true, s.trimEvents); return nil })
	}
	if s.cfg.FileRetention > 0 && s.cfg.Server.Files != nil {
		g.Go(func() error { s.every(gctx, time.Hour, true, s.sweepFiles); return nil })
	}
	if s.cfg.PurgeEvery >= 0 {
		g.Go(func() error { s.every(gctx, cmp.Or(s.cfg.PurgeEvery, 10*time.Minute), true, s.purgeValues); return nil })
	}
	if s.cfg.Workers > 0 {
		g.Go(func() error {
			err := s.cfg.Work(gctx, s.engine, batch.WorkParams{Workers: s.cfg.Workers, TenantIDs: s.cfg.WorkerTenants})
			if gctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("workers: %w", err)
			}
			s.cfg.Logger.Warn("the in-process workers stopped; serving goes on without them")
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		s.server.Shutdown()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return hs.Shutdown(sctx)
	})
	g.Go(func() error {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	err := g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *Service) reloadKinds(ctx context.Context) {
	n, err := s.cfg.ReloadKinds(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		s.cfg.Logger.Warn("reload stored kinds", "err", err)
	case n > 0:
		s.cfg.Logger.Info("stored kinds reloaded", "changed", n)
	}
}

func (s *Service) trimEvents(ctx context.Context) {
	n, err := s.engine.TrimEvents(ctx, batch.TrimEventsParams{OlderThan: s.cfg.EventRetention, FinishedKeepLast: s.cfg.CompactFinished})
	switch {
	case err != nil && ctx.Err() == nil:
		s.cfg.Logger.Warn("trim events", "err", err)
	case n > 0:
		s.cfg.Logger.Info("trimmed events", "n", n)
	}
}

// purgeValues applies every tenant's retention policies, a page of
// batches at a time, each batch in a transaction of its own. A running
// batch is not a candidate: it is purged on a later sweep, once ended.
func (s *Service) purgeValues(ctx context.Context) {
	const page = 100
	for ctx.Err() == nil {
		ps, err := s.engine.Purge(ctx, batch.PurgeParams{AllTenants: true, Policy: true, Actor: "retention", Limit: page})
		for _, p := range ps {
			if !p.Already {
				s.cfg.Logger.Info("purged rows' values by policy", "batch_id", p.BatchID, "tenant_id", p.TenantID, "rows", p.Rows)
			}
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, batch.ErrNoService) {
				s.cfg.Logger.Warn("purge rows' values by policy", "err", err)
			}
			return
		}
		if len(ps) < page {
			return
		}
	}
}

func (s *Service) sweepFiles(context.Context) {
	n, err := s.cfg.Server.Files.Sweep(s.cfg.FileRetention)
	switch {
	case err != nil:
		s.cfg.Logger.Warn("sweep kept files", "err", err)
	case n > 0:
		s.cfg.Logger.Info("removed kept files past their retention", "n", n)
	}
}

// every runs f at each period until ctx ends; now too when first.
func (s *Service) every(ctx context.Context, period time.Duration, first bool, f func(context.Context)) {
	t := time.NewTicker(period)
	defer t.Stop()
	if first {
		f(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f(ctx)
	}
}
