// Command batchctl imports files into rowfate batches, works their rows and
// reads every row's outcome back, with the built-in kinds. `batchctl help`
// lists the commands and `batchctl help COMMAND` explains one. It is the
// library package batchctl with the built-in kinds (processors): a program
// of your own with your own kinds is the same few lines.
package main

import (
	"context"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchctl"
	"github.com/rowfate/rowfate/processors"
)

func main() {
	batchctl.Main(builtins)
}

// builtins registers every built-in kind; the external ones
// (customers-webhook, customers-exec) when the environment configures
// them.
func builtins(ctx context.Context, reg *batch.Registry, db batchctl.Database) error {
	cfg := processors.EnvConfig()
	cfg.DB, cfg.Dialect = db.DB, db.Dialect
	if db.Setup {
		if err := processors.EnsureSchema(ctx, cfg); err != nil {
			return err
		}
	}
	return processors.Register(reg, cfg)
}
