package main

import (
	"context"
	"fmt"
	"time"
)

// maxAttempts is the kinds' attempts (batch.Kind.MaxAttempts's default).
const maxAttempts = 5

// chunkRows is the kinds' chunk size (batch.Kind.ChunkSize's default):
// the rows one lease holds.
const chunkRows = 1000

// checkUnknownBound bounds the unknown rows of each batch by what the
// faults injected can explain, and flags a batch over its bound.
//
// A row is unknown when the engine cannot tell whether its effect
// happened. Of the faults, only two can make one:
//
//   - a request that hangs past the processor's timeout (downstream_hang):
//     the call's deadline makes its row unknown; one row per hung request.
//     A customers-exec program gives up on its own before the deadline
//     and exits 1 (retried, not unknown), so this counts more than it
//     needs; such a row is unknown when a cancel ends its retries (the
//     cancel's term below) or its attempts run out (counted apart).
//
//   - a cancel (cancel_batch) of an external batch: the rows under way
//     (in flight, or done but not yet recorded) and the rows whose effect
//     key is claimed by a lease that has not flushed are made unknown.
//     Each lease holds one chunk. The chunks of the batch with keys
//     claimed and not settled are at most: one per worker process that
//     runs (workersPerTenant); one per worker process of the tenant that
//     died since the batch was imported, and one per stop of one (their
//     lease may end unflushed); and one per chunk of the batch the
//     harness's stale and forged acks claimed and gave back (a give-back
//     leaves the keys a dead worker claimed). So a cancel makes at most
//     chunk size × (workers + deaths + stops + harness claims) unknown,
//     and never more than the batch's valid rows.
//
//   - a row of an external batch whose workers all stopped before
//     recording it, attempt after attempt, with its effect key claimed:
//     the claim that finds it out of attempts cannot tell whether a
//     worker ran its effect. Likewise a row whose last attempt failed
//     with an error that does not say the call did nothing (an exec
//     program's exit 1, not its 75 for a 503). Such a row must have used
//     every attempt and carry the exhausted code; it is counted apart,
//     not bounded by the faults (five lost leases of one chunk are what
//     kills, stops, restarts and proxy faults make).
//
// A customers (transactional) row is never unknown: its effect commits
// with its outcome or not at all. Otherwise kills, stops, restarts, proxy
// faults, pauses and stale acks make none: a row whose lease is lost is
// worked again under the same key, not given up.
func (h *harness) checkUnknownBound(all []*imported, reqs []request) {
	r := h.rep
	unknown := map[int64]int64{}
	// Rows out of attempts with their key claimed are unknown by design;
	// each must have used every attempt (maxAttempts).
	rs, err := h.pool.Query(context.Background(), `SELECT batch_id,
			count(*) FILTER (WHERE NOT coalesce(errors @> '[{"code": "attempts_exhausted"}]', false)),
			count(*) FILTER (WHERE coalesce(errors @> '[{"code": "attempts_exhausted"}]', false)),
			count(*) FILTER (WHERE coalesce(errors @> '[{"code": "attempts_exhausted"}]', false) AND attempts < $1)
		FROM rowfate.batch_rows WHERE state = 'unknown' GROUP BY batch_id`, maxAttempts)
	if err != nil {
		r.violate("check_failed", "count unknown rows: %v", err)
		return
	}
	for rs.Next() {
		var id, n, exhausted, early int64
		if rs.Scan(&id, &n, &exhausted, &early) == nil {
			unknown[id] = n
			r.UnknownExhausted += exhausted
			if early > 0 {
				r.violate("unknown_exhausted_early", "batch %d: %d rows unknown as out of attempts before using all %d", id, early, maxAttempts)
			}
		}
	}
	rs.Close()
	hung := map[int64]int64{}
	for _, q := range reqs {
		if q.Hung {
			hung[q.Batch]++
		}
	}
	h.mu.Lock()
	cancelled := make(map[int64]time.Time, len(h.cancelledAt))
	for id, at := range h.cancelledAt {
		cancelled[id] = at
	}
	claims := make(map[int64]int, len(h.harnessClaims))
	for id, n := range h.harnessClaims {
		claims[id] = n
	}
	for id := range h.uncounted {
		delete(cancelled, id)
	}
	h.mu.Unlock()
	var totalHung int64
	r.Unknown, r.UnknownBound = 0, 0
	r.BoundTerms = nil
	for _, b := range all {
		var bound int64
		var why []string
		if b.Kind != "customers" {
			if n := hung[b.ID]; n > 0 && !h.o.sabotage["uncounted-faults"] {
				bound += n
				totalHung += n
			}
			if at, ok := cancelled[b.ID]; ok {
				per := int64(min(chunkRows, b.Rows))
				deaths, stops := h.work.lostLeases(b.Tenant, b.Created, at)
				n := min(int64(b.Rows-b.Invalid), per*int64(workersPerTenant+deaths+stops+claims[b.ID]))
				bound += n
				term := fmt.Sprintf("cancel of batch %d: %d (%d rows × (%d workers + %d deaths + %d stops + %d harness claims))",
					b.ID, n, per, workersPerTenant, deaths, stops, claims[b.ID])
				why = append(why, term)
				r.BoundTerms = append(r.BoundTerms, term)
			}
		}
		r.Unknown += unknown[b.ID]
		r.UnknownBound += bound
		if unknown[b.ID] > bound {
			r.violate("unknown_over_bound", "batch %d (%s, %s): %d rows unknown, more than the faults explain: %d (hung requests %d; %v)",
				b.ID, b.Kind, b.Tenant, unknown[b.ID], bound, hung[b.ID], why)
		}
	}
	r.BoundTerms = append([]string{fmt.Sprintf("%d hung requests", totalHung)}, r.BoundTerms...)
}
