package batch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// RecalcKind is a bulk recalculation: a kind whose rows come from a query
// (every customer of a tenant, those matching a filter) instead of a file.
// Its rows are a batch like an import's: stored, leased, processed, counted,
// followed, cancelled and re-run by the same rules; a re-run works the rows
// the batch holds that are not completed.
type RecalcKind[T any] struct {
	// Name is the kind's name (batchctl recalc NAME).
	Name        string
	Description string
	// RowsFunc returns the rows to recompute for the tenant and the run's
	// parameters, in a stable order; it is read once, streaming: read the
	// source in keyset pages so memory stays flat. A row error it yields
	// (a *rows.FieldError, rows.FieldErrors or Permanent(err)) makes that
	// row invalid; any other error aborts the run. Required.
	RowsFunc func(ctx context.Context, tenant string, params map[string]string) iter.Seq2[T, error]
	// CheckParams rejects parameters before anything is read (a filter
	// that does not parse). Optional.
	CheckParams func(params map[string]string) error
	// Processor works each row, exactly as an import kind's does.
	// Required.
	Processor Processor[T]
	// ChunkSize, MaxAttempts, Timeout, KeyFunc, KeyName, KeyedEffects and
	// EffectKeyFunc are as for Kind.
	ChunkSize     int
	MaxAttempts   int
	Timeout       time.Duration
	KeyFunc       func(T) string
	KeyName       string
	KeyedEffects  bool
	EffectKeyFunc func(T) string
}

// recalcKind is a registered RecalcKind with its row type erased: it
// writes each row as the cells of the kind's columns.
type recalcKind interface {
	check(params map[string]string) error
	rows(ctx context.Context, tenant string, params map[string]string) iter.Seq2[[]string, error]
}

type recalcOf[T any] struct {
	k RecalcKind[T]
	b *rows.Binder
}

func (r *recalcOf[T]) check(params map[string]string) error {
	if r.k.CheckParams == nil {
		if len(params) > 0 {
			return fmt.Errorf("recalculation %s takes no parameters", r.k.Name)
		}
		return nil
	}
	return r.k.CheckParams(params)
}

func (r *recalcOf[T]) rows(ctx context.Context, tenant string, params map[string]string) iter.Seq2[[]string, error] {
	return func(yield func([]string, error) bool) {
		for t, err := range r.k.RowsFunc(ctx, tenant, params) {
			if err != nil {
				if !yield(nil, err) {
					return
				}
				continue
			}
			cells, err := r.b.Format(t)
			if !yield(cells, err) {
				return
			}
		}
	}
}

// RegisterRecalc adds a recalculation kind: an import kind of the same
// name (its rows are validated and worked as an import's) with its source.
func RegisterRecalc[T any](r *Registry, k RecalcKind[T]) error {
	if k.RowsFunc == nil {
		return fmt.Errorf("register recalculation %q: no RowsFunc", k.Name)
	}
	err := Register(r, Kind[T]{Name: k.Name, Description: k.Description, Processor: k.Processor, ChunkSize: k.ChunkSize,
		MaxAttempts: k.MaxAttempts, Timeout: k.Timeout, KeyFunc: k.KeyFunc, KeyName: k.KeyName,
		KeyedEffects: k.KeyedEffects, EffectKeyFunc: k.EffectKeyFunc})
	if err != nil {
		return err
	}
	if r.recalcs == nil {
		r.recalcs = map[string]recalcKind{}
	}
	kk, _ := r.lookup(k.Name)
	reg := kk.(*registered[T])
	reg.recalc = true
	r.recalcs[k.Name] = &recalcOf[T]{k: k, b: reg.binder()}
	return nil
}

// RecalcParams describe one recalculation.
type RecalcParams struct {
	// TenantID owns the batch, and scopes the source. Defaults to
	// DefaultTenant.
	TenantID string
	// Kind is a registered RecalcKind's name.
	Kind string
	// Params are the source's parameters (a filter), recorded with the
	// batch.
	Params map[string]string
	// TmpDir is where the rows spool while the source is read. Defaults
	// to the system's.
	TmpDir string
}

// ErrNotRecalc: the kind is not a recalculation.
var ErrNotRecalc = errors.New("not a recalculation kind")

// ErrBadParams: a recalculation's parameters were refused by its kind.
var ErrBadParams = errors.New("bad parameters")

// Recalc creates a batch from a recalculation kind's source: every row it
// yields, validated by the kind's phases as an import's rows are, stored
// with its outcome. The rows are then worked by Work, like an import's.
//
// The source is read to the end into a temporary file before the batch is
// written, so that it is never read while the store writes (a source on
// the same single-connection SQLite database could not be) and memory
// stays flat however many rows it has; the batch records the kind's
// parameters (Batch.Recalc).
func (e *Engine) Recalc(ctx context.Context, p RecalcParams) (*batchtype.Batch, error) {
	if p.TenantID == "" {
		p.TenantID = DefaultTenant
	}
	rk, ok := e.registry.recalcSource(p.Kind)
	if !ok {
		if e.registry.Has(p.Kind) {
			return nil, fmt.Errorf("recalc %s: %w", p.Kind, ErrNotRecalc)
		}
		return nil, fmt.Errorf("recalc %s: %w", p.Kind, ErrUnknownKind)
	}
	if err := rk.check(p.Params); err != nil {
		return nil, fmt.Errorf("recalc %s: %w: %w", p.Kind, ErrBadParams, err)
	}
	k, err := e.registry.lookup(p.Kind)
	if err != nil {
		return nil, err
	}
	tmpl, _, err := k.template()
	if err != nil {
		return nil, err
	}
	m, err := k.mapHeader(tmpl, rows.Conventions{})
	if err != nil {
		return nil, err
	}
	spool, err := os.CreateTemp(p.TmpDir, "rowfate-recalc-*")
	if err != nil {
		return nil, fmt.Errorf("recalc %s: spool: %w", p.Kind, err)
	}
	defer func() {
		spool.Close()
		os.Remove(spool.Name())
	}()
	n, err := spoolRecalc(ctx, rk.rows(ctx, p.TenantID, p.Params), spool)
	if err != nil {
		return nil, fmt.Errorf("recalc %s: %w", p.Kind, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("recalc %s: %w", p.Kind, ErrNoMatch)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	chunkSize := int64(k.settings().chunkSize)
	chk := newRowChecker(k, m)
	dec := json.NewDecoder(bufio.NewReaderSize(spool, 64<<10))
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			var s spooled
			if err := dec.Decode(&s); err != nil {
				yield(driver.IngestRow{}, fmt.Errorf("read back row %d: %w", i+2, err))
				return
			}
			rec := rows.Record{Row: i + 2, Values: s.Values}
			row := driver.IngestRow{RowNo: rec.Row, ChunkNo: i / chunkSize, State: rows.StateValid, Values: s.Values}
			if s.Error != nil {
				e := *s.Error
				e.Row = rec.Row
				row.State, row.Errors = rows.StateInvalid, []rows.FieldError{e}
				chk.tally.Add(row.Errors)
			} else if errs, digest := chk.checkStored(ctx, rec); len(errs) > 0 {
				row.State, row.Errors = rows.StateInvalid, errs
			} else {
				row.KeyDigest = digest
			}
			if !yield(row, nil) {
				return
			}
		}
	}
	keys := slices.Sorted(maps.Keys(p.Params))
	name := "recalc " + p.Kind
	for _, key := range keys {
		name += fmt.Sprintf(" %s=%s", key, p.Params[key])
	}
	b, err := e.store.BatchIngest(ctx, driver.BatchIngestParams{
		TenantID:     p.TenantID,
		Kind:         p.Kind,
		SourceName:   name,
		Header:       tmpl,
		Recalc:       nonNilParams(p.Params),
		MaxAttempts:  k.settings().maxAttempts,
		Rows:         seq,
		DuplicateKey: chk.duplicateKey(),
		SummaryFunc:  func() driver.IngestSummary { return driver.IngestSummary{ErrorCounts: chk.tally.Counts()} },
	})
	if err != nil {
		return nil, fmt.Errorf("recalc %s: %w", p.Kind, err)
	}
	e.logger.InfoContext(ctx, "recalculation created", "batch_id", b.ID, "kind", b.Kind, "tenant_id", b.TenantID, "rows", b.Counts.Total())
	e.bell.ring()
	return b, nil
}

func nonNilParams(p map[string]string) map[string]string {
	if p == nil {
		return map[string]string{}
	}
	return p
}

// spooled is one row of a recalculation's source on disk.
type spooled struct {
	Values []string         `json:"v"`
	Error  *rows.FieldError `json:"e,omitempty"`
}

// spoolRecalc writes the source's rows to w and returns how many.
func spoolRecalc(ctx context.Context, src iter.Seq2[[]string, error], w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	js := json.NewEncoder(bw)
	var n int64
	for cells, err := range src {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		s := spooled{Values: cells}
		if err != nil {
			fe, ok := rowError(err)
			if !ok {
				return n, err
			}
			s.Error = fe
		}
		if err := js.Encode(s); err != nil {
			return n, err
		}
		n++
	}
	return n, bw.Flush()
}

// rowError is the row error a source yielded, or false for an error that
// aborts the run.
func rowError(err error) (*rows.FieldError, bool) {
	var (
		fe  *rows.FieldError
		fes rows.FieldErrors
		pe  *permanentError
	)
	switch {
	case errors.As(err, &fe):
		return fe, true
	case errors.As(err, &fes) && len(fes) > 0:
		msgs := make([]string, len(fes))
		for i, f := range fes {
			msgs[i] = f.Error()
		}
		return &rows.FieldError{Code: fes[0].Code, Message: strings.Join(msgs, "; ")}, true
	case errors.As(err, &pe):
		return &rows.FieldError{Code: CodeRecalc, Message: err.Error()}, true
	}
	return nil, false
}

// CodeRecalc is the row error code of a row a recalculation's source could
// not produce.
const CodeRecalc rows.Code = "recalc_error"
