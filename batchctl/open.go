package batchctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/schemakind"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/sqlite"
)

// defaultDatabase is the embedded default: a SQLite file in the working
// folder.
const defaultDatabase = "rowfate.db"

// target is a --database value understood: a PostgreSQL connection string
// or a SQLite file.
type target struct {
	postgres bool
	// conn is the PostgreSQL connection string (URL or key=value).
	conn string
	// path is the SQLite file.
	path string
}

// keyValue matches the start of a libpq key=value connection string.
var keyValue = regexp.MustCompile(`^\s*[a-z_]+\s*=`)

// parseDatabase reads a --database value. It accepts postgres:// and
// postgresql:// URLs and libpq key=value strings for PostgreSQL, and for
// SQLite a path ending in .db, .sqlite or .sqlite3, or file:PATH (also
// sqlite:PATH). Anything else is an error rather than a SQLite file named
// after a mistyped connection string.
func parseDatabase(v string) (target, error) {
	switch {
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		return target{postgres: true, conn: v}, nil
	case keyValue.MatchString(v):
		return target{postgres: true, conn: v}, nil
	}
	for _, prefix := range []string{"sqlite://", "sqlite:", "file:"} {
		if p, ok := strings.CutPrefix(v, prefix); ok && p != "" {
			return target{path: p}, nil
		}
	}
	lower := strings.ToLower(v)
	for _, ext := range []string{".db", ".sqlite", ".sqlite3"} {
		if strings.HasSuffix(lower, ext) && len(v) > len(ext) {
			return target{path: v}, nil
		}
	}
	return target{}, usagef("--database %q is neither a PostgreSQL connection string (postgres://..., or host=... dbname=...) "+
		"nor a SQLite file (a path ending in .db or .sqlite, or file:PATH)", v)
}

// database returns the target of --database, $DATABASE_URL or the default.
func (c *cli) database() (target, error) {
	v := c.global.database
	if !c.global.databaseFlag || v == "" {
		v = os.Getenv("DATABASE_URL")
	}
	if v == "" {
		v = defaultDatabase
	}
	c.global.database = v
	return parseDatabase(v)
}

// openMode says what a command may do to the database.
type openMode int

const (
	// readOnly: create nothing, migrate nothing; the file may be read-only.
	readOnly openMode = iota
	// readWrite: the database must exist; bring its schema up to date.
	readWrite
	// create: create the database if needed and bring its schema up to date.
	create
)

// app is a wired engine: a store, the registry of kinds and the database
// handle the built-in kinds use.
type app struct {
	store  batch.Store
	engine *batch.Engine
	// kinds is where schema kinds' tables are: the engine's database.
	kinds schemakind.Config
	close func()
}

// errNoDatabase: a command that does not create one named a SQLite file
// that does not exist.
var errNoDatabase = errors.New("no such database")

// open connects to the database and wires the engine with every built-in
// kind. Only mode create makes a new SQLite file, and readOnly neither
// creates nor migrates anything.
func (c *cli) open(ctx context.Context, mode openMode) (*app, error) {
	t, err := c.database()
	if err != nil {
		return nil, err
	}
	var (
		store   batch.Store
		db      Database
		closers []func()
	)
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if t.postgres {
		cfg, err := pgxpool.ParseConfig(t.conn)
		if err != nil {
			return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		postgres.ConfigurePool(cfg)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		schema := c.global.schema
		if schema == "" {
			schema = os.Getenv("ROWFATE_PG_SCHEMA")
		}
		if schema == "" {
			// ?search_path= (or search_path=...) names the schema too.
			schema = strings.TrimSpace(strings.Split(pool.Config().ConnConfig.RuntimeParams["search_path"], ",")[0])
		}
		sqlDB := stdlib.OpenDBFromPool(pool)
		closers = append(closers, pool.Close, func() { sqlDB.Close() })
		store = postgres.New(pool, &postgres.Config{Schema: schema, TenantRole: c.tenantRole})
		db = Database{DB: sqlDB, Dialect: batchtype.Postgres}
	} else {
		s, err := c.openSQLite(t.path, mode)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { s.Close() })
		store = s
		db = Database{DB: s.DB(), Dialect: batchtype.SQLite}
	}
	if err := c.prepareSchema(ctx, store, mode); err != nil {
		closeAll()
		return nil, err
	}
	if ps, ok := store.(*postgres.Store); ok && c.tenantRole != "" {
		if err := ps.EnsureTenantRole(ctx); err != nil {
			closeAll()
			return nil, fmt.Errorf("--tenant-role %s: %w", c.tenantRole, err)
		}
	}
	db.Setup = mode != readOnly
	reg, err := c.registerKinds(ctx, db)
	if err != nil {
		closeAll()
		return nil, err
	}
	kinds := schemakind.Config{DB: db.DB, Dialect: db.Dialect}
	eng, err := batch.NewEngine(batch.Config{Store: store, Registry: reg, Logger: c.logger, WorkerName: "batchctl", LeaseDuration: c.lease})
	if err != nil {
		closeAll()
		return nil, err
	}
	a := &app{store: store, engine: eng, kinds: kinds, close: closeAll}
	if _, err := c.loadKinds(ctx, a); err != nil {
		closeAll()
		return nil, err
	}
	return a, nil
}

func (c *cli) openSQLite(path string, mode openMode) (*sqlite.Store, error) {
	if mode != create {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s (import a file first, or pass --database)", errNoDatabase, path)
		}
	}
	if mode == readOnly {
		return sqlite.OpenReadOnly(path)
	}
	return sqlite.Open(path)
}

// prepareSchema migrates (readWrite, create) or checks (readOnly) the
// schema; a read-only command on a schema that is missing, behind or ahead
// says so and what to run.
func (c *cli) prepareSchema(ctx context.Context, store batch.Store, mode openMode) error {
	if mode != readOnly {
		if err := store.Migrate(ctx); err != nil {
			return fmt.Errorf("migrate %s: %w", c.global.database, err)
		}
		return nil
	}
	st, err := store.SchemaStatus(ctx)
	if err != nil {
		return err
	}
	switch {
	case st.Current == 0:
		return fmt.Errorf("%s has no rowfate tables: import a file first, or run `batchctl migrate%s`", c.where(), c.hint())
	case st.Current < st.Latest:
		return fmt.Errorf("the schema of %s is at version %d, this batchctl needs %d: run `batchctl migrate%s`", c.where(), st.Current, st.Latest, c.hint())
	case st.Current > st.Latest:
		return fmt.Errorf("%w: %s has migration %d, this build knows up to %d; upgrade batchctl", batch.ErrSchemaNewer, c.where(), st.Current, st.Latest)
	}
	return nil
}

// where names the database in messages without printing a password.
func (c *cli) where() string {
	t, _ := parseDatabase(c.global.database)
	if !t.postgres {
		return t.path
	}
	if cfg, err := pgxpool.ParseConfig(t.conn); err == nil {
		return fmt.Sprintf("PostgreSQL database %s on %s", cfg.ConnConfig.Database, cfg.ConnConfig.Host)
	}
	return "the PostgreSQL database"
}

// registerKinds returns a registry with the program's kinds for db.
func (c *cli) registerKinds(ctx context.Context, db Database) (*batch.Registry, error) {
	reg := batch.NewRegistry()
	if c.register == nil {
		return reg, nil
	}
	if err := c.register(ctx, reg, db); err != nil {
		return nil, fmt.Errorf("register kinds: %w", err)
	}
	return reg, nil
}

// registry returns the program's kinds without a database, for commands
// that run no processor (kinds, preview, template, a dry run).
func (c *cli) registry(ctx context.Context) (*batch.Registry, error) {
	return c.registerKinds(ctx, Database{})
}

// loadKinds brings the app's stored kinds up to the database's
// (schemakind.Load) and says how many changed.
func (c *cli) loadKinds(ctx context.Context, a *app) (int, error) {
	return schemakind.Load(ctx, a.engine, a.engine.Registry(), a.kinds, c.logger)
}

// watchKinds reloads the stored kinds every period until ctx is done, so
// that a long-running worker or service learns of kinds added, changed or
// removed (batchctl kind add) without a restart.
func (c *cli) watchKinds(ctx context.Context, a *app, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := c.loadKinds(ctx, a)
		switch {
		case err != nil && ctx.Err() == nil:
			c.logger.Warn("reload stored kinds", "err", err)
		case n > 0:
			c.logger.Info("stored kinds reloaded", "changed", n)
		}
	}
}

// registryWith returns the program's kinds and, when kind is not one of
// them and a database exists, the database's stored kinds too, for
// commands that run no processor (a dry run, a preview, a template).
func (c *cli) registryWith(ctx context.Context, kind string) (*batch.Registry, error) {
	reg, err := c.registry(ctx)
	if err != nil || kind == "" || reg.Has(kind) || reg.HasExport(kind) {
		return reg, err
	}
	app, err := c.open(ctx, readOnly)
	if err != nil {
		// No database, or none of ours: the built-in kinds are all there is.
		return reg, nil
	}
	defer app.close()
	return app.engine.Registry(), nil
}

// startupPatience is how long a long-running command (worker, serve) keeps
// trying to open a database that is restarting or out of reach before it
// gives up: a supervisor that starts workers with the database (or a
// failover) should not have to restart them too.
const startupPatience = time.Minute

// openPatiently is open for the long-running commands: a transient error
// (the database restarting, a connection cut or refused) is retried with
// backoff for startupPatience, each logged; any other error (a wrong
// password, a newer schema) ends it at once.
func (c *cli) openPatiently(ctx context.Context, mode openMode) (*app, error) {
	deadline := time.Now().Add(startupPatience)
	wait := 200 * time.Millisecond
	for {
		a, err := c.open(ctx, mode)
		if err == nil || !startupTransient(err) || time.Now().Add(wait).After(deadline) {
			return a, err
		}
		c.logger.Warn("database not ready; retrying", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// startupTransient reports whether err, from open, may clear on its own:
// a store's transient error, or one pgx returned while connecting that
// postgres.IsTransient says a retry may clear (a refused or cut
// connection, a server starting up). Authentication or a missing database
// does not.
func startupTransient(err error) bool {
	return errors.Is(err, batch.ErrTransient) || postgres.IsTransient(err)
}
