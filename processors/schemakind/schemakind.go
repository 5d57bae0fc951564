// Package schemakind makes a kind out of a Table Schema
// (package tableschema): the engine's dynamic kind (batch.DynamicKind)
// whose processor writes each chunk's rows into the schema's table in the
// engine's own database, set-based and in the flush's transaction, so the
// rows' effects commit with their outcomes, exactly once.
//
// A write changes only what the file gave: columns the file lacks are
// left out of the statement, and an empty cell in an optional column
// keeps the stored value (COALESCE), so an import never changes data the
// file did not mention. With the schema's x-tenant (the default) the
// table has a tenant_id column, and every row is written and matched
// within the importing tenant only.
//
// CheckTable compares an existing table with the schema before any row is
// read; CreateTable makes the table from the schema.
package schemakind

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/tableschema"
)

// The SQL dialects, as batch.Tx.Engine names them.
const (
	Postgres = batchtype.Postgres
	SQLite   = batchtype.SQLite
)

// Config is where a schema kind's table lives.
type Config struct {
	// DB is the engine's own database, where the table is checked and
	// created (rows are written in the flush's transaction). Required.
	DB *sql.DB
	// Dialect is Postgres or SQLite.
	Dialect batchtype.Dialect
}

// SourceFile is the source of a kind read from a schema file, not stored
// (version 0): batchctl import --schema.
const SourceFile = "schema file"

// Kind is the dynamic kind of a schema, at a version of its definition
// (0: a schema file, not stored).
// Its CheckFunc checks the table before an import reads any row.
func Kind(s *tableschema.Schema, version int64, cfg Config) (batch.DynamicKind, error) {
	c, err := tableschema.Compile(s)
	if err != nil {
		return batch.DynamicKind{}, err
	}
	w := &writer{s: s, c: c, stmts: map[string]*statements{}}
	desc := s.Description
	if desc == "" {
		desc = s.Title
	}
	if desc == "" {
		desc = fmt.Sprintf("rows of the table %s, from a Table Schema", s.Table)
	}
	k := batch.DynamicKind{
		Name: s.Name, Description: desc, Version: version, Source: fmt.Sprintf("schema v%d", version),
		Type: c.Type, Validation: c.Options, ProcessTx: w.process,
		Example: example(s), MissingValues: s.MissingValues, ChunkSize: s.ChunkSize,
		MaxInvalid: s.MaxInvalid, MaxFailed: s.MaxFailed,
		CheckFunc: func(ctx context.Context) error { return CheckTable(ctx, cfg, s) },
	}
	if version == 0 {
		k.Source = SourceFile
		k.Definition = s.Text
	}
	k.Enums, k.Notes = templateHelp(s)
	if s.DecimalComma {
		k.Conventions.Number = rows.DecimalComma
	}
	if len(s.PrimaryKey) > 0 {
		k.KeyFunc = func(row reflect.Value) string { return c.Key(row) }
		k.KeyName = strings.Join(s.PrimaryKey, ", ")
	}
	return k, nil
}

// Register adds (or replaces) a schema's kind in a registry.
func Register(reg *batch.Registry, s *tableschema.Schema, version int64, cfg Config) error {
	k, err := Kind(s, version, cfg)
	if err != nil {
		return err
	}
	return batch.RegisterDynamic(reg, k)
}

// example is the template's example row: the fields' examples.
func example(s *tableschema.Schema) map[string]string {
	var out map[string]string
	for _, f := range s.Fields {
		if f.Example != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[f.Name] = f.Example
		}
	}
	return out
}

// KeylessID is the result id of a row inserted into the table of a schema
// without a primary key: there is no key to name it by.
const KeylessID = "inserted"

// writer writes a schema's rows.
type writer struct {
	s *tableschema.Schema
	c *tableschema.Compiled
	// stmts are the statements for each set of columns a file has, built
	// once per set.
	mu    sync.Mutex
	stmts map[string]*statements
}

// statements are a chunk's SQL for one set of the file's columns.
type statements struct {
	cols []int // schema field positions, the file's columns
	// write is the set-based statement (PostgreSQL: over unnest'ed
	// arrays) or the per-row one (SQLite).
	write string
	// exists finds which of the rows' keys the table has (insert and
	// update modes).
	exists string
	// one is the per-row form of write, for the fallback.
	one string
}

// process writes a chunk's rows in the flush's transaction. It tries the
// whole chunk at once under a savepoint; if that fails, it writes row by
// row, each under its own savepoint, so that one row the table refuses (a
// constraint) costs only itself. A database error a retry may clear fails
// the call as a whole, and the engine retries the chunk.
func (w *writer) process(ctx context.Context, tx batch.Tx, m *rows.Mapping, rs []reflect.Value) ([]batch.Result, error) {
	st := w.statements(m, tx.Engine())
	tenant := tenantOf(ctx)
	if _, err := tx.Exec(ctx, `SAVEPOINT schema_chunk`); err != nil {
		return nil, err
	}
	out, err := w.chunk(ctx, tx, st, tenant, rs)
	if err == nil {
		_, err = tx.Exec(ctx, `RELEASE SAVEPOINT schema_chunk`)
		return out, err
	}
	if ctx.Err() != nil || errors.Is(err, batch.ErrTransient) {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT schema_chunk`); err != nil {
		return nil, err
	}
	out = make([]batch.Result, len(rs))
	for i, r := range rs {
		if _, err := tx.Exec(ctx, `SAVEPOINT schema_row`); err != nil {
			return nil, err
		}
		res, err := w.chunk(ctx, tx, st, tenant, []reflect.Value{r})
		switch {
		case err == nil:
			out[i] = res[0]
			if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT schema_row`); err != nil {
				return nil, err
			}
		case ctx.Err() != nil || errors.Is(err, batch.ErrTransient):
			return nil, err
		default:
			out[i].Err = batch.Permanent(fmt.Errorf("write %s: %w", w.s.Table, err))
			if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT schema_row`); err != nil {
				return nil, err
			}
		}
	}
	_, err = tx.Exec(ctx, `RELEASE SAVEPOINT schema_chunk`)
	return out, err
}

// tenantOf is the tenant a processor's context names.
func tenantOf(ctx context.Context) string {
	if infos, ok := batch.ChunkFrom(ctx); ok && len(infos) > 0 {
		return infos[0].TenantID
	}
	if info, ok := batch.RowFrom(ctx); ok && info.TenantID != "" {
		return info.TenantID
	}
	return batch.DefaultTenant
}

// resultID is a written row's result id: its key, or KeylessID.
func (w *writer) resultID(r reflect.Value) string {
	if len(w.s.PrimaryKey) == 0 {
		// No key names the row written: the outcome still needs an id
		// (an empty one is a malformed answer, which the engine retries).
		return KeylessID
	}
	return keyID(w.c, r)
}

// keyID is a row's key as a result id: its fields' canonical text joined
// by "/". An export kept to a batch's rows matches its rows by it.
func keyID(c *tableschema.Compiled, r reflect.Value) string {
	return strings.ReplaceAll(c.Key(r), "\x1f", "/")
}

// chunk writes rows with one statement set-based on PostgreSQL, one per
// row on SQLite; insert and update modes first find which keys exist.
func (w *writer) chunk(ctx context.Context, tx batch.Tx, st *statements, tenant string, rs []reflect.Value) ([]batch.Result, error) {
	out := make([]batch.Result, len(rs))
	todo := make([]int, 0, len(rs))
	for i := range rs {
		todo = append(todo, i)
	}
	if w.s.Mode != tableschema.ModeUpsert && len(w.s.PrimaryKey) > 0 {
		have, err := w.existing(ctx, tx, st, tenant, rs)
		if err != nil {
			return nil, err
		}
		todo = todo[:0]
		for i, r := range rs {
			switch {
			case w.s.Mode == tableschema.ModeInsert && have[i]:
				out[i].Err = batch.Permanent(fmt.Errorf("%s %s is in the table already (x-mode insert adds new rows only)", w.keyName(), w.resultID(r)))
			case w.s.Mode == tableschema.ModeUpdate && !have[i]:
				out[i].Err = batch.Permanent(fmt.Errorf("no row of the table has %s %s (x-mode update changes existing rows only)", w.keyName(), w.resultID(r)))
			default:
				todo = append(todo, i)
			}
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	if tx.Engine() == Postgres {
		args := w.arrays(st, tenant, rs, todo)
		if _, err := tx.Exec(ctx, st.write, args...); err != nil {
			return nil, err
		}
	} else {
		for _, i := range todo {
			if _, err := tx.Exec(ctx, st.one, w.rowArgs(st, tenant, rs[i], Postgres != tx.Engine())...); err != nil {
				return nil, err
			}
		}
	}
	for _, i := range todo {
		out[i].ID = w.resultID(rs[i])
	}
	return out, nil
}

func (w *writer) keyName() string { return strings.Join(w.s.PrimaryKey, ", ") }

// existing reports, for each row, whether the table has its key.
func (w *writer) existing(ctx context.Context, tx batch.Tx, st *statements, tenant string, rs []reflect.Value) ([]bool, error) {
	have := make([]bool, len(rs))
	keys := w.c.KeyFields()
	if tx.Engine() == Postgres {
		args := []any{}
		if w.s.Tenant {
			args = append(args, tenant)
		}
		for _, k := range keys {
			arr := make([]*string, len(rs))
			for i, r := range rs {
				arr[i] = w.text(k, r)
			}
			args = append(args, arr)
		}
		q, err := tx.Query(ctx, st.exists, args...)
		if err != nil {
			return nil, err
		}
		defer q.Close()
		for q.Next() {
			var ord int64
			if err := q.Scan(&ord); err != nil {
				return nil, err
			}
			have[ord-1] = true
		}
		return have, q.Close()
	}
	for i, r := range rs {
		args := []any{}
		if w.s.Tenant {
			args = append(args, tenant)
		}
		for _, k := range keys {
			args = append(args, w.native(k, r))
		}
		var one int
		err := tx.QueryRow(ctx, st.exists, args...).Scan(&one)
		switch {
		case err == nil:
			have[i] = true
		case !errors.Is(err, sql.ErrNoRows):
			return nil, err
		}
	}
	return have, nil
}

// text is field i of a row as PostgreSQL's cast reads it, nil when the
// file gave none.
func (w *writer) text(i int, r reflect.Value) *string {
	v, ok := w.c.Value(r, i)
	if !ok {
		return nil
	}
	var s string
	switch x := v.(type) {
	case time.Time:
		if w.s.Fields[i].Type == tableschema.TypeDate {
			s = x.Format("2006-01-02")
		} else {
			s = x.UTC().Format(time.RFC3339Nano)
		}
	default:
		s = tableschema.Canonical(v)
	}
	return &s
}

// native is field i of a row as a SQLite argument: text for dates and
// decimals (stored as written, exactly), an integer, 1 or 0; nil when the
// file gave none.
func (w *writer) native(i int, r reflect.Value) any {
	v, ok := w.c.Value(r, i)
	if !ok {
		return nil
	}
	switch x := v.(type) {
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case int64, string:
		return x
	}
	return *w.text(i, r)
}

// arrays are the set-based statement's arguments: the tenant, then one
// text array per column of the file.
func (w *writer) arrays(st *statements, tenant string, rs []reflect.Value, todo []int) []any {
	args := make([]any, 0, len(st.cols)+1)
	if w.s.Tenant {
		args = append(args, tenant)
	}
	for _, col := range st.cols {
		arr := make([]*string, len(todo))
		for j, i := range todo {
			arr[j] = w.text(col, rs[i])
		}
		args = append(args, arr)
	}
	return args
}

// rowArgs are the per-row statement's arguments.
func (w *writer) rowArgs(st *statements, tenant string, r reflect.Value, native bool) []any {
	args := make([]any, 0, len(st.cols)+1)
	if w.s.Tenant {
		args = append(args, tenant)
	}
	for _, col := range st.cols {
		if native {
			args = append(args, w.native(col, r))
		} else if t := w.text(col, r); t != nil {
			args = append(args, *t)
		} else {
			args = append(args, nil)
		}
	}
	return args
}

// statements returns the SQL for the file's columns (those the mapping
// does not list as missing), building it once.
func (w *writer) statements(m *rows.Mapping, engine batchtype.Dialect) *statements {
	var cols []int
	var sig strings.Builder
	sig.WriteString(string(engine))
	for i, f := range w.s.Fields {
		if !contains(m.Missing, f.Name) {
			cols = append(cols, i)
			sig.WriteString("," + strconv.Itoa(i))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, ok := w.stmts[sig.String()]; ok {
		return st
	}
	st := w.build(cols, engine)
	w.stmts[sig.String()] = st
	return st
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// build writes a chunk's statements for a set of columns.
func (w *writer) build(cols []int, engine batchtype.Dialect) *statements {
	s := w.s
	st := &statements{cols: cols}
	table := tableschema.QuoteName(s.Table)
	var names, conflict []string
	if s.Tenant {
		names = append(names, `"tenant_id"`)
		conflict = append(conflict, `"tenant_id"`)
	}
	for _, i := range cols {
		names = append(names, tableschema.QuoteName(s.Fields[i].Name))
	}
	for _, k := range s.PrimaryKey {
		conflict = append(conflict, tableschema.QuoteName(k))
	}
	isKey := func(name string) bool { return contains(s.PrimaryKey, name) }
	// SET: a required column takes the file's value; an optional one keeps
	// the stored value where the file's cell was empty.
	var set []string
	for _, i := range cols {
		f := s.Fields[i]
		if isKey(f.Name) {
			continue
		}
		q := tableschema.QuoteName(f.Name)
		if f.Constraints.Required {
			set = append(set, fmt.Sprintf("%s = excluded.%s", q, q))
		} else {
			set = append(set, fmt.Sprintf("%s = COALESCE(excluded.%s, %s.%s)", q, q, table, q))
		}
	}
	onConflict := ""
	switch {
	case s.Mode == tableschema.ModeInsert && len(conflict) > len(boolSlice(s.Tenant)):
		onConflict = " ON CONFLICT (" + strings.Join(conflict, ", ") + ") DO NOTHING"
	case s.Mode != tableschema.ModeInsert && len(set) > 0:
		onConflict = " ON CONFLICT (" + strings.Join(conflict, ", ") + ") DO UPDATE SET " + strings.Join(set, ", ")
	case s.Mode != tableschema.ModeInsert:
		onConflict = " ON CONFLICT (" + strings.Join(conflict, ", ") + ") DO NOTHING"
	}
	if engine == Postgres {
		var sel, unnest, alias []string
		n := 1
		if s.Tenant {
			sel = append(sel, "$1")
			n = 2
		}
		for j, i := range cols {
			a := fmt.Sprintf("c%d", j)
			alias = append(alias, a)
			unnest = append(unnest, fmt.Sprintf("$%d::text[]", n+j))
			sel = append(sel, fmt.Sprintf("CAST(u.%s AS %s)", a, tableschema.PostgresType(s.Fields[i].Type)))
		}
		st.write = fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM unnest(%s) AS u(%s)%s",
			table, strings.Join(names, ", "), strings.Join(sel, ", "), strings.Join(unnest, ", "), strings.Join(alias, ", "), onConflict)
		st.one = st.write
		if s.Mode == tableschema.ModeUpdate {
			st.write = w.pgUpdate(cols, n)
			st.one = st.write
		}
		if len(s.PrimaryKey) > 0 {
			st.exists = w.pgExists(table)
		}
		return st
	}
	// SQLite: one row a statement, $1, $2... in the same order.
	var ph []string
	for j := range names {
		ph = append(ph, fmt.Sprintf("$%d", j+1))
	}
	st.one = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)%s", table, strings.Join(names, ", "), strings.Join(ph, ", "), onConflict)
	if s.Mode == tableschema.ModeUpdate {
		st.one = w.sqliteUpdate(cols)
	}
	st.write = st.one
	if len(s.PrimaryKey) > 0 {
		var where []string
		n := 1
		if s.Tenant {
			where = append(where, `"tenant_id" = $1`)
			n = 2
		}
		for j, k := range s.PrimaryKey {
			where = append(where, fmt.Sprintf("%s = $%d", tableschema.QuoteName(k), n+j))
		}
		st.exists = fmt.Sprintf("SELECT 1 FROM %s WHERE %s", table, strings.Join(where, " AND "))
	}
	return st
}

// pgExists is the PostgreSQL query that finds which of a chunk's keys
// (arrays of key columns, after the tenant) are in the table: the
// ordinal of each one found.
func (w *writer) pgExists(table string) string {
	s := w.s
	var on, keyArr, keyAlias []string
	m := 1
	if s.Tenant {
		on = append(on, "t.tenant_id = $1")
		m = 2
	}
	for j, k := range s.PrimaryKey {
		f := w.fieldOf(k)
		a := fmt.Sprintf("k%d", j)
		keyAlias = append(keyAlias, a)
		keyArr = append(keyArr, fmt.Sprintf("$%d::text[]", m+j))
		on = append(on, fmt.Sprintf("t.%s = CAST(u.%s AS %s)", tableschema.QuoteName(k), a, tableschema.PostgresType(f.Type)))
	}
	return fmt.Sprintf("SELECT u.ord FROM unnest(%s) WITH ORDINALITY AS u(%s, ord) JOIN %s t ON %s",
		strings.Join(keyArr, ", "), strings.Join(keyAlias, ", "), table, strings.Join(on, " AND "))
}

func boolSlice(b bool) []bool {
	if b {
		return []bool{true}
	}
	return nil
}

func (w *writer) fieldOf(name string) tableschema.Field {
	for _, f := range w.s.Fields {
		if f.Name == name {
			return f
		}
	}
	return tableschema.Field{}
}

// setList is an update's SET over the file's non-key columns; value(j)
// is the expression of the j-th file column.
func (w *writer) setList(cols []int, table string, value func(j int) string) string {
	var set []string
	for j, i := range cols {
		f := w.s.Fields[i]
		if contains(w.s.PrimaryKey, f.Name) {
			continue
		}
		q := tableschema.QuoteName(f.Name)
		if f.Constraints.Required {
			set = append(set, fmt.Sprintf("%s = %s", q, value(j)))
		} else {
			set = append(set, fmt.Sprintf("%s = COALESCE(%s, %s.%s)", q, value(j), table, q))
		}
	}
	return strings.Join(set, ", ")
}

// pgUpdate is update mode's set-based statement on PostgreSQL: the
// file's columns from unnest'ed arrays, matched by key.
func (w *writer) pgUpdate(cols []int, first int) string {
	table := tableschema.QuoteName(w.s.Table)
	var unnest, alias, on []string
	for j, i := range cols {
		a := fmt.Sprintf("c%d", j)
		alias = append(alias, a)
		unnest = append(unnest, fmt.Sprintf("$%d::text[]", first+j))
		if contains(w.s.PrimaryKey, w.s.Fields[i].Name) {
			on = append(on, fmt.Sprintf("%s.%s = CAST(u.%s AS %s)", table, tableschema.QuoteName(w.s.Fields[i].Name), a, tableschema.PostgresType(w.s.Fields[i].Type)))
		}
	}
	if w.s.Tenant {
		on = append(on, table+`."tenant_id" = $1`)
	}
	set := w.setList(cols, table, func(j int) string {
		return fmt.Sprintf("CAST(u.c%d AS %s)", j, tableschema.PostgresType(w.s.Fields[cols[j]].Type))
	})
	if set == "" {
		set = tableschema.QuoteName(w.s.PrimaryKey[0]) + " = " + table + "." + tableschema.QuoteName(w.s.PrimaryKey[0])
	}
	return fmt.Sprintf("UPDATE %s SET %s FROM unnest(%s) AS u(%s) WHERE %s",
		table, set, strings.Join(unnest, ", "), strings.Join(alias, ", "), strings.Join(on, " AND "))
}

// sqliteUpdate is update mode's per-row statement on SQLite.
func (w *writer) sqliteUpdate(cols []int) string {
	table := tableschema.QuoteName(w.s.Table)
	first := 1
	if w.s.Tenant {
		first = 2
	}
	var where []string
	for j, i := range cols {
		if contains(w.s.PrimaryKey, w.s.Fields[i].Name) {
			where = append(where, fmt.Sprintf("%s = $%d", tableschema.QuoteName(w.s.Fields[i].Name), first+j))
		}
	}
	if w.s.Tenant {
		where = append(where, `"tenant_id" = $1`)
	}
	set := w.setList(cols, table, func(j int) string { return fmt.Sprintf("$%d", first+j) })
	if set == "" {
		set = tableschema.QuoteName(w.s.PrimaryKey[0]) + " = " + tableschema.QuoteName(w.s.PrimaryKey[0])
	}
	return fmt.Sprintf("UPDATE %s SET %s WHERE %s", table, set, strings.Join(where, " AND "))
}
