package batch

import (
	"context"
	"fmt"
	"iter"
)

// DynamicRecalc is a recalculation whose row type is built at run time,
// as a DynamicKind's is: a recalculation declared in a file beside a
// Table Schema rather than in Go (processors/schemarecalc builds one). Its
// rows come from its source and are then exactly a dynamic kind's:
// validated, stored, leased, written in the flush's transaction, counted,
// cancelled and re-run by the same rules.
type DynamicRecalc struct {
	// Kind is how the rows are validated and worked: its Type's columns
	// are the batch's, its ProcessTx writes them. Its Name is the
	// recalculation's. Required, as for RegisterDynamic.
	Kind DynamicKind
	// RowsFunc yields the rows to recompute for the tenant and the run's
	// parameters, each as the cells of Kind.Type's columns in order, in a
	// stable order, streaming. Its errors are as RecalcKind.RowsFunc's.
	// Required.
	RowsFunc func(ctx context.Context, tenant string, params map[string]string) iter.Seq2[[]string, error]
	// CheckParams rejects parameters before anything is read. Optional:
	// without it the recalculation takes none.
	CheckParams func(params map[string]string) error
}

// ErrNoMatch: a recalculation's source yielded no row, so there is
// nothing to recalculate and no batch was created. It is an
// ErrInvalidRequest (nothing was changed).
var ErrNoMatch = fmt.Errorf("%w: no row matches", ErrInvalidRequest)

// dynamicRecalc is a registered DynamicRecalc: the dynamic kind its rows
// are worked as, listed as a recalculation.
type dynamicRecalc struct {
	*dynamicKind
}

// dynamicRecalcSource is a DynamicRecalc's source, as the engine's
// Recalc reads it.
type dynamicRecalcSource struct{ k DynamicRecalc }

func (d *dynamicRecalc) info() KindInfo {
	i := d.dynamicKind.info()
	i.Direction = DirectionRecalc
	return i
}

func (s dynamicRecalcSource) check(params map[string]string) error {
	if s.k.CheckParams == nil {
		if len(params) > 0 {
			return fmt.Errorf("recalculation %s takes no parameters", s.k.Kind.Name)
		}
		return nil
	}
	return s.k.CheckParams(params)
}

func (s dynamicRecalcSource) rows(ctx context.Context, tenant string, params map[string]string) iter.Seq2[[]string, error] {
	return s.k.RowsFunc(ctx, tenant, params)
}

// RegisterDynamicRecalc adds a dynamic recalculation, or replaces the one
// of that name (a new version of its file): workers pick the new one up
// at their next chunk. Any other kind of that name is not replaced.
func RegisterDynamicRecalc(r *Registry, k DynamicRecalc) error {
	if k.RowsFunc == nil {
		return fmt.Errorf("register recalculation %q: no RowsFunc", k.Kind.Name)
	}
	// The kind is built as RegisterDynamic builds one, in a registry of
	// its own, so that both stay one code path.
	scratch := NewRegistry()
	if err := RegisterDynamic(scratch, k.Kind); err != nil {
		return err
	}
	d := &dynamicRecalc{dynamicKind: scratch.kinds[k.Kind.Name].(*dynamicKind)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.kinds[k.Kind.Name]; ok {
		if _, same := old.(*dynamicRecalc); !same {
			return fmt.Errorf("register recalculation %q: another kind has that name", k.Kind.Name)
		}
	}
	if r.recalcs == nil {
		r.recalcs = map[string]recalcKind{}
	}
	r.kinds[k.Kind.Name] = d
	r.recalcs[k.Kind.Name] = dynamicRecalcSource{k: k}
	return nil
}

// UnregisterDynamicRecalc removes a dynamic recalculation; any other kind
// of that name stays.
func (r *Registry) UnregisterDynamicRecalc(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.kinds[name].(*dynamicRecalc); ok {
		delete(r.kinds, name)
		delete(r.recalcs, name)
	}
}

// DynamicRecalcVersion returns the version of the dynamic recalculation
// of that name, and whether there is one.
func (r *Registry) DynamicRecalcVersion(name string) (int64, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.kinds[name].(*dynamicRecalc)
	if !ok {
		return 0, false
	}
	return d.k.Version, true
}

// recalcSource returns a recalculation's source under the registry's
// lock: dynamic recalculations come and go while the engine runs.
func (r *Registry) recalcSource(name string) (recalcKind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rk, ok := r.recalcs[name]
	return rk, ok
}
