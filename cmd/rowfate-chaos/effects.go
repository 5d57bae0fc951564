package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rowfate/rowfate/rows"
)

// unknownInFlight is how long after a row was recorded unknown a request
// for it may still arrive: the request was under way when the row was
// given up (a cancel, a timeout), and a request lives at most the
// processor's timeout (30 s), plus a margin.
const unknownInFlight = 35 * time.Second

// rowKey names a row.
type rowKey struct{ batch, row int64 }

// rowRef is an external row as the database has it at the end.
type rowRef struct {
	b        *imported
	rowNo    int64
	state    rows.State
	result   string
	attempts int
	email    string
	// settled is when the row's last change committed (its tuple's
	// commit timestamp): for a terminal row, when it settled.
	settled *time.Time
	// reqs are the requests the engine sent for it (their X-Rowfate-
	// headers name it).
	reqs []*request
}

// effectsCheck checks the external rows against the downstream's log.
type effectsCheck struct {
	h       *harness
	byRow   map[rowKey]*rowRef
	byEmail map[string][]*rowRef
	// reqs is the downstream's log, read once the workers stopped.
	reqs []request
}

// load reads an external batch's rows, with the commit time of each.
func (e *effectsCheck) load(ctx context.Context, b *imported, header []string) error {
	col := slices.Index(header, "email")
	rs, err := e.h.pool.Query(ctx, `SELECT r.row_no, r.state, coalesce(r.result_id, ''), r.attempts, coalesce(v.payload, r.payload)::text, pg_xact_commit_timestamp(r.xmin)
		FROM rowfate.batch_rows r LEFT JOIN rowfate.batch_values v ON v.batch_id = r.batch_id AND v.row_no = r.row_no
		WHERE r.batch_id = $1 ORDER BY r.row_no`, b.ID)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		r := &rowRef{b: b}
		var state, payload string
		if err := rs.Scan(&r.rowNo, &state, &r.result, &r.attempts, &payload, &r.settled); err != nil {
			return err
		}
		r.state = rows.State(state)
		var values []string
		if err := json.Unmarshal([]byte(payload), &values); err == nil && col >= 0 && col < len(values) {
			r.email = values[col]
		}
		e.byRow[rowKey{b.ID, r.rowNo}] = r
		if r.state != rows.StateInvalid {
			e.byEmail[r.email] = append(e.byEmail[r.email], r)
		}
	}
	return rs.Err()
}

// terminal reports whether a row's state is final (unknown included).
func terminal(s rows.State) bool {
	switch s {
	case rows.StateSucceeded, rows.StateFailed, rows.StateDead, rows.StateCancelled, rows.StateSkipped, rows.StateUnknown:
		return true
	}
	return false
}

// check runs the effects checks:
//
//   - a key is applied at most once (the downstream counts applications;
//     only a broken dedupe applies one twice), and a row's effect under
//     at most one key (a row sent under two keys is applied twice, once
//     per key): at most one effect per row;
//   - a key is sent with one payload (a replay with another is refused)
//     and carries its row's tenant;
//   - every succeeded row has its effect, with the id the downstream
//     gave; a row that did not succeed (failed, dead, cancelled) has no
//     effect that a request for it applied, and every applied key has a
//     row that succeeded or is unknown;
//   - no request for a row arrives after the row settled (unknown rows:
//     after the longest a request under way can take);
//   - a row is sent at most once per attempt, plus one per pause of its
//     batch (a pause gives back a row in flight with its attempt);
//   - no success was applied after its batch's cancel.
func (e *effectsCheck) check() {
	h, r := e.h, e.h.rep
	reqs, keys := h.down.log()
	e.reqs = reqs
	ds := &r.Downstream
	ds.Requests, ds.KeysApplied = len(reqs), len(keys)
	h.mu.Lock()
	pauses := make(map[int64]int, len(h.pauses))
	for id, n := range h.pauses {
		pauses[id] = n
	}
	h.mu.Unlock()
	cancelAt := map[int64]time.Time{}
	rs, err := h.pool.Query(context.Background(), `SELECT id, cancel_requested_at FROM rowfate.batches WHERE cancel_requested_at IS NOT NULL`)
	if err == nil {
		for rs.Next() {
			var id int64
			var at time.Time
			if rs.Scan(&id, &at) == nil {
				cancelAt[id] = at
			}
		}
		rs.Close()
	}

	keysOf := e.checkRequests(reqs)
	e.checkKeys(keys, keysOf)
	e.checkRows(keys, keysOf, pauses, cancelAt)
}

// checkRequests checks each request the downstream logged against the row
// it names, and returns the keys each email was sent under.
func (e *effectsCheck) checkRequests(reqs []request) map[string]map[string]bool {
	r, ds := e.h.rep, &e.h.rep.Downstream
	keysOf := map[string]map[string]bool{} // email -> keys it was sent under
	for i := range reqs {
		q := &reqs[i]
		switch q.Outcome {
		case outReplayed:
			ds.Replays++
		case outFailed:
			ds.Failed503++
		case outRefused:
			ds.Refused++
			r.violate("key_payload_differs", "key %s was sent for batch %d row %d (%s) with a payload other than the one applied (request %d)",
				q.Key, q.Batch, q.Row, q.Email, q.Seq)
		case outBad:
			r.violate("bad_request", "request %d had no Idempotency-Key or no body (batch %d row %d)", q.Seq, q.Batch, q.Row)
			continue
		}
		if q.Hung {
			ds.Hung++
		}
		if keysOf[q.Email] == nil {
			keysOf[q.Email] = map[string]bool{}
		}
		keysOf[q.Email][q.Key] = true
		row := e.byRow[rowKey{q.Batch, q.Row}]
		if row == nil {
			r.violate("request_for_no_row", "request %d (key %s, %s) names batch %d row %d, which is no external row of ours", q.Seq, q.Key, q.Email, q.Batch, q.Row)
			continue
		}
		row.reqs = append(row.reqs, q)
		if row.email != q.Email {
			r.violate("payload_row_mismatch", "request %d names batch %d row %d (%s) but carries %s", q.Seq, q.Batch, q.Row, row.email, q.Email)
		}
		if q.Tenant != row.b.Tenant || !strings.HasPrefix(q.Key, row.b.Tenant+"/") {
			r.violate("key_wrong_tenant", "request %d for batch %d row %d of tenant %s came as tenant %q with key %s", q.Seq, q.Batch, q.Row, row.b.Tenant, q.Tenant, q.Key)
		}
	}
	return keysOf
}

// checkKeys checks that each key, and each row's payload, was applied
// once, and only for a row of ours that succeeded or is unknown.
func (e *effectsCheck) checkKeys(keys map[string]effect, keysOf map[string]map[string]bool) {
	r := e.h.rep
	for key, ef := range keys {
		if ef.Applications > 1 {
			r.violate("key_applied_twice", "key %s was applied %d times", key, ef.Applications)
		}
	}
	for email, ks := range keysOf {
		var applied []string
		for k := range ks {
			if _, ok := keys[k]; ok {
				applied = append(applied, k)
			}
		}
		slices.Sort(applied)
		if len(applied) > 1 {
			r.violate("row_applied_twice", "%s was applied under %d keys %v: two effects for one row", email, len(applied), applied)
		}
		if len(ks) > 1 && len(applied) <= 1 {
			r.violate("row_key_changed", "%s was sent under %d keys: a row's key must be the same on every attempt", email, len(ks))
		}
		holders := e.byEmail[email]
		if len(holders) == 0 {
			for _, k := range applied {
				r.violate("stray_key", "the downstream applied key %s (%s), which no row of ours has", k, email)
			}
			continue
		}
		if len(applied) > 0 && !slices.ContainsFunc(holders, func(x *rowRef) bool {
			return x.state == rows.StateSucceeded || x.state == rows.StateUnknown
		}) {
			r.violate("applied_without_success", "%s was applied (key %s) but no row of it succeeded or is unknown (%s)", email, applied[0], states(holders))
		}
	}
}

// checkRows checks each external row's outcome against what the
// downstream applied, how often and when it was sent.
func (e *effectsCheck) checkRows(keys map[string]effect, keysOf map[string]map[string]bool, pauses map[int64]int, cancelAt map[int64]time.Time) {
	r := e.h.rep
	for _, row := range e.byRow {
		if row.state == rows.StateInvalid {
			continue
		}
		var ef effect
		var has bool
		for k := range keysOf[row.email] {
			if x, ok := keys[k]; ok {
				ef, has = x, true
			}
		}
		b := row.b
		switch row.state {
		case rows.StateSucceeded:
			if !has {
				r.violate("succeeded_without_effect", "batch %d row %d (%s) succeeded with no effect downstream", b.ID, row.rowNo, row.email)
			} else if ef.ID != row.result {
				r.violate("result_id_differs", "batch %d row %d: result %q, the downstream applied %q", b.ID, row.rowNo, row.result, ef.ID)
			}
		case rows.StateUnknown:
		default:
			for _, q := range row.reqs {
				if q.applied() {
					r.violate("effect_of_unsucceeded_row", "batch %d row %d is %s, but request %d for it applied key %s", b.ID, row.rowNo, row.state, q.Seq, q.Key)
				}
			}
		}
		if n, most := len(row.reqs), row.attempts+pauses[b.ID]; n > most {
			r.violate("too_many_sends", "batch %d row %d was sent %d times with %d attempts and %d pauses of its batch", b.ID, row.rowNo, n, row.attempts, pauses[b.ID])
		}
		for _, q := range row.reqs {
			if row.settled == nil || !terminal(row.state) {
				break
			}
			late := q.At.Sub(*row.settled)
			if late > 0 && (row.state != rows.StateUnknown || late > unknownInFlight) {
				r.violate("sent_after_settled", "request %d (key %s, attempt %s, %s) for batch %d row %d arrived %s after the row settled %s (at %s)",
					q.Seq, q.Key, q.Attempt, q.Outcome, b.ID, row.rowNo, late.Round(time.Millisecond), row.state, row.settled.Format("15:04:05.000"))
			}
		}
		if at, ok := cancelAt[b.ID]; ok && row.state == rows.StateSucceeded {
			for _, q := range row.reqs {
				if q.applied() && q.At.After(at.Add(50*time.Millisecond)) {
					r.violate("success_after_cancel", "batch %d row %d succeeded with its effect applied %s after the cancel", b.ID, row.rowNo, q.At.Sub(at))
				}
			}
		}
	}
}

// states says which states rows are in.
func states(rs []*rowRef) string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("batch %d row %d %s", r.b.ID, r.rowNo, r.state))
	}
	return strings.Join(out, ", ")
}
