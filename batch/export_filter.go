package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// ExportFilter narrows an export to some rows of its kind. Its parts
// combine with and; the zero filter keeps every row.
//
// Where is for the kind's source to apply (it knows its table); BatchID
// and State are resolved by the engine, which reads the batch's rows and
// hands the source the result ids they name (ResultIDs). A kind whose
// source cannot apply a filter (an ExportKind with a RowsFunc) refuses any
// part of it with a *FilterError: an export is never silently wider than
// asked.
type ExportFilter struct {
	// Where keeps the rows a filter in package where's grammar matches
	// ("country=DE and amount>=100"), over the columns the kind allows.
	// Empty keeps every row.
	Where string
	// BatchID keeps the rows batch BatchID of the same tenant touched: the
	// rows whose result id (what the kind's processor returned for a
	// row it wrote: a customer's id, a schema row's key) one of its rows
	// in State carries. The batch must be of the import kind of the
	// export's name (an import of customers for the customers export).
	// 0 is no batch.
	BatchID int64
	// State picks the rows of the batch by state. Only with BatchID.
	// Defaults to succeeded: the rows the batch created or updated.
	// Rows without a result id (failed, invalid, ...) name no row of
	// the table and keep nothing.
	State rows.State
	// ResultIDs are the result ids BatchID and State name, filled in by
	// the engine before the kind's source is called; nil when BatchID is
	// 0. A source keeps a row when its result id is in the set (and Where
	// matches it).
	ResultIDs map[string]bool
}

// IsZero reports whether the filter keeps every row.
func (f ExportFilter) IsZero() bool { return f.Where == "" && f.BatchID == 0 && f.State == "" }

// Params is the filter as it is recorded on the export's batch
// (Batch.Recalc): where, batch and state, each when set; nil for the zero
// filter.
func (f ExportFilter) Params() map[string]string {
	if f.IsZero() {
		return nil
	}
	p := map[string]string{}
	if f.Where != "" {
		p["where"] = f.Where
	}
	if f.BatchID != 0 {
		p["batch"] = strconv.FormatInt(f.BatchID, 10)
		p["state"] = string(f.stateOr())
	}
	return p
}

// stateOr is the state that picks the batch's rows.
func (f ExportFilter) stateOr() rows.State {
	if f.State == "" {
		return rows.StateSucceeded
	}
	return f.State
}

// The names of an ExportFilter's parts, as FilterError.Option names them:
// the API's JSON fields, and the CLI's flags with "--".
const (
	FilterWhere = "where"
	FilterBatch = "batch"
	FilterState = "state"
)

// ErrBadFilter matches every *FilterError: an export filter refused
// before anything was written or recorded.
var ErrBadFilter = errors.New("bad export filter")

// FilterError is an export filter refused before anything is written: a
// filter the kind does not take, a where it cannot read (an unknown
// column: the message lists the allowed ones), a batch of another kind or
// tenant. Option names the part at fault (FilterWhere, FilterBatch,
// FilterState) for a front end to spell as its flag or field. It matches
// ErrBadParams and ErrBadFilter with errors.Is, and ErrNotFound too when
// the batch does not exist.
type FilterError struct {
	// Kind is the export kind.
	Kind string
	// Option is the part of the filter at fault.
	Option string
	// Unsupported: the kind does not take this part of a filter at all.
	Unsupported bool
	// Err says what is wrong (nil when Unsupported).
	Err error
}

func (e *FilterError) Error() string {
	if e.Unsupported {
		return fmt.Sprintf("export kind %s does not take %s", e.Kind, e.Option)
	}
	return fmt.Sprintf("export %s: %s: %v", e.Kind, e.Option, e.Err)
}

// Unwrap lets errors.Is see the cause (ErrNotFound for a batch that is
// not there).
func (e *FilterError) Unwrap() error { return e.Err }

// Is matches ErrBadFilter and ErrBadParams, so that front ends that map
// bad parameters to a usage error or a 400 need nothing new.
func (e *FilterError) Is(target error) bool { return target == ErrBadFilter || target == ErrBadParams }

// checkFilter refuses a filter before anything is written, and resolves
// its batch into the result ids the source keeps.
func (e *Engine) checkFilter(ctx context.Context, tenant string, k exportSpec, f ExportFilter) (ExportFilter, error) {
	if f.IsZero() {
		return f, nil
	}
	if f.State != "" && f.BatchID == 0 {
		return f, &FilterError{Kind: k.name, Option: FilterState, Err: errors.New("a state picks rows of a batch: name the batch too")}
	}
	if f.State != "" && !slices.Contains(rows.States, f.State) {
		return f, &FilterError{Kind: k.name, Option: FilterState, Err: fmt.Errorf("unknown state %q; states: %v", f.State, rows.States)}
	}
	if f.BatchID < 0 {
		return f, &FilterError{Kind: k.name, Option: FilterBatch, Err: fmt.Errorf("batch %d: a batch id is 1 or more", f.BatchID)}
	}
	if k.check == nil {
		// A source that cannot filter refuses, naming the first part it
		// was given.
		opt := FilterWhere
		if f.Where == "" {
			opt = FilterBatch
		}
		return f, &FilterError{Kind: k.name, Option: opt, Unsupported: true}
	}
	if err := k.check(f); err != nil {
		var fe *FilterError
		if errors.As(err, &fe) {
			return f, err
		}
		opt := FilterWhere
		if f.Where == "" {
			opt = FilterBatch
		}
		return f, &FilterError{Kind: k.name, Option: opt, Err: err}
	}
	if f.BatchID == 0 {
		return f, nil
	}
	b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: tenant, ID: f.BatchID})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return f, &FilterError{Kind: k.name, Option: FilterBatch, Err: fmt.Errorf("tenant %s has no batch %d: %w", tenant, f.BatchID, ErrNotFound)}
		}
		return f, fmt.Errorf("export %s: read batch %d: %w", k.name, f.BatchID, err)
	}
	if b.Kind != k.name {
		return f, &FilterError{Kind: k.name, Option: FilterBatch, Err: fmt.Errorf("batch %d is a %s batch, not %s: an export of %s takes a batch of its import kind", b.ID, b.Kind, k.name, k.name)}
	}
	ids, err := e.resultIDs(ctx, b, f.stateOr())
	if err != nil {
		return f, fmt.Errorf("export %s: %w", k.name, err)
	}
	f.ResultIDs = ids
	return f, nil
}

// resultIDs reads the result ids of a batch's rows in a state, a page at
// a time. The set is held in memory: about 50 bytes a row, so a batch of
// 1,000,000 rows costs some 50 MiB while its export runs.
func (e *Engine) resultIDs(ctx context.Context, b *batchtype.Batch, state rows.State) (map[string]bool, error) {
	const page = 1000
	ids := map[string]bool{}
	var after int64
	for {
		rs, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: b.TenantID, BatchID: b.ID, State: state, AfterRowNo: after, Limit: page})
		if err != nil {
			return nil, fmt.Errorf("read the %s rows of batch %d: %w", state, b.ID, err)
		}
		for _, r := range rs {
			if r.ResultID != "" {
				ids[r.ResultID] = true
			}
		}
		if len(rs) < page {
			return ids, nil
		}
		after = rs[len(rs)-1].RowNo
	}
}
