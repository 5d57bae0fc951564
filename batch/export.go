package batch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"reflect"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/fileformat"
)

// CodeExport is the row error code of a row an export's source could not
// produce (a row error it yielded).
const CodeExport rows.Code = "export_error"

// ExportKind describes one export type: the row struct T, whose col tags
// name the file's columns (in field order, as an import of the same type
// expects them), and the rows to write.
//
// Formula injection: text cells go through rows.SafeCell, so a value that
// starts with = + - @, tab, CR, LF or NUL gets a leading apostrophe (the
// readers take it off again). Numbers, booleans and dates are never touched:
// Go formats them and they cannot be formulas. A text column whose values
// are known to be data opts out with the raw option of its col tag,
// `col:"phone,raw"`, or by being listed in RawColumns.
type ExportKind[T any] struct {
	// Name is the batch's kind.
	Name string
	// Description is one line for listings.
	Description string
	// RowsFunc returns the rows to export, in order; it is called once per
	// export and the sequence is read once, streaming. RowFrom(ctx) names
	// the export's tenant: a source lists that tenant's rows only. An error yielded
	// with a row marks that row: when it is a *rows.FieldError,
	// rows.FieldErrors or Permanent(err), the row's outcome is failed with
	// the error and the export goes on; any other error (a lost
	// connection) aborts the export and is returned. Required, unless
	// FilterRowsFunc is set.
	RowsFunc func(ctx context.Context) iter.Seq2[T, error]
	// FilterRowsFunc is RowsFunc for a kind that takes filters
	// (ExportFilter): it yields only the rows the filter keeps, its
	// Where and its ResultIDs (and with and). A kind with a RowsFunc only
	// refuses every filter (a *FilterError: "export kind X does not take
	// where"), so a filter is never silently dropped. When both are set,
	// FilterRowsFunc is used.
	FilterRowsFunc func(ctx context.Context, f ExportFilter) iter.Seq2[T, error]
	// CheckFilter refuses a filter before anything is read or written:
	// a where that does not parse or names a column the kind does not
	// allow (say which are), a kind without result ids refusing a batch.
	// It sees the filter as given, before the engine reads ResultIDs.
	// Optional, with FilterRowsFunc.
	CheckFilter func(f ExportFilter) error
	// RawColumns lists text columns written without formula protection,
	// besides those tagged raw.
	RawColumns []string
	// ChunkSize is the number of rows per chunk of the batch. Defaults to
	// 1000.
	ChunkSize int
}

// ExportParams describe one export.
type ExportParams struct {
	// TenantID owns the batch. Defaults to DefaultTenant.
	TenantID string
	// DestName names the file: the batch's source name, and the format's
	// default (.xlsx is XLSX, anything else CSV).
	DestName string
	// Dest receives the file, streaming. Required. When the export fails
	// Dest holds a partial file: write to a temporary file and rename it
	// on success (batchctl export does).
	Dest io.Writer
	// Format is the file's format as package fileformat names it
	// (FormatCSV, FormatXLSX). Defaults from DestName (fileformat.ForName).
	Format Format
	// Write tunes the file's writer. Its Sheet names the XLSX sheet and
	// defaults to the kind's name; its TmpDir is also where the rows'
	// outcomes spool while the file is written; Comma and NoBOM tune CSV.
	// Protection against formula injection is per column, not here.
	Write rows.WriteOptions
	// Filter narrows the export to some rows; the zero filter exports
	// every row. It is checked before anything is written (a
	// *FilterError, matching ErrBadParams) and recorded on the batch
	// (Batch.Recalc: where, batch and state).
	Filter ExportFilter
}

// exportOutcome is one row's outcome, spooled to disk until the file is
// complete.
type exportOutcome struct {
	Row    int64             `json:"r"`
	Failed bool              `json:"f,omitempty"`
	Values []string          `json:"v,omitempty"`
	Errors []rows.FieldError `json:"e,omitempty"`
}

// Export writes the rows of k to p.Dest as CSV or XLSX, streaming, and
// records the export as a finished batch: one row per exported row, in
// state succeeded (written) or failed (with the error of why it was not
// written), its cells as the payload either way, the file's SHA-256 as the
// source digest.
//
// Every row is persisted, as for an import, so that an export's outcome
// can be read back row by row; the cost is the same bulk write an import
// of the file would make (see BENCHMARKS.md). The outcomes are spooled
// to a temporary file while the file is written and ingested after it is
// complete, in one transaction: the rows' source (a query on the same
// database, say) is never read while the store writes, which a
// single-connection SQLite store could not do, and a failed export leaves
// no batch behind.
//
// A row's number is its position in the export as if every row were
// written, the header being row 1: when no row failed, the row of the file.
func Export[T any](ctx context.Context, e *Engine, k ExportKind[T], p ExportParams) (*batchtype.Batch, error) {
	if k.Name == "" || (k.RowsFunc == nil && k.FilterRowsFunc == nil) {
		return nil, errors.New("export: the kind needs a Name and a RowsFunc or FilterRowsFunc")
	}
	return exportRows(ctx, e, k.spec(), p)
}

// exportSpec is an export kind with its row type erased: what exportRows
// needs of a Go ExportKind and of a DynamicExportKind alike.
type exportSpec struct {
	name      string
	typ       reflect.Type
	raw       []string
	chunkSize int
	// rows yields the rows the filter keeps as struct values of typ.
	rows func(ctx context.Context, f ExportFilter) iter.Seq2[reflect.Value, error]
	// check refuses a filter (see ExportKind.CheckFilter); nil when the
	// source takes no filter at all.
	check func(f ExportFilter) error
}

// acceptFilter is the check of a filtering source without a CheckFilter:
// it takes every filter.
func acceptFilter(ExportFilter) error { return nil }

func (k ExportKind[T]) spec() exportSpec {
	s := exportSpec{name: k.Name, typ: reflect.TypeFor[T](), raw: k.RawColumns, chunkSize: k.ChunkSize}
	src := func(ctx context.Context, _ ExportFilter) iter.Seq2[T, error] { return k.RowsFunc(ctx) }
	if k.FilterRowsFunc != nil {
		src, s.check = k.FilterRowsFunc, acceptFilter
		if k.CheckFilter != nil {
			s.check = k.CheckFilter
		}
	}
	s.rows = func(ctx context.Context, f ExportFilter) iter.Seq2[reflect.Value, error] {
		return func(yield func(reflect.Value, error) bool) {
			for t, err := range src(ctx, f) {
				if !yield(reflect.ValueOf(&t).Elem(), err) {
					return
				}
			}
		}
	}
	return s
}

// exportRows is Export for any row type.
func exportRows(ctx context.Context, e *Engine, k exportSpec, p ExportParams) (*batchtype.Batch, error) {
	if p.Dest == nil {
		return nil, fmt.Errorf("export %s: no destination", k.name)
	}
	if p.TenantID == "" {
		p.TenantID = DefaultTenant
	}
	format := fileformat.ForName(p.DestName)
	if p.Format != "" {
		f, err := fileformat.Lookup(p.Format)
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", k.name, err)
		}
		format = f
	}
	enc, err := newExportEncoder(k.typ, k.raw)
	if err != nil {
		return nil, err
	}
	chunkSize := int64(k.chunkSize)
	if chunkSize <= 0 {
		chunkSize = 1000
	}
	// The filter is checked, and its batch read, before the file gets a
	// byte: a refused filter leaves nothing written and no batch.
	filter, err := e.checkFilter(ctx, p.TenantID, k, p.Filter)
	if err != nil {
		return nil, err
	}

	spool, err := os.CreateTemp(p.Write.TmpDir, "rowfate-export-*")
	if err != nil {
		return nil, fmt.Errorf("export %s: spool: %w", k.name, err)
	}
	defer func() {
		spool.Close()
		os.Remove(spool.Name())
	}()
	digest := sha256.New()
	out := io.MultiWriter(p.Dest, digest)
	header := enc.header()
	wo := p.Write
	if wo.Sheet == "" {
		wo.Sheet = k.name
	}
	w, err := format.NewWriter(out, header, wo)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", k.name, err)
	}
	n, err := writeExport(ctx, p.TenantID, k, filter, enc, w, spool)
	if err != nil {
		w.Abort()
		return nil, fmt.Errorf("export %s: %w", k.name, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("export %s: %w", k.name, err)
	}

	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("export %s: spool: %w", k.name, err)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(spool, 64<<10))
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := int64(0); i < n; i++ {
			var o exportOutcome
			if err := dec.Decode(&o); err != nil {
				yield(driver.IngestRow{}, fmt.Errorf("read back the outcome of row %d: %w", i+2, err))
				return
			}
			row := driver.IngestRow{RowNo: o.Row, ChunkNo: i / chunkSize, State: rows.StateSucceeded, Values: o.Values, Errors: o.Errors}
			if o.Failed {
				row.State = rows.StateFailed
			}
			if !yield(row, nil) {
				return
			}
		}
	}
	b, err := e.store.BatchIngest(ctx, driver.BatchIngestParams{
		TenantID:   p.TenantID,
		Kind:       k.name,
		SourceName: p.DestName,
		Export:     true,
		Header:     header,
		Recalc:     p.Filter.Params(),
		Rows:       seq,
		SummaryFunc: func() driver.IngestSummary {
			return driver.IngestSummary{SourceDigest: hex.EncodeToString(digest.Sum(nil))}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", k.name, err)
	}
	e.logger.InfoContext(ctx, "batch exported", "batch_id", b.ID, "kind", b.Kind, "tenant_id", b.TenantID,
		"rows", b.Counts.Total(), "failed", b.Counts[rows.StateFailed])
	return b, nil
}

// writeExport reads the kind's rows, writes each to the file and spools its
// outcome. It returns the number of rows.
func writeExport(ctx context.Context, tenant string, k exportSpec, f ExportFilter, enc *exportEncoder, w rows.Writer, spool io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(spool, 64<<10)
	js := json.NewEncoder(bw)
	cells := make([]rows.Cell, len(enc.cols))
	var n int64
	// The source learns the export's tenant as a processor does: a
	// tenant's export lists that tenant's rows only.
	for t, err := range k.rows(ContextWithRow(ctx, RowInfo{TenantID: tenant}), f) {
		if cerr := ctx.Err(); cerr != nil {
			return n, cerr
		}
		rowNo := n + 2 // the header is row 1
		o := exportOutcome{Row: rowNo}
		if err != nil {
			errs, ok := exportRowErrors(err)
			if !ok {
				return n, fmt.Errorf("rows after row %d: %w", rowNo-1, err)
			}
			o.Failed, o.Errors = true, errs
		} else {
			// A row that is not written keeps its cells as the payload
			// too, so that what the file lacks can be read back.
			errs := enc.encode(t, cells)
			o.Values = make([]string, len(cells))
			for i, c := range cells {
				o.Values[i] = c.Text
			}
			if len(errs) > 0 {
				o.Failed, o.Errors = true, errs
			} else {
				werr := w.WriteRow(cells)
				var fe *rows.FieldError
				switch {
				case errors.As(werr, &fe):
					o.Failed, o.Errors = true, []rows.FieldError{*fe}
				case werr != nil:
					return n, werr
				}
			}
		}
		for i := range o.Errors {
			o.Errors[i].Row = rowNo
		}
		if err := js.Encode(&o); err != nil {
			return n, fmt.Errorf("spool: %w", err)
		}
		n++
	}
	if err := ctx.Err(); err != nil {
		return n, err
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("spool: %w", err)
	}
	return n, nil
}

// exportRowErrors tells a row's error (the row fails, the export goes on)
// from the source's (the export stops).
func exportRowErrors(err error) ([]rows.FieldError, bool) {
	var fes rows.FieldErrors
	if errors.As(err, &fes) && len(fes) > 0 {
		return append([]rows.FieldError(nil), fes...), true
	}
	var fe *rows.FieldError
	if errors.As(err, &fe) {
		return []rows.FieldError{*fe}, true
	}
	if IsPermanent(err) {
		return []rows.FieldError{{Code: CodeExport, Message: err.Error()}}, true
	}
	return nil, false
}

// DynamicExportKind is an export kind whose row type is built at run time
// (a Table Schema's, see processors/schemakind), as DynamicKind is for
// imports. Its rows are written and recorded exactly as a Go export's.
type DynamicExportKind struct {
	Name        string
	Description string
	// Type is the row type: a struct type with col tags. Required.
	Type reflect.Type
	// RowsFunc yields the rows to export, struct values of Type, as
	// ExportKind.RowsFunc does. Required, unless FilterRowsFunc is set.
	RowsFunc func(ctx context.Context) iter.Seq2[reflect.Value, error]
	// FilterRowsFunc and CheckFilter are as in ExportKind: a kind that
	// takes filters.
	FilterRowsFunc func(ctx context.Context, f ExportFilter) iter.Seq2[reflect.Value, error]
	CheckFilter    func(f ExportFilter) error
	// RawColumns and ChunkSize are as in ExportKind.
	RawColumns []string
	ChunkSize  int
}

type dynamicExport struct {
	k       DynamicExportKind
	columns []rows.Column
}

func (d *dynamicExport) info() KindInfo {
	return KindInfo{Name: d.k.Name, Description: d.k.Description, Direction: DirectionExport, Columns: d.columns, Required: []string{}}
}

func (d *dynamicExport) run(ctx context.Context, e *Engine, p ExportParams) (*batchtype.Batch, error) {
	s := exportSpec{name: d.k.Name, typ: d.k.Type, raw: d.k.RawColumns, chunkSize: d.k.ChunkSize,
		rows: func(ctx context.Context, _ ExportFilter) iter.Seq2[reflect.Value, error] { return d.k.RowsFunc(ctx) }}
	if d.k.FilterRowsFunc != nil {
		s.rows, s.check = d.k.FilterRowsFunc, acceptFilter
		if d.k.CheckFilter != nil {
			s.check = d.k.CheckFilter
		}
	}
	return exportRows(ctx, e, s, p)
}

// RegisterDynamicExport adds a dynamic export kind, or replaces the
// dynamic export kind of that name; a Go export kind is not replaced.
func RegisterDynamicExport(r *Registry, k DynamicExportKind) error {
	if k.Name == "" || k.Type == nil || (k.RowsFunc == nil && k.FilterRowsFunc == nil) {
		return fmt.Errorf("register export kind %q: it needs a Name, a Type and a RowsFunc or FilterRowsFunc", k.Name)
	}
	b, err := rows.NewBinder(k.Type)
	if err != nil {
		return fmt.Errorf("register export kind %q: %w", k.Name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.exports[k.Name]; ok {
		if _, dyn := old.(*dynamicExport); !dyn {
			return fmt.Errorf("register export kind %q: a Go export kind has that name", k.Name)
		}
	}
	r.exports[k.Name] = &dynamicExport{k: k, columns: b.Columns()}
	return nil
}

// UnregisterDynamicExport removes a dynamic export kind.
func (r *Registry) UnregisterDynamicExport(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.exports[name].(*dynamicExport); ok {
		delete(r.exports, name)
	}
}
