package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/sqlite"
)

// app is a wired engine: a migrated store, the registry of kinds and the
// database handle the demo processors write to.
type app struct {
	store  batch.Store
	engine *batch.Engine
	// db is the database the demo kinds read and write (the customers
	// table): the store's own.
	db    *sql.DB
	close func()
}

// registry registers the kinds batchctl knows, with their processors
// writing to db. db may be nil when no processor will run (listing kinds).
func registry(db *sql.DB, d customers.Dialect) (*batch.Registry, error) {
	reg := batch.NewRegistry()
	if err := batch.Register(reg, customers.Kind(db, d)); err != nil {
		return nil, err
	}
	return reg, nil
}

// errNoDatabase: a read-only command named a SQLite file that does not exist.
var errNoDatabase = errors.New("no such database")

// open connects to the database, migrates it and wires the engine. Unless
// create is set, a missing SQLite file is an error rather than a new empty
// database: `batchctl status 7` on the wrong path should say so.
func (e *env) open(ctx context.Context, create bool) (*app, error) {
	var (
		store   batch.Store
		db      *sql.DB
		dialect customers.Dialect
		closers []func()
	)
	if isPostgres(e.database) {
		pool, err := pgxpool.New(ctx, e.database)
		if err != nil {
			return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		schema := strings.TrimSpace(strings.Split(pool.Config().ConnConfig.RuntimeParams["search_path"], ",")[0])
		store, db, dialect = postgres.New(pool, &postgres.Config{Schema: schema}), stdlib.OpenDBFromPool(pool), customers.Postgres
		closers = append(closers, func() { db.Close() }, pool.Close)
	} else {
		path := strings.TrimPrefix(strings.TrimPrefix(e.database, "sqlite://"), "sqlite:")
		if _, err := os.Stat(path); !create && errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s (import a file first, or pass --database)", errNoDatabase, path)
		}
		s, err := sqlite.Open(path)
		if err != nil {
			return nil, err
		}
		store, db, dialect = s, s.DB(), customers.SQLite
		closers = append(closers, func() { s.Close() })
	}
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	if err := store.Migrate(ctx); err != nil {
		closeAll()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if err := customers.EnsureSchema(ctx, db, dialect); err != nil {
		closeAll()
		return nil, err
	}
	reg, err := registry(db, dialect)
	if err != nil {
		closeAll()
		return nil, err
	}
	eng, err := batch.NewEngine(batch.Config{Store: store, Registry: reg, Logger: e.logger, WorkerName: "batchctl"})
	if err != nil {
		closeAll()
		return nil, err
	}
	return &app{store: store, engine: eng, db: db, close: closeAll}, nil
}
