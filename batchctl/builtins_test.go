package batchctl

import (
	"context"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors"
)

// builtins is cmd/batchctl's RegisterFunc, for the tests that call Run:
// the built-in kinds, the external ones as the environment sets them.
func builtins(ctx context.Context, reg *batch.Registry, db Database) error {
	cfg := processors.EnvConfig()
	cfg.DB, cfg.Dialect = db.DB, db.Dialect
	if db.Setup {
		if err := processors.EnsureSchema(ctx, cfg); err != nil {
			return err
		}
	}
	return processors.Register(reg, cfg)
}
