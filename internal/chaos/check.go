package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// report is what a run did and found.
type report struct {
	Seed     uint64            `json:"seed"`
	Versions map[string]string `json:"versions"`
	Started  time.Time         `json:"started"`
	// Rows and Batches are what was imported.
	Rows    int `json:"rows"`
	Batches int `json:"batches"`
	// Faults counts the faults injected, by kind; WorkerCrashes the
	// failpoints that fired.
	Faults            map[string]int `json:"faults"`
	WorkerCrashes     int            `json:"worker_crashes"`
	StaleAcksRejected int            `json:"stale_acks_rejected"`
	// WorkerLeasesLost are the workers' own stale leases refused (at a
	// renewal or a flush), from their logs.
	WorkerLeasesLost   int     `json:"worker_leases_lost"`
	ForgedAcksRejected int     `json:"forged_acks_rejected"`
	Cancelled          []int64 `json:"cancelled_batches"`
	// Outcomes are the rows by state at the end, over every batch.
	Outcomes rows.Counts `json:"outcomes"`
	// Effects are the downstream's: keys applied, and requests (repeats
	// of a key included).
	EffectsApplied int      `json:"effects_applied"`
	EffectRequests int      `json:"effect_requests"`
	SettleSeconds  float64  `json:"settle_seconds"`
	WallSeconds    float64  `json:"wall_seconds"`
	Violations     []string `json:"violations"`
	ChecksRun      []string `json:"checks"`
}

func (r *report) violate(format string, args ...any) {
	if len(r.Violations) < 200 {
		r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
	}
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "chaos: seed %d, %d rows in %d batches, wall %.0f s (settled %.1f s after the faults)\n", r.Seed, r.Rows, r.Batches, r.WallSeconds, r.SettleSeconds)
	var kinds []string
	for k := range r.Faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	total := 0
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.Faults[k]))
		total += r.Faults[k]
	}
	fmt.Fprintf(w, "  faults: %d (%s), failpoint crashes %d\n", total, strings.Join(parts, ", "), r.WorkerCrashes)
	fmt.Fprintf(w, "  stale acks rejected %d (replayed by the harness) + %d (workers' leases lost), forged acks rejected %d, batches cancelled %d\n",
		r.StaleAcksRejected, r.WorkerLeasesLost, r.ForgedAcksRejected, len(r.Cancelled))
	var states []string
	for _, s := range rows.States {
		if n := r.Outcomes[s]; n > 0 {
			states = append(states, fmt.Sprintf("%s %d", s, n))
		}
	}
	fmt.Fprintf(w, "  outcomes: %s; downstream: %d keys applied, %d requests\n", strings.Join(states, ", "), r.EffectsApplied, r.EffectRequests)
	fmt.Fprintf(w, "  checks: %s\n", strings.Join(r.ChecksRun, "; "))
	fmt.Fprintf(w, "  violations: %d\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(w, "    - %s\n", v)
	}
}

// check verifies the run's history offline, once everything settled.
func (h *harness) check(ctx context.Context) error {
	r := h.rep
	h.mu.Lock()
	all := append([]*imported(nil), h.batches...)
	h.mu.Unlock()
	r.Batches = len(all)
	r.Outcomes = rows.Counts{}
	applied, requests, total := h.down.snapshot()
	r.EffectsApplied, r.EffectRequests = len(applied), total
	cancelledAt := map[int64]time.Time{}
	rs, err := h.pool.Query(ctx, `SELECT id, cancel_requested_at FROM rowfate.batches WHERE cancel_requested_at IS NOT NULL`)
	if err != nil {
		return err
	}
	for rs.Next() {
		var id int64
		var at time.Time
		if err := rs.Scan(&id, &at); err != nil {
			rs.Close()
			return err
		}
		cancelledAt[id] = at
	}
	rs.Close()
	keysOf := map[string]bool{} // effect keys of the webhook batches' rows
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
			r.violate("batch %d: %d rows stored, %d imported", b.ID, agg.Total(), b.Rows)
		}
		if open := agg.Open(); open > 0 {
			r.violate("batch %d: %d rows still open (%v)", b.ID, open, agg)
		}
		if agg[rows.StateInvalid] != int64(b.Invalid) {
			r.violate("batch %d: %d rows invalid, the file had %d", b.ID, agg[rows.StateInvalid], b.Invalid)
		}
		// 2. The totals equal the aggregate.
		for _, s := range rows.States {
			if got.Counts[s] != agg[s] {
				r.violate("batch %d: counter %s %d, the rows say %d", b.ID, s, got.Counts[s], agg[s])
			}
			r.Outcomes[s] += agg[s]
		}
		if got.Status == driver.StatusRunning {
			r.violate("batch %d is still running", b.ID)
		}
		// 3. Attempts within bounds; dead rows used them all.
		var over, deadEarly int64
		if err := h.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE attempts > $2), count(*) FILTER (WHERE state = 'dead' AND attempts < $2)
			FROM rowfate.batch_rows WHERE batch_id = $1`, b.ID, 5).Scan(&over, &deadEarly); err != nil {
			return err
		}
		if over > 0 || deadEarly > 0 {
			r.violate("batch %d: %d rows over 5 attempts, %d dead before using them", b.ID, over, deadEarly)
		}
		// 4. Effects: every succeeded external row has exactly one
		// applied effect with its id; no key is applied for a row that
		// did not succeed (or is not unknown); nothing succeeded that was
		// applied after the batch's cancel committed.
		if b.Kind == "customers-webhook" || b.Kind == "customers-exec" {
			page, err := h.allRows(ctx, b)
			if err != nil {
				return err
			}
			for _, row := range page {
				key := fmt.Sprintf("%s/%d/%d", b.Tenant, b.ID, row.RowNo)
				keysOf[key] = true
				a, ok := applied[key]
				switch row.State {
				case rows.StateSucceeded:
					if !ok {
						r.violate("batch %d row %d succeeded with no effect downstream", b.ID, row.RowNo)
					} else if a.ID != row.ResultID {
						r.violate("batch %d row %d: result %q, the downstream applied %q", b.ID, row.RowNo, row.ResultID, a.ID)
					}
					if at, c := cancelledAt[b.ID]; c && ok && a.At.After(at.Add(50*time.Millisecond)) {
						r.violate("batch %d row %d succeeded with an effect applied %s after the cancel", b.ID, row.RowNo, a.At.Sub(at))
					}
				case rows.StateUnknown:
				default:
					if ok {
						r.violate("batch %d row %d is %s, but its effect was applied (key %s)", b.ID, row.RowNo, row.State, key)
					}
				}
				if n := requests[key]; n > 5 {
					r.violate("key %s was sent %d times, more than its 5 attempts", key, n)
				}
			}
		}
		// 5. Events: gap-free, and a replay from any cursor is the suffix.
		if err := h.checkEvents(ctx, b); err != nil {
			return err
		}
	}
	for key := range applied {
		if !keysOf[key] {
			r.violate("the downstream applied key %s, which no row of ours has", key)
		}
	}
	if r.StaleAcksRejected == 0 {
		r.violate("no stale ack was rejected: the path did not run")
	}
	if r.ForgedAcksRejected == 0 {
		r.violate("no forged ack was rejected: the path did not run")
	}
	r.ChecksRun = []string{"one outcome per input row, none open", "invalid rows as in the files", "counters equal the aggregate",
		"attempts ≤ 5 and dead rows used them all", "one applied effect per succeeded external row, with its id",
		"no applied key for a row that did not succeed", "no success applied after its batch's cancel",
		"event sequences gap-free, replays equal the live suffix", "stale acks refused", "forged cross-tenant acks refused",
		"every batch settled in the bound", "no worker exited on its own"}
	return nil
}

// allRows reads a batch's rows.
func (h *harness) allRows(ctx context.Context, b *imported) ([]driver.Row, error) {
	var out []driver.Row
	var after int64
	for {
		page, err := h.store.RowsList(ctx, driver.RowsListParams{TenantID: b.Tenant, BatchID: b.ID, AfterRowNo: after, Limit: 1000})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].RowNo
	}
}

// checkEvents reads a batch's log from the start and from cursors into
// it: the sequence numbers run 1..head without a gap, and each replay is
// the log's suffix.
func (h *harness) checkEvents(ctx context.Context, b *imported) error {
	read := func(after int64) ([]driver.Event, error) {
		var out []driver.Event
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
			h.rep.violate("batch %d: event %d has seq %d", b.ID, i+1, ev.Seq)
			return nil
		}
	}
	if len(full) == 0 || !full[len(full)-1].Final {
		h.rep.violate("batch %d: the last of its %d events is not final", b.ID, len(full))
	}
	for _, cur := range []int{len(full) / 3, len(full) / 2, len(full) - 1} {
		if cur < 0 {
			continue
		}
		suffix, err := read(int64(cur))
		if err != nil {
			return err
		}
		if !slices.EqualFunc(suffix, full[cur:], func(a, b driver.Event) bool { return a.Seq == b.Seq && a.Type == b.Type && a.Done == b.Done }) {
			h.rep.violate("batch %d: the replay after %d differs from the log", b.ID, cur)
		}
	}
	return nil
}
