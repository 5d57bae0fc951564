package schemarecalc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/tableschema"
)

// process writes a chunk's rows in the flush's transaction: the whole
// chunk at once under a savepoint; if that fails, row by row, each under
// its own savepoint, so that one row whose expression fails (a division
// by zero, a constraint) fails alone, for good, with the database's
// message. A database error a retry may clear fails the call as a whole,
// and the engine retries the chunk.
func (r *Recalc) process(ctx context.Context, tx batch.Tx, _ *rows.Mapping, rs []reflect.Value) ([]batch.Result, error) {
	tenant := tenantOf(ctx)
	keys := make([][]string, len(rs))
	for i, row := range rs {
		keys[i] = r.keyOf(row)
	}
	if _, err := tx.Exec(ctx, `SAVEPOINT recalc_chunk`); err != nil {
		return nil, err
	}
	out, err := r.chunk(ctx, tx, tenant, keys)
	if err == nil {
		_, err = tx.Exec(ctx, `RELEASE SAVEPOINT recalc_chunk`)
		return out, err
	}
	if ctx.Err() != nil || errors.Is(err, batch.ErrTransient) {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT recalc_chunk`); err != nil {
		return nil, err
	}
	out = make([]batch.Result, len(rs))
	for i, key := range keys {
		if _, err := tx.Exec(ctx, `SAVEPOINT recalc_row`); err != nil {
			return nil, err
		}
		res, err := r.chunk(ctx, tx, tenant, [][]string{key})
		switch {
		case err == nil:
			out[i] = res[0]
			if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT recalc_row`); err != nil {
				return nil, err
			}
		case ctx.Err() != nil || errors.Is(err, batch.ErrTransient):
			return nil, err
		default:
			out[i].Err = batch.Permanent(fmt.Errorf("recalculate %s %s: %w", r.keyName(), strings.Join(key, "/"), err))
			if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT recalc_row`); err != nil {
				return nil, err
			}
		}
	}
	_, err = tx.Exec(ctx, `RELEASE SAVEPOINT recalc_chunk`)
	return out, err
}

func (r *Recalc) keyName() string { return strings.Join(r.keys, ", ") }

// tenantOf is the tenant a processor's context names.
func tenantOf(ctx context.Context) string {
	if infos, ok := batch.ChunkFrom(ctx); ok && len(infos) > 0 {
		return infos[0].TenantID
	}
	return batch.DefaultTenant
}

// chunk recalculates rows by key: on PostgreSQL one statement over
// unnest'ed keys, on SQLite one a row. A row the table no longer has
// fails; the others take their key (or the function's answer) as id.
func (r *Recalc) chunk(ctx context.Context, tx batch.Tx, tenant string, keys [][]string) ([]batch.Result, error) {
	ids := make([]*string, len(keys))
	if tx.Engine() == Postgres {
		args := []any{}
		if r.schema.Tenant {
			args = append(args, tenant)
		}
		for j := range r.keys {
			col := make([]string, len(keys))
			for i, k := range keys {
				col[i] = k[j]
			}
			args = append(args, col)
		}
		q, err := tx.Query(ctx, r.pgStatement(), args...)
		if err != nil {
			return nil, err
		}
		defer q.Close()
		for q.Next() {
			var (
				ord int64
				id  sql.NullString
			)
			if err := q.Scan(&ord, &id); err != nil {
				return nil, err
			}
			if ord >= 1 && int(ord) <= len(keys) && id.Valid {
				ids[ord-1] = &id.String
			}
		}
		if err := q.Close(); err != nil {
			return nil, err
		}
	} else {
		for i, k := range keys {
			args := []any{}
			if r.schema.Tenant {
				args = append(args, tenant)
			}
			for _, v := range k {
				args = append(args, v)
			}
			var one int
			err := tx.QueryRow(ctx, r.sqliteStatement(), args...).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return nil, err
			}
			id := strings.Join(k, "/")
			ids[i] = &id
		}
	}
	out := make([]batch.Result, len(keys))
	for i, id := range ids {
		if id == nil {
			out[i].Err = batch.Permanent(fmt.Errorf("%s %s %w in %s", r.keyName(), strings.Join(keys[i], "/"), errGone, r.schema.Table))
			continue
		}
		out[i].ID = *id
	}
	return out, nil
}

// setList is the SET of an update: each expression in parentheses.
func (r *Recalc) setList() string {
	set := make([]string, len(r.def.Set))
	for i, a := range r.def.Set {
		set[i] = fmt.Sprintf("%s = (%s)", tableschema.QuoteName(a.Column), a.Expr)
	}
	return strings.Join(set, ", ")
}

// pgStatement is the chunk's statement on PostgreSQL: its parameters are
// the tenant (when per tenant) and one text array per key column; it
// returns each updated key's ordinal and result id. The unnest's names
// are prefixed so that the expressions' columns are the table's.
func (r *Recalc) pgStatement() string {
	table := tableschema.QuoteName(r.schema.Table)
	n := 1
	var on, arrays, alias, typed []string
	if r.schema.Tenant {
		on = append(on, table+`."tenant_id" = $1`)
		n = 2
	}
	for j, k := range r.keys {
		a := fmt.Sprintf("rowfate_k%d", j)
		alias = append(alias, a)
		arrays = append(arrays, fmt.Sprintf("$%d::text[]", n+j))
		cast := fmt.Sprintf("CAST(rowfate_u.%s AS %s)", a, tableschema.PostgresType(r.schema.Field(k).Type))
		typed = append(typed, cast)
		on = append(on, fmt.Sprintf("%s.%s = %s", table, tableschema.QuoteName(k), cast))
	}
	from := fmt.Sprintf("unnest(%s) WITH ORDINALITY AS rowfate_u(%s, rowfate_ord)", strings.Join(arrays, ", "), strings.Join(alias, ", "))
	if r.def.Call != "" {
		args := typed
		if r.schema.Tenant {
			args = append([]string{"$1"}, typed...)
		}
		return fmt.Sprintf("SELECT rowfate_u.rowfate_ord, CAST(%s(%s) AS text) FROM %s ORDER BY rowfate_u.rowfate_ord",
			tableschema.QuoteName(r.def.Call), strings.Join(args, ", "), from)
	}
	id := make([]string, len(r.keys))
	for j, k := range r.keys {
		id[j] = fmt.Sprintf("CAST(%s.%s AS text)", table, tableschema.QuoteName(k))
	}
	return fmt.Sprintf("UPDATE %s SET %s FROM %s WHERE %s RETURNING rowfate_u.rowfate_ord, %s",
		table, r.setList(), from, strings.Join(on, " AND "), strings.Join(id, " || '/' || "))
}

// sqliteStatement is one row's update on SQLite: its parameters are the
// tenant (when per tenant) and the key's cells.
func (r *Recalc) sqliteStatement() string {
	var conds []string
	n := 1
	if r.schema.Tenant {
		conds = append(conds, `"tenant_id" = $1`)
		n = 2
	}
	for j, k := range r.keys {
		conds = append(conds, fmt.Sprintf("%s = $%d", tableschema.QuoteName(k), n+j))
	}
	return fmt.Sprintf("UPDATE %s SET %s WHERE %s RETURNING 1", tableschema.QuoteName(r.schema.Table), r.setList(), strings.Join(conds, " AND "))
}

// Check runs the recalculation's statements against the real table in a
// transaction it rolls back, matching no row, so that a misspelt column
// or function in an expression, or a function that does not exist, is
// reported when the file is stored rather than at the first row.
func (r *Recalc) Check(ctx context.Context) error {
	tx, err := r.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // only checks
	var base []any
	if r.schema.Tenant {
		base = []any{""}
	}
	rs, err := tx.QueryContext(ctx, "SELECT * FROM ("+r.selectSQL("1 = 0", 0, false)+") AS rowfate_check", base...)
	if err == nil {
		err = rs.Close()
	}
	if err != nil {
		return fmt.Errorf("recalculation %s: reading %s fails: %w", r.def.Name, r.schema.Table, err)
	}
	what := "set"
	if r.def.Call != "" {
		what = "call " + r.def.Call
	}
	args := base
	if r.cfg.Dialect == Postgres {
		for range r.keys {
			args = append(args, []string{})
		}
		rs, err = tx.QueryContext(ctx, r.pgStatement(), args...)
		if err == nil {
			err = rs.Close()
		}
	} else {
		for range r.keys {
			args = append(args, nil)
		}
		var one int
		if err = tx.QueryRowContext(ctx, r.sqliteStatement(), args...).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("recalculation %s: %s does not run on the table %s: %w", r.def.Name, what, r.schema.Table, err)
	}
	return nil
}
