package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// ErrRowLocked: a reviewer may not change the row as it is: completed or
// skipped (protected), worked right now, or of unknown outcome.
var ErrRowLocked = errors.New("row cannot be changed")

// ErrInvalidRequest: the engine refused a caller's request as malformed
// (an edit that sets nothing or names no column of the file, a skip
// without a reason, a retry of rows in a state that cannot be retried).
// Nothing was changed. It is driver.ErrInvalidRequest, which a store
// returns for a row filter's Where that names no column of the file.
var ErrInvalidRequest = driver.ErrInvalidRequest

// EditRowParams are the parameters of Engine.EditRow.
type EditRowParams struct {
	TenantID string
	BatchID  int64
	RowNo    int64
	// Set maps columns (the kind's column names, or the batch file's
	// header cells) to their new values.
	Set map[string]string
	// Actor is who edits, for the history. Defaults to "unknown".
	Actor string
}

// SkipRowParams are the parameters of Engine.SkipRow.
type SkipRowParams struct {
	TenantID string
	BatchID  int64
	RowNo    int64
	// Reason is why, kept with the row and in the history. Required.
	Reason string
	Actor  string
}

// reviewable refuses a review of a row in a state it must not change.
func reviewable(b *batchtype.Batch, r *batchtype.Row) error {
	switch {
	case r.State.Protected():
		return fmt.Errorf("row %d of batch %d is %s: %w: completed or reviewed work is kept as it is", r.RowNo, b.ID, r.State, ErrRowLocked)
	case r.State == rows.StateProcessing:
		return fmt.Errorf("row %d of batch %d is being worked: %w: wait for its worker", r.RowNo, b.ID, ErrRowLocked)
	case r.State == rows.StateUnknown:
		return fmt.Errorf("row %d of batch %d has an unknown outcome: %w: its effect may have happened; reconcile it first (the kind asks its downstream, or a person settles it)", r.RowNo, b.ID, ErrRowLocked)
	}
	return nil
}

// row reads one stored row.
func (e *Engine) row(ctx context.Context, tenant string, id, rowNo int64) (*batchtype.Batch, *batchtype.Row, error) {
	b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: id})
	if err != nil {
		return nil, nil, err
	}
	page, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: tenant, BatchID: id, AfterRowNo: rowNo - 1, Limit: 1})
	if err != nil {
		return nil, nil, err
	}
	if len(page) == 0 || page[0].RowNo != rowNo {
		return nil, nil, fmt.Errorf("row %d of batch %d: %w", rowNo, id, ErrNotFound)
	}
	return b, &page[0], nil
}

// EditRow sets cells of a row and validates it again through every phase
// of its kind, and against the natural keys of the batch's other rows. The
// row becomes valid (to be worked) or invalid with its new errors, and is
// reviewed from then on: a re-run keeps it as the reviewer left it. The
// edit is written under its chunk's lock, as a flush is, with the chunk's
// recount, a history entry and an event. A completed, skipped, processing
// or unknown row is ErrRowLocked.
func (e *Engine) EditRow(ctx context.Context, p EditRowParams) (*batchtype.Row, error) {
	if p.TenantID == "" {
		p.TenantID = DefaultTenant
	}
	if p.Actor == "" {
		p.Actor = "unknown"
	}
	if len(p.Set) == 0 {
		return nil, fmt.Errorf("edit row: %w: nothing to set", ErrInvalidRequest)
	}
	b, r, err := e.row(ctx, p.TenantID, p.BatchID, p.RowNo)
	if err != nil {
		return nil, fmt.Errorf("edit row: %w", err)
	}
	if err := batchtype.PurgedError(b, "an edit"); err != nil {
		return nil, err
	}
	if err := reviewable(b, r); err != nil {
		return nil, err
	}
	k, m, err := e.mapped(b)
	if err != nil {
		return nil, fmt.Errorf("edit row %d: %w", p.RowNo, err)
	}
	values := make([]string, max(len(b.Header), len(r.Values)))
	copy(values, r.Values)
	type change struct {
		Old string `json:"old"`
		New string `json:"new"`
	}
	changes := map[string]change{}
	for col, v := range p.Set {
		i := columnIndex(m, b.Header, col)
		if i < 0 {
			return nil, fmt.Errorf("edit row %d of batch %d: %w: no column %q in its file; its columns: %s", p.RowNo, b.ID, ErrInvalidRequest, col, strings.Join(b.Header, ", "))
		}
		changes[strings.TrimSpace(b.Header[i])] = change{Old: values[i], New: v}
		values[i] = v
	}
	errs, key := k.check(ctx, m, rows.Record{Row: p.RowNo, Values: values})
	if len(errs) == 0 && key != "" {
		if first, err := e.keyTaken(ctx, b, k, m, key, p.RowNo); err != nil {
			return nil, err
		} else if first > 0 {
			chk := newRowChecker(k, m)
			errs = []rows.FieldError{{Row: p.RowNo, Column: chk.col.Header, Field: chk.col.Field, Code: rows.CodeDuplicateKey,
				Message: fmt.Sprintf("same %s as row %d", chk.name, first)}}
		}
	}
	state := rows.StateValid
	if len(errs) > 0 {
		state = rows.StateInvalid
	}
	// errors is [] for a row the edit made valid, not null: readers show
	// the detail as it is.
	detail, err := json.Marshal(map[string]any{"changes": changes, "from": r.State, "to": state, "errors": append([]rows.FieldError{}, errs...)})
	if err != nil {
		return nil, err
	}
	err = e.store.RowReview(ctx, driver.RowReviewParams{TenantID: p.TenantID, BatchID: b.ID, RowNo: p.RowNo, From: r.State,
		State: state, Values: values, Errors: errs, Actor: p.Actor, Action: "edit", Detail: detail})
	if err != nil {
		return nil, fmt.Errorf("edit row %d of batch %d: %w", p.RowNo, b.ID, err)
	}
	if state == rows.StateValid {
		e.bell.ring()
	}
	_, r, err = e.row(ctx, p.TenantID, p.BatchID, p.RowNo)
	return r, err
}

// mapped returns a batch's kind and the mapping of its file's header:
// what an edit validates rows with.
func (e *Engine) mapped(b *batchtype.Batch) (rowReader, *rows.Mapping, error) {
	k, err := e.registry.lookup(b.Kind)
	if err != nil {
		return nil, nil, err
	}
	m, err := k.mapHeader(b.Header, b.Conventions)
	if err != nil {
		return nil, nil, fmt.Errorf("batch %d: %w", b.ID, err)
	}
	return k, m, nil
}

// columnIndex finds a column of the batch's file by the kind's column name
// or by the file's header cell.
func columnIndex(m *rows.Mapping, header []string, col string) int {
	want := rows.NormalizeHeader(col)
	for _, mc := range m.Matched() {
		if rows.NormalizeHeader(mc.Column) == want {
			return m.Position(mc.Column)
		}
	}
	return slices.IndexFunc(header, func(h string) bool { return rows.NormalizeHeader(h) == want })
}

// keyTaken returns the first other row of the batch, not invalid, with the
// natural key; 0 when none.
func (e *Engine) keyTaken(ctx context.Context, b *batchtype.Batch, k rowReader, m *rows.Mapping, key string, self int64) (int64, error) {
	want := keyDigest(key)
	var after int64
	for {
		page, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: b.TenantID, BatchID: b.ID, AfterRowNo: after, Limit: 1000})
		if err != nil {
			return 0, err
		}
		for _, r := range page {
			if r.RowNo != self && r.State != rows.StateInvalid {
				if got := k.key(m, r.Values); got != "" && keyDigest(got) == want {
					return r.RowNo, nil
				}
			}
		}
		if len(page) < 1000 {
			return 0, nil
		}
		after = page[len(page)-1].RowNo
	}
}

// SkipRow marks a row skipped: a reviewer's decision, kept from then on
// (a re-run passes it over), with the reason as its error. A completed,
// skipped, processing or unknown row is ErrRowLocked.
func (e *Engine) SkipRow(ctx context.Context, p SkipRowParams) error {
	if p.TenantID == "" {
		p.TenantID = DefaultTenant
	}
	if p.Actor == "" {
		p.Actor = "unknown"
	}
	if strings.TrimSpace(p.Reason) == "" {
		return fmt.Errorf("skip row: %w: a reason is required", ErrInvalidRequest)
	}
	b, r, err := e.row(ctx, p.TenantID, p.BatchID, p.RowNo)
	if err != nil {
		return fmt.Errorf("skip row: %w", err)
	}
	if err := reviewable(b, r); err != nil {
		return err
	}
	errs := []rows.FieldError{{Row: p.RowNo, Code: rows.CodeSkipped, Message: fmt.Sprintf("skipped by %s: %s", p.Actor, p.Reason)}}
	detail, err := json.Marshal(map[string]any{"reason": p.Reason, "from": r.State})
	if err != nil {
		return err
	}
	err = e.store.RowReview(ctx, driver.RowReviewParams{TenantID: p.TenantID, BatchID: b.ID, RowNo: p.RowNo, From: r.State,
		State: rows.StateSkipped, Errors: errs, Actor: p.Actor, Action: "skip", Detail: detail})
	if err != nil {
		return fmt.Errorf("skip row %d of batch %d: %w", p.RowNo, b.ID, err)
	}
	return nil
}
