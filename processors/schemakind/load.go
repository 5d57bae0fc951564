package schemakind

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/schemarecalc"
	"github.com/rowfate/rowfate/tableschema"
)

// Definitions lists the current definition of every stored kind: a
// *batch.Engine.
type Definitions interface {
	KindList(ctx context.Context) ([]batchtype.KindDefinition, error)
}

// Load brings reg's stored kinds up to the database's: it registers the
// new and changed ones (an import and, for a schema with a table, an
// export; a recalculation file after the schema kind it names, again when
// that kind changed), unregisters the removed ones, and says how many
// changed. A stored definition that no longer parses or compiles (a newer
// build's), or a recalculation whose schema kind is gone, is skipped with
// a warning on logger: the other kinds still work. A store that keeps no
// kinds (batch.ErrNoService) has none to load.
// A worker or a service calls it now and then, so that kinds added,
// changed or removed by another process (batchctl kind add) are worked
// without a restart.
func Load(ctx context.Context, defs Definitions, reg *batch.Registry, cfg Config, logger *slog.Logger) (int, error) {
	ds, err := defs.KindList(ctx)
	if errors.Is(err, batch.ErrNoService) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the stored kinds: %w", err)
	}
	warn := func(d batchtype.KindDefinition, err error) {
		if logger != nil {
			logger.Warn("stored kind skipped", "kind", d.Name, "version", d.Version, "err", err)
		}
	}
	changed := 0
	stored := map[string]bool{}
	schemas := map[string]*tableschema.Schema{}
	fresh := map[string]bool{} // schema kinds registered by this call
	var recalcs []batchtype.KindDefinition
	for _, d := range ds {
		stored[d.Name] = true
		if d.Format == schemarecalc.Format {
			recalcs = append(recalcs, d)
			continue
		}
		s, err := tableschema.Parse([]byte(d.Definition), fmt.Sprintf("kind %s v%d", d.Name, d.Version))
		if err != nil {
			warn(d, err)
			continue
		}
		schemas[d.Name] = s
		if v, ok := reg.DynamicVersion(d.Name); ok && v == d.Version {
			continue
		}
		if err := RegisterAll(reg, s, d.Version, cfg); err != nil {
			warn(d, err)
			continue
		}
		fresh[d.Name] = true
		changed++
	}
	for _, d := range recalcs {
		n, err := loadRecalc(reg, d, schemas, fresh, cfg)
		if err != nil {
			warn(d, err)
			if _, ok := reg.DynamicRecalcVersion(d.Name); ok {
				reg.UnregisterDynamicRecalc(d.Name)
				changed++
			}
		}
		changed += n
	}
	for _, k := range reg.Kinds() {
		if _, dyn := reg.DynamicVersion(k.Name); dyn && !stored[k.Name] && k.Source != SourceFile {
			reg.UnregisterDynamic(k.Name)
			reg.UnregisterDynamicExport(k.Name)
			changed++
		}
		if _, rc := reg.DynamicRecalcVersion(k.Name); rc && !stored[k.Name] {
			reg.UnregisterDynamicRecalc(k.Name)
			changed++
		}
	}
	return changed, nil
}

// loadRecalc registers a stored recalculation file over its schema kind,
// unless the registered one is this version over the same schema; it
// says whether it registered (1) or not (0).
func loadRecalc(reg *batch.Registry, d batchtype.KindDefinition, schemas map[string]*tableschema.Schema, fresh map[string]bool, cfg Config) (int, error) {
	def, err := schemarecalc.Parse([]byte(d.Definition), fmt.Sprintf("kind %s v%d", d.Name, d.Version))
	if err != nil {
		return 0, err
	}
	if v, ok := reg.DynamicRecalcVersion(d.Name); ok && v == d.Version && !fresh[def.Kind] {
		return 0, nil
	}
	s, ok := schemas[def.Kind]
	if !ok {
		return 0, fmt.Errorf("its kind %s is not a stored schema kind", def.Kind)
	}
	rc, err := schemarecalc.New(def, s, schemarecalc.Config(cfg))
	if err != nil {
		return 0, err
	}
	if err := rc.Register(reg, d.Version); err != nil {
		return 0, err
	}
	return 1, nil
}
