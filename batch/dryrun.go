package batch

import (
	"context"
	"errors"
	"fmt"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// DryRunMaxErrors is how many field errors a DryRunResult keeps: the
// first ones, in row order.
const DryRunMaxErrors = 20

// DryRunFirstRows is how many of its first rows a DryRunResult keeps with
// their outcome and every error (First): what a preview shows.
const DryRunFirstRows = 10

// DryRunRow is the outcome a row would have: valid, or invalid with its
// field errors.
type DryRunRow struct {
	Row    int64
	State  rows.State
	Errors []rows.FieldError
}

// SourceInfo is what a reader found out about a source (rows.Reader's
// Info): its format and, for CSV, the encoding and delimiter used, or, for
// a workbook, its sheets, the one read and its header's row.
type SourceInfo = rows.SourceInfo

// DryRunResult is what an import of a file would give, without the batch.
type DryRunResult struct {
	Kind       string
	SourceName string
	SourceInfo
	Header []string
	// Counts has the rows that would be valid and invalid.
	Counts       rows.Counts
	SkippedEmpty int64
	Warnings     []batchtype.Warning
	// Conventions are how the file writes numbers and dates, as declared
	// or settled from its values.
	Conventions rows.Conventions
	// Errors are the first DryRunMaxErrors field errors.
	Errors []rows.FieldError
	// First are the first DryRunFirstRows rows' outcomes, every error
	// kept: a preview shows each row's real state even when the rows
	// before have used up Errors.
	First []DryRunRow
	// ErrorTotal is the number of field errors of all rows; ErrorCounts
	// counts them by column and code, most frequent first.
	ErrorTotal  int64
	ErrorCounts []rows.ErrorCount
}

// DryRun reads and validates a source exactly as Import does (every
// phase, the natural key included) and reports the outcome, without
// creating a batch, writing anything or running a processor. A rejected
// source is the same *rows.FileError Import would return.
func (e *Engine) DryRun(ctx context.Context, p ImportParams) (*DryRunResult, error) {
	return e.registry.DryRun(ctx, p)
}

// DryRun is Engine.DryRun without an engine: it needs no store, so a
// command line can check a file without opening a database.
func (r *Registry) DryRun(ctx context.Context, p ImportParams) (*DryRunResult, error) {
	k, err := r.lookup(p.Kind)
	if err != nil {
		return nil, err
	}
	src, err := prepare(ctx, k, p)
	if err != nil {
		return nil, importError(p, err)
	}
	defer src.close()
	cr, err := src.open(nil)
	if err != nil {
		return nil, importError(p, err)
	}
	defer cr.Close()
	m, err := src.mapping(cr)
	if err != nil {
		return nil, err
	}
	res := &DryRunResult{
		Kind: p.Kind, SourceName: p.SourceName, SourceInfo: cr.Info(),
		Header: cr.Header(), Counts: rows.Counts{}, Warnings: src.warnings, Conventions: src.conv,
	}
	chk := newRowChecker(k, m)
	for rec, err := range src.records(ctx, cr) {
		if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, fmt.Errorf("dry run %s: %w", p.SourceName, err)
		}
		if err != nil {
			return nil, err
		}
		errs := chk.check(ctx, rec)
		if len(res.First) < DryRunFirstRows {
			res.First = append(res.First, dryRunRow(rec.Row, errs))
		}
		if len(errs) == 0 {
			res.Counts[rows.StateValid]++
			continue
		}
		res.Counts[rows.StateInvalid]++
		for _, fe := range errs {
			if len(res.Errors) < DryRunMaxErrors {
				res.Errors = append(res.Errors, fe)
			}
		}
	}
	if p.MaxInvalid.IsZero() {
		p.MaxInvalid = k.settings().maxInvalid
	}
	res.SkippedEmpty = cr.SkippedEmpty()
	res.ErrorTotal, res.ErrorCounts = chk.tally.Total(), chk.tally.Counts()
	if invalid := res.Counts[rows.StateInvalid]; p.MaxInvalid.Exceeded(invalid, invalid+res.Counts[rows.StateValid]) {
		// What the import would do: refuse the file.
		return nil, tooManyInvalid(p.SourceName, invalid, invalid+res.Counts[rows.StateValid], p.MaxInvalid)
	}
	return res, nil
}

// dryRunRow is a row's outcome as DryRunResult.First keeps it.
func dryRunRow(row int64, errs []rows.FieldError) DryRunRow {
	if len(errs) == 0 {
		return DryRunRow{Row: row, State: rows.StateValid}
	}
	return DryRunRow{Row: row, State: rows.StateInvalid, Errors: append([]rows.FieldError(nil), errs...)}
}
