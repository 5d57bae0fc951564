package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/where"
)

// ErrInvalidRequest: the caller's request is malformed (batch.
// ErrInvalidRequest is this error): a store refuses a row filter whose
// Where names no column of the batch's file with it.
var ErrInvalidRequest = errors.New("invalid request")

// RowsListParams are the parameters of Store.RowsList.
type RowsListParams struct {
	TenantID string
	BatchID  int64
	// State filters by state; empty means all. Filter.States, when set,
	// is used instead.
	State rows.State
	// Filter selects rows by state, by error and by their cells (Where).
	Filter RowFilter
	// AfterRowNo pages: rows with row_no > AfterRowNo.
	AfterRowNo int64
	// Limit caps the page. Defaults to 100.
	Limit int
}

// RowFilter selects a batch's rows by state, by their field errors and
// by their cells: the rows a person fixes, skips or retries together.
type RowFilter struct {
	// States are the states a row may be in; empty is every state.
	States []rows.State `json:"states,omitempty"`
	// Code keeps the rows with an error of this code.
	Code string `json:"code,omitempty"`
	// Column keeps the rows with an error on this column, as the batch
	// file's header spells it. With Code: one error with both.
	Column string `json:"column,omitempty"`
	// Where keeps the rows whose cells it holds for: a where expression
	// (package where) over the batch file's columns, its header cells as
	// the file spells them, named in any case. Every column is text, and
	// a cell is compared as the file wrote it: nothing is read as a
	// number or a date, so amount = 5 does not find 5.0 and only = and
	// != (with in, not in and is null) compare. A cell a short row lacks
	// is NULL: "note is null" finds it. A column the header lacks is
	// ErrInvalidRequest, and so is an expression that cannot be read,
	// with its *where.Error (its position); a batch whose values were
	// purged has no cells to compare, and a Where is its
	// *batchtype.ValuesPurgedError.
	Where string `json:"where,omitempty"`
}

// Empty reports whether the filter selects every row.
func (f RowFilter) Empty() bool {
	return len(f.States) == 0 && f.Code == "" && f.Column == "" && f.Where == ""
}

// WhereColumns are the columns a RowFilter's Where may name over a batch
// file's header: each cell (its spaces around trimmed), as text, whose SQL is cell(i), the
// expression of the row's i-th value (0-based).
func WhereColumns(header []string, cell func(i int) string) []where.Column {
	cols := make([]where.Column, len(header))
	for i, h := range header {
		cols[i] = where.Column{Name: strings.TrimSpace(h), Type: where.Text, SQL: cell(i)}
	}
	return cols
}

// ParseWhere reads the filter's Where over cols (WhereColumns): nil when
// it has none; ErrInvalidRequest with the *where.Error, which names the
// position and, for an unknown column, the file's columns.
//
// A name the header holds twice (in any case) is ambiguous: a Where that
// names it is ErrInvalidRequest, never one of the two guessed.
func (f RowFilter) ParseWhere(cols []where.Column) (*where.Expr, error) {
	// The parser takes the first column of a name: the first of a name
	// held twice compiles to a marker that says it was named.
	marked := slices.Clone(cols)
	var twice []string
	for i, c := range cols {
		if slices.ContainsFunc(cols[i+1:], func(d where.Column) bool { return strings.EqualFold(c.Name, d.Name) }) &&
			!slices.ContainsFunc(cols[:i], func(d where.Column) bool { return strings.EqualFold(c.Name, d.Name) }) {
			marked[i].SQL = ambiguous + strconv.Itoa(len(twice)) + "*/"
			twice = append(twice, c.Name)
		}
	}
	e, err := where.Parse(f.Where, marked)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, where.WithColumns(err, cols))
	}
	if len(twice) > 0 {
		sql, _ := e.SQL(batchtype.Postgres, 1)
		for i, name := range twice {
			if strings.Contains(sql, ambiguous+strconv.Itoa(i)+"*/") {
				return nil, fmt.Errorf("%w: where %q: the file's header has %q twice: a where cannot tell which", ErrInvalidRequest, f.Where, name)
			}
		}
		if e, err = where.Parse(f.Where, cols); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
		}
	}
	return e, nil
}

// ambiguous starts the marker of a column whose name the header holds
// twice (ParseWhere).
const ambiguous = "/*ambiguous "

// StateTexts are the filter's states as text, nil for every state.
func (f RowFilter) StateTexts() []string {
	if len(f.States) == 0 {
		return nil
	}
	out := make([]string, len(f.States))
	for i, s := range f.States {
		out[i] = string(s)
	}
	return out
}

// BulkAction is what Store.RowsBulk does to the rows it selects.
type BulkAction string

// The set-based actions of Store.RowsBulk.
const (
	// BulkSkip skips the rows, with Message as their error.
	BulkSkip BulkAction = "skip"
	// BulkRetry makes the rows due again, their attempts reset.
	BulkRetry BulkAction = "retry"
)

// RowsBulkParams are the parameters of Store.RowsBulk.
type RowsBulkParams struct {
	TenantID string
	BatchID  int64
	Action   BulkAction
	// Filter selects the rows. The engine narrows its states to those
	// the action may change; a row held by a deferred lease is not
	// changed, and makes the action ErrConflict, as a single row's is.
	Filter RowFilter
	// Message is a skipped row's error message.
	Message string
	// Preview counts the rows and changes nothing.
	Preview bool
	// Actor and Detail are recorded in the batch's history, as one entry
	// whose detail gains the number of rows changed ("rows").
	Actor  string
	Detail map[string]any
}

// RowEdit is one row of a bulk edit, validated again by the engine.
type RowEdit struct {
	RowNo int64
	// From is the state the row was read in: a row no longer in it was
	// changed meanwhile, and the edit is ErrConflict.
	From   rows.State
	State  rows.State // valid or invalid
	Values []string
	Errors []rows.FieldError
}

// RowsEditParams are the parameters of Store.RowsEdit: the rows written
// in one transaction, a page of rows per statement, as reviewed rows,
// with one history entry and one event.
type RowsEditParams struct {
	TenantID string
	BatchID  int64
	Rows     []RowEdit
	Actor    string
	Detail   json.RawMessage
}
