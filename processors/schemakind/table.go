package schemakind

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/tableschema"
)

// ErrTable is wrapped by every mismatch between a schema and its table.
var ErrTable = errors.New("the table does not match the schema")

// column is a table's column as the database describes it.
type column struct {
	name     string
	typ      string // as declared
	nullable bool
	// dflt: an insert that leaves the column out fills it (a default, an
	// identity, a generated column, SQLite's rowid key).
	dflt bool
}

// accepted are the column types a field may be stored in, per dialect:
// the declared type's name (PostgreSQL's data_type, SQLite's declared
// type), lower-case.
var accepted = map[batchtype.Dialect]map[string][]string{
	Postgres: {
		tableschema.TypeString:   {"text", "character varying", "character", "citext", "varchar", "char"},
		tableschema.TypeInteger:  {"bigint", "integer", "smallint", "numeric"},
		tableschema.TypeNumber:   {"numeric", "double precision", "real"},
		tableschema.TypeBoolean:  {"boolean"},
		tableschema.TypeDate:     {"date"},
		tableschema.TypeDatetime: {"timestamp with time zone", "timestamp without time zone"},
	},
	SQLite: {
		tableschema.TypeString:   {"text", "varchar", "char", "clob", "character", "nvarchar", "string"},
		tableschema.TypeInteger:  {"integer", "int", "bigint", "smallint"},
		tableschema.TypeNumber:   {"numeric", "decimal", "real", "double", "float", "text"},
		tableschema.TypeBoolean:  {"boolean", "integer", "int", "bool"},
		tableschema.TypeDate:     {"date", "text"},
		tableschema.TypeDatetime: {"datetime", "timestamp", "text"},
	},
}

// CheckTable compares an existing table with a schema: every field's
// column exists with a type that holds it, the tenant column exists, and
// the key has a unique constraint for upserts to find rows by. It reads no
// row. A mismatch is an error wrapping ErrTable, naming the column.
func CheckTable(ctx context.Context, cfg Config, s *tableschema.Schema) error {
	cols, err := columns(ctx, cfg, s.Table)
	if err != nil {
		return err
	}
	if len(cols) == 0 {
		return fmt.Errorf("%w: there is no table %s (create it, or have the import or the kind create it from the schema)", ErrTable, s.Table)
	}
	byName := map[string]column{}
	for _, c := range cols {
		byName[strings.ToLower(c.name)] = c
	}
	var problems []string
	if s.Tenant {
		if _, ok := byName["tenant_id"]; !ok {
			problems = append(problems, "no column tenant_id: the schema is per tenant (x-tenant); add the column, or say x-tenant: false for a table every tenant shares")
		}
	}
	for _, f := range s.Fields {
		c, ok := byName[strings.ToLower(f.Name)]
		if !ok {
			problems = append(problems, fmt.Sprintf("no column %s (a %s in the schema)", f.Name, f.Type))
			continue
		}
		typ := normalType(c.typ)
		if !slices.Contains(accepted[cfg.Dialect][f.Type], typ) {
			problems = append(problems, fmt.Sprintf("column %s is %s, which does not hold a %s (want %s)", f.Name, c.typ, f.Type, strings.Join(accepted[cfg.Dialect][f.Type], " or ")))
		}
	}
	for _, c := range cols {
		if c.nullable || strings.EqualFold(c.name, "tenant_id") || s.Field(c.name) != nil {
			continue
		}
		if !c.dflt {
			problems = append(problems, fmt.Sprintf("column %s is NOT NULL without a default and not in the schema: an insert cannot fill it", c.name))
		}
	}
	if len(problems) == 0 && len(s.PrimaryKey) > 0 && s.Mode != tableschema.ModeUpdate {
		want := []string{}
		if s.Tenant {
			want = append(want, "tenant_id")
		}
		for _, k := range s.PrimaryKey {
			want = append(want, strings.ToLower(k))
		}
		ok, err := hasUnique(ctx, cfg, s.Table, want)
		if err != nil {
			return err
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("no primary key or unique index on exactly (%s), which the schema's %s needs to find rows by", strings.Join(want, ", "), s.Mode))
		}
	}
	if len(problems) == 0 {
		more, err := uniqueProblems(ctx, cfg, s)
		if err != nil {
			return err
		}
		problems = append(problems, more...)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w %s: %s", ErrTable, s.Table, strings.Join(problems, "; "))
	}
	return nil
}

// uniqueProblems are the unique fields whose table has no unique index on
// them: the index is what keeps the standard's unique (a row repeating a
// value fails), so a table without one would accept the schema's unique
// and ignore it.
func uniqueProblems(ctx context.Context, cfg Config, s *tableschema.Schema) ([]string, error) {
	var problems []string
	for _, f := range s.Fields {
		if !f.Constraints.Unique || (len(s.PrimaryKey) == 1 && s.PrimaryKey[0] == f.Name) {
			continue
		}
		want := []string{strings.ToLower(f.Name)}
		if s.Tenant {
			want = append([]string{"tenant_id"}, want...)
		}
		ok, err := hasUnique(ctx, cfg, s.Table, want)
		if err != nil {
			return nil, err
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("no unique index on exactly (%s), which keeps the schema's unique constraint on %s", strings.Join(want, ", "), f.Name))
		}
	}
	return problems, nil
}

// normalType is a declared type without its size or precision:
// "varchar(20)" is varchar, "numeric(18,2)" numeric.
func normalType(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	return t
}

// columns reads a table's columns; none when there is no such table.
func columns(ctx context.Context, cfg Config, table string) ([]column, error) {
	var q string
	var args []any
	schema, name := splitTable(table)
	if cfg.Dialect == Postgres {
		q = `SELECT column_name, data_type, is_nullable = 'YES', column_default IS NOT NULL OR is_identity = 'YES' OR is_generated <> 'NEVER'
			FROM information_schema.columns WHERE table_schema = COALESCE(NULLIF($1, ''), current_schema()) AND table_name = $2 ORDER BY ordinal_position`
		args = []any{schema, name}
	} else {
		q = `SELECT name, type, "notnull" = 0, dflt_value IS NOT NULL OR pk > 0 FROM pragma_table_info($1)`
		args = []any{name}
	}
	rs, err := cfg.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	defer rs.Close()
	var out []column
	for rs.Next() {
		var c column
		if err := rs.Scan(&c.name, &c.typ, &c.nullable, &c.dflt); err != nil {
			return nil, fmt.Errorf("read the columns of %s: %w", table, err)
		}
		out = append(out, c)
	}
	return out, rs.Err()
}

func splitTable(table string) (schema, name string) {
	if i := strings.IndexByte(table, '.'); i >= 0 {
		return table[:i], table[i+1:]
	}
	return "", table
}

// hasUnique reports whether a table has a primary key or unique index on
// exactly these columns (in any order), as ON CONFLICT needs.
func hasUnique(ctx context.Context, cfg Config, table string, want []string) (bool, error) {
	schema, name := splitTable(table)
	var sets [][]string
	if cfg.Dialect == Postgres {
		rs, err := cfg.DB.QueryContext(ctx, `SELECT array_to_string(ARRAY(SELECT a.attname FROM unnest(i.indkey) k JOIN pg_attribute a
				ON a.attrelid = i.indrelid AND a.attnum = k), ',')
			FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE i.indisunique AND i.indpred IS NULL AND c.relname = $2 AND n.nspname = COALESCE(NULLIF($1, ''), current_schema())`, schema, name)
		if err != nil {
			return false, fmt.Errorf("read the indexes of %s: %w", table, err)
		}
		defer rs.Close()
		for rs.Next() {
			var cols string
			if err := rs.Scan(&cols); err != nil {
				return false, err
			}
			sets = append(sets, strings.Split(cols, ","))
		}
		if err := rs.Err(); err != nil {
			return false, err
		}
	} else {
		rs, err := cfg.DB.QueryContext(ctx, `SELECT il.name FROM pragma_index_list($1) il WHERE il."unique" = 1 AND il.partial = 0`, name)
		if err != nil {
			return false, fmt.Errorf("read the indexes of %s: %w", table, err)
		}
		var idx []string
		for rs.Next() {
			var n string
			if err := rs.Scan(&n); err != nil {
				rs.Close()
				return false, err
			}
			idx = append(idx, n)
		}
		rs.Close()
		for _, n := range idx {
			crs, err := cfg.DB.QueryContext(ctx, `SELECT name FROM pragma_index_info($1)`, n)
			if err != nil {
				return false, err
			}
			var cols []string
			for crs.Next() {
				var c string
				if err := crs.Scan(&c); err != nil {
					crs.Close()
					return false, err
				}
				cols = append(cols, c)
			}
			crs.Close()
			sets = append(sets, cols)
		}
		// A primary key of one INTEGER column is the rowid itself, which
		// has no index to list: the table's own pk columns are a key too.
		pk, err := sqlitePrimaryKey(ctx, cfg, name)
		if err != nil {
			return false, err
		}
		if len(pk) > 0 {
			sets = append(sets, pk)
		}
	}
	slices.Sort(want)
	for _, set := range sets {
		for i := range set {
			// Compared here, not with SQL's lower(), which leaves letters
			// outside ASCII as they are in PostgreSQL's C locale.
			set[i] = strings.ToLower(set[i])
		}
		slices.Sort(set)
		if slices.Equal(set, want) {
			return true, nil
		}
	}
	return false, nil
}

// sqlitePrimaryKey returns a SQLite table's primary key columns, in any
// order.
func sqlitePrimaryKey(ctx context.Context, cfg Config, table string) ([]string, error) {
	rs, err := cfg.DB.QueryContext(ctx, `SELECT name FROM pragma_table_info($1) WHERE pk > 0`, table)
	if err != nil {
		return nil, fmt.Errorf("read the primary key of %s: %w", table, err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var n string
		if err := rs.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rs.Err()
}

// CreateTable creates a schema's table when it does not exist, with its
// tenant column, the fields' types (NOT NULL for required fields), the
// primary key (tenant_id first) and a unique index per unique field; then
// checks it, so that an existing table that differs is refused.
func CreateTable(ctx context.Context, cfg Config, s *tableschema.Schema) error {
	var defs []string
	if s.Tenant {
		defs = append(defs, `"tenant_id" text NOT NULL`)
	}
	for _, f := range s.Fields {
		d := tableschema.QuoteName(f.Name) + " " + sqlType(cfg.Dialect, f.Type)
		if f.Constraints.Required {
			d += " NOT NULL"
		}
		defs = append(defs, d)
	}
	var key []string
	if s.Tenant {
		key = append(key, `"tenant_id"`)
	}
	for _, k := range s.PrimaryKey {
		key = append(key, tableschema.QuoteName(k))
	}
	if len(s.PrimaryKey) > 0 {
		defs = append(defs, "PRIMARY KEY ("+strings.Join(key, ", ")+")")
	}
	for _, f := range s.Fields {
		if f.Constraints.Unique && !(len(s.PrimaryKey) == 1 && s.PrimaryKey[0] == f.Name) {
			u := []string{}
			if s.Tenant {
				u = append(u, `"tenant_id"`)
			}
			defs = append(defs, "UNIQUE ("+strings.Join(append(u, tableschema.QuoteName(f.Name)), ", ")+")")
		}
	}
	stmt := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n\t%s\n)", tableschema.QuoteName(s.Table), strings.Join(defs, ",\n\t"))
	if _, err := cfg.DB.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("create table %s: %w", s.Table, err)
	}
	return CheckTable(ctx, cfg, s)
}

// sqlType is a field's column type when Rowfate creates the table. On
// SQLite decimals, dates and date-times are text, stored as written
// (NUMERIC would turn 12.50 into the float 12.5).
func sqlType(dialect batchtype.Dialect, typ string) string {
	if dialect == Postgres {
		if typ == tableschema.TypeNumber {
			return "numeric"
		}
		return tableschema.PostgresType(typ)
	}
	switch typ {
	case tableschema.TypeInteger, tableschema.TypeBoolean:
		return "INTEGER"
	}
	return "TEXT"
}
