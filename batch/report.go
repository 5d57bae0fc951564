package batch

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/fileformat"
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
	// Format is the report's format as package fileformat names it
	// (FormatCSV, FormatXLSX). Defaults to CSV.
	Format Format
}

// The columns an error report adds to the file's own.
const (
	ReportRowColumn   = rows.ReportRowColumn
	ReportErrorColumn = rows.ReportErrorColumn
)

// ErrorReport writes a batch's problem rows as a file a user can fix and
// import again: the file's own columns with each row's cells as read, then
// a "row" column (the row number in the original file) and an "error"
// column ("email: must be a valid email; amount: must be ≥ 0"). Every cell
// is neutralised against formula injection by rows.SafeCell.
//
// The format writes it (fileformat.Format.WriteErrorReport): as CSV it is
// UTF-8 with a byte order mark; as XLSX the header is bold and frozen and
// each cell an error names is highlighted with the message as a comment.
//
// Importing the fixed report works: the kind ignores the row and error
// columns as unknown, the reader takes SafeCell's apostrophe off again,
// and columns named row or error that a previous report added, and that
// the kind does not know, are dropped here rather than doubled.
//
// It returns the number of rows written.
func (e *Engine) ErrorReport(ctx context.Context, p ErrorReportParams, w io.Writer) (int64, error) {
	if p.TenantID == "" {
		p.TenantID = DefaultTenant
	}
	states := p.States
	if len(states) == 0 {
		states = ReportStates
	}
	format := fileformat.Default()
	if p.Format != "" {
		f, err := fileformat.Lookup(p.Format)
		if err != nil {
			return 0, fmt.Errorf("error report of batch %d: %w", p.BatchID, err)
		}
		format = f
	}
	b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: p.BatchID})
	if err != nil {
		return 0, fmt.Errorf("error report of batch %d: %w", p.BatchID, err)
	}
	// The report's cells are the rows' values: without them it would be
	// rows of empty cells, which an import would take for the data.
	if err := batchtype.PurgedError(b, "the error report"); err != nil {
		return 0, err
	}
	keep, header := reportColumns(e.registry, b)

	// Rows are paged in row order across states, so the report reads in
	// file order; a batch with few problem rows still pages through all
	// its rows, which is a read, not a write.
	src := func(yield func(rows.ReportRow, error) bool) {
		var after int64
		for {
			page, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: p.TenantID, BatchID: p.BatchID, AfterRowNo: after, Limit: 1000})
			if err != nil {
				yield(rows.ReportRow{}, fmt.Errorf("error report of batch %d: %w", p.BatchID, err))
				return
			}
			for _, r := range page {
				if !slices.Contains(states, r.State) {
					continue
				}
				values := make([]string, len(keep))
				for j, i := range keep {
					if i < len(r.Values) {
						values[j] = r.Values[i]
					}
				}
				errs := r.Errors
				if len(errs) == 0 {
					errs = []rows.FieldError{{Row: r.RowNo, Message: string(r.State)}}
				}
				if !yield(rows.ReportRow{Row: r.RowNo, Values: values, Errors: errs}, nil) {
					return
				}
			}
			if len(page) < 1000 {
				return
			}
			after = page[len(page)-1].RowNo
		}
	}
	return format.WriteErrorReport(w, rows.ReportTitle(b.ID, b.Kind), header, src)
}

// reportColumns returns the indexes of the batch's columns the report
// keeps and their names (the report adds row and error after them). A
// short (ragged) row gets empty cells; the cells of a long one beyond the
// header are kept, under columns named "extra 1", "extra 2", ...: a report
// never drops what the file had.
func reportColumns(reg *Registry, b *batchtype.Batch) ([]int, []string) {
	unknown := map[string]bool{}
	if m, err := reg.MapHeader(b.Kind, b.Header, b.Conventions); err == nil {
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
	for i := len(b.Header); i < b.Width; i++ {
		keep = append(keep, i)
		header = append(header, fmt.Sprintf("extra %d", i-len(b.Header)+1))
	}
	return keep, header
}
