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
	"github.com/rowfate/rowfate/where"
)

// ExportKind is the export of a schema's table: the importing tenant's
// rows (every row without x-tenant), in key order, in the schema's
// columns, so that the file imports again as the same kind. It takes
// filters (batch.ExportFilter): a where over the schema's fields, typed
// as the schema types them, and the rows of an import batch of the kind,
// whose result ids are the rows' keys (a schema without a primary key
// names no row, and refuses a batch).
func ExportKind(s *tableschema.Schema, cfg Config) (batch.DynamicExportKind, error) {
	c, err := tableschema.Compile(s)
	if err != nil {
		return batch.DynamicExportKind{}, err
	}
	var cols, order []string
	var filter []where.Column
	for _, f := range s.Fields {
		cols = append(cols, "CAST("+tableschema.QuoteName(f.Name)+" AS TEXT)")
		col := where.Column{Name: f.Name, Type: tableschema.WhereType(f.Type), SQL: tableschema.QuoteName(f.Name)}
		if f.Type == tableschema.TypeDatetime {
			// where has no datetime: it compares as the text the
			// export writes.
			col.SQL = cols[len(cols)-1]
		}
		filter = append(filter, col)
	}
	for _, k := range s.PrimaryKey {
		order = append(order, tableschema.QuoteName(k))
	}
	x := &schemaExport{s: s, cfg: cfg, c: c, filter: filter,
		sel: "SELECT " + strings.Join(cols, ", ") + " FROM " + tableschema.QuoteName(s.Table)}
	if len(order) > 0 {
		x.order = " ORDER BY " + strings.Join(order, ", ")
	}
	return batch.DynamicExportKind{
		Name: s.Name, Type: c.Type, ChunkSize: s.ChunkSize,
		Description:    fmt.Sprintf("the rows of the table %s, in the schema's columns", s.Table),
		CheckFilter:    x.check,
		FilterRowsFunc: x.rows,
	}, nil
}

// schemaExport reads a schema's table for an export.
type schemaExport struct {
	s   *tableschema.Schema
	cfg Config
	c   *tableschema.Compiled
	// filter are the columns a where may name: every field.
	filter []where.Column
	// sel and order are the query but for its conditions.
	sel, order string
}

// check refuses a where that does not read over the schema's fields, and
// a batch when no key names the rows a batch wrote.
func (x *schemaExport) check(f batch.ExportFilter) error {
	if f.BatchID != 0 && len(x.s.PrimaryKey) == 0 {
		return &batch.FilterError{Kind: x.s.Name, Option: batch.FilterBatch,
			Err: fmt.Errorf("the schema has no primary key, so its import batches name no row (their result id is %s)", KeylessID)}
	}
	_, err := x.parseWhere(f.Where)
	return err
}

func (x *schemaExport) parseWhere(text string) (*where.Expr, error) {
	e, err := where.Parse(text, x.filter)
	return e, where.WithColumns(err, x.filter)
}

// rows yields the tenant's rows the filter keeps, in key order.
func (x *schemaExport) rows(ctx context.Context, f batch.ExportFilter) iter.Seq2[reflect.Value, error] {
	return func(yield func(reflect.Value, error) bool) {
		e, err := x.parseWhere(f.Where)
		if err != nil {
			yield(reflect.Value{}, err)
			return
		}
		var args []any
		first := 1
		if x.s.Tenant {
			args, first = append(args, tenantOf(ctx)), 2
		}
		// Every value of the filter is a parameter: a filter cannot
		// inject SQL.
		cond, fargs := e.SQL(x.cfg.Dialect, first)
		args = append(args, fargs...)
		q := x.sel + " WHERE " + cond
		if x.s.Tenant {
			q += ` AND "tenant_id" = $1`
		}
		rs, err := x.cfg.DB.QueryContext(ctx, q+x.order, args...)
		if err != nil {
			yield(reflect.Value{}, fmt.Errorf("read %s: %w", x.s.Table, err))
			return
		}
		defer rs.Close()
		texts := make([]sql.NullString, len(x.s.Fields))
		dests := make([]any, len(texts))
		for i := range texts {
			dests[i] = &texts[i]
		}
		for rs.Next() {
			if err := rs.Scan(dests...); err != nil {
				yield(reflect.Value{}, fmt.Errorf("read %s: %w", x.s.Table, err))
				return
			}
			row := reflect.New(x.c.Type).Elem()
			var rowErr error
			for i, t := range texts {
				if err := x.c.Set(row, i, t.String); err != nil && rowErr == nil {
					rowErr = batch.Permanent(err)
				}
			}
			// A batch's rows are kept by their key, the result id its
			// import wrote: the set comes from the batch's store, which
			// need not be this database.
			if f.ResultIDs != nil && !f.ResultIDs[keyID(x.c, row)] {
				continue
			}
			if !yield(row, rowErr) {
				return
			}
		}
		if err := rs.Err(); err != nil {
			yield(reflect.Value{}, fmt.Errorf("read %s: %w", x.s.Table, err))
		}
	}
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
