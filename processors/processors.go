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
	"os"
	"strings"

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
	// WebhookStatusURL, when set with WebhookURL, is where customers-webhook
	// reconciles its unknown rows: a GET with the row's Idempotency-Key,
	// answered as httpcall.Processor.Reconcile documents (batchctl reads
	// $ROWFATE_WEBHOOK_STATUS_URL). Optional: without it, unknown rows are
	// settled by hand.
	WebhookStatusURL string
	// ExecCommand, when set, registers the customers-exec kind: each
	// customer row written as JSON to this program's stdin, its effect key
	// in ROWFATE_EFFECT_KEY, its id the first line the program prints
	// (processors/exec; batchctl reads $ROWFATE_EXEC_COMMAND).
	ExecCommand []string
	// ExecReconcileCommand, when set with ExecCommand, is the program
	// customers-exec runs to reconcile an unknown row: the row as
	// ExecCommand gets it, answering with an id, or exit 79 for an effect
	// that never happened (exec.Processor.Reconcile; batchctl reads
	// $ROWFATE_EXEC_RECONCILE_COMMAND). Optional: without it, unknown rows
	// are settled by hand.
	ExecReconcileCommand []string
	// ExecStateDir is where customers-exec records its runs under way, so
	// that a worker started after one that died kills what it left
	// running (exec.Config.StateDir, and its default; batchctl reads
	// $ROWFATE_EXEC_STATE_DIR).
	ExecStateDir string
}

// EnvConfig returns the settings of the external built-in kinds as
// batchctl reads them from the environment: $ROWFATE_WEBHOOK_URL,
// $ROWFATE_WEBHOOK_STATUS_URL, $ROWFATE_EXEC_COMMAND,
// $ROWFATE_EXEC_RECONCILE_COMMAND and $ROWFATE_EXEC_STATE_DIR. The
// programs are split at spaces (no quoting: a program whose arguments
// hold spaces is wrapped in a script). DB and Dialect are left for the
// caller.
func EnvConfig() Config {
	return Config{
		WebhookURL:           os.Getenv("ROWFATE_WEBHOOK_URL"),
		WebhookStatusURL:     os.Getenv("ROWFATE_WEBHOOK_STATUS_URL"),
		ExecCommand:          strings.Fields(os.Getenv("ROWFATE_EXEC_COMMAND")),
		ExecReconcileCommand: strings.Fields(os.Getenv("ROWFATE_EXEC_RECONCILE_COMMAND")),
		ExecStateDir:         os.Getenv("ROWFATE_EXEC_STATE_DIR"),
	}
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
		post, err := httpcall.New(httpcall.Config[customers.Customer]{URL: cfg.WebhookURL, StatusURL: cfg.WebhookStatusURL})
		if err != nil {
			return fmt.Errorf("%s: %w", WebhookKind, err)
		}
		var reconcile func(context.Context, customers.Customer) (string, error)
		if cfg.WebhookStatusURL != "" {
			reconcile = post.Reconcile
		}
		if err := registerExternal(reg, cfg, WebhookKind, "customers POSTed as JSON to $ROWFATE_WEBHOOK_URL, with Idempotency-Key", post, reconcile); err != nil {
			return err
		}
	}
	if len(cfg.ExecCommand) > 0 {
		run, err := exec.New(exec.Config[customers.Customer]{Command: cfg.ExecCommand, ReconcileCommand: cfg.ExecReconcileCommand, StateDir: cfg.ExecStateDir})
		if err != nil {
			return fmt.Errorf("%s: %w", ExecKind, err)
		}
		var reconcile func(context.Context, customers.Customer) (string, error)
		if len(cfg.ExecReconcileCommand) > 0 {
			reconcile = run.Reconcile
		}
		if err := registerExternal(reg, cfg, ExecKind, "customers written as JSON to the stdin of $ROWFATE_EXEC_COMMAND, one run per row", run, reconcile); err != nil {
			return err
		}
	}
	if err := batch.RegisterRecalc(reg, customers.TierKind(cfg.DB, cfg.Dialect)); err != nil {
		return err
	}
	return batch.RegisterExport(reg, customers.ExportKind(cfg.DB, cfg.Dialect))
}

// registerExternal registers a customers kind whose effect is outside the
// engine's database (an API, a program): keyed, so that the engine claims
// each row's effect key before the processor runs and the downstream
// applies each key once. The key is the row's own (EffectKey), so an
// identical row imported again is not sent again; reconcile, when set,
// is the kind's ReconcileFunc.
func registerExternal(reg *batch.Registry, cfg Config, name, desc string, p batch.Processor[customers.Customer], reconcile func(context.Context, customers.Customer) (string, error)) error {
	k := customers.Kind(cfg.DB, cfg.Dialect)
	kind := batch.Kind[customers.Customer]{
		Name: name, Description: desc, KeyedEffects: true,
		Processor: tenantKeys(p), EffectKeyFunc: EffectKey(name, k.KeyFunc),
		KeyFunc: k.KeyFunc, KeyName: k.KeyName, Example: k.Example,
	}
	if reconcile != nil {
		kind.ReconcileFunc = func(ctx context.Context, c customers.Customer) (string, error) {
			return reconcile(withTenantKey(ctx), c)
		}
	}
	return batch.Register(reg, kind)
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
