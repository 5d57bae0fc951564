package storesql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// rateWindow is how many events back the rate of an event is measured
// against: enough flushes to smooth one chunk's burst, few enough to follow
// a change of pace.
const rateWindow = 8

// eventPayload is the JSON of batch_events.payload: the batch's state right
// after the change. Finished is how the first schema's events said Final.
type eventPayload struct {
	Status        batchtype.Status `json:"status,omitempty"`
	Paused        bool             `json:"paused,omitempty"`
	Counts        rows.Counts      `json:"counts"`
	Total         int64            `json:"total"`
	Done          int64            `json:"done"`
	RowsPerSecond float64          `json:"rows_per_second,omitempty"`
	ETASeconds    *float64         `json:"eta_seconds,omitempty"`
	Final         bool             `json:"final,omitempty"`
	Finished      bool             `json:"finished,omitempty"`
	Reason        string           `json:"reason,omitempty"`
	Ingest        *ingestPayload   `json:"ingest,omitempty"`
}

// ingestPayload is an ingest_progress event's batchtype.IngestProgress.
type ingestPayload struct {
	RowsRead  int64 `json:"rows_read"`
	Invalid   int64 `json:"invalid"`
	BytesRead int64 `json:"bytes_read"`
	Size      int64 `json:"size,omitempty"`
}

type eventStatements struct {
	insert, rateRef, head, list, trimAge, trimFinished, ingestSeq string
}

func newEventStatements(d *Dialect) eventStatements {
	return eventStatements{
		// The next seq of a batch still ingesting, its lease renewed: the
		// batch row's lock, as every event takes it (see afterChange). The
		// status check makes an ingest_progress event that waited for
		// the ingest's commit write nothing.
		ingestSeq: d.Expand(`UPDATE {t}batches SET event_seq = event_seq + 1, ingest_expires_at = {now} + CAST($3 AS bigint) * {ms}
			WHERE id = $1 AND tenant_id = $2 AND status = 'ingesting'
			RETURNING event_seq, {clock}`),
		insert: d.Expand(`INSERT INTO {t}batch_events (tenant_id, batch_id, seq, type, payload, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`),
		// The event rateWindow back, or the first after it that is not
		// an ingest's: those come before the rows are stored, and count
		// none done. At most rateWindow rows of the index are read.
		rateRef: d.Expand(`SELECT payload, created_at FROM {t}batch_events
			WHERE batch_id = $1 AND seq >= $2 AND type <> 'ingest_progress' ORDER BY seq LIMIT 1`),
		// The batch's newest seq and the oldest kept, with the tenant check.
		head: d.Expand(`SELECT b.event_seq, (SELECT min(seq) FROM {t}batch_events e WHERE e.batch_id = b.id)
			FROM {t}batches b WHERE b.id = $1 AND b.tenant_id = $2`),
		list: d.Expand(`SELECT seq, type, payload, created_at FROM {t}batch_events
			WHERE batch_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`),
		trimAge: d.Expand(`DELETE FROM {t}batch_events WHERE created_at < {now} - CAST($1 AS bigint) * {ms}`),
		trimFinished: d.Expand(`DELETE FROM {t}batch_events WHERE batch_id IN
				(SELECT id FROM {t}batches WHERE status IN ('finished', 'cancelled'))
			AND seq < (SELECT b.event_seq FROM {t}batches b WHERE b.id = batch_id)`),
	}
}

// appendEvent appends the batch's next event: it takes the batch row's
// lock with the sequence-number UPDATE (see afterChange), and the time
// there, after the lock, so that times follow the sequence; it measures the
// rate against the event rateWindow back, which the index on (batch_id,
// seq) finds in one probe.
func (s *Store) appendEvent(ctx context.Context, q Querier, id int64, typ batchtype.EventType, reason, status string, paused bool, counts rows.Counts, seq int64, tenant string, now Time) (*batchtype.Event, error) {
	ev := &batchtype.Event{BatchID: id, Seq: seq, Type: typ, Status: batchtype.Status(status), Paused: paused,
		Counts: counts, Total: counts.Total(), At: now.Time, Reason: reason}
	ev.Done = ev.Total - counts.Open()
	switch ev.Status {
	case batchtype.StatusFinished:
		// A batch finished as it is accepted has its finished event
		// right after started (BatchIngest): that one is the last word.
		ev.Final = typ != batchtype.EventStarted
		if typ == batchtype.EventProgress {
			ev.Type = batchtype.EventFinished
		}
	case batchtype.StatusCancelled:
		ev.Final = counts.Open() == 0
	case batchtype.StatusRunning:
		// Paused by its failure bound: nothing happens until a person
		// raises the bound and resumes it.
		ev.Final = typ == batchtype.EventPaused && reason != ""
	}
	if seq > 1 {
		ref := max(seq-rateWindow, 1)
		var (
			payload string
			at      Time
		)
		err := q.QueryRow(ctx, s.e.rateRef, id, ref).Scan(&payload, &at)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Trimmed: no rate until the window refills.
		case err != nil:
			return nil, fmt.Errorf("read event for rate: %w", err)
		default:
			var p eventPayload
			if err := json.Unmarshal([]byte(payload), &p); err != nil {
				return nil, fmt.Errorf("event %d of batch %d: %w", ref, id, err)
			}
			if secs := now.Time.Sub(at.Time).Seconds(); secs > 0 && ev.Done > p.Done {
				ev.RowsPerSecond = float64(ev.Done-p.Done) / secs
			}
		}
	}
	if open := counts.Open(); ev.Status == batchtype.StatusRunning && !paused && ev.RowsPerSecond > 0 && open > 0 {
		eta := float64(open) / ev.RowsPerSecond
		ev.ETASeconds = &eta
	}
	payload, err := json.Marshal(eventPayload{Status: ev.Status, Paused: ev.Paused, Counts: counts, Total: ev.Total, Done: ev.Done,
		RowsPerSecond: ev.RowsPerSecond, ETASeconds: ev.ETASeconds, Final: ev.Final, Reason: ev.Reason})
	if err != nil {
		return nil, err
	}
	if _, err := q.Exec(ctx, s.e.insert, tenant, id, seq, string(ev.Type), string(payload), timeArg(s.d, now)); err != nil {
		return nil, fmt.Errorf("append event: %w", err)
	}
	if err := s.enqueueHooks(ctx, q, tenant, ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// IngestProgress appends an ingest_progress event to a batch still
// ingesting and renews its lease (driver.Store.IngestProgress). Its counts
// are the importer's: the batch's rows are not stored yet, so its totals
// are empty.
func (s *Store) IngestProgress(ctx context.Context, p driver.IngestProgressParams) (*batchtype.Event, error) {
	var ev *batchtype.Event
	err := s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
		var (
			seq int64
			now Time
		)
		err := q.QueryRow(ctx, s.e.ingestSeq, p.BatchID, p.TenantID, ingestLease.Milliseconds()).Scan(&seq, &now)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("ingest progress of batch %d: no such batch ingesting: %w", p.BatchID, driver.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("ingest progress of batch %d: %w", p.BatchID, err)
		}
		in := p.Progress
		ev = &batchtype.Event{BatchID: p.BatchID, Seq: seq, Type: batchtype.EventIngestProgress, Status: batchtype.StatusIngesting,
			Counts: rows.Counts{}, At: now.Time, Ingest: &in}
		payload, err := json.Marshal(eventPayload{Status: ev.Status, Counts: ev.Counts,
			Ingest: &ingestPayload{RowsRead: in.RowsRead, Invalid: in.Invalid, BytesRead: in.BytesRead, Size: in.Size}})
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, s.e.insert, p.TenantID, p.BatchID, seq, string(ev.Type), string(payload), timeArg(s.d, now)); err != nil {
			return fmt.Errorf("append event: %w", err)
		}
		if err := s.drv.NotifyEvent(ctx, q, p.BatchID, seq); err != nil {
			return fmt.Errorf("notify event: %w", err)
		}
		*evs = append(*evs, committedEvent{batchID: p.BatchID, seq: seq})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// timeArg renders a time for a time column: integer milliseconds where
// the dialect stores them so.
func timeArg(d *Dialect, t Time) any {
	if d.TimeType == "INTEGER" {
		return t.Time.UnixMilli()
	}
	return t.Time
}

// EventsList returns a batch's events after a cursor.
func (s *Store) EventsList(ctx context.Context, p driver.EventsListParams) ([]batchtype.Event, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 500
	}
	var (
		head   int64
		oldest sql.NullInt64
	)
	err := s.drv.DB().QueryRow(ctx, s.e.head, p.BatchID, p.TenantID).Scan(&head, &oldest)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("events of batch %d: %w", p.BatchID, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("events of batch %d: %w", p.BatchID, err)
	}
	if p.AfterSeq > head {
		return nil, fmt.Errorf("events of batch %d after %d (newest %d): %w", p.BatchID, p.AfterSeq, head, driver.ErrCursorAhead)
	}
	if p.AfterSeq == head {
		return nil, nil
	}
	// Events after the cursor are missing when the oldest kept is beyond
	// the next one the caller needs. The check runs before the read, and
	// a trim between the two can only remove events older than the page's
	// (they are trimmed oldest first), so the page, if not empty, starts
	// where it should; an empty or short page is checked again below.
	if !oldest.Valid || oldest.Int64 > p.AfterSeq+1 {
		return nil, &driver.CursorExpiredError{BatchID: p.BatchID, After: p.AfterSeq, Oldest: oldest.Int64, Head: head}
	}
	rs, err := s.drv.DB().Query(ctx, s.e.list, p.BatchID, p.AfterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("events of batch %d: %w", p.BatchID, err)
	}
	defer rs.Close()
	var evs []batchtype.Event
	for rs.Next() {
		var (
			ev      batchtype.Event
			typ     string
			payload string
			at      Time
		)
		if err := rs.Scan(&ev.Seq, &typ, &payload, &at); err != nil {
			return nil, err
		}
		var pl eventPayload
		if err := json.Unmarshal([]byte(payload), &pl); err != nil {
			return nil, fmt.Errorf("event %d of batch %d: %w", ev.Seq, p.BatchID, err)
		}
		ev.BatchID, ev.Type, ev.At = p.BatchID, batchtype.EventType(typ), at.Time
		ev.Status, ev.Paused, ev.Counts, ev.Total, ev.Done = pl.Status, pl.Paused, pl.Counts, pl.Total, pl.Done
		ev.RowsPerSecond, ev.ETASeconds, ev.Final, ev.Reason = pl.RowsPerSecond, pl.ETASeconds, pl.Final || pl.Finished, pl.Reason
		if in := pl.Ingest; in != nil {
			ev.Ingest = &batchtype.IngestProgress{RowsRead: in.RowsRead, Invalid: in.Invalid, BytesRead: in.BytesRead, Size: in.Size}
		}
		if ev.Type == "ingested" { // the first schema's name for started
			ev.Type = batchtype.EventStarted
		}
		if pl.Status == "" { // the first schema's payload had no status
			ev.Status, ev.Total = batchtype.StatusRunning, pl.Counts.Total()
			ev.Done = ev.Total - pl.Counts.Open()
			if ev.Final {
				ev.Status = batchtype.StatusFinished
			}
		}
		evs = append(evs, ev)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].Seq != p.AfterSeq+1 {
		// Trimmed between the check and the read: the oldest kept is
		// now at least the page's first.
		e := &driver.CursorExpiredError{BatchID: p.BatchID, After: p.AfterSeq, Head: head}
		if len(evs) > 0 {
			e.Oldest = evs[0].Seq
		}
		return nil, e
	}
	return evs, nil
}

// EventsTrim deletes events older than the age, and those of finished
// batches but their last.
func (s *Store) EventsTrim(ctx context.Context, p driver.EventsTrimParams) (int64, error) {
	var n int64
	if p.OlderThan > 0 {
		m, err := s.drv.DB().Exec(ctx, s.e.trimAge, p.OlderThan.Milliseconds())
		if err != nil {
			return n, fmt.Errorf("trim events: %w", err)
		}
		n += m
	}
	if p.FinishedKeepLast {
		m, err := s.drv.DB().Exec(ctx, s.e.trimFinished)
		if err != nil {
			return n, fmt.Errorf("trim events of finished batches: %w", err)
		}
		n += m
	}
	return n, nil
}

// eventHub tells this process's subscribers of the events its store
// committed: all a store that is one process's (SQLite) can do, and all
// its callers need.
type eventHub struct {
	mu   sync.Mutex
	next int
	subs map[int]func(batchID, seq int64)
}

func (h *eventHub) publish(evs []committedEvent) {
	if len(evs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.subs {
		for _, e := range evs {
			f(e.batchID, e.seq)
		}
	}
}

// NotifyEvents calls f with each event this process's store commits, until
// ctx is done. A store of several processes (PostgreSQL) overrides it.
func (s *Store) NotifyEvents(ctx context.Context, f func(batchID, seq int64)) error {
	h := &s.hub
	h.mu.Lock()
	if h.subs == nil {
		h.subs = make(map[int]func(int64, int64))
	}
	id := h.next
	h.next++
	h.subs[id] = f
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	delete(h.subs, id)
	h.mu.Unlock()
	return nil
}

// committedEvent names an event appended in a transaction, to announce
// once it commits.
type committedEvent struct{ batchID, seq int64 }

// changeTx runs f in a transaction and, once it commits, announces the
// events f appended (through the events argument of afterChange).
func (s *Store) changeTx(ctx context.Context, f func(q Querier, evs *[]committedEvent) error) error {
	var evs []committedEvent
	err := s.drv.InTx(ctx, func(q Querier) error {
		evs = evs[:0] // a retried transaction starts over
		return f(q, &evs)
	})
	if err == nil {
		s.hub.publish(evs)
	}
	return err
}
