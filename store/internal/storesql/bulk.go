package storesql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// bulkStatements are the statements of row filters and bulk actions,
// expanded once for the dialect. A filter's parameters are always $3
// (states, ListArg), $4 (code) and $5 (column), after the batch ($1) and
// the tenant ($2).
type bulkStatements struct {
	filtered
	// held counts the rows of a list ($3) that a deferred lease holds.
	held string
	// edit writes a page of edited rows; editApart their values too, into
	// batch_values (Dialect.ValuesApart).
	edit, editApart string
	// whereBatch reads a batch's header and purge, for a filter's Where.
	whereBatch string
}

// filtered are the statements of RowsBulk, which a filter's Where
// (whereCond) changes: built once without one, per request with one.
type filtered struct {
	// count counts the rows a skip (countSkip) or a retry (countRetry)
	// would change, and how many of them a deferred lease holds.
	countSkip, countRetry, skip, retry string
}

// bulkPage is how many rows one statement of a bulk edit writes: a JSON
// parameter of a few MB at most, as a re-run's.
const bulkPage = rerunPart

// newFiltered expands RowsBulk's statements with the conditions of a
// Where, " AND ..." or "": cond numbers its parameters from $6, after
// the filter's, for the counts and the retry; skipCond from $8, after
// the skip's code and message.
func newFiltered(d *Dialect, cond, skipCond string) filtered {
	filter := `r.batch_id = $1 AND r.tenant_id = $2 AND ` + rowFilterSQL(d, "r", "$3", "$4", "$5")
	// Whatever the filter says, a skip never changes a completed, skipped,
	// worked or unknown row, and a retry only failed, dead or unknown ones.
	skippable := filter + ` AND r.state NOT IN ('succeeded', 'skipped', 'processing', 'unknown')`
	retryable := filter + ` AND r.state IN ('failed', 'dead', 'unknown')`
	count := `SELECT count(*), COALESCE(sum(CASE WHEN ` + heldDue(d) + ` THEN 1 ELSE 0 END), 0) FROM {t}batch_rows r WHERE `
	return filtered{
		countSkip:  d.Expand(count + skippable + cond),
		countRetry: d.Expand(count + retryable + cond),
		skip: d.Expand(`UPDATE {t}batch_rows AS r
			SET state = 'skipped', errors = ` + d.JSONError("r.row_no", "code", "$6", "message", "$7") + `,
			    next_attempt_at = NULL, reviewed = true, updated_at = {now}
			WHERE ` + skippable + skipCond),
		retry: d.Expand(`UPDATE {t}batch_rows AS r
			SET state = 'valid', attempts = 0, errors = NULL, result_id = NULL, next_attempt_at = {now}, updated_at = {now}
			WHERE ` + retryable + cond),
	}
}

// heldDue is the condition on a row r that a deferred lease holds. Such
// a lease works its due rows without marking them: they are being worked
// as surely as processing rows.
func heldDue(d *Dialect) string {
	return `r.state IN ('valid', 'retrying') AND ` + d.Expand(`EXISTS (SELECT 1 FROM {t}batch_chunks c WHERE c.batch_id = r.batch_id AND c.chunk_no = r.chunk_no
		AND c.lease_deferred AND c.lease_expires_at IS NOT NULL)`)
}

func newBulkStatements(d *Dialect) bulkStatements {
	editCols := map[string]string{"n": "bigint", "f": "text", "s": "text", "p": payloadType(d), "e": payloadType(d)}
	editRows := func(set string) string {
		return `UPDATE {t}batch_rows AS r
			SET ` + set + `state = u.s, errors = u.e, result_id = NULL, attempts = 0, reviewed = true,
			    next_attempt_at = CASE WHEN u.s = 'valid' THEN {now} END, updated_at = {now}
			FROM u
			WHERE r.batch_id = $1 AND r.tenant_id = $2 AND r.row_no = u.n AND ` + d.InInt("r.row_no", "$4") + ` AND r.state = u.f`
	}
	s := bulkStatements{
		filtered: newFiltered(d, "", ""),
		held: d.Expand(`SELECT count(*) FROM {t}batch_rows r
			WHERE r.batch_id = $1 AND r.tenant_id = $2 AND ` + d.InInt("r.row_no", "$3") + ` AND ` + heldDue(d)),
		edit:       d.Expand(d.WithRecords("$3", editCols) + editRows("payload = u.p, ")),
		whereBatch: d.Expand(`SELECT header, values_purged_at, values_purged_by FROM {t}batches WHERE id = $1 AND tenant_id = $2`),
	}
	if d.ValuesApart {
		s.editApart = d.Expand(d.WithRecords("$3", editCols) + `, edited AS (` + d.Expand(editRows("")) + ` RETURNING r.row_no)
			UPDATE {t}batch_values AS v SET payload = u.p
			FROM u JOIN edited ON edited.row_no = u.n
			WHERE v.batch_id = $1 AND v.tenant_id = $2 AND v.row_no = u.n AND ` + d.InInt("v.row_no", "$4"))
	}
	return s
}

// rowFilterSQL is the condition of a RowFilter on the row aliased r:
// its state one of the list states (NULL for any), and, when code or
// column is not ”, an error of its errors array with that code and on
// that column. A row made valid again may hold the JSON null there,
// which has no elements.
func rowFilterSQL(d *Dialect, r, states, code, column string) string {
	code, column = "CAST("+code+" AS text)", "CAST("+column+" AS text)"
	var elems, codeOf, columnOf string
	if payloadType(d) == "text" {
		elems = "json_each(" + r + ".errors) e"
		codeOf, columnOf = "json_extract(e.value, '$.code')", "json_extract(e.value, '$.column')"
	} else {
		elems = "jsonb_array_elements(CASE WHEN jsonb_typeof(" + r + ".errors) = 'array' THEN " + r + ".errors END) e"
		codeOf, columnOf = "e->>'code'", "e->>'column'"
	}
	return d.InText(r+".state", states) + ` AND ((` + code + ` = '' AND ` + column + ` = '') OR EXISTS (SELECT 1 FROM ` + elems + `
		WHERE (` + code + ` = '' OR ` + codeOf + ` = ` + code + `) AND (` + column + ` = '' OR ` + columnOf + ` = ` + column + `)))`
}

// filterArgs are the parameters $3 to $5 of a filter.
func (s *Store) filterArgs(f driver.RowFilter) []any {
	return []any{s.d.ListArg(f.StateTexts()), f.Code, f.Column}
}

// RowsBulk skips or retries every row of a batch its filter selects in
// one statement, under the locks of a retry (every chunk of the batch),
// with a recount of every chunk, one history entry and one event; or,
// on a preview, counts them.
func (s *Store) RowsBulk(ctx context.Context, p driver.RowsBulkParams) (int64, error) {
	args := append([]any{p.BatchID, p.TenantID}, s.filterArgs(p.Filter)...)
	st, whereArgs := s.b.filtered, []any(nil)
	if p.Filter.Where != "" {
		var err error
		if st, whereArgs, err = s.filteredWhere(ctx, p.TenantID, p.BatchID, p.Filter); err != nil {
			return 0, err
		}
	}
	count := st.countSkip
	if p.Action == driver.BulkRetry {
		count = st.countRetry
	}
	if p.Preview {
		if _, err := s.batchStatusOf(ctx, s.drv.DB(), p.TenantID, p.BatchID); err != nil {
			return 0, err
		}
		args = append(args, whereArgs...)
		var n, held int64
		if err := s.drv.DB().QueryRow(ctx, count, args...).Scan(&n, &held); err != nil {
			return 0, fmt.Errorf("count rows: %w", err)
		}
		return n, nil
	}
	// The counts and the retry take the Where's parameters after the
	// filter's, the skip after its code and message.
	countArgs := append(slices.Clip(args), whereArgs...)
	stmt, typ := st.skip, batchtype.EventSkipped
	if p.Action == driver.BulkRetry {
		stmt, typ = st.retry, batchtype.EventRetried
	} else {
		args = append(args, string(rows.CodeSkipped), p.Message)
	}
	args = append(args, whereArgs...)
	var n int64
	err := s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
		// A Where reads the rows' values as a retry needs them: it is
		// refused once they were purged, under the chunks' locks.
		what := "a retry"
		if p.Action == driver.BulkSkip {
			what = "a where"
		}
		if err := s.bulkLock(ctx, q, p.TenantID, p.BatchID, p.Action == driver.BulkRetry || p.Filter.Where != "", what); err != nil {
			return err
		}
		var held int64
		if err := q.QueryRow(ctx, count, countArgs...).Scan(&n, &held); err != nil {
			return fmt.Errorf("count rows: %w", err)
		}
		if held > 0 {
			return fmt.Errorf("%d rows of batch %d are being worked: %w", held, p.BatchID, driver.ErrConflict)
		}
		if n == 0 {
			return nil
		}
		changed, err := q.Exec(ctx, stmt, args...)
		if err != nil {
			return fmt.Errorf("%s rows: %w", p.Action, err)
		}
		n = changed
		if err := s.recountAll(ctx, q, p.BatchID); err != nil {
			return err
		}
		if p.Action == driver.BulkSkip {
			if err := s.recountErrors(ctx, q, p.BatchID); err != nil {
				return err
			}
		} else if err := s.queueTurns(ctx, q, p.BatchID, p.TenantID); err != nil {
			return err
		}
		detail := map[string]any{"rows": n}
		for k, v := range p.Detail {
			detail[k] = v
		}
		if err := s.bulkHistory(ctx, q, p.TenantID, p.BatchID, string(p.Action), p.Actor, detail); err != nil {
			return err
		}
		if _, err := s.afterChange(ctx, q, p.BatchID, typ, evs); err != nil {
			return err
		}
		if p.Action == driver.BulkRetry {
			return s.drv.Notify(ctx, q)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// bulkLock refuses a bulk action on a cancelled batch, and locks every
// chunk of the batch, in order, as a retry does: a worker flushes before
// or after the action, never in between. values says the action needs the
// rows' values (what names the action in the purge's error).
func (s *Store) bulkLock(ctx context.Context, q Querier, tenant string, id int64, values bool, what string) error {
	status, err := s.batchStatusOf(ctx, q, tenant, id)
	if err != nil {
		return err
	}
	if status == batchtype.StatusCancelled {
		// ErrConflict too: the request is fine, the batch's state refuses it.
		return fmt.Errorf("batch %d: %w (%w): re-run it to work its rows again", id, ErrBatchCancelled, driver.ErrConflict)
	}
	if err := s.lockChunksOf(ctx, q, tenant, id); err != nil {
		return err
	}
	if values {
		// After the chunks' locks, which a purge takes too.
		return s.checkValuesKept(ctx, q, tenant, id, what)
	}
	return nil
}

// bulkHistory records a bulk action as one entry of the batch's history,
// for the whole batch (row 0).
func (s *Store) bulkHistory(ctx context.Context, q Querier, tenant string, id int64, action, actor string, detail any) error {
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, s.r.historyInsert, tenant, id, 0, action, cmpActor(actor), string(b)); err != nil {
		return fmt.Errorf("record history: %w", err)
	}
	return nil
}

// editRecord is an edited row as the edit statement reads it.
type editRecord struct {
	Row    int64           `json:"n"`
	From   string          `json:"f"`
	State  string          `json:"s"`
	Values json.RawMessage `json:"p"`
	Errors json.RawMessage `json:"e"`
}

// RowsEdit writes a bulk edit in one transaction: a statement per page of
// rows, each row only if it is still in the state the engine read it in;
// failed effects released as a single edit's are; a recount of every
// chunk and of the errors; one history entry and one event.
func (s *Store) RowsEdit(ctx context.Context, p driver.RowsEditParams) (int64, error) {
	recs := make([]editRecord, len(p.Rows))
	nos := make([]int64, len(p.Rows))
	valid := false
	for i, r := range p.Rows {
		v, err := EncodeValues(r.Values)
		if err != nil {
			return 0, err
		}
		e, err := EncodeErrors(r.Errors)
		if err != nil {
			return 0, err
		}
		recs[i] = editRecord{Row: r.RowNo, From: string(r.From), State: string(r.State), Values: v, Errors: e}
		nos[i] = r.RowNo
		valid = valid || r.State == rows.StateValid
	}
	err := s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
		if err := s.bulkLock(ctx, q, p.TenantID, p.BatchID, true, "an edit"); err != nil {
			return err
		}
		if err := s.editPages(ctx, q, p.TenantID, p.BatchID, recs, nos); err != nil {
			return err
		}
		if err := s.recountAll(ctx, q, p.BatchID); err != nil {
			return err
		}
		if err := s.recountErrors(ctx, q, p.BatchID); err != nil {
			return err
		}
		detail := p.Detail
		if len(detail) == 0 {
			detail = json.RawMessage("{}")
		}
		if err := s.bulkHistory(ctx, q, p.TenantID, p.BatchID, "edit", p.Actor, detail); err != nil {
			return err
		}
		if _, err := s.afterChange(ctx, q, p.BatchID, batchtype.EventEdited, evs); err != nil {
			return err
		}
		if !valid {
			return nil
		}
		if err := s.queueTurns(ctx, q, p.BatchID, p.TenantID); err != nil {
			return err
		}
		return s.drv.Notify(ctx, q)
	})
	if err != nil {
		return 0, err
	}
	return int64(len(recs)), nil
}

// editPages writes a bulk edit's rows a page per statement, and releases
// their failed effects: an effect that failed for good did not happen,
// and the edited row may claim its key afresh.
func (s *Store) editPages(ctx context.Context, q Querier, tenant string, id int64, recs []editRecord, nos []int64) error {
	apart, err := s.valuesApart(ctx, q, id)
	if err != nil {
		return err
	}
	edit := s.b.edit
	if apart {
		edit = s.b.editApart
	}
	// Rows a deferred lease holds are looked for only when the batch has
	// such a lease, which is rare: the look is a statement a page.
	var leases int64
	if err := q.QueryRow(ctx, s.c.deferredHeld, id, tenant).Scan(&leases); err != nil {
		return fmt.Errorf("check leases: %w", err)
	}
	for at := 0; at < len(recs); at += bulkPage {
		part, list := recs[at:min(at+bulkPage, len(recs))], s.d.IntListArg(nos[at:min(at+bulkPage, len(nos))])
		var held int64
		if leases > 0 {
			if err := q.QueryRow(ctx, s.b.held, id, tenant, list).Scan(&held); err != nil {
				return fmt.Errorf("check leases: %w", err)
			}
		}
		if held > 0 {
			return fmt.Errorf("%d rows of batch %d are being worked: %w", held, id, driver.ErrConflict)
		}
		arg, err := JSONArg(part)
		if err != nil {
			return err
		}
		n, err := q.Exec(ctx, edit, id, tenant, arg, list)
		if err != nil {
			return fmt.Errorf("edit rows: %w", err)
		}
		if n != int64(len(part)) {
			return fmt.Errorf("edit of batch %d: %d of %d rows changed meanwhile: %w", id, int64(len(part))-n, len(part), driver.ErrConflict)
		}
	}
	for part := range slices.Chunk(nos, bulkPage) {
		if _, err := q.Exec(ctx, s.r.dropFailedEffects, tenant, id, s.d.IntListArg(part)); err != nil {
			return fmt.Errorf("release failed effects: %w", err)
		}
	}
	return nil
}

// cmpActor is the actor of a history entry: "unknown" when nobody said.
func cmpActor(actor string) string {
	if actor == "" {
		return "unknown"
	}
	return actor
}
