package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/progress"
	"github.com/rowfate/rowfate/server"
)

type serveOptions struct {
	addr      string
	token     string
	insecure  bool
	origins   []string
	rate      float64
	retention time.Duration
	compact   bool
}

func (c *cli) serveCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve batches' live progress over websockets, with health checks",
		Long: `Serve the HTTP API: for now the live progress of batches over a websocket
and the health checks; the full API and the admin page come later.

  GET /v1/batches/{id}/events?cursor=N   websocket: the batch's events after
                                          cursor N (0: all), then live
  GET /livez                              the process is up
  GET /readyz                             the database answers and its schema
                                          is current

Every request but the health checks needs the bearer token (--token, or
$ROWFATE_SERVE_TOKEN) in an Authorization header, or, from a browser, as
the websocket subprotocol "bearer.TOKEN" next to "rowfate.v1". The token
acts for --tenant: another tenant's batch is not found. Without a token
serve refuses to start, unless --insecure-dev, which serves anyone who can
reach --addr, for a developer's machine only.

Browsers may open a stream from the server's own origin and from the
--allowed-origin ones, nothing else.

A stream sends JSON text messages: {"type":"event","event":{...},"cursor":N}
for each event (progress events are coalesced to at most --rate a second;
lifecycle events and the final one always arrive, in order, never twice),
{"type":"cursor_expired","cursor":N} when events after the client's cursor
were trimmed (read the batch again; the stream goes on after N). Close
codes: 4001 too slow, 4002 no pong, 4004 batch gone, 1001 server stopping;
resume from the last cursor received.

Workers in other processes (batchctl worker, batchctl import) write the
events; on PostgreSQL every serve process hears of them at once (LISTEN),
and polls each second as well. On SQLite serve polls the file.`,
		Example: `  ROWFATE_SERVE_TOKEN=$(openssl rand -hex 32) batchctl serve --addr :8080 --database postgres://db/app
  batchctl serve --insecure-dev
  batchctl serve --token "$TOKEN" --allowed-origin https://admin.example.com`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.runServe(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on")
	f.StringVar(&o.token, "token", "", "bearer token that acts for --tenant (default $ROWFATE_SERVE_TOKEN)")
	f.BoolVar(&o.insecure, "insecure-dev", false, "serve without a token: anyone who can reach --addr reads --tenant's batches (development only)")
	f.StringArrayVar(&o.origins, "allowed-origin", nil, "a browser origin (https://host[:port]) whose pages may open streams; repeatable")
	f.Float64Var(&o.rate, "rate", 4, "live messages a second per stream, at most")
	f.DurationVar(&o.retention, "event-retention", 7*24*time.Hour, "trim events older than this (0 keeps them)")
	f.BoolVar(&o.compact, "compact-finished", false, "trim every event of a finished or cancelled batch but its last")
	return cmd
}

func (c *cli) runServe(ctx context.Context, o serveOptions) error {
	if o.token == "" {
		o.token = os.Getenv("ROWFATE_SERVE_TOKEN")
	}
	var auth server.Authenticator
	switch {
	case o.token != "" && o.insecure:
		return usagef("--insecure-dev and a token (--token or $ROWFATE_SERVE_TOKEN) exclude each other")
	case o.token != "":
		auth = server.NewStaticToken(o.token, c.global.tenant)
	case o.insecure:
		auth = server.Insecure{TenantID: c.global.tenant}
	default:
		return usagef("serve needs a token: --token or $ROWFATE_SERVE_TOKEN (or --insecure-dev, on a developer's machine only)")
	}
	if o.rate <= 0 {
		return usagef("--rate must be above 0, not %v", o.rate)
	}
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	bc := progress.New(app.store, &progress.Config{Rate: o.rate, Logger: c.logger})
	srv, err := server.New(server.Config{Store: app.store, Broadcaster: bc, Auth: auth, AllowedOrigins: o.origins, Logger: c.logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	if o.insecure {
		fmt.Fprintf(c.stderr, "WARNING: --insecure-dev: no token is checked; anyone who can reach %s reads the batches of tenant %q\n", ln.Addr(), c.global.tenant)
	}
	fmt.Fprintf(c.stderr, "serving on http://%s (tenant %q, %s)\n", ln.Addr(), c.global.tenant, c.where())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return bc.Run(gctx) })
	g.Go(func() error { c.trimEvents(gctx, app.store, o); return nil })
	g.Go(func() error {
		<-gctx.Done()
		srv.Shutdown()
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
	err = g.Wait()
	if ctx.Err() != nil {
		fmt.Fprintln(c.stderr, "stopped")
		return nil
	}
	return err
}

// trimEvents applies the event retention now and every 10 minutes.
func (c *cli) trimEvents(ctx context.Context, store batch.Store, o serveOptions) {
	if o.retention <= 0 && !o.compact {
		return
	}
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		n, err := store.EventsTrim(ctx, batch.EventsTrimParams{OlderThan: o.retention, FinishedKeepLast: o.compact})
		switch {
		case err != nil && ctx.Err() == nil:
			c.logger.Warn("trim events", "err", err)
		case n > 0:
			c.logger.Info("trimmed events", "n", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
