// Package batchctl is the batchctl command as a library, so that a team
// runs its own import, export and recalc kinds with every command —
// import, worker, serve and the rest — without forking the CLI:
//
//	func main() {
//		batchctl.Main(func(ctx context.Context, reg *batch.Registry, db batchctl.Database) error {
//			// The built-in kinds, if wanted (cmd/batchctl also creates
//			// their table when db.Setup):
//			if err := processors.Register(reg, processors.Config{DB: db.DB, Dialect: db.Dialect}); err != nil {
//				return err
//			}
//			return orders.Register(reg, db.DB) // the team's own kinds
//		})
//	}
//
// The kinds are registered through a function, not as a finished
// registry, because they need the database the command line names
// (--database, $DATABASE_URL): the command opens it, then asks the
// program for its kinds. cmd/batchctl is this program with the built-in
// kinds. `batchctl help` lists the commands; ARCHITECTURE.md at the
// repository root describes the engine behind them.
package batchctl

import (
	"context"
	"database/sql"
	"os"
	"os/signal"
	"syscall"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
)

// Database is the engine's database as a command opened it, handed to a
// RegisterFunc so that kinds which read or write it can be built.
type Database struct {
	// DB is the database. It is nil for a command that runs no processor
	// and may have no database at all: kinds, preview, template, a dry
	// run. A kind registered with a nil DB must not use it.
	DB *sql.DB
	// Dialect is DB's SQL flavour.
	Dialect batchtype.Dialect
	// Setup is true when the command may create tables: it has just
	// brought the engine's schema up to date. A kind creates its own
	// tables then (processors.EnsureSchema), never for a read-only command
	// such as status or rows, which may run on a read-only file.
	Setup bool
}

// RegisterFunc adds a program's kinds to reg for the database db. A
// command calls it once per database it opens, and once with an empty
// Database when it needs only the kinds' names and columns.
type RegisterFunc func(ctx context.Context, reg *batch.Registry, db Database) error

// Main runs batchctl on the process's arguments and streams with the
// kinds register adds, stops at SIGINT or SIGTERM, and exits with
// batchctl's exit code. It does not return.
func Main(register RegisterFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, register, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
