package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// RowFilter selects a batch's rows by state, by their field errors and by
// their cells, Where (Engine.Rows, Engine.BulkRows). The zero filter selects every row.
type RowFilter = driver.RowFilter

// BulkAction is what Engine.BulkRows does to every row its filter selects.
type BulkAction string

// The actions of Engine.BulkRows.
const (
	// BulkSkip skips the rows, with a reason, as SkipRow does one.
	BulkSkip BulkAction = "skip"
	// BulkRetry makes failed and dead rows (unknown ones when the filter
	// names them) due again, as Retry does.
	BulkRetry BulkAction = "retry"
	// BulkSet sets a column's value and validates the rows again, as
	// EditRow does one.
	BulkSet BulkAction = "set"
	// BulkReplace replaces every occurrence of a text in a column's cell,
	// then validates the rows again.
	BulkReplace BulkAction = "replace"
)

// BulkRowsParams are the parameters of Engine.BulkRows.
type BulkRowsParams struct {
	TenantID string
	BatchID  int64
	Action   BulkAction
	// Filter selects the rows. An empty filter is refused unless All is
	// set: a bulk action never runs on every row by accident.
	Filter RowFilter
	All    bool
	// Reason is why rows are skipped. Required for BulkSkip.
	Reason string
	// Column names the column BulkSet and BulkReplace change: the kind's
	// column name or the batch file's header cell.
	Column string
	// Value is BulkSet's new value.
	Value string
	// Find and Replace are BulkReplace's: every occurrence of Find (not
	// empty) in the cell becomes Replace.
	Find, Replace string
	// Preview counts the rows the action would change, and changes
	// nothing.
	Preview bool
	// Actor is who acts, for the history. Defaults to "unknown".
	Actor string
}

// BulkResult says what Engine.BulkRows did.
type BulkResult struct {
	Action  BulkAction
	Preview bool
	// Matched are the rows the filter selects that the action may change.
	Matched int64
	// Changed are the rows changed: 0 on a preview.
	Changed int64
	// Valid and Invalid are the changed rows' new states after BulkSet or
	// BulkReplace validated them again.
	Valid, Invalid int64
}

// reviewStates are the states a reviewer may skip or edit: not completed
// or skipped, not worked right now, not of unknown outcome (reviewable).
var reviewStates = []rows.State{rows.StatePending, rows.StateValid, rows.StateInvalid, rows.StateFailed,
	rows.StateRetrying, rows.StateDead, rows.StateCancelled}

// BulkRows applies an action to every row of a batch its filter selects,
// in the database, set-based: a skip or a retry in one statement, an edit
// a statement per page of rows, each in one transaction with a recount of
// the batch from its rows, one history entry (row 0, with the filter and
// the number of rows) and one event. Rows that are succeeded, skipped,
// processing or unknown (but for a retry of unknown rows the filter
// names) are never changed; a row a deferred lease holds makes the action
// ErrConflict, and nothing is changed. An edited cell goes through every
// phase of the kind's validation and the natural-key check, as EditRow's.
// A cancelled batch is ErrConflict.
func (e *Engine) BulkRows(ctx context.Context, p BulkRowsParams) (BulkResult, error) {
	p.TenantID = tenantOr(p.TenantID)
	if p.Actor == "" {
		p.Actor = "unknown"
	}
	res := BulkResult{Action: p.Action, Preview: p.Preview}
	if err := p.check(); err != nil {
		return res, fmt.Errorf("bulk %s of batch %d: %w", p.Action, p.BatchID, err)
	}
	b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: p.BatchID})
	if err != nil {
		return res, fmt.Errorf("bulk %s: %w", p.Action, err)
	}
	if b.Status == batchtype.StatusCancelled {
		return res, fmt.Errorf("bulk %s of batch %d: the batch is cancelled: %w: re-run it to work its rows again", p.Action, b.ID, ErrConflict)
	}
	if err := checkWhere(b, p.Filter); err != nil {
		return res, fmt.Errorf("bulk %s of batch %d: %w", p.Action, b.ID, err)
	}
	switch p.Action {
	case BulkSkip, BulkRetry:
		return e.bulkSet(ctx, b, p)
	default:
		return e.bulkEdit(ctx, b, p)
	}
}

// check refuses a malformed bulk request.
func (p BulkRowsParams) check() error {
	if p.Filter.Empty() && !p.All {
		return fmt.Errorf("%w: the filter is empty: name states, a code or a column, or ask for every row", ErrInvalidRequest)
	}
	for _, s := range p.Filter.States {
		if !s.Valid() {
			return fmt.Errorf("%w: %q is not a row state", ErrInvalidRequest, s)
		}
	}
	switch p.Action {
	case BulkSkip:
		if strings.TrimSpace(p.Reason) == "" {
			return fmt.Errorf("%w: a reason is required", ErrInvalidRequest)
		}
	case BulkRetry:
	case BulkSet, BulkReplace:
		if strings.TrimSpace(p.Column) == "" {
			return fmt.Errorf("%w: name the column to change", ErrInvalidRequest)
		}
		if p.Action == BulkReplace && p.Find == "" {
			return fmt.Errorf("%w: name the text to find", ErrInvalidRequest)
		}
	default:
		return fmt.Errorf("%w: unknown action %q: want skip, retry, set or replace", ErrInvalidRequest, p.Action)
	}
	return nil
}

// checkWhere refuses a filter's Where before the store runs it: over a
// batch whose values were purged (ErrValuesPurged), or naming a column
// the batch's file does not have, or unreadable (ErrInvalidRequest with
// the *where.Error, which names the file's columns or the position).
func checkWhere(b *batchtype.Batch, f RowFilter) error {
	if f.Where == "" {
		return nil
	}
	if err := batchtype.PurgedError(b, "a where"); err != nil {
		return err
	}
	_, err := f.ParseWhere(driver.WhereColumns(b.Header, func(int) string { return "" }))
	return err
}

// narrow keeps the filter's states an action may change, all of them when
// it names none; ok is false when it names only others.
func narrow(f RowFilter, may, dflt []rows.State) (RowFilter, bool) {
	if len(f.States) == 0 {
		f.States = dflt
		return f, true
	}
	var keep []rows.State
	for _, s := range f.States {
		if slices.Contains(may, s) && !slices.Contains(keep, s) {
			keep = append(keep, s)
		}
	}
	f.States = keep
	return f, len(keep) > 0
}

// bulkSet skips or retries the selected rows in one statement.
func (e *Engine) bulkSet(ctx context.Context, b *batchtype.Batch, p BulkRowsParams) (BulkResult, error) {
	res := BulkResult{Action: p.Action, Preview: p.Preview}
	may, dflt := reviewStates, reviewStates
	detail := map[string]any{"filter": p.Filter}
	if p.All {
		detail["all"] = true
	}
	sp := driver.RowsBulkParams{TenantID: p.TenantID, BatchID: b.ID, Action: driver.BulkSkip, Preview: p.Preview, Actor: p.Actor, Detail: detail}
	if p.Action == BulkRetry {
		sp.Action = driver.BulkRetry
		may, dflt = []rows.State{rows.StateFailed, rows.StateDead, rows.StateUnknown}, []rows.State{rows.StateFailed, rows.StateDead}
	} else {
		sp.Message = fmt.Sprintf("skipped by %s: %s", p.Actor, p.Reason)
		detail["reason"] = p.Reason
	}
	f, ok := narrow(p.Filter, may, dflt)
	if !ok {
		return res, nil
	}
	sp.Filter = f
	n, err := e.store.RowsBulk(ctx, sp)
	if err != nil {
		return res, fmt.Errorf("bulk %s of batch %d: %w", p.Action, b.ID, err)
	}
	res.Matched = n
	if !p.Preview {
		res.Changed = n
		if p.Action == BulkRetry && n > 0 {
			e.bell.ring()
		}
	}
	return res, nil
}

// bulkEdit sets or replaces a column's cells of the selected rows: read
// in pages, validated in Go, written a page per statement.
func (e *Engine) bulkEdit(ctx context.Context, b *batchtype.Batch, p BulkRowsParams) (BulkResult, error) {
	res := BulkResult{Action: p.Action, Preview: p.Preview}
	if err := batchtype.PurgedError(b, "an edit"); err != nil {
		return res, err
	}
	k, m, err := e.mapped(b)
	if err != nil {
		return res, fmt.Errorf("bulk %s: %w", p.Action, err)
	}
	col := columnIndex(m, b.Header, p.Column)
	if col < 0 {
		return res, fmt.Errorf("bulk %s of batch %d: %w: no column %q in its file; its columns: %s", p.Action, b.ID, ErrInvalidRequest, p.Column, strings.Join(b.Header, ", "))
	}
	f, ok := narrow(p.Filter, reviewStates, reviewStates)
	if !ok {
		return res, nil
	}
	edits, olds, err := e.bulkValues(ctx, b, f, col, p)
	if err != nil {
		return res, err
	}
	res.Matched = int64(len(edits))
	if p.Preview || len(edits) == 0 {
		return res, nil
	}
	if err := e.bulkCheck(ctx, b, k, m, edits, olds); err != nil {
		return res, err
	}
	for _, ed := range edits {
		if ed.State == rows.StateValid {
			res.Valid++
		} else {
			res.Invalid++
		}
	}
	detail := map[string]any{"filter": p.Filter, "column": strings.TrimSpace(b.Header[col]), "rows": len(edits), "valid": res.Valid, "invalid": res.Invalid}
	if p.All {
		detail["all"] = true
	}
	if p.Action == BulkSet {
		detail["value"] = p.Value
	} else {
		detail["find"], detail["replace"] = p.Find, p.Replace
	}
	raw, err := json.Marshal(detail)
	if err != nil {
		return res, err
	}
	n, err := e.store.RowsEdit(ctx, driver.RowsEditParams{TenantID: p.TenantID, BatchID: b.ID, Rows: edits, Actor: p.Actor, Detail: raw})
	if err != nil {
		return res, fmt.Errorf("bulk %s of batch %d: %w", p.Action, b.ID, err)
	}
	res.Changed = n
	if res.Valid > 0 {
		e.bell.ring()
	}
	return res, nil
}

// bulkPage is how many rows a bulk edit reads at a time.
const bulkPage = 1000

// bulkValues reads the selected rows a page at a time and returns their
// edits with the new cell (the rows a replace finds nothing in left out),
// not yet validated, and the rows' old values.
func (e *Engine) bulkValues(ctx context.Context, b *batchtype.Batch, f RowFilter, col int, p BulkRowsParams) ([]driver.RowEdit, [][]string, error) {
	var (
		edits []driver.RowEdit
		olds  [][]string
		after int64
	)
	for {
		page, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: b.TenantID, BatchID: b.ID, Filter: f, AfterRowNo: after, Limit: bulkPage})
		if err != nil {
			return nil, nil, fmt.Errorf("bulk %s of batch %d: %w", p.Action, b.ID, err)
		}
		for _, r := range page {
			values := make([]string, max(len(b.Header), len(r.Values)))
			copy(values, r.Values)
			cell := p.Value
			if p.Action == BulkReplace {
				if !strings.Contains(values[col], p.Find) {
					continue
				}
				cell = strings.ReplaceAll(values[col], p.Find, p.Replace)
			}
			values[col] = cell
			edits = append(edits, driver.RowEdit{RowNo: r.RowNo, From: r.State, Values: values})
			olds = append(olds, r.Values)
		}
		if len(page) < bulkPage {
			return edits, olds, nil
		}
		after = page[len(page)-1].RowNo
	}
}

// bulkCheck validates the edited rows through every phase of the kind and
// sets their states and errors. The natural keys are checked as EditRow
// checks one row's, against every other row of the batch that is not
// invalid, but in one pass over the batch for all of them, and only when
// an edit may have brought a key into play: a row's key changed, or an
// invalid row became valid.
func (e *Engine) bulkCheck(ctx context.Context, b *batchtype.Batch, k rowReader, m *rows.Mapping, edits []driver.RowEdit, olds [][]string) error {
	keys := make([]string, len(edits))
	needKeys := false
	for i := range edits {
		ed := &edits[i]
		errs, key := k.check(ctx, m, rows.Record{Row: ed.RowNo, Values: ed.Values})
		ed.Errors, ed.State, keys[i] = errs, rows.StateValid, key
		if len(errs) > 0 {
			ed.State = rows.StateInvalid
		}
		if key != "" && (ed.From == rows.StateInvalid || k.key(m, olds[i]) != key) {
			needKeys = true
		}
	}
	if !needKeys {
		return nil
	}
	seen, err := e.keysBesides(ctx, b, k, m, edits)
	if err != nil {
		return err
	}
	chk := newRowChecker(k, m)
	for i := range edits {
		if keys[i] == "" {
			continue
		}
		d := keyDigest(keys[i])
		if first, dup := seen[d]; dup {
			edits[i].State = rows.StateInvalid
			edits[i].Errors = []rows.FieldError{{Row: edits[i].RowNo, Column: chk.col.Header, Field: chk.col.Field, Code: rows.CodeDuplicateKey,
				Message: fmt.Sprintf("same %s as row %d", chk.name, first)}}
			continue
		}
		seen[d] = edits[i].RowNo
	}
	return nil
}

// keysBesides returns the first row of each natural key among the batch's
// rows that are not invalid and not edited.
func (e *Engine) keysBesides(ctx context.Context, b *batchtype.Batch, k rowReader, m *rows.Mapping, edits []driver.RowEdit) (map[[16]byte]int64, error) {
	edited := make(map[int64]bool, len(edits))
	for _, ed := range edits {
		edited[ed.RowNo] = true
	}
	// Invalid rows hold no key: they are left in the database.
	var holders RowFilter
	for _, st := range rows.States {
		if st != rows.StateInvalid {
			holders.States = append(holders.States, st)
		}
	}
	seen := map[[16]byte]int64{}
	var after int64
	for {
		page, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: b.TenantID, BatchID: b.ID, Filter: holders, AfterRowNo: after, Limit: bulkPage})
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			if edited[r.RowNo] {
				continue
			}
			if got := k.key(m, r.Values); got != "" {
				if _, ok := seen[keyDigest(got)]; !ok {
					seen[keyDigest(got)] = r.RowNo
				}
			}
		}
		if len(page) < bulkPage {
			return seen, nil
		}
		after = page[len(page)-1].RowNo
	}
}
