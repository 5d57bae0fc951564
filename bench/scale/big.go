package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
)

type bigReport struct {
	Scenario string       `json:"scenario"`
	Ingest   []ingestFig  `json:"ingest"`
	Status   []statusFig  `json:"status"`
	Work     []workFig    `json:"work"`
	Started  time.Time    `json:"started"`
	Env      runtimeFacts `json:"env"`
}

type runtimeFacts struct {
	GoVersion string `json:"go"`
	CPUs      int    `json:"cpus"`
	Postgres  string `json:"postgres"`
}

type ingestFig struct {
	Rows       int     `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
}

type statusFig struct {
	Rows int `json:"rows"`
	// BatchGetMs is the store's BatchGet, median of 200 calls: what the
	// API's GET /v1/batches/{id} and batchctl status ask.
	BatchGetMs float64 `json:"batch_get_ms"`
	// StatusSeconds is a whole batchctl status process, median of 5.
	StatusSeconds float64 `json:"status_seconds"`
}

type workFig struct {
	Rows       int      `json:"rows"`
	Seconds    float64  `json:"seconds"`
	RowsPerSec float64  `json:"rows_per_sec"`
	Deciles    []decile `json:"deciles"`
}

// decile is a tenth of a run's flushes, in the order they happened.
type decile struct {
	RowsPerSec    float64 `json:"rows_per_sec"`
	ClaimMedianMs float64 `json:"claim_median_ms"`
	ClaimP99Ms    float64 `json:"claim_p99_ms"`
	FlushMedianMs float64 `json:"flush_median_ms"`
	FlushP99Ms    float64 `json:"flush_p99_ms"`
	MaxRSSMiB     float64 `json:"max_rss_mib"`
	Goroutines    int     `json:"max_goroutines"`
}

// runBig ingests a 1,000,000-row and an o.rows-row batch with batchctl
// import --no-work (wall time, peak RSS), reads each one's status, then
// works both in this process and reports each tenth of the work.
func runBig(ctx context.Context, o options) (*bigReport, error) {
	d, err := openScenario(ctx, o, "big")
	if err != nil {
		return nil, err
	}
	defer d.drop()
	rep := &bigReport{Scenario: "big", Started: time.Now().UTC(), Env: facts(ctx, d)}
	sizes := []int{1_000_000, o.rows}
	if o.rows <= 1_000_000 {
		sizes = []int{o.rows}
	}
	ids := make([]int64, len(sizes))
	for i, n := range sizes {
		logf("generating %d rows", n)
		file, err := generate(ctx, o, n)
		if err != nil {
			return nil, err
		}
		logf("ingesting %d rows", n)
		wall, rss, _, stderr, err := timed(ctx, o, nil, "import", "customers", file, "--no-work", "--database", d.url)
		if err != nil {
			return nil, err
		}
		if ids[i], err = batchID(stderr); err != nil {
			return nil, err
		}
		fig := ingestFig{Rows: n, Seconds: wall.Seconds(), RowsPerSec: float64(n) / wall.Seconds(), PeakRSSMiB: mib(rss)}
		rep.Ingest = append(rep.Ingest, fig)
		logf("ingest %d rows: %.1f s, %.0f rows/s, peak RSS %.1f MiB", n, fig.Seconds, fig.RowsPerSec, fig.PeakRSSMiB)
	}
	for i, n := range sizes {
		fig, err := statusTime(ctx, o, d, ids[i], n)
		if err != nil {
			return nil, err
		}
		rep.Status = append(rep.Status, fig)
		logf("status of the %d-row batch: BatchGet %.2f ms, batchctl status %.3f s", n, fig.BatchGetMs, fig.StatusSeconds)
	}
	for i, n := range sizes {
		logf("working %d rows", n)
		fig, err := work(ctx, o, d, batch.WorkParams{BatchID: ids[i], Workers: o.workers, UntilDone: true}, n)
		if err != nil {
			return nil, err
		}
		rep.Work = append(rep.Work, fig)
		logf("work %d rows: %.1f s, %.0f rows/s", n, fig.Seconds, fig.RowsPerSec)
		for k, dc := range fig.Deciles {
			logf("  decile %d: %.0f rows/s, claim %.1f ms (p99 %.1f), flush %.1f ms (p99 %.1f), RSS %.1f MiB, %d goroutines",
				k+1, dc.RowsPerSec, dc.ClaimMedianMs, dc.ClaimP99Ms, dc.FlushMedianMs, dc.FlushP99Ms, dc.MaxRSSMiB, dc.Goroutines)
		}
	}
	return rep, nil
}

func facts(ctx context.Context, d *scenarioDB) runtimeFacts {
	f := runtimeFacts{GoVersion: runtime.Version(), CPUs: runtime.NumCPU()}
	_ = d.pool.QueryRow(ctx, "SHOW server_version").Scan(&f.Postgres)
	return f
}

func statusTime(ctx context.Context, o options, d *scenarioDB, id int64, n int) (statusFig, error) {
	var gets []time.Duration
	for range 200 {
		t0 := time.Now()
		if _, err := d.store.BatchGet(ctx, driver.BatchGetParams{TenantID: batch.DefaultTenant, ID: id}); err != nil {
			return statusFig{}, err
		}
		gets = append(gets, time.Since(t0))
	}
	var procs []time.Duration
	for range 5 {
		wall, _, _, _, err := timed(ctx, o, nil, "status", strconv.FormatInt(id, 10), "--database", d.url)
		if err != nil {
			return statusFig{}, err
		}
		procs = append(procs, wall)
	}
	return statusFig{Rows: n, BatchGetMs: ms(median(gets)), StatusSeconds: median(procs).Seconds()}, nil
}

// sample is this process's RSS and goroutines at a moment.
type sample struct {
	at         time.Time
	rss        int64
	goroutines int
}

// work runs p in this process until done, sampling RSS and goroutines
// every 200 ms, and splits the run into tenths by flush.
func work(ctx context.Context, o options, d *scenarioDB, p batch.WorkParams, n int) (workFig, error) {
	d.store.reset()
	var (
		mu      sync.Mutex
		samples []sample
		done    = make(chan struct{})
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			s := sample{at: time.Now(), rss: selfRSS(), goroutines: runtime.NumGoroutine()}
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	t0 := time.Now()
	stats, err := d.engine.Work(ctx, p)
	wall := time.Since(t0)
	close(done)
	wg.Wait()
	if err != nil {
		return workFig{}, err
	}
	if stats.LeaseLost > 0 || stats.Stopped > 0 {
		return workFig{}, fmt.Errorf("work: %d leases lost, %d stopped", stats.LeaseLost, stats.Stopped)
	}
	claims, flushes := d.store.snapshot()
	fig := workFig{Rows: int(stats.Rows), Seconds: wall.Seconds(), RowsPerSec: float64(stats.Rows) / wall.Seconds()}
	fig.Deciles = deciles(t0, claims, flushes, samples)
	return fig, nil
}

func deciles(t0 time.Time, claims, flushes []call, samples []sample) []decile {
	slices.SortFunc(flushes, func(a, b call) int { return a.at.Compare(b.at) })
	var out []decile
	from := t0
	for k := range 10 {
		lo, hi := k*len(flushes)/10, (k+1)*len(flushes)/10
		if hi <= lo {
			continue
		}
		part := flushes[lo:hi]
		to := part[len(part)-1].at
		var rowsDone int
		var ft []time.Duration
		for _, f := range part {
			rowsDone += f.rows
			ft = append(ft, f.took)
		}
		var ct []time.Duration
		for _, c := range claims {
			if !c.at.Before(from) && !c.at.After(to) {
				ct = append(ct, c.took)
			}
		}
		dc := decile{RowsPerSec: float64(rowsDone) / to.Sub(from).Seconds(),
			ClaimMedianMs: ms(median(ct)), ClaimP99Ms: ms(pct(ct, 0.99)),
			FlushMedianMs: ms(median(ft)), FlushP99Ms: ms(pct(ft, 0.99))}
		for _, s := range samples {
			if !s.at.Before(from) && !s.at.After(to) {
				dc.MaxRSSMiB = max(dc.MaxRSSMiB, mib(s.rss))
				dc.Goroutines = max(dc.Goroutines, s.goroutines)
			}
		}
		out = append(out, dc)
		from = to
	}
	return out
}

func pct(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
