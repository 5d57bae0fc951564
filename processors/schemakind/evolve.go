package schemakind

import (
	"context"
	"fmt"
	"strings"

	"github.com/rowfate/rowfate/tableschema"
)

// AddColumns returns the statements that give an existing table the
// columns a schema has and the table lacks: each added nullable, so that
// the rows already there (which have no value for it) stay valid. A new
// version of a stored kind that adds fields needs them. Nothing else is
// ever changed: a column the schema dropped, or one whose type differs,
// is left for a person (CheckTable names it). None when the table has
// every column, or does not exist.
func AddColumns(ctx context.Context, cfg Config, s *tableschema.Schema) ([]string, error) {
	cols, err := columns(ctx, cfg, s.Table)
	if err != nil || len(cols) == 0 {
		return nil, err
	}
	have := map[string]bool{}
	for _, c := range cols {
		have[strings.ToLower(c.name)] = true
	}
	var out []string
	if s.Tenant && !have["tenant_id"] {
		// A shared table made per tenant would need every row's tenant: a
		// person decides that, not a default.
		return nil, fmt.Errorf("%w %s: no column tenant_id, which a per-tenant schema needs (x-tenant); a table every tenant shares says x-tenant: false", ErrTable, s.Table)
	}
	for _, f := range s.Fields {
		if !have[strings.ToLower(f.Name)] {
			out = append(out, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", tableschema.QuoteName(s.Table), tableschema.QuoteName(f.Name), sqlType(cfg.Dialect, f.Type)))
		}
	}
	return out, nil
}

// ApplyColumns runs AddColumns' statements in one transaction, then checks
// the table against the schema.
func ApplyColumns(ctx context.Context, cfg Config, s *tableschema.Schema, stmts []string) error {
	tx, err := cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return CheckTable(ctx, cfg, s)
}
