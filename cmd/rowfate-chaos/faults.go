package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// fault is one kind of fault the schedule draws from.
type fault struct {
	name   string
	weight int
	do     func(ctx context.Context, h *harness, rng *rand.Rand)
}

var faultKinds = []fault{
	{"kill_worker", 4, func(_ context.Context, h *harness, rng *rand.Rand) {
		// Half the kills go to a worker with a row's program running,
		// when there is one: the program must die with its worker.
		w := h.work.workers[rng.IntN(len(h.work.workers))]
		if runs := h.workersWithRuns(); len(runs) > 0 && rng.IntN(2) == 0 {
			w = runs[rng.IntN(len(runs))]
		}
		h.work.signal(w, syscall.SIGKILL)
	}},
	{"stop_worker", 2, func(_ context.Context, h *harness, rng *rand.Rand) {
		// Stopped past its 2 s lease: another worker takes its chunk, and
		// when it comes back its renewal and flush must find that out.
		w := h.work.workers[rng.IntN(len(h.work.workers))]
		d := 2500*time.Millisecond + time.Duration(rng.IntN(2000))*time.Millisecond
		h.work.signal(w, syscall.SIGSTOP)
		time.AfterFunc(d, func() { h.work.signal(w, syscall.SIGCONT) })
	}},
	{"pg_restart", 1, func(ctx context.Context, h *harness, rng *rand.Rand) {
		if err := h.pg.restart(ctx); err != nil && ctx.Err() == nil {
			h.rep.violate("pg_restart", "pg restart: %v", err)
		}
	}},
	{"terminate_backends", 2, func(ctx context.Context, h *harness, rng *rand.Rand) {
		_, _ = h.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND application_name <> 'chaos'`)
	}},
	// The proxy's faults hit the workers' connections and the imports'.
	{"proxy_reset", 3, func(_ context.Context, h *harness, rng *rand.Rand) { h.prox.reset(); h.iprox.reset() }},
	{"proxy_blackhole", 2, func(_ context.Context, h *harness, rng *rand.Rand) {
		d := time.Duration(1000+rng.IntN(3000)) * time.Millisecond
		go h.prox.blackhole(d)
		go h.iprox.blackhole(d)
	}},
	{"proxy_latency", 1, func(_ context.Context, h *harness, rng *rand.Rand) {
		lat := time.Duration(5+rng.IntN(40)) * time.Millisecond
		go h.prox.slow(lat, 3*time.Second)
		go h.iprox.slow(lat, 3*time.Second)
	}},
	{"cancel_batch", 1, func(ctx context.Context, h *harness, rng *rand.Rand) {
		if b := h.pick(ctx, rng); b != nil {
			at := time.Now()
			if got, err := h.store.BatchCancel(ctx, driver.BatchControlParams{TenantID: b.Tenant, ID: b.ID}); err == nil && got.Status == batchtype.StatusCancelled {
				h.mu.Lock()
				h.rep.Cancelled = append(h.rep.Cancelled, b.ID)
				h.cancelledAt[b.ID] = at
				h.mu.Unlock()
			}
		}
	}},
	{"pause_batch", 2, func(ctx context.Context, h *harness, rng *rand.Rand) {
		if b := h.pick(ctx, rng); b != nil {
			if _, err := h.store.BatchPause(ctx, driver.BatchControlParams{TenantID: b.Tenant, ID: b.ID}, true); err == nil {
				h.mu.Lock()
				h.paused[b.ID] = true
				h.pauses[b.ID]++
				if h.o.sabotage["leave-paused"] && len(h.neverResume) == 0 {
					h.neverResume[b.ID] = true
				}
				h.mu.Unlock()
				time.AfterFunc(time.Duration(1000+rng.IntN(3000))*time.Millisecond, func() {
					h.resume(context.WithoutCancel(ctx), b)
				})
			}
		}
	}},
	{"stale_ack", 3, func(ctx context.Context, h *harness, rng *rand.Rand) { h.staleAck(ctx, rng) }},
	{"forged_ack", 2, func(ctx context.Context, h *harness, rng *rand.Rand) { h.forgedAck(ctx, rng) }},
	{"slow_downstream", 1, func(_ context.Context, h *harness, rng *rand.Rand) {
		h.down.setSlow(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		time.AfterFunc(3*time.Second, func() { h.down.setSlow(0) })
	}},
	// Half the requests of the next 3 s answer 503 and apply nothing:
	// retried, never applied twice, dead only after every attempt.
	{"downstream_errors", 1, func(_ context.Context, h *harness, rng *rand.Rand) { h.down.failFor(3*time.Second, 0.5) }},
	// A fifth of the requests of the next 2 s get no answer for longer
	// than the processor's timeout (the kind's, 30 s); half of those were
	// applied: a webhook row whose call times out is unknown.
	{"downstream_hang", 1, func(_ context.Context, h *harness, rng *rand.Rand) { h.down.hangNext(2*time.Second, 0.2, hangFor) }},
}

// hangFor is how long a hung request goes unanswered: past the kind's
// processor timeout (batch.Kind.Timeout's default, 30 s).
const hangFor = 32 * time.Second

// faults injects a fault every 1–5 s until ctx is done, and waits for the
// faults under way to end. The schedule is the seed's: the same seed
// draws the same faults in the same order, at the same times, each with
// a generator of its own drawn from the schedule's for its choices (which
// worker, which batch, how long). Each fault runs on its own, so that
// one that takes long (a stale ack waiting for a chunk, a cancel waiting
// for locks) does not hold the schedule up: the first runs of seed 11
// at this size injected 4 faults in 60 s because a cancel waited 44 s.
func (h *harness) faults(ctx context.Context) {
	total := 0
	for _, f := range faultKinds {
		total += f.weight
	}
	var under sync.WaitGroup
	defer under.Wait()
	if h.o.sabotage["uncounted-faults"] {
		// A hang and a cancel of an external batch to leave out of the
		// bound, whatever the seed draws.
		under.Go(func() {
			time.Sleep(8 * time.Second)
			h.mu.Lock()
			h.rep.Faults["downstream_hang"]++
			h.mu.Unlock()
			h.inject(ctx, faultKinds[h.weightIndex("downstream_hang")], rand.New(rand.NewPCG(1, 2)))
			time.Sleep(12 * time.Second)
			for _, b := range h.running(ctx) {
				if b.Kind != "customers" {
					h.logf("sabotage: cancel of batch %d, left out of the bound", b.ID)
					h.mu.Lock()
					h.uncounted[b.ID] = true
					h.mu.Unlock()
					_, _ = h.store.BatchCancel(ctx, driver.BatchControlParams{TenantID: b.Tenant, ID: b.ID})
					break
				}
			}
		})
	}
	if h.o.sabotage["leave-paused"] {
		// A pause that is never resumed, whatever the seed draws.
		under.Go(func() {
			time.Sleep(15 * time.Second)
			h.mu.Lock()
			h.rep.Faults["pause_batch"]++
			h.mu.Unlock()
			h.inject(ctx, faultKinds[h.weightIndex("pause_batch")], rand.New(rand.NewPCG(3, 4)))
		})
	}
	// The schedule opens with a stale and a forged ack, so that every run
	// goes down those paths; then it draws.
	first := []string{"stale_ack", "forged_ack"}
	for {
		wait := time.Duration(1000+h.rng.IntN(4000)) * time.Millisecond
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		n := h.rng.IntN(total)
		if len(first) > 0 {
			n = h.weightOf(first[0])
			first = first[1:]
		}
		rng := rand.New(rand.NewPCG(h.rng.Uint64(), h.rng.Uint64()))
		for _, f := range faultKinds {
			if n < f.weight {
				h.mu.Lock()
				h.rep.Faults[f.name]++
				h.mu.Unlock()
				under.Go(func() { h.inject(ctx, f, rng) })
				break
			}
			n -= f.weight
		}
	}
}

// slowFault is how long a fault may take before the harness notes what
// the database is waiting on.
const slowFault = 10 * time.Second

// inject runs one fault; one that takes longer than slowFault has the
// database's sessions and locks written to the run's folder.
func (h *harness) inject(ctx context.Context, f fault, rng *rand.Rand) {
	start := time.Now()
	h.logf("fault %s", f.name)
	t := time.AfterFunc(slowFault, func() { h.noteSlow(ctx, f.name, start) })
	f.do(ctx, h, rng)
	t.Stop()
	if d := time.Since(start); d > slowFault {
		h.logf("fault %s took %s", f.name, d.Round(time.Millisecond))
	}
}

// pick returns a running batch at random; nil when none is.
func (h *harness) pick(ctx context.Context, rng *rand.Rand) *imported {
	rs := h.running(ctx)
	if len(rs) == 0 {
		return nil
	}
	return rs[rng.IntN(len(rs))]
}

// pickWait is pick, waiting up to 10 s for a batch to run.
func (h *harness) pickWait(ctx context.Context, rng *rand.Rand) *imported {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if b := h.pick(ctx, rng); b != nil || time.Now().After(deadline) || ctx.Err() != nil {
			return b
		}
	}
}

// staleAck claims a chunk under a short lease and lets it expire; then a
// newer claim takes the chunk (a worker's, or the harness's own, taking
// the batch's chunks until it holds that one), and the first lease's
// holder flushes with its old token and outcomes that would fail every
// row: the store must refuse it and write nothing.
func (h *harness) staleAck(ctx context.Context, rng *rand.Rand) {
	b, l := h.claimFor(ctx, rng, "chaos-stale", 200*time.Millisecond)
	if l == nil {
		return
	}
	time.Sleep(300 * time.Millisecond)
	fctx := context.WithoutCancel(ctx)
	var newer *driver.Lease
	for try := 0; try < 50 && newer == nil; try++ {
		n, err := h.store.ChunkClaim(fctx, driver.ChunkClaimParams{Owner: "chaos-newer", BatchID: b.ID, TenantIDs: []string{b.Tenant},
			LeaseDuration: 10 * time.Second, Kinds: []string{b.Kind}})
		if err != nil {
			break // none left to claim: a worker holds it, or the batch stopped
		}
		h.mu.Lock()
		h.harnessClaims[n.BatchID]++
		h.mu.Unlock()
		if n.ChunkNo == l.ChunkNo {
			newer = n
			continue
		}
		// Not the one: give it back at once.
		_, _ = h.store.ChunkFlush(fctx, driver.ChunkFlushParams{TenantID: n.TenantID, BatchID: n.BatchID, ChunkNo: n.ChunkNo, Token: n.Token, Unworked: rowNos(n), Release: true})
	}
	var token int64
	_ = h.pool.QueryRow(fctx, `SELECT lease_token FROM rowfate.batch_chunks WHERE batch_id = $1 AND chunk_no = $2`, l.BatchID, l.ChunkNo).Scan(&token)
	if token == l.Token {
		// Nobody took it (the batch stopped): give the rows back.
		_, _ = h.store.ChunkFlush(fctx, driver.ChunkFlushParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token, Unworked: rowNos(l), Release: true})
		return
	}
	_, err := h.store.ChunkFlush(fctx, driver.ChunkFlushParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token,
		Outcomes: failAll(l, "stale ack"), Release: true})
	h.mu.Lock()
	switch {
	case errors.Is(err, driver.ErrLeaseLost):
		h.rep.StaleAcksRejected++
	case err == nil:
		h.rep.violate("stale_ack_accepted", "a stale ack (batch %d chunk %d, token %d < %d) was accepted", l.BatchID, l.ChunkNo, l.Token, token)
	default:
		// A database restart, say: the ack did not get to be judged.
		h.logf("stale ack of batch %d chunk %d not judged: %v", l.BatchID, l.ChunkNo, err)
	}
	h.mu.Unlock()
	if newer != nil {
		_, _ = h.store.ChunkFlush(fctx, driver.ChunkFlushParams{TenantID: newer.TenantID, BatchID: newer.BatchID, ChunkNo: newer.ChunkNo, Token: newer.Token, Unworked: rowNos(newer), Release: true})
	}
}

// forgedAck claims a chunk of one tenant's batch, then flushes it naming
// the other tenant, with the right token and outcomes that would succeed
// every row: the store must refuse it. Then the rows are given back.
func (h *harness) forgedAck(ctx context.Context, rng *rand.Rand) {
	b, l := h.claimFor(ctx, rng, "chaos-forger", 10*time.Second)
	if l == nil {
		return
	}
	other := tenants[0]
	if other == b.Tenant {
		other = tenants[1]
	}
	fctx := context.WithoutCancel(ctx)
	outs := make([]driver.RowOutcome, len(l.Rows))
	for i, r := range l.Rows {
		outs[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateSucceeded, ResultID: "forged"}
	}
	_, err := h.store.ChunkFlush(fctx, driver.ChunkFlushParams{TenantID: other, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outs, Release: true})
	h.mu.Lock()
	switch {
	case err == nil:
		h.rep.violate("forged_ack_accepted", "a flush naming tenant %s was accepted for batch %d of tenant %s", other, l.BatchID, b.Tenant)
	case errors.Is(err, driver.ErrLeaseLost), errors.Is(err, driver.ErrNotFound):
		h.rep.ForgedAcksRejected++
	default:
		h.logf("forged ack of batch %d chunk %d not judged: %v", l.BatchID, l.ChunkNo, err)
	}
	h.mu.Unlock()
	_, _ = h.store.ChunkFlush(fctx, driver.ChunkFlushParams{TenantID: l.TenantID, BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token,
		Unworked: rowNos(l), Release: true})
}

// claimFor claims a chunk of a running batch for the harness itself. The
// workers may hold every claimable chunk, or the database may be
// restarting: it keeps trying for 30 s, so that the stale and forged ack
// paths run (a run whose only forged ack found nothing to claim would
// fail its check for the path). It returns a nil lease if none came.
func (h *harness) claimFor(ctx context.Context, rng *rand.Rand, owner string, lease time.Duration) (*imported, *driver.Lease) {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if b := h.pickWait(ctx, rng); b != nil {
			l, err := h.store.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: owner, BatchID: b.ID, TenantIDs: []string{b.Tenant},
				LeaseDuration: lease, Kinds: []string{b.Kind}})
			if err == nil {
				h.mu.Lock()
				h.harnessClaims[l.BatchID]++
				h.mu.Unlock()
				return b, l
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, nil
		}
	}
}

func rowNos(l *driver.Lease) []int64 {
	out := make([]int64, len(l.Rows))
	for i, r := range l.Rows {
		out[i] = r.RowNo
	}
	return out
}

func failAll(l *driver.Lease, why string) []driver.RowOutcome {
	out := make([]driver.RowOutcome, len(l.Rows))
	for i, r := range l.Rows {
		out[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateFailed, Error: &rows.FieldError{Row: r.RowNo, Code: "chaos", Message: fmt.Sprint(why)}}
	}
	return out
}

// weightIndex is the index of the fault of that name.
func (h *harness) weightIndex(name string) int {
	for i, f := range faultKinds {
		if f.name == name {
			return i
		}
	}
	panic("no fault " + name)
}

// weightOf is a draw that picks the fault of that name.
func (h *harness) weightOf(name string) int {
	n := 0
	for _, f := range faultKinds {
		if f.name == name {
			return n
		}
		n += f.weight
	}
	return 0
}
