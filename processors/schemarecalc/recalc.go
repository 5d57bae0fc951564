package schemarecalc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strconv"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/tableschema"
	"github.com/rowfate/rowfate/where"
)

// The SQL dialects, as batch.Tx.Engine names them.
const (
	Postgres = batchtype.Postgres
	SQLite   = batchtype.SQLite
)

// Config is where the table lives: the engine's own database. It has
// schemakind.Config's fields, so one converts to the other.
type Config struct {
	DB      *sql.DB
	Dialect batchtype.Dialect
}

// Recalc is a definition bound to its schema kind, ready to run.
type Recalc struct {
	def    *Definition
	schema *tableschema.Schema
	cfg    Config
	// c is the batch rows' type: the key columns, then the where
	// columns, all text as the database writes them.
	c *tableschema.Compiled
	// keys and cols are the batch rows' columns: key first.
	keys, cols []string
	filter     []where.Column
}

// New binds a definition to its schema kind (Bind) and builds its row
// type. A call is refused on SQLite, which has no stored functions.
func New(d *Definition, s *tableschema.Schema, cfg Config) (*Recalc, error) {
	if err := Bind(d, s, ""); err != nil {
		return nil, err
	}
	if d.Call != "" && cfg.Dialect == SQLite {
		return nil, fmt.Errorf("recalculation %s: call needs PostgreSQL (SQLite has no stored functions): write set instead", d.Name)
	}
	r := &Recalc{def: d, schema: s, cfg: cfg, keys: s.PrimaryKey}
	rs := &tableschema.Schema{Name: d.Name, Table: s.Table, Tenant: s.Tenant, PrimaryKey: s.PrimaryKey, Mode: tableschema.ModeUpdate}
	for _, k := range s.PrimaryKey {
		rs.Fields = append(rs.Fields, tableschema.Field{Name: k, Type: tableschema.TypeString, Constraints: tableschema.Constraints{Required: true}})
		r.cols = append(r.cols, k)
	}
	for _, w := range d.Where {
		f := s.Field(w)
		r.filter = append(r.filter, where.Column{Name: w, Type: tableschema.WhereType(f.Type), SQL: tableschema.QuoteName(w)})
		if rs.Field(w) == nil {
			rs.Fields = append(rs.Fields, tableschema.Field{Name: w, Type: tableschema.TypeString})
			r.cols = append(r.cols, w)
		}
	}
	c, err := tableschema.Compile(rs)
	if err != nil {
		return nil, fmt.Errorf("recalculation %s: %w", d.Name, err)
	}
	r.c = c
	return r, nil
}

// Kind is the recalculation as the engine registers it, at a version of
// its file.
func (r *Recalc) Kind(version int64) batch.DynamicRecalc {
	desc := r.def.Description
	if desc == "" {
		desc = fmt.Sprintf("recalculate rows of the table %s", r.schema.Table)
	}
	if len(r.def.Where) > 0 {
		desc += fmt.Sprintf(" (parameter where: a filter on %s)", where.Columns(r.filter))
	}
	return batch.DynamicRecalc{
		Kind: batch.DynamicKind{
			Name: r.def.Name, Description: desc, Version: version,
			Source: fmt.Sprintf("recalc v%d of %s", version, r.def.Kind),
			Type:   r.c.Type, Validation: r.c.Options, ProcessTx: r.process,
		},
		RowsFunc:    r.rows,
		CheckParams: func(p map[string]string) error { _, err := r.parseWhere(p); return err },
	}
}

// Register adds (or replaces) the recalculation in a registry.
func (r *Recalc) Register(reg *batch.Registry, version int64) error {
	return batch.RegisterDynamicRecalc(reg, r.Kind(version))
}

// parseWhere reads the where parameter against the allowed columns.
func (r *Recalc) parseWhere(params map[string]string) (*where.Expr, error) {
	for k := range params {
		if k != "where" {
			return nil, fmt.Errorf("unknown parameter %q (recalculation %s takes where=...)", k, r.def.Name)
		}
	}
	if params["where"] != "" && len(r.filter) == 0 {
		return nil, fmt.Errorf("recalculation %s takes no filter (its file lists no where columns)", r.def.Name)
	}
	return where.Parse(params["where"], r.filter)
}

// page is how many rows one query of the source reads.
const page = 1000

// selectSQL is the source's query: the batch columns as text, the
// tenant's rows the filter keeps, after a key when after, in key order.
// Its parameters: the tenant (when per tenant), the filter's, then the
// key to start after.
func (r *Recalc) selectSQL(filter string, nFilter int, after bool) string {
	var sel, conds []string
	for _, c := range r.cols {
		sel = append(sel, "CAST("+tableschema.QuoteName(c)+" AS TEXT)")
	}
	n := 1
	if r.schema.Tenant {
		conds = append(conds, `"tenant_id" = $1`)
		n = 2
	}
	conds = append(conds, filter)
	n += nFilter
	keys := make([]string, len(r.keys))
	params := make([]string, len(r.keys))
	for i, k := range r.keys {
		keys[i] = tableschema.QuoteName(k)
		params[i] = "$" + strconv.Itoa(n+i)
		if r.cfg.Dialect == Postgres {
			params[i] = fmt.Sprintf("CAST(%s AS %s)", params[i], tableschema.PostgresType(r.schema.Field(k).Type))
		}
	}
	if after {
		conds = append(conds, "("+strings.Join(keys, ", ")+") > ("+strings.Join(params, ", ")+")")
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %d",
		strings.Join(sel, ", "), tableschema.QuoteName(r.schema.Table), strings.Join(conds, " AND "), strings.Join(keys, ", "), page)
}

// rows reads the matching rows in keyset pages by key. A page is read
// whole before its rows are yielded, so no query is open while the caller
// works (on SQLite, one connection serves everything).
func (r *Recalc) rows(ctx context.Context, tenant string, params map[string]string) iter.Seq2[[]string, error] {
	return func(yield func([]string, error) bool) {
		e, err := r.parseWhere(params)
		if err != nil {
			yield(nil, err)
			return
		}
		first := 1
		var base []any
		if r.schema.Tenant {
			first, base = 2, []any{tenant}
		}
		filter, fargs := e.SQL(r.cfg.Dialect, first)
		base = append(base, fargs...)
		query := r.selectSQL(filter, len(fargs), false)
		var after []any
		for {
			rows, err := r.readPage(ctx, query, append(base[:len(base):len(base)], after...))
			if err != nil {
				yield(nil, fmt.Errorf("read %s: %w", r.schema.Table, err))
				return
			}
			for _, cells := range rows {
				if !yield(cells, nil) {
					return
				}
			}
			if len(rows) < page {
				return
			}
			last := rows[len(rows)-1]
			after = after[:0]
			for i := range r.keys {
				after = append(after, last[i])
			}
			query = r.selectSQL(filter, len(fargs), true)
		}
	}
}

func (r *Recalc) readPage(ctx context.Context, query string, args []any) ([][]string, error) {
	tx, err := r.cfg.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rs, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out [][]string
	for rs.Next() {
		cells := make([]sql.NullString, len(r.cols))
		ptrs := make([]any, len(cells))
		for i := range cells {
			ptrs[i] = &cells[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cells))
		for i, c := range cells {
			row[i] = c.String
		}
		out = append(out, row)
	}
	return out, rs.Err()
}

// keyOf is a bound row's key cells.
func (r *Recalc) keyOf(row reflect.Value) []string {
	out := make([]string, len(r.keys))
	for i := range r.keys {
		v, _ := r.c.Value(row, i)
		out[i] = tableschema.Canonical(v)
	}
	return out
}

// errGone marks a row the table no longer has.
var errGone = errors.New("no longer exists")
