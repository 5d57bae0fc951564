package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

type workersReport struct {
	Scenario string       `json:"scenario"`
	Rows     int          `json:"rows"`
	Env      runtimeFacts `json:"env"`
	Runs     []workersRun `json:"runs"`
	// Medians by process count, and each one's speedup over one process.
	Medians []workersMedian `json:"medians"`
}

type workersRun struct {
	Procs      int     `json:"procs"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"`
	// ExtraClaims is claims beyond one per chunk: a chunk claimed again
	// because its lease was lost or expired (lease churn).
	ExtraClaims int64 `json:"extra_claims"`
	// Errors counts worker exits other than 0 and logged errors.
	Errors     int     `json:"errors"`
	PeakRSSMiB float64 `json:"peak_rss_mib_per_process"`
}

type workersMedian struct {
	Procs      int     `json:"procs"`
	RowsPerSec float64 `json:"rows_per_sec"`
	Speedup    float64 `json:"speedup_over_1"`
}

// runWorkers works a fresh o.rows-row batch with each process count in
// o.procs, o.runs rounds, the counts interleaved within a round so that
// the machine's noise falls on all of them alike.
func runWorkers(ctx context.Context, o options) (*workersReport, error) {
	logf("generating %d rows", o.rows)
	file, err := generate(ctx, o, o.rows)
	if err != nil {
		return nil, err
	}
	rep := &workersReport{Scenario: "workers", Rows: o.rows}
	for round := range o.runs {
		for _, k := range o.procs {
			r, env, err := workersOnce(ctx, o, file, k, round)
			if err != nil {
				return nil, err
			}
			rep.Env = env
			rep.Runs = append(rep.Runs, r)
			logf("round %d, %d process(es): %.1f s, %.0f rows/s, %d extra claims, %d errors, peak RSS %.1f MiB",
				round+1, k, r.Seconds, r.RowsPerSec, r.ExtraClaims, r.Errors, r.PeakRSSMiB)
		}
	}
	var base float64
	for _, k := range o.procs {
		var rates []float64
		for _, r := range rep.Runs {
			if r.Procs == k {
				rates = append(rates, r.RowsPerSec)
			}
		}
		m := workersMedian{Procs: k, RowsPerSec: median(rates)}
		if k == 1 || base == 0 {
			base = m.RowsPerSec
		}
		m.Speedup = m.RowsPerSec / base
		rep.Medians = append(rep.Medians, m)
		logf("%d process(es): median %.0f rows/s, %.2fx one process", k, m.RowsPerSec, m.Speedup)
	}
	return rep, nil
}

func workersOnce(ctx context.Context, o options, file string, procs, round int) (workersRun, runtimeFacts, error) {
	d, err := openScenario(ctx, o, fmt.Sprintf("workers%d_%d", procs, round))
	if err != nil {
		return workersRun{}, runtimeFacts{}, err
	}
	defer d.drop()
	env := facts(ctx, d)
	_, _, _, stderr, err := timed(ctx, o, nil, "import", "customers", file, "--no-work", "--database", d.url)
	if err != nil {
		return workersRun{}, env, err
	}
	id, err := batchID(stderr)
	if err != nil {
		return workersRun{}, env, err
	}
	_, _, tok, _, err := timed(ctx, o, nil, "worker-token", "create", "scale", "--all-tenants", "--database", d.url)
	if err != nil {
		return workersRun{}, env, err
	}
	token := "ROWFATE_WORKER_TOKEN=" + strings.TrimSpace(tok)

	run := workersRun{Procs: procs}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	t0 := time.Now()
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tf := filepath.Join(o.tmp, fmt.Sprintf("time-w%d", i))
			cmd := exec.CommandContext(ctx, "/usr/bin/time", "-f", "%M", "-o", tf, o.batchctl,
				"worker", "--until-done", "--database", d.url)
			cmd.Env = append(os.Environ(), token)
			var se strings.Builder
			cmd.Stderr = &se
			err := cmd.Run()
			var kb int64
			if b, rerr := os.ReadFile(tf); rerr == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				fmt.Sscan(lines[len(lines)-1], &kb)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				run.Errors++
				logf("worker %d: %v: %s", i, err, se.String())
			}
			for _, line := range strings.Split(se.String(), "\n") {
				if strings.Contains(line, "level=ERROR") || strings.Contains(line, "lease lost") {
					run.Errors++
				}
			}
			run.PeakRSSMiB = max(run.PeakRSSMiB, mib(kb<<10))
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	b, err := d.store.BatchGet(ctx, driver.BatchGetParams{TenantID: batch.DefaultTenant, ID: id})
	if err != nil {
		return run, env, err
	}
	if b.Status != batchtype.StatusFinished {
		return run, env, fmt.Errorf("batch %d is %s after the workers exited: %v", id, b.Status, b.Counts)
	}
	var worked int64
	for st, n := range b.Counts {
		if st != rows.StateInvalid {
			worked += n
		}
	}
	if err := d.pool.QueryRow(ctx, "SELECT COALESCE(sum(lease_token), 0) - count(*) FROM batch_chunks WHERE batch_id = $1", id).Scan(&run.ExtraClaims); err != nil {
		return run, env, err
	}
	run.Seconds = wall.Seconds()
	run.RowsPerSec = float64(worked) / wall.Seconds()
	return run, env, nil
}
