package batch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/validate"
)

// Processor does the work of one valid row and returns an identifier of what
// it produced, or an error. It never records its own outcome: the engine
// does, from what it returns. Wrap an error with Permanent when retrying
// cannot help.
type Processor[T any] interface {
	Process(ctx context.Context, row T) (id string, err error)
}

// ChunkProcessor is the batched form of Processor, for speed: one call for
// all the due rows of a chunk (one transaction downstream instead of one per
// row). It returns one Result per row, in order; an error returned for the
// whole call applies to every row. The engine still owns every outcome. A
// Processor that also implements ChunkProcessor is called this way.
type ChunkProcessor[T any] interface {
	ProcessChunk(ctx context.Context, rows []T) ([]Result, error)
}

// Result is one row's answer from a ChunkProcessor: an id or an error.
type Result struct {
	ID  string
	Err error
}

// ProcessFunc adapts a function to a Processor.
type ProcessFunc[T any] func(ctx context.Context, row T) (string, error)

// Process calls f.
func (f ProcessFunc[T]) Process(ctx context.Context, row T) (string, error) { return f(ctx, row) }

// Kind describes one registered import type: the row struct T (with col and
// validate tags, and optionally Validate<Field> and ValidateRow methods) and
// its processor.
type Kind[T any] struct {
	// Name is how users refer to the kind (batchctl import NAME file).
	Name string
	// Description is one line for `batchctl kinds`.
	Description string
	// Processor works each valid row. Required.
	Processor Processor[T]
	// ChunkSize is the number of rows per chunk, the unit of leasing and of
	// counting. Defaults to 1000.
	ChunkSize int
	// InlineCallRows lets a TxProcessor take more than a chunk's rows in
	// one call when an import works them as it stores them
	// (ImportParams.WorkInline): a call takes whole chunks while it holds
	// fewer than this many rows (the store hands them over about 4,000 at
	// a time), so it may hold up to a chunk less one more. One statement for
	// 4,000 rows costs less than four of 1,000. A call of several chunks
	// that fails as a whole is rolled back and its chunks are tried one
	// by one, so that a failing chunk still costs only its own rows; the
	// batch's failure bound is checked after each call. Defaults to
	// ChunkSize: a call per chunk.
	InlineCallRows int
	// MaxInvalid is the kind's bound on a file's invalid rows, for an
	// import that sets none (ImportParams.MaxInvalid). Optional.
	MaxInvalid Threshold
	// MaxFailed is the kind's bound on a batch's failed rows, for an import
	// that sets none (ImportParams.MaxFailed). Optional.
	MaxFailed Threshold
	// MaxAttempts bounds retries; a row whose last attempt fails is dead.
	// Defaults to 5.
	MaxAttempts int
	// Timeout bounds one call of the processor; a row that runs out of time
	// is unknown (the effect may have happened). Defaults to 30s.
	Timeout time.Duration
	// RunGrace is, for a keyed kind, how long a call may still be under
	// way after its Timeout (an external program's time to stop after it
	// is told to). A key whose run never answered, because its worker
	// stalled or died, is not run again before Timeout + RunGrace have
	// passed since that run was claimed. Defaults to 5s.
	RunGrace time.Duration
	// BackoffFunc returns the delay before the next attempt after the given
	// failed attempt (1-based). Defaults to 1s doubling, capped at 5m.
	BackoffFunc func(attempt int) time.Duration
	// KeyFunc returns a row's natural key (an email, an SKU). When set, a
	// row whose key an earlier valid row of the same file already has is
	// invalid with code duplicate_key, naming that row. Rows that fail
	// validation and empty keys take no part. Optional.
	KeyFunc func(T) string
	// KeyName names the key in messages ("same email as row 12"); when it
	// is one of the kind's columns, the error is reported on that column.
	// Defaults to "key".
	KeyName string
	// Example is a row that shows what a good file looks like; `batchctl
	// template` writes it under the header. Optional.
	Example *T
	// KeyedEffects declares that the processor's effect is external and
	// that it passes RowInfo.EffectKey downstream, which applies each key
	// once (an HTTP API honouring Idempotency-Key). The engine then claims
	// each row's key before the processor runs: a key already done is not
	// run again (the row takes the stored result id), and a key reused with
	// another payload fails the row (key_reused). A kind that is neither a
	// TxProcessor nor keyed is at-least-once: after a lost lease its rows
	// may run twice, and `batchctl kinds` says so.
	KeyedEffects bool
	// EffectKeyFunc derives a row's effect key from its data (an order
	// reference), so that the same effect is recognised across batches.
	// Defaults to "<tenant>/<batch>/<row>".
	EffectKeyFunc func(T) string
	// ReconcileFunc settles a row whose outcome is unknown (a timeout, a
	// lost answer) by asking the downstream: it returns the result id when
	// the effect happened, or a Permanent error when it did not and must
	// not be retried, or any other error to retry the row. Without it,
	// unknown rows wait for a person (`batchctl reconcile`).
	ReconcileFunc func(ctx context.Context, row T) (string, error)
}

// Guarantee says how often a kind's effect happens per row.
type Guarantee string

// The guarantees.
const (
	// ExactlyOnce: a TxProcessor, whose writes commit with the outcomes.
	ExactlyOnce Guarantee = "exactly-once"
	// OncePerKey: a keyed kind, whose downstream applies each key once.
	OncePerKey Guarantee = "once-per-effect-key"
	// AtLeastOnce: anything else; a row may run twice after a lost lease.
	AtLeastOnce Guarantee = "at-least-once"
)

// kind is a registered Kind with its type erased, so the engine can hold
// kinds of different row types: what it reads, and how it works its rows.
type kind interface {
	rowReader
	rowWorker
}

// rowReader is what a kind knows of its rows: its columns and settings,
// how a header maps onto them, every validation phase, its natural key,
// its template. An import, a dry run and a re-run read through it.
type rowReader interface {
	info() KindInfo
	settings() kindSettings
	// mapHeader matches a file's header under its conventions and
	// rejects it when required columns are missing.
	mapHeader(header []string, conv rows.Conventions) (*rows.Mapping, error)
	// example returns the kind's example row as a template writes it, by
	// column name; nil without one.
	example() map[string]string
	// check runs every phase for one record and returns the row's natural
	// key, or "" when the kind has none or the row is invalid.
	check(ctx context.Context, m *rows.Mapping, rec rows.Record) ([]rows.FieldError, string)
	// key returns a stored row's natural key from its values as they
	// bind, whatever the rules now say of them; "" when the kind has none
	// or the key cannot be had.
	key(m *rows.Mapping, values []string) string
	// hasKey reports whether the kind has a natural key (Kind.KeyFunc).
	hasKey() bool
	// template returns the kind's columns and its example row (nil
	// without one).
	template() (header, example []string, err error)
	// binder returns the kind's binder, for mapping headers.
	binder() *rows.Binder
	// keyName is Kind.KeyName.
	keyName() string
	// enums returns the fixed values of enum fields, by Go field name.
	enums() map[string][]string
	// notes returns what each column takes, by column, for a template.
	notes() map[string]string
	// beforeImport runs before an import reads a row (DynamicKind.CheckFunc).
	beforeImport(ctx context.Context) error
	// version is a stored definition's version; 0 for a Go kind.
	version() int64
	// definition is a one-off kind's definition, kept with its batches.
	definition() string
	// conventions fills what an import left undeclared with the kind's
	// own defaults.
	conventions(c rows.Conventions) rows.Conventions
}

// rowWorker is how a kind's valid rows are worked: its processor (row by
// row, by chunk, or in the store's transaction), its effect keys and
// their reconciliation.
type rowWorker interface {
	// process binds a stored record and calls the processor; a panic is
	// an unknownError.
	process(ctx context.Context, m *rows.Mapping, row int64, values []string) (string, error)
	// transactional reports whether the processor is a TxProcessor.
	transactional() bool
	// keyed is Kind.KeyedEffects.
	keyed() bool
	// processTx runs a TxProcessor in tx.
	processTx(ctx context.Context, tx Tx, m *rows.Mapping, leased []driver.LeasedRow) ([]Result, error)
	// effectRefs are the effect keys and payload digests of leased rows.
	effectRefs(tenant string, batchID int64, m *rows.Mapping, leased []driver.LeasedRow, digests bool) []driver.EffectRef
	// reconcile asks Kind.ReconcileFunc; ok is false without one.
	reconcile(ctx context.Context, m *rows.Mapping, row int64, values []string) (string, error, bool)
	// processChunk calls the kind's ChunkProcessor, if it has one, with
	// every row that binds; ok is false when the kind has none.
	processChunk(ctx context.Context, m *rows.Mapping, leased []driver.LeasedRow) (results []Result, ok bool)
}

type kindSettings struct {
	maxInvalid  Threshold
	maxFailed   Threshold
	chunkSize   int
	callRows    int // the most rows of an inline call (Kind.InlineCallRows)
	maxAttempts int
	timeout     time.Duration
	runGrace    time.Duration
	backoff     func(int) time.Duration
}

// defaults fills the settings a kind left zero.
func (s *kindSettings) defaults() {
	if s.chunkSize <= 0 {
		s.chunkSize = 1000
	}
	s.callRows = max(s.callRows, s.chunkSize)
	if s.maxAttempts <= 0 {
		s.maxAttempts = 5
	}
	if s.timeout <= 0 {
		s.timeout = 30 * time.Second
	}
	if s.backoff == nil {
		s.backoff = defaultBackoff
	}
	if s.runGrace <= 0 {
		s.runGrace = 5 * time.Second
	}
}

// Directions of a kind: what it does with a file.
const (
	// DirectionImport reads a file into rows and works them.
	DirectionImport = "import"
	// DirectionExport writes rows into a file.
	DirectionExport = "export"
	// DirectionRecalc recomputes rows a query yields (RecalcKind).
	DirectionRecalc = "recalc"
)

// KindInfo describes a registered kind.
type KindInfo struct {
	Name        string
	Description string
	Direction   string
	// Guarantee is how often an import kind's effect happens per row.
	Guarantee Guarantee
	// Source is where the kind is defined: "" for Go code, "schema v3"
	// for a stored schema.
	Source   string
	Columns  []rows.Column
	Required []string
}

type registered[T any] struct {
	k        Kind[T]
	pipeline *validate.Pipeline[T]
	s        kindSettings
	// tx is the processor as a TxProcessor, when it is one.
	tx TxProcessor[T]
	// recalc marks a RecalcKind's: its rows come from its source.
	recalc bool
}

func (r *registered[T]) info() KindInfo {
	dir := DirectionImport
	if r.recalc {
		dir = DirectionRecalc
	}
	return KindInfo{Name: r.k.Name, Description: r.k.Description, Direction: dir, Guarantee: r.guarantee(),
		Columns: r.pipeline.Binder().Columns(), Required: r.pipeline.RequiredColumns()}
}

func (r *registered[T]) guarantee() Guarantee {
	switch {
	case r.tx != nil:
		return ExactlyOnce
	case r.k.KeyedEffects:
		return OncePerKey
	}
	return AtLeastOnce
}

func (r *registered[T]) settings() kindSettings { return r.s }

func (r *registered[T]) mapHeader(header []string, conv rows.Conventions) (*rows.Mapping, error) {
	return mapRequired(r.pipeline.Binder(), r.pipeline.RequiredColumns(), header, conv)
}

// mapRequired maps a header and rejects it when a required column is
// missing, with a hint for one that looks misspelt.
func mapRequired(b *rows.Binder, required []string, header []string, conv rows.Conventions) (*rows.Mapping, error) {
	m, err := b.MapFile(header, conv)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, c := range required {
		if slices.Contains(m.Missing, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		msg := "missing required columns: " + joinQuoted(missing)
		var hints []rows.Hint
		for _, sg := range m.Suggestions {
			if slices.Contains(missing, sg.Column) {
				msg += "; " + sg.String()
				hints = append(hints, sg.Hint())
			}
		}
		return nil, rows.WithHints(fmt.Errorf("%w: %s", rows.ErrBadHeader, msg), hints...)
	}
	return m, nil
}

func (r *registered[T]) example() map[string]string {
	header, ex, err := r.template()
	if err != nil || ex == nil {
		return nil
	}
	out := make(map[string]string, len(header))
	for i, h := range header {
		out[h] = ex[i]
	}
	return out
}

func (r *registered[T]) check(ctx context.Context, m *rows.Mapping, rec rows.Record) ([]rows.FieldError, string) {
	t, errs := r.pipeline.Run(ctx, m, rec)
	if len(errs) > 0 || r.k.KeyFunc == nil {
		return errs, ""
	}
	key, err := callKey(r.k.KeyFunc, t)
	if err != nil {
		return []rows.FieldError{{Row: rec.Row, Code: rows.CodePanic, Message: err.Error()}}, ""
	}
	return nil, key
}

func (r *registered[T]) hasKey() bool { return r.k.KeyFunc != nil }

func (r *registered[T]) key(m *rows.Mapping, values []string) string {
	if r.k.KeyFunc == nil {
		return ""
	}
	var t T
	_ = m.Bind(0, values, &t) // a field that does not bind stays zero
	key, err := callKey(r.k.KeyFunc, t)
	if err != nil {
		return ""
	}
	return key
}

// callKey turns a panic in a KeyFunc into the row's error.
func callKey[T any](f func(T) string, t T) (key string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("key function panicked: %v", v)
		}
	}()
	return f(t), nil
}

func (r *registered[T]) template() ([]string, []string, error) {
	b := r.pipeline.Binder()
	cols := b.Columns()
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.Name
	}
	if r.k.Example == nil {
		return header, nil, nil
	}
	ex, err := b.Format(r.k.Example)
	return header, ex, err
}

func (r *registered[T]) binder() *rows.Binder { return r.pipeline.Binder() }

func (r *registered[T]) keyName() string { return r.k.KeyName }

func (r *registered[T]) enums() map[string][]string { return enumValues(reflect.TypeFor[T]()) }

func (r *registered[T]) notes() map[string]string { return nil }

func (r *registered[T]) process(ctx context.Context, m *rows.Mapping, row int64, values []string) (id string, err error) {
	var t T
	if errs := m.Bind(row, values, &t); len(errs) > 0 {
		// The row was valid at ingest; only a changed kind gets here.
		return "", Permanent(rows.FieldErrors(errs))
	}
	defer func() {
		if v := recover(); v != nil {
			// The effect may have happened before the panic.
			err = &unknownError{fmt.Errorf("processor panicked: %v", v)}
		}
	}()
	return r.k.Processor.Process(ctx, t)
}

// bindAll binds leased rows: the rows that bind, their positions, and a
// Permanent error in results for each that does not.
func (r *registered[T]) bindAll(m *rows.Mapping, leased []driver.LeasedRow) ([]T, []int, []Result) {
	results := make([]Result, len(leased))
	batchRows := make([]T, 0, len(leased))
	idx := make([]int, 0, len(leased))
	for i, l := range leased {
		var t T
		if errs := m.Bind(l.RowNo, l.Values, &t); len(errs) > 0 {
			results[i].Err = Permanent(rows.FieldErrors(errs))
			continue
		}
		batchRows = append(batchRows, t)
		idx = append(idx, i)
	}
	return batchRows, idx, results
}

func (r *registered[T]) processChunk(ctx context.Context, m *rows.Mapping, leased []driver.LeasedRow) ([]Result, bool) {
	cp, ok := r.k.Processor.(ChunkProcessor[T])
	if !ok {
		return nil, false
	}
	batchRows, idx, results := r.bindAll(m, leased)
	if len(batchRows) == 0 {
		return results, true
	}
	out, err := callChunk(ctx, cp, batchRows)
	switch {
	case err == nil && len(out) != len(batchRows):
		// Which rows' effects happened is anyone's guess.
		err = &unknownError{fmt.Errorf("processor returned %d results for %d rows", len(out), len(batchRows))}
	case err == nil:
		for j, res := range out {
			results[idx[j]] = res
		}
		return results, true
	}
	// The call as a whole failed: every row it carried shares the error.
	for _, i := range idx {
		results[i] = Result{Err: err}
	}
	return results, true
}

// callChunk turns a panic in ProcessChunk into an unknown outcome: some
// rows' effects may have happened before it.
func callChunk[T any](ctx context.Context, cp ChunkProcessor[T], batchRows []T) (out []Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &unknownError{fmt.Errorf("processor panicked: %v", v)}
		}
	}()
	return cp.ProcessChunk(ctx, batchRows)
}

func (r *registered[T]) transactional() bool { return r.tx != nil }

func (r *registered[T]) beforeImport(context.Context) error { return nil }

func (r *registered[T]) version() int64 { return 0 }

func (r *registered[T]) definition() string { return "" }

func (r *registered[T]) conventions(c rows.Conventions) rows.Conventions { return c }

func (r *registered[T]) keyed() bool { return r.k.KeyedEffects }

// processTx runs a TxProcessor in the flush's transaction. Any error for
// the whole call (a panic, a malformed answer) rolls the transaction back,
// so none of its effects happened.
func (r *registered[T]) processTx(ctx context.Context, tx Tx, m *rows.Mapping, leased []driver.LeasedRow) (results []Result, err error) {
	batchRows, idx, results := r.bindAll(m, leased)
	if len(batchRows) == 0 {
		return results, nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("processor panicked: %v", v)
		}
	}()
	out, err := r.tx.ProcessTx(ctx, tx, batchRows)
	if err != nil {
		return nil, err
	}
	if len(out) != len(batchRows) {
		return nil, fmt.Errorf("processor returned %d results for %d rows", len(out), len(batchRows))
	}
	for j, res := range out {
		results[idx[j]] = res
	}
	return results, nil
}

// effectRefs are the effect keys of leased rows: Kind.EffectKeyFunc of the
// bound row, or the row's place; a row that no longer binds gets its place.
// With digests, each has the SHA-256 of the row's cells, which only the
// claim of keyed effects needs (a hash per row otherwise wasted: 4% of an
// inline import's CPU).
func (r *registered[T]) effectRefs(tenant string, batchID int64, m *rows.Mapping, leased []driver.LeasedRow, digests bool) []driver.EffectRef {
	out := make([]driver.EffectRef, len(leased))
	for i, l := range leased {
		key, digest := defaultEffectKey(tenant, batchID, l.RowNo), ""
		if digests {
			digest = valuesDigest(l.Values)
		}
		if r.k.EffectKeyFunc != nil {
			var t T
			if errs := m.Bind(l.RowNo, l.Values, &t); len(errs) == 0 {
				if k, err := callKey(r.k.EffectKeyFunc, t); err == nil && k != "" {
					key = k
					// A key derived from the row outlives its file: the
					// payload is the row as bound, so the same customer in
					// a file with its columns in another order, or with
					// others the kind ignores, is the same payload.
					if digests {
						if b, err := json.Marshal(t); err == nil {
							digest = valuesDigest([]string{string(b)})
						}
					}
				}
			}
		}
		out[i] = driver.EffectRef{RowNo: l.RowNo, Key: key, Digest: digest}
	}
	return out
}

// reconcile asks the kind's ReconcileFunc about an unknown row.
func (r *registered[T]) reconcile(ctx context.Context, m *rows.Mapping, row int64, values []string) (id string, err error, ok bool) {
	if r.k.ReconcileFunc == nil {
		return "", nil, false
	}
	var t T
	if errs := m.Bind(row, values, &t); len(errs) > 0 {
		return "", Permanent(rows.FieldErrors(errs)), true
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("reconcile panicked: %v", v)
		}
	}()
	id, err = r.k.ReconcileFunc(ctx, t)
	return id, err, true
}

// Registry holds the kinds an engine knows, import and export kinds apart
// (one name may be both: customers in, customers out). It is filled before
// the engine starts and read-only afterwards.
type Registry struct {
	// mu guards kinds: dynamic kinds (RegisterDynamic) come and go while
	// the engine runs; Go kinds are registered before it starts.
	mu      sync.RWMutex
	kinds   map[string]kind
	exports map[string]exportKind
	// recalcs are the recalculation kinds' sources; each is also in kinds.
	recalcs map[string]recalcKind
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{kinds: map[string]kind{}, exports: map[string]exportKind{}}
}

// exportKind is a registered ExportKind with its row type erased.
type exportKind interface {
	info() KindInfo
	run(ctx context.Context, e *Engine, p ExportParams) (*batchtype.Batch, error)
}

type registeredExport[T any] struct {
	k       ExportKind[T]
	columns []rows.Column
}

func (r *registeredExport[T]) info() KindInfo {
	return KindInfo{Name: r.k.Name, Description: r.k.Description, Direction: DirectionExport, Columns: r.columns, Required: []string{}}
}

func (r *registeredExport[T]) run(ctx context.Context, e *Engine, p ExportParams) (*batchtype.Batch, error) {
	return Export(ctx, e, r.k, p)
}

// RegisterExport adds an export kind. It checks T's columns once and fails
// on a malformed type, a missing RowsFunc (or FilterRowsFunc) or a
// duplicate name.
func RegisterExport[T any](r *Registry, k ExportKind[T]) error {
	if k.Name == "" || (k.RowsFunc == nil && k.FilterRowsFunc == nil) {
		return fmt.Errorf("register export kind %q: it needs a Name and a RowsFunc or FilterRowsFunc", k.Name)
	}
	if r.HasExport(k.Name) {
		return fmt.Errorf("register export kind %q: already registered", k.Name)
	}
	b, err := rows.NewBinder(reflect.TypeFor[T]())
	if err != nil {
		return fmt.Errorf("register export kind %q: %w", k.Name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports[k.Name] = &registeredExport[T]{k: k, columns: b.Columns()}
	return nil
}

// ExportKinds lists the registered export kinds by name.
func (r *Registry) ExportKinds() []KindInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return infos(r.exports)
}

// infos lists the KindInfo of registered kinds, by name.
func infos[K interface{ info() KindInfo }](m map[string]K) []KindInfo {
	out := make([]KindInfo, 0, len(m))
	for _, k := range m {
		out = append(out, k.info())
	}
	slices.SortFunc(out, func(a, b KindInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// HasExport reports whether an export kind is registered.
func (r *Registry) HasExport(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.exports[name]
	return ok
}

// Export runs the registered export kind of that name (see the Export
// function).
func (e *Engine) Export(ctx context.Context, kind string, p ExportParams) (*batchtype.Batch, error) {
	e.registry.mu.RLock()
	k, ok := e.registry.exports[kind]
	e.registry.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (export)", ErrUnknownKind, kind)
	}
	return k.run(ctx, e, p)
}

// Register adds a kind. It inspects T once (tags, convention methods) and
// fails on a malformed type, a missing processor or a duplicate name.
func Register[T any](r *Registry, k Kind[T]) error {
	if k.Name == "" {
		return fmt.Errorf("register kind: empty name")
	}
	if r.Has(k.Name) {
		return fmt.Errorf("register kind %q: already registered", k.Name)
	}
	if k.Processor == nil || reflect.ValueOf(k.Processor).IsZero() {
		return fmt.Errorf("register kind %q: no processor", k.Name)
	}
	p, err := validate.New[T]()
	if err != nil {
		return fmt.Errorf("register kind %q: %w", k.Name, err)
	}
	s := kindSettings{chunkSize: k.ChunkSize, callRows: k.InlineCallRows, maxAttempts: k.MaxAttempts, timeout: k.Timeout, runGrace: k.RunGrace, backoff: k.BackoffFunc, maxInvalid: k.MaxInvalid, maxFailed: k.MaxFailed}
	s.defaults()
	reg := &registered[T]{k: k, pipeline: p, s: s}
	reg.tx, _ = k.Processor.(TxProcessor[T])
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds[k.Name] = reg
	return nil
}

func defaultBackoff(attempt int) time.Duration {
	d := time.Second << min(attempt-1, 20)
	return min(d, 5*time.Minute)
}

// names lists the import kinds' names.
func (r *Registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// transactionalNames lists the kinds whose processors write in the flush's
// transaction: their claims may be deferred (ChunkClaimParams.DeferKinds).
func (r *Registry) transactionalNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for n, k := range r.kinds {
		if k.transactional() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Kinds lists the registered import kinds by name.
func (r *Registry) Kinds() []KindInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return infos(r.kinds)
}

// Has reports whether a kind is registered, so callers can reject an
// unknown kind before they open anything.
func (r *Registry) Has(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.kinds[name]
	return ok
}

// IsRecalc reports whether a kind is a recalculation (RegisterRecalc),
// whose rows come from its source rather than a file.
func (r *Registry) IsRecalc(name string) bool {
	_, ok := r.recalcSource(name)
	return ok
}

func (r *Registry) lookup(name string) (kind, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.kinds[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownKind, name)
	}
	return k, nil
}

func joinQuoted(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", s)
	}
	return out
}
