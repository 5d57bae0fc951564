package storesql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
)

var _ driver.KindStore = (*Store)(nil)

// kindStatements are the statements of stored kind definitions.
type kindStatements struct {
	put, get, current, list, remove string
}

func newKindStatements(d *Dialect) kindStatements {
	const cols = `name, version, format, definition, created_at, removed_at`
	return kindStatements{
		// The next version is computed in the statement; two processes
		// putting at once collide on the primary key (ErrConflict).
		put: d.Expand(`INSERT INTO {t}kind_definitions (name, version, format, definition, created_at)
			SELECT $1, COALESCE(max(version), 0) + 1, $2, $3, {now} FROM {t}kind_definitions WHERE name = $1
			RETURNING ` + cols),
		get: d.Expand(`SELECT ` + cols + ` FROM {t}kind_definitions WHERE name = $1 AND version = $2`),
		current: d.Expand(`SELECT ` + cols + ` FROM {t}kind_definitions k WHERE name = $1
			AND version = (SELECT max(version) FROM {t}kind_definitions WHERE name = k.name) AND removed_at IS NULL`),
		list: d.Expand(`SELECT ` + cols + ` FROM {t}kind_definitions k
			WHERE version = (SELECT max(version) FROM {t}kind_definitions WHERE name = k.name) AND removed_at IS NULL ORDER BY name`),
		remove: d.Expand(`UPDATE {t}kind_definitions SET removed_at = {now} WHERE name = $1 AND removed_at IS NULL
			AND version = (SELECT max(version) FROM {t}kind_definitions WHERE name = $1)`),
	}
}

func scanKind(r interface{ Scan(...any) error }) (*batchtype.KindDefinition, error) {
	var (
		k                batchtype.KindDefinition
		created, removed Time
	)
	if err := r.Scan(&k.Name, &k.Version, &k.Format, &k.Definition, &created, &removed); err != nil {
		return nil, err
	}
	k.CreatedAt, k.RemovedAt = created.Time, removed.Ptr()
	return &k, nil
}

// KindPut stores the next version of a kind's definition.
func (s *Store) KindPut(ctx context.Context, p driver.KindPutParams) (*batchtype.KindDefinition, error) {
	if p.Format == "" {
		p.Format = "tableschema"
	}
	k, err := scanKind(s.drv.DB().QueryRow(ctx, s.k.put, p.Name, p.Format, p.Definition))
	if err != nil {
		return nil, fmt.Errorf("store kind %s: %w", p.Name, err)
	}
	return k, nil
}

// KindGet returns a version of a kind's definition, or its current one.
func (s *Store) KindGet(ctx context.Context, name string, version int64) (*batchtype.KindDefinition, error) {
	// One statement only: an unread row holds SQLite's one connection.
	var row Row
	if version > 0 {
		row = s.drv.DB().QueryRow(ctx, s.k.get, name, version)
	} else {
		row = s.drv.DB().QueryRow(ctx, s.k.current, name)
	}
	k, err := scanKind(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("kind %s: %w", name, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("kind %s: %w", name, err)
	}
	return k, nil
}

// KindList returns every kind's current definition.
func (s *Store) KindList(ctx context.Context) ([]batchtype.KindDefinition, error) {
	rs, err := s.drv.DB().Query(ctx, s.k.list)
	if err != nil {
		return nil, fmt.Errorf("list kinds: %w", err)
	}
	defer rs.Close()
	out := []batchtype.KindDefinition{}
	for rs.Next() {
		k, err := scanKind(rs)
		if err != nil {
			return nil, fmt.Errorf("list kinds: %w", err)
		}
		out = append(out, *k)
	}
	return out, rs.Close()
}

// KindRemove marks a kind's current version removed.
func (s *Store) KindRemove(ctx context.Context, name string) error {
	n, err := s.drv.DB().Exec(ctx, s.k.remove, name)
	if err != nil {
		return fmt.Errorf("remove kind %s: %w", name, err)
	}
	if n == 0 {
		return fmt.Errorf("kind %s: %w", name, driver.ErrNotFound)
	}
	return nil
}
