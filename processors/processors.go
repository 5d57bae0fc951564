// Package processors is the one place that wires the built-in kinds: a CLI,
// a service, a worker binary or a user's own program registers every
// built-in import and export kind with one call, instead of copying the
// wiring.
//
// Each kind lives in its own package below this one (processors/customers).
// ARCHITECTURE.md at the repository root describes how kinds fit the engine.
package processors

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/processors/exec"
	"github.com/rowfate/rowfate/processors/httpcall"
)

// Config is what the built-in kinds need to run.
type Config struct {
	// DB is the database the built-in kinds read and write (the demo
	// customers table), the engine's own. It may be nil when no processor
	// or export will run: listing kinds, a dry run, a template.
	DB *sql.DB
	// Dialect is DB's SQL flavour. Defaults to customers.SQLite.
	Dialect customers.Dialect
	// WebhookURL, when set, registers the customers-webhook kind: customer
	// rows POSTed as JSON to this URL, each with its effect key as
	// Idempotency-Key (batchctl reads $ROWFATE_WEBHOOK_URL).
	WebhookURL string
	// ExecCommand, when set, registers the customers-exec kind: each
	// customer row written as JSON to this program's stdin, its effect key
	// in ROWFATE_EFFECT_KEY, its id the first line the program prints
	// (processors/exec; batchctl reads $ROWFATE_EXEC_COMMAND).
	ExecCommand []string
}

// WebhookKind is the name of the kind that posts customers to a URL.
const WebhookKind = "customers-webhook"

// ExecKind is the name of the kind that runs a program per customer.
const ExecKind = "customers-exec"

// Register adds every built-in import and export kind to reg.
func Register(reg *batch.Registry, cfg Config) error {
	if cfg.Dialect == "" {
		cfg.Dialect = customers.SQLite
	}
	if err := batch.Register(reg, customers.Kind(cfg.DB, cfg.Dialect)); err != nil {
		return err
	}
	if cfg.WebhookURL != "" {
		post, err := httpcall.New(httpcall.Config[customers.Customer]{URL: cfg.WebhookURL})
		if err != nil {
			return fmt.Errorf("%s: %w", WebhookKind, err)
		}
		// An external effect: the engine claims each row's key first, and
		// the downstream applies each key once.
		k := customers.Kind(cfg.DB, cfg.Dialect)
		if err := batch.Register(reg, batch.Kind[customers.Customer]{
			Name: WebhookKind, Description: "customers POSTed as JSON to $ROWFATE_WEBHOOK_URL, with Idempotency-Key",
			Processor: post, KeyedEffects: true, KeyFunc: k.KeyFunc, KeyName: k.KeyName, Example: k.Example,
		}); err != nil {
			return err
		}
	}
	if len(cfg.ExecCommand) > 0 {
		run, err := exec.New(exec.Config[customers.Customer]{Command: cfg.ExecCommand})
		if err != nil {
			return fmt.Errorf("%s: %w", ExecKind, err)
		}
		// The program's effect is its own: like a webhook's, it is keyed,
		// and a program that passes the key on makes it happen once.
		k := customers.Kind(cfg.DB, cfg.Dialect)
		if err := batch.Register(reg, batch.Kind[customers.Customer]{
			Name: ExecKind, Description: "customers written as JSON to the stdin of $ROWFATE_EXEC_COMMAND, one run per row",
			Processor: run, KeyedEffects: true, KeyFunc: k.KeyFunc, KeyName: k.KeyName, Example: k.Example,
		}); err != nil {
			return err
		}
	}
	if err := batch.RegisterRecalc(reg, customers.TierKind(cfg.DB, cfg.Dialect)); err != nil {
		return err
	}
	return batch.RegisterExport(reg, customers.ExportKind(cfg.DB))
}

// Registry returns a new registry with every built-in kind.
func Registry(cfg Config) (*batch.Registry, error) {
	reg := batch.NewRegistry()
	if err := Register(reg, cfg); err != nil {
		return nil, err
	}
	return reg, nil
}

// EnsureSchema creates the tables the built-in kinds write (the customers
// table), for commands that will run processors. Read-only commands do
// not call it.
func EnsureSchema(ctx context.Context, cfg Config) error {
	if cfg.Dialect == "" {
		cfg.Dialect = customers.SQLite
	}
	return customers.EnsureSchema(ctx, cfg.DB, cfg.Dialect)
}
