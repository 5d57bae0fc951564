package schemakind

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"reflect"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/tableschema"
)

// ExportKind is the export of a schema's table: the importing tenant's
// rows (every row without x-tenant), in key order, in the schema's
// columns, so that the file imports again as the same kind.
func ExportKind(s *tableschema.Schema, cfg Config) (batch.DynamicExportKind, error) {
	c, err := tableschema.Compile(s)
	if err != nil {
		return batch.DynamicExportKind{}, err
	}
	var cols, order []string
	for _, f := range s.Fields {
		cols = append(cols, "CAST("+tableschema.QuoteName(f.Name)+" AS TEXT)")
	}
	for _, k := range s.PrimaryKey {
		order = append(order, tableschema.QuoteName(k))
	}
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + tableschema.QuoteName(s.Table)
	if s.Tenant {
		q += ` WHERE "tenant_id" = $1`
	}
	if len(order) > 0 {
		q += " ORDER BY " + strings.Join(order, ", ")
	}
	return batch.DynamicExportKind{
		Name: s.Name, Description: fmt.Sprintf("the rows of the table %s, in the schema's columns", s.Table), Type: c.Type, ChunkSize: s.ChunkSize,
		RowsFunc: func(ctx context.Context) iter.Seq2[reflect.Value, error] {
			return func(yield func(reflect.Value, error) bool) {
				var args []any
				if s.Tenant {
					args = append(args, tenantOf(ctx))
				}
				rs, err := cfg.DB.QueryContext(ctx, q, args...)
				if err != nil {
					yield(reflect.Value{}, fmt.Errorf("read %s: %w", s.Table, err))
					return
				}
				defer rs.Close()
				texts := make([]sql.NullString, len(s.Fields))
				dests := make([]any, len(texts))
				for i := range texts {
					dests[i] = &texts[i]
				}
				for rs.Next() {
					if err := rs.Scan(dests...); err != nil {
						yield(reflect.Value{}, fmt.Errorf("read %s: %w", s.Table, err))
						return
					}
					row := reflect.New(c.Type).Elem()
					var rowErr error
					for i, t := range texts {
						if err := c.Set(row, i, t.String); err != nil && rowErr == nil {
							rowErr = batch.Permanent(err)
						}
					}
					if !yield(row, rowErr) {
						return
					}
				}
				if err := rs.Err(); err != nil {
					yield(reflect.Value{}, fmt.Errorf("read %s: %w", s.Table, err))
				}
			}
		},
	}, nil
}

// RegisterAll adds (or replaces) a schema's import and export kinds.
func RegisterAll(reg *batch.Registry, s *tableschema.Schema, version int64, cfg Config) error {
	if err := Register(reg, s, version, cfg); err != nil {
		return err
	}
	ek, err := ExportKind(s, cfg)
	if err != nil {
		return err
	}
	return batch.RegisterDynamicExport(reg, ek)
}
