package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/processors"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/store/postgres"
)

// scenarioDB is a fresh schema: its URL (search_path set, for batchctl),
// and an engine on it in this process whose store times claims and flushes.
type scenarioDB struct {
	url    string
	schema string
	pool   *pgxpool.Pool
	store  *timedStore
	engine *batch.Engine
	drop   func()
}

func openScenario(ctx context.Context, o options, name string) (*scenarioDB, error) {
	schema := fmt.Sprintf("scale_%s_%d", name, os.Getpid())
	admin, err := pgxpool.New(ctx, o.url)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", schema, schema)); err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	u, err := url.Parse(o.url)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	d := &scenarioDB{url: u.String(), schema: schema}
	cfg, err := pgxpool.ParseConfig(d.url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(max(8, 2*o.workers+4))
	postgres.ConfigurePool(cfg)
	if d.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, err
	}
	d.drop = func() {
		d.pool.Close()
		if o.keep {
			logf("kept schema %s", schema)
			return
		}
		if a, err := pgxpool.New(context.Background(), o.url); err == nil {
			_, _ = a.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			a.Close()
		}
	}
	st := postgres.New(d.pool, &postgres.Config{Schema: schema})
	if err := st.Migrate(ctx); err != nil {
		d.drop()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	pc := processors.Config{DB: stdlib.OpenDBFromPool(d.pool), Dialect: customers.Postgres}
	if err := processors.EnsureSchema(ctx, pc); err != nil {
		d.drop()
		return nil, err
	}
	reg, err := processors.Registry(pc)
	if err != nil {
		d.drop()
		return nil, err
	}
	d.store = &timedStore{Store: st}
	if d.engine, err = batch.NewEngine(batch.Config{Store: d.store, Registry: reg, Logger: quiet(), WorkerName: "scale"}); err != nil {
		d.drop()
		return nil, err
	}
	return d, nil
}

// call is one timed claim or flush.
type call struct {
	at      time.Time // when it returned
	took    time.Duration
	tenant  string
	batchID int64
	rows    int // the lease's rows (claim) or outcomes (flush)
}

// timedStore records every successful claim and flush.
type timedStore struct {
	driver.Store
	mu      sync.Mutex
	claims  []call
	flushes []call
	leased  map[[2]int64]int // rows of each chunk's last claim
}

func (s *timedStore) ChunkClaim(ctx context.Context, p driver.ChunkClaimParams) (*driver.Lease, error) {
	t0 := time.Now()
	l, err := s.Store.ChunkClaim(ctx, p)
	if err == nil {
		now := time.Now()
		s.mu.Lock()
		s.claims = append(s.claims, call{at: now, took: now.Sub(t0), tenant: l.TenantID, batchID: l.BatchID, rows: len(l.Rows)})
		if s.leased == nil {
			s.leased = map[[2]int64]int{}
		}
		s.leased[[2]int64{l.BatchID, l.ChunkNo}] = len(l.Rows)
		s.mu.Unlock()
	}
	return l, err
}

func (s *timedStore) ChunkFlush(ctx context.Context, p driver.ChunkFlushParams) (*driver.FlushResult, error) {
	t0 := time.Now()
	r, err := s.Store.ChunkFlush(ctx, p)
	if err == nil {
		now := time.Now()
		s.mu.Lock()
		// A transactional kind's outcomes come from the flush's own
		// EffectFunc, not Outcomes: count the rows the claim handed out.
		s.flushes = append(s.flushes, call{at: now, took: now.Sub(t0), batchID: p.BatchID, rows: s.leased[[2]int64{p.BatchID, p.ChunkNo}]})
		s.mu.Unlock()
	}
	return r, err
}

func (s *timedStore) reset() {
	s.mu.Lock()
	s.claims, s.flushes = nil, nil
	s.mu.Unlock()
}

func (s *timedStore) snapshot() (claims, flushes []call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.claims...), append([]call(nil), s.flushes...)
}

// selfRSS is this process's resident set size now.
func selfRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
