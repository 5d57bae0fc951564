// Package metrics exposes Rowfate's Prometheus metrics on a registry of
// its own, never the process-wide default: an application that embeds the
// engine keeps its registry to itself, and two Metrics in one process (a
// test, say) do not collide.
//
// What it exports:
//
//	rowfate_rows{state}                        gauge, every batch's rows, read from the store at scrape time
//	rowfate_store_up                           gauge, 1 when that read succeeded
//	rowfate_chunk_claims_total{kind}           counter, chunks this process's workers leased
//	rowfate_lease_losses_total{kind}           counter, renewals that found the lease gone
//	rowfate_stale_acks_rejected_total{kind}    counter, flushes refused for a stale fencing token
//	rowfate_row_outcomes_total{kind,state}     counter, outcomes flushed: state="retrying" are the
//	                                           retries, state="dead" the rows whose attempts ran out
//	rowfate_event_lag_seconds                  histogram, from an event's commit to the broadcaster reading it
//
// plus the Go runtime's go_* and the process's process_* metrics. Counters
// count what this process did; the rows gauge is the database's, the same
// from every process. No metric has a tenant or batch label: those grow
// without bound, and a series per batch would outlive the batch. Kinds are
// few, and label the worker counters.
package metrics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// Totals are the rows of every batch by state, read at each scrape: a
// *batch.Engine (or a store: both have RowTotals).
type Totals interface {
	RowTotals(ctx context.Context) (rows.Counts, error)
}

// Config configures Metrics.
type Config struct {
	// Store is read at each scrape for the rows by state. Optional:
	// without it rowfate_rows and rowfate_store_up are not exported.
	Store Totals
	// ScrapeTimeout bounds the store's read at a scrape, so that a stuck
	// database cannot hold scrapes open. Defaults to 5s.
	ScrapeTimeout time.Duration
	// Logger receives the errors of reading the store at a scrape.
	// Defaults to discarding.
	Logger *slog.Logger
}

// Metrics holds the registry and the counters. It is a batch.Observer;
// ObserveEventLag is a progress.Config.LagFunc.
type Metrics struct {
	reg       *prometheus.Registry
	claims    *prometheus.CounterVec
	leaseLost *prometheus.CounterVec
	stale     *prometheus.CounterVec
	outcomes  *prometheus.CounterVec
	lag       prometheus.Histogram
}

var _ batch.Observer = (*Metrics)(nil)

// New returns Metrics on a registry of its own, with the Go runtime and
// process collectors on it. The error is a registration clash, a bug.
func New(cfg Config) (*Metrics, error) {
	if cfg.ScrapeTimeout <= 0 {
		cfg.ScrapeTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rowfate_chunk_claims_total",
			Help: "Chunks this process's workers leased."}, []string{"kind"}),
		leaseLost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rowfate_lease_losses_total",
			Help: "Leases a renewal found gone (expired, or claimed again): the work stopped, and nothing of it was recorded."}, []string{"kind"}),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rowfate_stale_acks_rejected_total",
			Help: "Flushes refused because their fencing token was no longer the chunk's."}, []string{"kind"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rowfate_row_outcomes_total",
			Help: "Row outcomes this process's workers recorded, by state (retrying: retries; dead: attempts used up)."}, []string{"kind", "state"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rowfate_event_lag_seconds",
			Help:    "From an event's commit to the progress broadcaster reading it.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
	}
	cs := []prometheus.Collector{m.claims, m.leaseLost, m.stale, m.outcomes, m.lag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
	if cfg.Store != nil {
		cs = append(cs, &storeCollector{store: cfg.Store, timeout: cfg.ScrapeTimeout, logger: cfg.Logger})
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return m, nil
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry returns the registry, to add an application's own metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ChunkClaimed implements batch.Observer.
func (m *Metrics) ChunkClaimed(kind string) { m.claims.WithLabelValues(kind).Inc() }

// LeaseLost implements batch.Observer.
func (m *Metrics) LeaseLost(kind string) { m.leaseLost.WithLabelValues(kind).Inc() }

// StaleAckRejected implements batch.Observer.
func (m *Metrics) StaleAckRejected(kind string) { m.stale.WithLabelValues(kind).Inc() }

// RowsRecorded implements batch.Observer.
func (m *Metrics) RowsRecorded(kind string, state rows.State, n int) {
	m.outcomes.WithLabelValues(kind, string(state)).Add(float64(n))
}

// ObserveEventLag records how long after its commit an event was read: a
// progress.Config.LagFunc. The commit time is the database's clock and the
// read this process's, so a skew between them shows here; a negative lag
// (this clock behind) counts as 0 rather than vanishing from the sums.
func (m *Metrics) ObserveEventLag(d time.Duration) { m.lag.Observe(max(d, 0).Seconds()) }

// storeCollector reads the store's totals at each scrape.
type storeCollector struct {
	store   Totals
	timeout time.Duration
	logger  *slog.Logger
}

var (
	rowsDesc = prometheus.NewDesc("rowfate_rows", "Rows of every batch by state, summed over the count groups at scrape time.", []string{"state"}, nil)
	upDesc   = prometheus.NewDesc("rowfate_store_up", "1 when the scrape could read the store's totals, else 0.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rowsDesc
	ch <- upDesc
}

// Collect implements prometheus.Collector. A store that cannot be read
// turns rowfate_store_up to 0 rather than failing the scrape, so that the
// process's own metrics still arrive while the database is away.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	counts, err := c.store.RowTotals(ctx)
	if err != nil {
		c.logger.Warn("metrics: read the store's row totals", "err", err)
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	// Every state, zeros included: a series that vanishes at zero reads
	// as missing data to alerts and rate().
	for _, st := range rows.States {
		ch <- prometheus.MustNewConstMetric(rowsDesc, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
}
