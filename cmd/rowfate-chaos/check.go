package main

import (
	"context"
	"slices"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// check verifies the run's history offline, once everything settled.
func (h *harness) check(ctx context.Context) error {
	r := h.rep
	h.mu.Lock()
	all := append([]*imported(nil), h.batches...)
	h.mu.Unlock()
	r.Batches = len(all)
	r.Outcomes = rows.Counts{}
	ext := &effectsCheck{h: h, byRow: map[rowKey]*rowRef{}, byEmail: map[string][]*rowRef{}}
	for _, b := range all {
		got, err := h.store.BatchGet(ctx, driver.BatchGetParams{TenantID: b.Tenant, ID: b.ID})
		if err != nil {
			return err
		}
		agg, err := h.store.RowsCount(ctx, driver.RowsCountParams{TenantID: b.Tenant, BatchID: b.ID})
		if err != nil {
			return err
		}
		// 1. Every input row has one outcome, terminal (or unknown).
		if agg.Total() != int64(b.Rows) {
			r.violate("rows_lost_or_extra", "batch %d: %d rows stored, %d imported", b.ID, agg.Total(), b.Rows)
		}
		if open := agg.Open(); open > 0 {
			r.violate("rows_open", "batch %d: %d rows still open (%v)", b.ID, open, agg)
		}
		if agg[rows.StateInvalid] != int64(b.Invalid) {
			r.violate("invalid_rows", "batch %d: %d rows invalid, the file had %d", b.ID, agg[rows.StateInvalid], b.Invalid)
		}
		// 2. The totals equal the aggregate.
		for _, s := range rows.States {
			if got.Counts[s] != agg[s] {
				r.violate("counters", "batch %d: counter %s %d, the rows say %d", b.ID, s, got.Counts[s], agg[s])
			}
			r.Outcomes[s] += agg[s]
		}
		if got.Status == batchtype.StatusRunning {
			r.violate("batch_running", "batch %d is still running", b.ID)
		}
		// 3. Attempts within bounds; dead rows used them all.
		var over, deadEarly int64
		if err := h.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE attempts > $2), count(*) FILTER (WHERE state = 'dead' AND attempts < $2)
			FROM rowfate.batch_rows WHERE batch_id = $1`, b.ID, maxAttempts).Scan(&over, &deadEarly); err != nil {
			return err
		}
		if over > 0 || deadEarly > 0 {
			r.violate("attempts", "batch %d: %d rows over 5 attempts, %d dead before using them", b.ID, over, deadEarly)
		}
		// 4. The external kinds' rows, for the effects checks.
		if b.Kind == "customers-webhook" || b.Kind == "customers-exec" {
			if err := ext.load(ctx, b, got.Header); err != nil {
				return err
			}
		}
		// 5. Events: gap-free, and a replay from any cursor is the suffix.
		if err := h.checkEvents(ctx, b); err != nil {
			return err
		}
	}
	ext.check()
	if err := h.checkCustomers(ctx, all); err != nil {
		return err
	}
	if err := h.checkImports(ctx); err != nil {
		return err
	}
	h.checkUnknownBound(all, ext.reqs)
	r.ExecAliveAtDeath, r.ExecOrphans = h.orphans.coverage()
	if r.StaleAcksRejected == 0 {
		r.violate("path_not_run", "no stale ack was rejected: the path did not run")
	}
	if r.ForgedAcksRejected == 0 {
		r.violate("path_not_run", "no forged ack was rejected: the path did not run")
	}
	r.ChecksRun = []string{"one outcome per input row, none open", "invalid rows as in the files", "counters equal the aggregate",
		"attempts ≤ 5 and dead rows used them all",
		"each key applied at most once, each row under at most one key, with one payload and its tenant",
		"one applied effect per succeeded external row, with its id", "no applied effect for a row that did not succeed (but unknown)",
		"nothing sent for a row after it settled", "sends ≤ attempts + pauses", "no success applied after its batch's cancel",
		"customers table = the latest succeeded customers rows", "one batch per file, every import of it returns it",
		"no exec program outlives its worker", "unknown rows within the faults' bound (rows out of attempts apart, each having used them all)",
		"event sequences gap-free, replays equal the live suffix", "stale acks refused", "forged cross-tenant acks refused",
		"every batch settled in the bound", "no worker exited on its own"}
	return nil
}

// checkEvents reads a batch's log from the start and from cursors into
// it: the sequence numbers run 1..head without a gap, and each replay is
// the log's suffix.
func (h *harness) checkEvents(ctx context.Context, b *imported) error {
	read := func(after int64) ([]batchtype.Event, error) {
		var out []batchtype.Event
		for {
			page, err := h.store.EventsList(ctx, driver.EventsListParams{TenantID: b.Tenant, BatchID: b.ID, AfterSeq: after, Limit: 500})
			if err != nil {
				return nil, err
			}
			out = append(out, page...)
			if len(page) < 500 {
				return out, nil
			}
			after = page[len(page)-1].Seq
		}
	}
	full, err := read(0)
	if err != nil {
		return err
	}
	for i, ev := range full {
		if ev.Seq != int64(i+1) {
			h.rep.violate("events", "batch %d: event %d has seq %d", b.ID, i+1, ev.Seq)
			return nil
		}
	}
	if len(full) == 0 || !full[len(full)-1].Final {
		h.rep.violate("events", "batch %d: the last of its %d events is not final", b.ID, len(full))
	}
	for _, cur := range []int{len(full) / 3, len(full) / 2, len(full) - 1} {
		if cur < 0 {
			continue
		}
		suffix, err := read(int64(cur))
		if err != nil {
			return err
		}
		if !slices.EqualFunc(suffix, full[cur:], func(a, b batchtype.Event) bool { return a.Seq == b.Seq && a.Type == b.Type && a.Done == b.Done }) {
			h.rep.violate("events", "batch %d: the replay after %d differs from the log", b.ID, cur)
		}
	}
	return nil
}
