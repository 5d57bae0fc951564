package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rowfate/rowfate/batch"
)

type tenantsReport struct {
	Scenario      string       `json:"scenario"`
	Tenants       int          `json:"tenants"`
	Batches       int          `json:"batches"`
	Rows          int          `json:"rows"`
	HeavyRows     int          `json:"heavy_rows"`
	LightRows     int          `json:"light_rows_each"`
	IngestSeconds float64      `json:"ingest_seconds"`
	WorkSeconds   float64      `json:"work_seconds"`
	RowsPerSec    float64      `json:"rows_per_sec"`
	Env           runtimeFacts `json:"env"`
	// FirstChunk is, per tenant, how long after the workers started its
	// first chunk was claimed (seconds).
	FirstChunk spread `json:"first_chunk_seconds"`
	// HeavyFirstChunk is the heavy tenant's.
	HeavyFirstChunk float64 `json:"heavy_first_chunk_seconds"`
	// WindowSeconds is while every tenant still had work: until the
	// first tenant finished.
	WindowSeconds float64 `json:"window_seconds"`
	// Throughput is each tenant's rows per second in that window.
	Throughput      spread  `json:"throughput_rows_per_sec"`
	HeavyThroughput float64 `json:"heavy_throughput_rows_per_sec"`
	// Finished is when each light tenant's last row was done (seconds).
	LightFinished spread  `json:"light_finished_seconds"`
	HeavyFinished float64 `json:"heavy_finished_seconds"`
}

type spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	// Ratio is max/min.
	Ratio float64 `json:"max_over_min"`
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sp := spread{Min: s[0], Median: s[len(s)/2], Max: s[len(s)-1]}
	if sp.Min > 0 {
		sp.Ratio = sp.Max / sp.Min
	}
	return sp
}

// runTenants queues o.batches batches of o.tenants tenants, the heavy
// tenant's first (the order that starves everyone under first in, first
// out), each light batch one chunk of 1,000 rows and each heavy batch ten
// times that, then works them all with o.workers workers and reports, per
// tenant, when its first chunk started and its rows per second while all
// tenants had work.
func runTenants(ctx context.Context, o options) (*tenantsReport, error) {
	d, err := openScenario(ctx, o, "tenants")
	if err != nil {
		return nil, err
	}
	defer d.drop()
	per := o.batches / o.tenants
	const light = 1000
	rep := &tenantsReport{Scenario: "tenants", Tenants: o.tenants, Batches: per * o.tenants,
		HeavyRows: per * 10 * light, LightRows: per * light, Env: facts(ctx, d)}
	owner := map[int64]string{}
	t0 := time.Now()
	for t := range o.tenants {
		tenant := fmt.Sprintf("t%03d", t)
		rows := light
		if t == 0 {
			rows = 10 * light
		}
		for b := range per {
			src := tenantFile(tenant, b, rows)
			bt, err := d.engine.Import(ctx, batch.ImportParams{TenantID: tenant, Kind: "customers",
				SourceName: fmt.Sprintf("%s-%d.csv", tenant, b), Source: bytes.NewReader(src)})
			if err != nil {
				return nil, fmt.Errorf("import %s batch %d: %w", tenant, b, err)
			}
			owner[bt.ID] = tenant
			rep.Rows += rows
		}
		if t%10 == 9 {
			logf("queued %d batches of %d tenants", (t+1)*per, t+1)
		}
	}
	rep.IngestSeconds = time.Since(t0).Seconds()
	logf("queued %d batches, %d rows, in %.1f s; working", rep.Batches, rep.Rows, rep.IngestSeconds)

	d.store.reset()
	start := time.Now()
	stats, err := d.engine.Work(ctx, batch.WorkParams{Workers: o.workers, UntilDone: true})
	if err != nil {
		return nil, err
	}
	rep.WorkSeconds = time.Since(start).Seconds()
	rep.RowsPerSec = float64(stats.Rows) / rep.WorkSeconds
	claims, flushes := d.store.snapshot()

	first := map[string]time.Time{}
	for _, c := range claims {
		if f, ok := first[c.tenant]; !ok || c.at.Before(f) {
			first[c.tenant] = c.at
		}
	}
	last := map[string]time.Time{}
	for _, f := range flushes {
		tn := owner[f.batchID]
		if l, ok := last[tn]; !ok || f.at.After(l) {
			last[tn] = f.at
		}
	}
	var firsts, lightDone []float64
	window := time.Duration(1<<63 - 1)
	for tn, f := range first {
		firsts = append(firsts, f.Sub(start).Seconds())
		if tn == "t000" {
			rep.HeavyFirstChunk = f.Sub(start).Seconds()
		}
	}
	for tn, l := range last {
		if tn == "t000" {
			rep.HeavyFinished = l.Sub(start).Seconds()
		} else {
			lightDone = append(lightDone, l.Sub(start).Seconds())
		}
		window = min(window, l.Sub(start))
	}
	rep.FirstChunk, rep.LightFinished = spreadOf(firsts), spreadOf(lightDone)
	rep.WindowSeconds = window.Seconds()
	done := map[string]int{}
	for _, f := range flushes {
		if f.at.Sub(start) <= window {
			done[owner[f.batchID]] += f.rows
		}
	}
	var tput []float64
	for t := range o.tenants {
		tn := fmt.Sprintf("t%03d", t)
		r := float64(done[tn]) / window.Seconds()
		tput = append(tput, r)
		if t == 0 {
			rep.HeavyThroughput = r
		}
	}
	rep.Throughput = spreadOf(tput)
	logf("work: %.1f s, %.0f rows/s", rep.WorkSeconds, rep.RowsPerSec)
	logf("first chunk after the start, per tenant: min %.2f s, median %.2f s, max %.2f s; heavy tenant %.2f s",
		rep.FirstChunk.Min, rep.FirstChunk.Median, rep.FirstChunk.Max, rep.HeavyFirstChunk)
	logf("while all %d tenants had work (%.1f s): rows/s per tenant min %.0f, median %.0f, max %.0f (max/min %.2f); heavy tenant %.0f",
		o.tenants, rep.WindowSeconds, rep.Throughput.Min, rep.Throughput.Median, rep.Throughput.Max, rep.Throughput.Ratio, rep.HeavyThroughput)
	logf("light tenants finished: median %.1f s, max %.1f s; heavy tenant %.1f s",
		rep.LightFinished.Median, rep.LightFinished.Max, rep.HeavyFinished)
	return rep, nil
}

// tenantFile is a customers CSV of n valid rows unique to tenant and b.
func tenantFile(tenant string, b, n int) []byte {
	var buf bytes.Buffer
	buf.WriteString("email,name,country,signup_date,amount\n")
	for i := range n {
		fmt.Fprintf(&buf, "c%d.%d@%s.example.com,Customer %d,FR,2024-01-%02d,%d.50\n", b, i, tenant, i, i%28+1, i%1000)
	}
	return buf.Bytes()
}
