package batch

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/rowfate/rowfate/rows"
)

// ReportStates are the states an error report lists by default: the rows
// a user has to look at.
var ReportStates = []rows.State{rows.StateInvalid, rows.StateFailed, rows.StateDead, rows.StateUnknown}

// ErrorReportParams are the parameters of Engine.ErrorReport.
type ErrorReportParams struct {
	TenantID string
	BatchID  int64
	// States selects the rows. Defaults to ReportStates.
	States []rows.State
}

// The columns an error report adds to the file's own.
const (
	ReportRowColumn   = "row"
	ReportErrorColumn = "error"
)

// ErrorReport writes a batch's problem rows as a CSV file a user can fix
// and import again: the file's own columns with each row's cells as read,
// then a "row" column (the row number in the original file) and an "error"
// column ("email: must be a valid email; amount: must be ≥ 0"). It is
// UTF-8 with a byte order mark, every cell neutralised against formula
// injection by rows.SafeCell.
//
// Importing the fixed report works: the kind ignores the row and error
// columns as unknown, the reader takes SafeCell's apostrophe off again,
// and columns named row or error that a previous report added, and that
// the kind does not know, are dropped here rather than doubled.
//
// It returns the number of rows written.
func (e *Engine) ErrorReport(ctx context.Context, p ErrorReportParams, w io.Writer) (int64, error) {
	if p.TenantID == "" {
		p.TenantID = "default"
	}
	states := p.States
	if len(states) == 0 {
		states = ReportStates
	}
	b, err := e.store.BatchGet(ctx, BatchGetParams{TenantID: p.TenantID, ID: p.BatchID})
	if err != nil {
		return 0, fmt.Errorf("error report of batch %d: %w", p.BatchID, err)
	}
	keep, header := reportColumns(e.registry, b)
	cw, err := rows.NewCSVWriter(w, nil)
	if err != nil {
		return 0, err
	}
	if err := cw.Write(header); err != nil {
		return 0, err
	}
	var (
		n      int64
		after  int64
		record = make([]string, 0, len(header))
	)
	// Rows are paged in row order across states, so the report reads in
	// file order; a batch with few problem rows still pages through all
	// its rows, which is a read, not a write.
	for {
		page, err := e.store.RowsList(ctx, RowsListParams{TenantID: p.TenantID, BatchID: p.BatchID, AfterRowNo: after, Limit: 1000})
		if err != nil {
			return n, fmt.Errorf("error report of batch %d: %w", p.BatchID, err)
		}
		for _, r := range page {
			if !slices.Contains(states, r.State) {
				continue
			}
			record = record[:0]
			for _, i := range keep {
				v := ""
				if i < len(r.Values) {
					v = r.Values[i]
				}
				record = append(record, v)
			}
			record = append(record, fmt.Sprint(r.RowNo), reportMessage(r))
			if err := cw.Write(record); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].RowNo
	}
	return n, cw.Flush()
}

// reportColumns returns the indexes of the batch's columns the report
// keeps and the report's header. A short (ragged) row gets empty cells; the
// cells of a long one beyond the header are left out, as its ragged_row
// error says.
func reportColumns(reg *Registry, b *Batch) ([]int, []string) {
	unknown := map[string]bool{}
	if m, err := reg.MapHeader(b.Kind, b.Header); err == nil {
		for _, u := range m.Unknown {
			unknown[rows.NormalizeHeader(u)] = true
		}
	}
	var (
		keep   []int
		header []string
	)
	for i, h := range b.Header {
		k := rows.NormalizeHeader(h)
		if (k == ReportRowColumn || k == ReportErrorColumn) && unknown[k] {
			continue // added by an earlier report
		}
		keep = append(keep, i)
		header = append(header, h)
	}
	return keep, append(header, ReportRowColumn, ReportErrorColumn)
}

// reportMessage joins a row's errors as "email: must be a valid email;
// amount: must be ≥ 0", naming the state when there is no error text.
func reportMessage(r Row) string {
	if len(r.Errors) == 0 {
		return string(r.State)
	}
	return rows.FieldErrors(r.Errors).Error()
}
