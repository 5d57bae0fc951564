package batch

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/validate"
)

// DynamicKind is an import kind whose row type is built at run time from
// a description rather than declared in Go: a Table Schema file
// (processors/schemakind builds one). Its rows go through the same four
// validation phases as a Go kind's (validate.Dynamic), the same natural-key
// check, leases, effects and outcomes; its processor is transactional,
// writing a chunk's rows in the flush's transaction.
type DynamicKind struct {
	Name        string
	Description string
	// Source says where the kind is defined, for listings ("schema v3").
	Source string
	// Version is the definition's version, recorded with every batch
	// validated with it (Batch.KindVersion).
	Version int64
	// Definition is, for a kind defined for one import (Version 0, such
	// as batchctl import --schema), its definition as written: it is
	// kept with the batch (Batch.KindDefinition), so that the batch's
	// re-runs, retries and error reports read its rows as its import did
	// although no registry knows the kind.
	Definition string
	// Type is the row type: a struct type with col and validate tags
	// (reflect.StructOf). Required.
	Type reflect.Type
	// Validation fills in the phases for Type.
	Validation validate.DynamicOptions
	// ProcessTx writes a chunk's bound rows (pointers to Type's structs)
	// in the flush's transaction and returns one Result per row, in order.
	// m says which of the kind's columns the file had: a column it lacks
	// must be left alone. Required.
	ProcessTx func(ctx context.Context, tx Tx, m *rows.Mapping, rows []reflect.Value) ([]Result, error)
	// KeyFunc returns a bound row's natural key; "" for none. Optional.
	KeyFunc func(row reflect.Value) string
	// KeyName names the key in messages ("same order_id, line_no as row
	// 12"). Defaults to "key".
	KeyName string
	// Example is a template's example row, by column. Optional.
	Example map[string]string
	// Enums are the fixed values of columns, by column: a template offers
	// them as a dropdown. Optional.
	Enums map[string][]string
	// Notes say what a column takes (its type, its format, its bounds),
	// by column: a template shows them in the header cell's comment.
	// Optional.
	Notes map[string]string
	// MissingValues are cells read as empty (a schema's missingValues,
	// such as "NA" or "-"); "" always is.
	MissingValues []string
	// Conventions are the kind's defaults for what an import leaves
	// undeclared: its number format (a decimal comma). A day/month order
	// is a field's dateorder tag.
	Conventions rows.Conventions
	// CheckFunc, when set, runs before an import of the kind reads a row
	// (its target table exists and has the right columns): an error
	// refuses the file with nothing written.
	CheckFunc func(ctx context.Context) error
	// ChunkSize, MaxAttempts, Timeout, BackoffFunc, MaxInvalid and
	// MaxFailed are as in Kind.
	MaxInvalid  Threshold
	MaxFailed   Threshold
	ChunkSize   int
	MaxAttempts int
	Timeout     time.Duration
	BackoffFunc func(attempt int) time.Duration
}

// dynamicKind is a registered DynamicKind.
type dynamicKind struct {
	k        DynamicKind
	pipeline *validate.Dynamic
	s        kindSettings
}

// RegisterDynamic adds a dynamic kind, or replaces the dynamic kind of
// that name (a new version of a schema): workers pick the new one up at
// their next chunk. A Go kind of that name is not replaced.
func RegisterDynamic(r *Registry, k DynamicKind) error {
	if k.Name == "" || k.Type == nil || k.ProcessTx == nil {
		return fmt.Errorf("register dynamic kind %q: it needs a Name, a Type and a ProcessTx", k.Name)
	}
	p, err := validate.NewDynamic(k.Type, k.Validation)
	if err != nil {
		return fmt.Errorf("register kind %q: %w", k.Name, err)
	}
	s := kindSettings{chunkSize: k.ChunkSize, maxAttempts: k.MaxAttempts, timeout: k.Timeout, backoff: k.BackoffFunc, maxInvalid: k.MaxInvalid, maxFailed: k.MaxFailed}
	s.defaults()
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.kinds[k.Name]; ok {
		if _, dyn := old.(*dynamicKind); !dyn {
			return fmt.Errorf("register kind %q: a Go kind has that name", k.Name)
		}
	}
	r.kinds[k.Name] = &dynamicKind{k: k, pipeline: p, s: s}
	return nil
}

// UnregisterDynamic removes a dynamic kind; a Go kind stays.
func (r *Registry) UnregisterDynamic(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.kinds[name].(*dynamicKind); ok {
		delete(r.kinds, name)
	}
}

// DynamicVersion returns the version of the dynamic kind of that name,
// and whether there is one.
func (r *Registry) DynamicVersion(name string) (int64, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.kinds[name].(*dynamicKind)
	if !ok {
		return 0, false
	}
	return d.k.Version, true
}

func (d *dynamicKind) info() KindInfo {
	return KindInfo{Name: d.k.Name, Description: d.k.Description, Direction: DirectionImport, Guarantee: ExactlyOnce,
		Columns: d.pipeline.Binder().Columns(), Required: orEmpty(d.pipeline.RequiredColumns()), Source: d.k.Source}
}

func orEmpty(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func (d *dynamicKind) settings() kindSettings { return d.s }

func (d *dynamicKind) mapHeader(header []string, conv rows.Conventions) (*rows.Mapping, error) {
	return mapRequired(d.pipeline.Binder(), d.pipeline.RequiredColumns(), header, conv)
}

func (d *dynamicKind) example() map[string]string { return d.k.Example }

// clean empties the cells that are the kind's missing values.
func (d *dynamicKind) clean(values []string) []string {
	if len(d.k.MissingValues) == 0 {
		return values
	}
	var out []string
	for i, v := range values {
		if v != "" && slices.Contains(d.k.MissingValues, v) {
			if out == nil {
				out = slices.Clone(values)
			}
			out[i] = ""
		}
	}
	if out == nil {
		return values
	}
	return out
}

func (d *dynamicKind) check(ctx context.Context, m *rows.Mapping, rec rows.Record) ([]rows.FieldError, string) {
	rec.Values = d.clean(rec.Values)
	row, errs := d.pipeline.Run(ctx, m, rec)
	if len(errs) > 0 || d.k.KeyFunc == nil {
		return errs, ""
	}
	return nil, d.k.KeyFunc(row)
}

func (d *dynamicKind) hasKey() bool { return d.k.KeyFunc != nil }

func (d *dynamicKind) key(m *rows.Mapping, values []string) string {
	if d.k.KeyFunc == nil {
		return ""
	}
	ptr := reflect.New(d.k.Type)
	_ = m.Bind(0, d.clean(values), ptr.Interface())
	return d.k.KeyFunc(ptr)
}

func (d *dynamicKind) template() ([]string, []string, error) {
	cols := d.pipeline.Binder().Columns()
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.Name
	}
	if d.k.Example == nil {
		return header, nil, nil
	}
	ex := make([]string, len(cols))
	for i, c := range cols {
		ex[i] = d.k.Example[c.Name]
	}
	return header, ex, nil
}

func (d *dynamicKind) binder() *rows.Binder { return d.pipeline.Binder() }

func (d *dynamicKind) keyName() string { return d.k.KeyName }

// enums returns the kind's Enums by Go field name, as TemplateColumns
// reads them.
func (d *dynamicKind) enums() map[string][]string {
	out := map[string][]string{}
	for _, c := range d.pipeline.Binder().Columns() {
		if vals, ok := d.k.Enums[c.Name]; ok {
			out[c.Field] = vals
		}
	}
	return out
}

func (d *dynamicKind) notes() map[string]string { return d.k.Notes }

func (d *dynamicKind) process(context.Context, *rows.Mapping, int64, []string) (string, error) {
	return "", Permanent(fmt.Errorf("kind %s writes in its chunk's transaction only", d.k.Name))
}

func (d *dynamicKind) transactional() bool { return true }

func (d *dynamicKind) keyed() bool { return false }

// processTx binds the leased rows and hands those that bind to the
// kind's writer, in the flush's transaction.
func (d *dynamicKind) processTx(ctx context.Context, tx Tx, m *rows.Mapping, leased []driver.LeasedRow) (results []Result, err error) {
	results = make([]Result, len(leased))
	bound := make([]reflect.Value, 0, len(leased))
	idx := make([]int, 0, len(leased))
	for i, l := range leased {
		ptr := reflect.New(d.k.Type)
		if errs := m.Bind(l.RowNo, d.clean(l.Values), ptr.Interface()); len(errs) > 0 {
			results[i].Err = Permanent(rows.FieldErrors(errs))
			continue
		}
		bound = append(bound, ptr)
		idx = append(idx, i)
	}
	if len(bound) == 0 {
		return results, nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("processor panicked: %v", v)
		}
	}()
	out, err := d.k.ProcessTx(ctx, tx, m, bound)
	if err != nil {
		return nil, err
	}
	if len(out) != len(bound) {
		return nil, fmt.Errorf("processor returned %d results for %d rows", len(out), len(bound))
	}
	for j, res := range out {
		results[idx[j]] = res
	}
	return results, nil
}

func (d *dynamicKind) effectRefs(tenant string, batchID int64, _ *rows.Mapping, leased []driver.LeasedRow, digests bool) []driver.EffectRef {
	out := make([]driver.EffectRef, len(leased))
	for i, l := range leased {
		out[i] = driver.EffectRef{RowNo: l.RowNo, Key: defaultEffectKey(tenant, batchID, l.RowNo)}
		if digests {
			out[i].Digest = valuesDigest(l.Values)
		}
	}
	return out
}

func (d *dynamicKind) reconcile(context.Context, *rows.Mapping, int64, []string) (string, error, bool) {
	return "", nil, false
}

func (d *dynamicKind) processChunk(context.Context, *rows.Mapping, []driver.LeasedRow) ([]Result, bool) {
	return nil, false
}

func (d *dynamicKind) beforeImport(ctx context.Context) error {
	if d.k.CheckFunc == nil {
		return nil
	}
	return d.k.CheckFunc(ctx)
}

func (d *dynamicKind) version() int64 { return d.k.Version }

func (d *dynamicKind) definition() string {
	if d.k.Version != 0 {
		return "" // a stored kind's definition is in the store's kinds
	}
	return d.k.Definition
}

// conventions fills what the import left undeclared with the kind's own.
func (d *dynamicKind) conventions(c rows.Conventions) rows.Conventions {
	if c.Number.Decimal == 0 && len(c.Number.Groups) == 0 {
		c.Number = d.k.Conventions.Number
	}
	return c
}
