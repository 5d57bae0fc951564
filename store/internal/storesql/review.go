package storesql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// reviewStatements are the statements of re-runs, edits, skips and the
// history, expanded once for the dialect.
type reviewStatements struct {
	busy, reopen, replace, dropFailedEffects, insertChunksFrom string
	editRow, skipRow, historyInsert, historyList               string
	setHeader, getOptions, setOptions                          string
	// errorCounts counts the field errors of a batch's invalid rows by
	// column and code: the batch's "errors by column", derived from its
	// rows after a review changed one.
	errorCounts string
}

// rerunPart is how many rows one statement of a re-run replaces: a JSON
// parameter of a few MB at most.
const rerunPart = 2000

func newReviewStatements(d *Dialect) reviewStatements {
	return reviewStatements{
		busy: d.Expand(`SELECT state, count(*) FROM {t}batch_rows
			WHERE batch_id = $1 AND tenant_id = $2 AND state IN ('processing', 'unknown') GROUP BY state`),
		// A re-run reopens a cancelled batch: its cancelled rows are parsed
		// again and worked.
		reopen: d.Expand(`UPDATE {t}batches SET status = 'running', finished_at = NULL, cancel_requested_at = NULL
			WHERE id = $1 AND tenant_id = $2 AND status = 'cancelled'`),
		// Only a row that is still neither protected, reviewed, under a
		// lease nor unknown is replaced: the count tells the caller.
		replace: d.Expand(d.WithRecords("$3", rerunColumns(d)) + replaceRows(d, "payload = u.p, ")),
		// An effect that failed for good did not happen: the row parsed
		// again may claim its key afresh, with its corrected payload.
		dropFailedEffects: d.Expand(`DELETE FROM {t}effects
			WHERE tenant_id = $1 AND batch_id = $2 AND state = 'failed' AND ` + d.InInt("row_no", "$3")),
		insertChunksFrom: d.Expand(`INSERT INTO {t}batch_chunks
			(batch_id, chunk_no, tenant_id, first_row_no, last_row_no, next_due_at, ` + CountColumns() + `)
			SELECT batch_id, chunk_no, tenant_id, min(row_no), max(row_no),
				min(next_attempt_at) FILTER (WHERE state IN ` + OpenStates + `), ` + CountAggregates() + `
			FROM {t}batch_rows WHERE batch_id = $1 AND chunk_no >= $2 GROUP BY batch_id, chunk_no, tenant_id`),
		editRow: d.Expand(`UPDATE {t}batch_rows
			SET state = $4, payload = COALESCE($5, payload), errors = $6, result_id = NULL, attempts = 0, reviewed = true,
			    next_attempt_at = CASE WHEN $4 = 'valid' THEN {now} END, updated_at = {now}
			WHERE batch_id = $1 AND row_no = $2 AND tenant_id = $3 AND state = $7`),
		skipRow: d.Expand(`UPDATE {t}batch_rows
			SET state = 'skipped', errors = $4, next_attempt_at = NULL, reviewed = true, updated_at = {now}
			WHERE batch_id = $1 AND row_no = $2 AND tenant_id = $3 AND state = $5`),
		setHeader:   d.Expand(`UPDATE {t}batches SET header = $2 WHERE id = $1`),
		getOptions:  d.Expand(`SELECT options FROM {t}batches WHERE id = $1`),
		setOptions:  d.Expand(`UPDATE {t}batches SET options = $2 WHERE id = $1`),
		errorCounts: errorCountsQuery(d),
		historyInsert: d.Expand(`INSERT INTO {t}batch_history (tenant_id, batch_id, row_no, action, actor, detail, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, {now})`),
		historyList: d.Expand(`SELECT id, COALESCE(row_no, 0), action, actor, detail, created_at FROM {t}batch_history
			WHERE tenant_id = $1 AND batch_id = $2 AND id > $3 ORDER BY id LIMIT $4`),
	}
}

// rerunColumns are the columns of a re-run's records (rerunRecord).
func rerunColumns(d *Dialect) map[string]string {
	return map[string]string{"n": "bigint", "s": "text", "p": payloadType(d), "e": payloadType(d)}
}

// replaceRows is the UPDATE of a re-run's rows from its records u, with
// set (the payload's assignment, or nothing when the values are apart)
// first in its SET list.
func replaceRows(d *Dialect, set string) string {
	return d.Expand(`
			UPDATE {t}batch_rows AS r
			SET ` + set + `state = u.s, errors = u.e, result_id = NULL, attempts = 0,
			    next_attempt_at = CASE WHEN u.s = 'valid' THEN {now} END, updated_at = {now}
			FROM u
			WHERE r.batch_id = $1 AND r.tenant_id = $2 AND r.row_no = u.n AND ` + d.InInt("r.row_no", "$4") + `
			  AND r.state NOT IN ('succeeded', 'skipped', 'processing', 'unknown') AND NOT r.reviewed`)
}

// errorCountsQuery is reviewStatements.errorCounts in d's JSON functions.
func errorCountsQuery(d *Dialect) string {
	if payloadType(d) == "text" {
		return d.Expand(`SELECT COALESCE(json_extract(e.value, '$.column'), ''), COALESCE(json_extract(e.value, '$.code'), ''), count(*)
			FROM {t}batch_rows r, json_each(r.errors) e
			WHERE r.batch_id = $1 AND r.state = 'invalid' AND r.errors IS NOT NULL GROUP BY 1, 2`)
	}
	return d.Expand(`SELECT COALESCE(e->>'column', ''), COALESCE(e->>'code', ''), count(*)
		FROM {t}batch_rows r CROSS JOIN LATERAL jsonb_array_elements(r.errors) e
		WHERE r.batch_id = $1 AND r.state = 'invalid' AND r.errors IS NOT NULL GROUP BY 1, 2`)
}

// recountErrors derives a batch's error counts from its invalid rows and
// keeps them in its options, so that "errors by column" says what is left
// after a review.
func (s *Store) recountErrors(ctx context.Context, q Querier, batchID int64) error {
	rs, err := q.Query(ctx, s.r.errorCounts, batchID)
	if err != nil {
		return fmt.Errorf("count errors: %w", err)
	}
	var tally rows.ErrorTally
	for rs.Next() {
		var c rows.ErrorCount
		var code string
		if err := rs.Scan(&c.Column, &code, &c.Count); err != nil {
			rs.Close()
			return fmt.Errorf("count errors: %w", err)
		}
		c.Code = rows.Code(code)
		tally.AddCount(c)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return fmt.Errorf("count errors: %w", err)
	}
	var raw string
	if err := q.QueryRow(ctx, s.r.getOptions, batchID).Scan(&raw); err != nil {
		return fmt.Errorf("read options: %w", err)
	}
	var opts BatchOptions
	if err := json.Unmarshal([]byte(raw), &opts); err != nil {
		return fmt.Errorf("batch %d options: %w", batchID, err)
	}
	opts.ErrorCounts = tally.Counts()
	b, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, s.r.setOptions, batchID, string(b)); err != nil {
		return fmt.Errorf("write options: %w", err)
	}
	return nil
}

// payloadType is the type a JSON record's nested JSON takes: the type of
// the payload and errors columns.
func payloadType(d *Dialect) string {
	if d.TimeType == "INTEGER" {
		return "text"
	}
	return "jsonb"
}

// rerunRecord is a replaced row as the replace statement reads it.
type rerunRecord struct {
	Row    int64           `json:"n"`
	State  string          `json:"s"`
	Values json.RawMessage `json:"p"`
	Errors json.RawMessage `json:"e"`
}

// BatchRerun writes a re-run in one transaction.
func (s *Store) BatchRerun(ctx context.Context, p driver.BatchRerunParams) (*batchtype.Batch, error) {
	recs := make([]rerunRecord, len(p.Replace))
	nos := make([]int64, len(p.Replace))
	for i, r := range p.Replace {
		v, err := EncodeValues(r.Values)
		if err != nil {
			return nil, err
		}
		e, err := EncodeErrors(r.Errors)
		if err != nil {
			return nil, err
		}
		if e == nil {
			e = []byte("null")
		}
		recs[i], nos[i] = rerunRecord{Row: r.RowNo, State: string(r.State), Values: v, Errors: e}, r.RowNo
	}
	detail := p.Detail
	if len(detail) == 0 {
		detail = json.RawMessage("{}")
	}
	err := s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
		if _, err := s.batchStatusOf(ctx, q, p.TenantID, p.BatchID); err != nil {
			return err
		}
		if err := s.lockChunksOf(ctx, q, p.TenantID, p.BatchID); err != nil {
			return err
		}
		if err := s.checkValuesKept(ctx, q, p.TenantID, p.BatchID, "a re-run"); err != nil {
			return err
		}
		if err := s.notBusy(ctx, q, p.TenantID, p.BatchID); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, s.r.reopen, p.BatchID, p.TenantID); err != nil {
			return fmt.Errorf("reopen batch: %w", err)
		}
		apart, err := s.valuesApart(ctx, q, p.BatchID)
		if err != nil {
			return err
		}
		replace := s.r.replace
		if apart {
			replace = s.vs.replace
		}
		for at := 0; at < len(recs); at += rerunPart {
			part := recs[at:min(at+rerunPart, len(recs))]
			arg, err := JSONArg(part)
			if err != nil {
				return err
			}
			// The row numbers again, as a list the primary key is probed
			// with: joined to the records alone, PostgreSQL's planner (whose
			// statistics predate the ingest) scanned the whole batch for
			// each record.
			n, err := q.Exec(ctx, replace, p.BatchID, p.TenantID, arg, s.d.IntListArg(nos[at:at+len(part)]))
			if err != nil {
				return fmt.Errorf("replace rows: %w", err)
			}
			if n != int64(len(part)) {
				return fmt.Errorf("re-run of batch %d: %d of %d rows were completed, reviewed or taken by a worker meanwhile: %w",
					p.BatchID, int64(len(part))-n, len(part), driver.ErrConflict)
			}
		}
		for part := range slices.Chunk(nos, rerunPart) {
			if _, err := q.Exec(ctx, s.r.dropFailedEffects, p.TenantID, p.BatchID, s.d.IntListArg(part)); err != nil {
				return fmt.Errorf("release failed effects: %w", err)
			}
		}
		if len(p.Add) > 0 {
			first := p.Add[0].ChunkNo
			if err := s.drv.InsertRows(ctx, q, InsertRowsParams{BatchID: p.BatchID, TenantID: p.TenantID, Rows: sliceRows(p.Add), ValuesApart: apart}); err != nil {
				return fmt.Errorf("add rows: %w", err)
			}
			if _, err := q.Exec(ctx, s.r.insertChunksFrom, p.BatchID, first); err != nil {
				return fmt.Errorf("add chunks: %w", err)
			}
		}
		if err := s.recountAll(ctx, q, p.BatchID); err != nil {
			return err
		}
		if err := s.queueTurns(ctx, q, p.BatchID, p.TenantID); err != nil {
			return err
		}
		if err := s.rerunBatchFields(ctx, q, p); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, s.r.historyInsert, p.TenantID, p.BatchID, nil, "rerun", p.Actor, string(detail)); err != nil {
			return fmt.Errorf("record history: %w", err)
		}
		if _, err := s.afterChange(ctx, q, p.BatchID, batchtype.EventRerun, evs); err != nil {
			return err
		}
		return s.drv.Notify(ctx, q)
	})
	if err != nil {
		return nil, err
	}
	return s.BatchGet(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: p.BatchID})
}

// rerunBatchFields writes what a re-run changes of the batch itself: its
// header, widened by a file with more of the kind's columns, its counts
// of field errors and its conventions.
func (s *Store) rerunBatchFields(ctx context.Context, q Querier, p driver.BatchRerunParams) error {
	if p.Header != nil {
		h, err := json.Marshal(p.Header)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, s.r.setHeader, p.BatchID, string(h)); err != nil {
			return fmt.Errorf("widen header: %w", err)
		}
	}
	if p.ErrorCounts == nil && p.KindVersion == 0 && p.Conventions == nil && p.Warnings == nil {
		return nil
	}
	var raw string
	if err := q.QueryRow(ctx, s.r.getOptions, p.BatchID).Scan(&raw); err != nil {
		return fmt.Errorf("read options: %w", err)
	}
	var opts BatchOptions
	if err := json.Unmarshal([]byte(raw), &opts); err != nil {
		return fmt.Errorf("batch %d options: %w", p.BatchID, err)
	}
	if p.ErrorCounts != nil {
		opts.ErrorCounts = p.ErrorCounts
	}
	if p.KindVersion != 0 {
		opts.KindVersion = p.KindVersion
	}
	if p.Conventions != nil {
		opts.Conventions = *p.Conventions
	}
	if p.Warnings != nil {
		opts.Warnings = storedWarnings(*p.Warnings)
	}
	b, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, s.r.setOptions, p.BatchID, string(b)); err != nil {
		return fmt.Errorf("write options: %w", err)
	}
	return nil
}

// notBusy fails with ErrBatchBusy when rows of the batch are processing or
// unknown, or a deferred lease holds some.
func (s *Store) notBusy(ctx context.Context, q Querier, tenant string, id int64) error {
	rs, err := q.Query(ctx, s.r.busy, id, tenant)
	if err != nil {
		return fmt.Errorf("check rows: %w", err)
	}
	defer rs.Close()
	var found []string
	for rs.Next() {
		var (
			st string
			n  int64
		)
		if err := rs.Scan(&st, &n); err != nil {
			return err
		}
		found = append(found, fmt.Sprintf("%d %s", n, st))
	}
	if err := rs.Close(); err != nil {
		return err
	}
	var held int64
	if err := q.QueryRow(ctx, s.c.deferredHeld, id, tenant).Scan(&held); err != nil {
		return fmt.Errorf("check leases: %w", err)
	}
	if held > 0 {
		// Rows of a deferred lease look due but are being worked.
		found = append(found, fmt.Sprintf("%d chunks being worked", held))
	}
	if len(found) > 0 {
		slices.Sort(found)
		return fmt.Errorf("batch %d has rows %v: %w", id, found, driver.ErrBatchBusy)
	}
	return nil
}

// RowReview writes a reviewer's edit or skip of one row.
func (s *Store) RowReview(ctx context.Context, p driver.RowReviewParams) error {
	errs, err := EncodeErrors(p.Errors)
	if err != nil {
		return err
	}
	var errsArg any
	if errs != nil {
		errsArg = string(errs)
	}
	detail := p.Detail
	if len(detail) == 0 {
		detail = json.RawMessage("{}")
	}
	typ := batchtype.EventEdited
	if p.State == rows.StateSkipped {
		typ = batchtype.EventSkipped
	}
	return s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
		status, err := s.batchStatusOf(ctx, q, p.TenantID, p.BatchID)
		if err != nil {
			return err
		}
		if status == batchtype.StatusCancelled && p.State == rows.StateValid {
			return fmt.Errorf("batch %d: %w (%w): re-run it to work rows again", p.BatchID, ErrBatchCancelled, driver.ErrConflict)
		}
		var (
			chunk int64
			state string
		)
		err = q.QueryRow(ctx, s.c.rowChunk, p.BatchID, p.RowNo, p.TenantID).Scan(&chunk, &state)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("row %d of batch %d: %w", p.RowNo, p.BatchID, driver.ErrNotFound)
		}
		if err != nil {
			return err
		}
		// The chunk's lock, as a flush takes it: a worker holding other
		// rows of the chunk flushes before or after, never in between.
		var deferred bool
		if err := q.QueryRow(ctx, s.c.lockChunkDeferred, p.BatchID, chunk).Scan(&deferred); err != nil {
			return fmt.Errorf("lock chunk: %w", err)
		}
		if p.State != rows.StateSkipped {
			// After the chunk's lock, which a purge takes too.
			if err := s.checkValuesKept(ctx, q, p.TenantID, p.BatchID, "an edit"); err != nil {
				return err
			}
		}
		if deferred && (state == string(rows.StateValid) || state == string(rows.StateRetrying)) {
			// A deferred lease works its due rows without marking them:
			// this one is being worked as surely as a processing row.
			return fmt.Errorf("row %d of batch %d is being worked: %w", p.RowNo, p.BatchID, driver.ErrConflict)
		}
		var n int64
		if p.State == rows.StateSkipped {
			n, err = q.Exec(ctx, s.r.skipRow, p.BatchID, p.RowNo, p.TenantID, errsArg, string(p.From))
		} else {
			n, err = s.editRow(ctx, q, p, errsArg)
		}
		if err != nil {
			return fmt.Errorf("%s row %d: %w", p.Action, p.RowNo, err)
		}
		if n == 0 {
			return fmt.Errorf("row %d of batch %d changed meanwhile: %w", p.RowNo, p.BatchID, driver.ErrConflict)
		}
		if p.State != rows.StateSkipped {
			if _, err := q.Exec(ctx, s.r.dropFailedEffects, p.TenantID, p.BatchID, s.d.IntListArg([]int64{p.RowNo})); err != nil {
				return fmt.Errorf("release failed effect: %w", err)
			}
		}
		if err := s.recount(ctx, q, p.BatchID, chunk, false); err != nil {
			return err
		}
		if state == string(rows.StateInvalid) || p.State == rows.StateInvalid {
			if err := s.recountErrors(ctx, q, p.BatchID); err != nil {
				return err
			}
		}
		if _, err := q.Exec(ctx, s.r.historyInsert, p.TenantID, p.BatchID, p.RowNo, p.Action, p.Actor, string(detail)); err != nil {
			return fmt.Errorf("record history: %w", err)
		}
		if _, err := s.afterChange(ctx, q, p.BatchID, typ, evs); err != nil {
			return err
		}
		if p.State == rows.StateValid {
			return s.drv.Notify(ctx, q)
		}
		return nil
	})
}

// HistoryList lists a batch's re-runs, edits and skips, oldest first.
func (s *Store) HistoryList(ctx context.Context, p driver.HistoryListParams) ([]batchtype.HistoryEntry, error) {
	if p.Limit <= 0 {
		p.Limit = 100
	}
	if _, err := s.batchStatusOf(ctx, s.drv.DB(), p.TenantID, p.BatchID); err != nil {
		return nil, err
	}
	rs, err := s.drv.DB().Query(ctx, s.r.historyList, p.TenantID, p.BatchID, p.AfterID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list history: %w", err)
	}
	defer rs.Close()
	var out []batchtype.HistoryEntry
	for rs.Next() {
		var (
			h      batchtype.HistoryEntry
			detail string
			at     Time
		)
		if err := rs.Scan(&h.ID, &h.RowNo, &h.Action, &h.Actor, &detail, &at); err != nil {
			return nil, fmt.Errorf("list history: %w", err)
		}
		h.BatchID, h.Detail, h.At = p.BatchID, json.RawMessage(detail), at.Time
		out = append(out, h)
	}
	return out, rs.Close()
}

// editRow writes an edited row: its values into batch_rows, or into
// batch_values when the batch keeps them apart (batch_rows' payload then
// stays the JSON null), in the transaction that checked the row's state.
func (s *Store) editRow(ctx context.Context, q Querier, p driver.RowReviewParams, errsArg any) (int64, error) {
	v, err := EncodeValues(p.Values)
	if err != nil {
		return 0, err
	}
	apart, err := s.valuesApart(ctx, q, p.BatchID)
	if err != nil {
		return 0, err
	}
	var rowValues any = string(v)
	if apart {
		rowValues = nil
	}
	n, err := q.Exec(ctx, s.r.editRow, p.BatchID, p.RowNo, p.TenantID, string(p.State), rowValues, errsArg, string(p.From))
	if err != nil || n == 0 || !apart {
		return n, err
	}
	if _, err := q.Exec(ctx, s.vs.edit, p.BatchID, p.RowNo, p.TenantID, string(v)); err != nil {
		return 0, fmt.Errorf("write values: %w", err)
	}
	return n, nil
}
