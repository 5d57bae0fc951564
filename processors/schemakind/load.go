package schemakind

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/tableschema"
)

// Definitions lists the current definition of every stored kind: a
// *batch.Engine.
type Definitions interface {
	KindList(ctx context.Context) ([]batchtype.KindDefinition, error)
}

// Load brings reg's stored kinds up to the database's: it registers the
// new and changed ones (an import and, for a schema with a table, an
// export), unregisters the removed ones, and says how many changed. A
// stored definition that no longer parses or compiles (a newer build's)
// is skipped with a warning on logger: the other kinds still work. A
// store that keeps no kinds (batch.ErrNoService) has none to load.
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
	changed := 0
	stored := map[string]bool{}
	for _, d := range ds {
		stored[d.Name] = true
		if v, ok := reg.DynamicVersion(d.Name); ok && v == d.Version {
			continue
		}
		s, err := tableschema.Parse([]byte(d.Definition), fmt.Sprintf("kind %s v%d", d.Name, d.Version))
		if err == nil {
			err = RegisterAll(reg, s, d.Version, cfg)
		}
		if err != nil {
			if logger != nil {
				logger.Warn("stored kind skipped", "kind", d.Name, "version", d.Version, "err", err)
			}
			continue
		}
		changed++
	}
	for _, k := range reg.Kinds() {
		if _, dyn := reg.DynamicVersion(k.Name); dyn && !stored[k.Name] && k.Source != SourceFile {
			reg.UnregisterDynamic(k.Name)
			reg.UnregisterDynamicExport(k.Name)
			changed++
		}
	}
	return changed, nil
}
