// Package migrations holds the embedded SQL schema of each store engine and
// the rules for applying it. The stores' shared runner (store/internal/storesql)
// applies the pending steps in one transaction under an exclusive lock
// (pg_advisory_xact_lock on the schema on PostgreSQL, BEGIN IMMEDIATE on
// SQLite), so that any number of processes starting at once on an empty
// database all succeed and each step is applied exactly once. On
// PostgreSQL the steps run with the engine's schema as search_path, so
// they name their tables unqualified.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Engine names a store engine whose migrations are embedded here.
type Engine string

// The engines.
const (
	Postgres Engine = "postgres"
	SQLite   Engine = "sqlite"
)

// Migration is one schema step. Steps are append-only: once released, a
// step's SQL never changes; a fix is a new step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load returns the engine's migrations in version order. File names are
// NNNN_name.sql.
func Load(engine Engine) ([]Migration, error) {
	entries, err := fs.ReadDir(files, string(engine))
	if err != nil {
		return nil, fmt.Errorf("migrations for %s: %w", engine, err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s/%s: name is not NNNN_name.sql", engine, name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migration %s: version %d used by %s and %s", engine, v, prev, name)
		}
		seen[v] = name
		b, err := files.ReadFile(path.Join(string(engine), name))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Pending returns the migrations whose version is not in applied, in order.
func Pending(all []Migration, applied map[int]bool) []Migration {
	var out []Migration
	for _, m := range all {
		if !applied[m.Version] {
			out = append(out, m)
		}
	}
	return out
}
