package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// fault is one kind of fault the schedule draws from.
type fault struct {
	name   string
	weight int
	do     func(ctx context.Context, h *harness)
}

var faultKinds = []fault{
	{"kill_worker", 4, func(_ context.Context, h *harness) {
		h.work.signal(h.work.workers[h.pickRng.IntN(len(h.work.workers))], syscall.SIGKILL)
	}},
	{"stop_worker", 2, func(_ context.Context, h *harness) {
		// Stopped past its 2 s lease: another worker takes its chunk, and
		// when it comes back its renewal and flush must find that out.
		w := h.work.workers[h.pickRng.IntN(len(h.work.workers))]
		d := 2500*time.Millisecond + time.Duration(h.rng.IntN(2000))*time.Millisecond
		h.work.signal(w, syscall.SIGSTOP)
		time.AfterFunc(d, func() { h.work.signal(w, syscall.SIGCONT) })
	}},
	{"pg_restart", 1, func(ctx context.Context, h *harness) {
		if err := h.pg.restart(ctx); err != nil && ctx.Err() == nil {
			h.rep.violate("pg restart: %v", err)
		}
	}},
	{"terminate_backends", 2, func(ctx context.Context, h *harness) {
		_, _ = h.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND application_name <> 'chaos'`)
	}},
	{"proxy_reset", 3, func(_ context.Context, h *harness) { h.prox.reset() }},
	{"proxy_blackhole", 2, func(_ context.Context, h *harness) {
		go h.prox.blackhole(time.Duration(1000+h.rng.IntN(3000)) * time.Millisecond)
	}},
	{"proxy_latency", 1, func(_ context.Context, h *harness) {
		go h.prox.slow(time.Duration(5+h.rng.IntN(40))*time.Millisecond, 3*time.Second)
	}},
	{"cancel_batch", 1, func(ctx context.Context, h *harness) {
		if b := h.pick(ctx); b != nil {
			if got, err := h.store.BatchCancel(ctx, driver.BatchControlParams{TenantID: b.Tenant, ID: b.ID}); err == nil && got.Status == driver.StatusCancelled {
				h.mu.Lock()
				h.rep.Cancelled = append(h.rep.Cancelled, b.ID)
				h.mu.Unlock()
			}
		}
	}},
	{"pause_batch", 2, func(ctx context.Context, h *harness) {
		if b := h.pick(ctx); b != nil {
			if _, err := h.store.BatchPause(ctx, driver.BatchControlParams{TenantID: b.Tenant, ID: b.ID}, true); err == nil {
				h.mu.Lock()
				h.paused[b.ID] = true
				h.mu.Unlock()
				time.AfterFunc(time.Duration(1000+h.pickRng.IntN(3000))*time.Millisecond, func() {
					h.resume(context.WithoutCancel(ctx), b)
				})
			}
		}
	}},
	{"stale_ack", 3, func(ctx context.Context, h *harness) { h.staleAck(ctx) }},
	{"forged_ack", 2, func(ctx context.Context, h *harness) { h.forgedAck(ctx) }},
	{"slow_downstream", 1, func(_ context.Context, h *harness) {
		h.down.setSlow(time.Duration(100+h.rng.IntN(400)) * time.Millisecond)
		time.AfterFunc(3*time.Second, func() { h.down.setSlow(0) })
	}},
}

// faults injects a fault every 1–5 s until ctx is done. The schedule is
// the seed's: the same seed draws the same faults in the same order.
func (h *harness) faults(ctx context.Context) {
	total := 0
	for _, f := range faultKinds {
		total += f.weight
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
		for _, f := range faultKinds {
			if n < f.weight {
				h.logf("fault %s", f.name)
				f.do(ctx, h)
				h.mu.Lock()
				h.rep.Faults[f.name]++
				h.mu.Unlock()
				break
			}
			n -= f.weight
		}
	}
}

// pick returns a running batch at random; nil when none is.
func (h *harness) pick(ctx context.Context) *imported {
	rs := h.running(ctx)
	if len(rs) == 0 {
		return nil
	}
	return rs[h.pickRng.IntN(len(rs))]
}

// pickWait is pick, waiting up to 10 s for a batch to run.
func (h *harness) pickWait(ctx context.Context) *imported {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if b := h.pick(ctx); b != nil || time.Now().After(deadline) || ctx.Err() != nil {
			return b
		}
	}
}

// staleAck claims a chunk under a short lease and lets it expire; then a
// newer claim takes the chunk (a worker's, or the harness's own, taking
// the batch's chunks until it holds that one), and the first lease's
// holder flushes with its old token and outcomes that would fail every
// row: the store must refuse it and write nothing.
func (h *harness) staleAck(ctx context.Context) {
	b, l := h.claimFor(ctx, "chaos-stale", 200*time.Millisecond)
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
	if errors.Is(err, driver.ErrLeaseLost) {
		h.rep.StaleAcksRejected++
	} else {
		h.rep.violate("a stale ack (batch %d chunk %d, token %d < %d) was not refused: %v", l.BatchID, l.ChunkNo, l.Token, token, err)
	}
	h.mu.Unlock()
	if newer != nil {
		_, _ = h.store.ChunkFlush(fctx, driver.ChunkFlushParams{TenantID: newer.TenantID, BatchID: newer.BatchID, ChunkNo: newer.ChunkNo, Token: newer.Token, Unworked: rowNos(newer), Release: true})
	}
}

// forgedAck claims a chunk of one tenant's batch, then flushes it naming
// the other tenant, with the right token and outcomes that would succeed
// every row: the store must refuse it. Then the rows are given back.
func (h *harness) forgedAck(ctx context.Context) {
	b, l := h.claimFor(ctx, "chaos-forger", 10*time.Second)
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
	if err == nil {
		h.rep.violate("a flush naming tenant %s was accepted for batch %d of tenant %s", other, l.BatchID, b.Tenant)
	} else {
		h.rep.ForgedAcksRejected++
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
func (h *harness) claimFor(ctx context.Context, owner string, lease time.Duration) (*imported, *driver.Lease) {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if b := h.pickWait(ctx); b != nil {
			l, err := h.store.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: owner, BatchID: b.ID, TenantIDs: []string{b.Tenant},
				LeaseDuration: lease, Kinds: []string{b.Kind}})
			if err == nil {
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
