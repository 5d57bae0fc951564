package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/store/internal/storesql"
)

// Row-level security, the store's side. Migration 0006 puts a policy on
// every tenant table: a role that does not own the table sees, and
// writes, the rows whose tenant_id is the transaction's app.tenant_id
// setting, and nothing when the setting is unset. With Config.TenantRole,
// a transaction whose context carries a tenant (driver.WithTenant) begins
// with
//
//	BEGIN; SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true)
//
// sent together in one round trip (a pgx.Batch: one pipeline), so it runs
// as that role and that tenant until it ends, and the pooled connection
// goes back to the pool as the pool's own user. A statement outside a
// transaction is sent with BEGIN, the same settings and COMMIT around it,
// in one round trip as well (tenantDB): a tenant's reads cost what the
// owner's do, and a transaction costs no more round trips than the
// owner's BEGIN ... COMMIT.
//
// This is defence in depth against a query that forgot its tenant filter,
// not against SQL injection: any statement of the transaction could call
// set_config itself.

// setTenantSQL scopes the current transaction to a role and a tenant.
const setTenantSQL = `SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true)`

// tenantOf returns the tenant ctx scopes the store's transactions to: none
// without a TenantRole.
func (s *Store) tenantOf(ctx context.Context) (string, bool) {
	if s.tenantRole == "" {
		return "", false
	}
	return driver.TenantFrom(ctx)
}

// tenantTx runs f on a connection in a transaction as the tenant role,
// scoped to tenant, and commits when f returns nil; it rolls back when f
// fails or panics. It is pgx.BeginFunc on a pooled connection, with the
// transaction's settings sent in BEGIN's round trip, and the role the
// connection had before them read in it too (for copyAsOwner).
func (s *Store) tenantTx(ctx context.Context, tenant string, f func(q querier) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	defer endTx(ctx, c) // a failed or panicking f: roll back
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT current_setting('role')`)
	b.Queue(setTenantSQL, s.tenantRole, tenant)
	br := c.SendBatch(ctx, b)
	var own string
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&own)
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("begin as tenant role: %w", err)
	}
	if err := f(querier{q: c, tx: c, tenant: tenant, ownRole: own}); err != nil {
		return err
	}
	return commit(ctx, c)
}

// commit commits the connection's transaction. Like pgx.Tx.Commit it
// reports a transaction that had failed, which COMMIT rolls back without
// an error.
func commit(ctx context.Context, c *pgxpool.Conn) error {
	tag, err := c.Exec(ctx, `COMMIT`)
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// endTx rolls back whatever transaction the connection is still in, on a
// context that outlives a cancelled ctx (the connection goes back to the
// pool, which would otherwise close it). It does nothing after a commit.
func endTx(ctx context.Context, c *pgxpool.Conn) {
	if c.Conn().IsClosed() || c.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, _ = c.Exec(ctx, `ROLLBACK`) // on failure the pool closes the connection
}

// tenantDB is the pool of a store with a TenantRole: a statement whose
// context carries a tenant runs in a transaction of its own as the tenant
// role, BEGIN, settings, statement and COMMIT sent together; any other
// runs on the pool as it is.
type tenantDB struct{ s *Store }

func (q tenantDB) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tenant, ok := q.s.tenantOf(ctx)
	if !ok {
		return querier{q: q.s.pool}.Exec(ctx, sql, args...)
	}
	var n int64
	err := q.s.tenantStatement(ctx, tenant, sql, args, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		n = tag.RowsAffected()
		return err
	})
	return n, interpretError(err)
}

// QueryRow runs the statement when the row is scanned, the way a pool's
// QueryRow holds its connection until then.
func (q tenantDB) QueryRow(ctx context.Context, sql string, args ...any) storesql.Row {
	tenant, ok := q.s.tenantOf(ctx)
	if !ok {
		return querier{q: q.s.pool}.QueryRow(ctx, sql, args...)
	}
	return tenantRow{s: q.s, ctx: ctx, tenant: tenant, sql: sql, args: args}
}

type tenantRow struct {
	s      *Store
	ctx    context.Context
	tenant string
	sql    string
	args   []any
}

func (r tenantRow) Scan(dest ...any) error {
	return interpretError(r.s.tenantStatement(r.ctx, r.tenant, r.sql, r.args, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(dest...)
	}))
}

// tenantStatement runs one statement in a transaction of its own as the
// tenant role, in one round trip; read reads its result. The statement's
// error comes first (pgx.ErrNoRows from a scan, say), then COMMIT's.
func (s *Store) tenantStatement(ctx context.Context, tenant, sql string, args []any, read func(pgx.BatchResults) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	defer endTx(ctx, c) // the statement failed: COMMIT was skipped
	br := c.SendBatch(ctx, tenantBatch(s.tenantRole, tenant, sql, args))
	err = readTenantBatch(br, read)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// tenantBatch is BEGIN, the settings, the statement and COMMIT.
func tenantBatch(role, tenant, sql string, args []any) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(setTenantSQL, role, tenant)
	b.Queue(sql, args...)
	b.Queue(`COMMIT`)
	return b
}

// readTenantBatch reads a tenantBatch's results: BEGIN's and the
// settings', the statement's by read, and COMMIT's. An error of the
// statement's may come with BEGIN's: pgx prepares every statement of a
// batch new to the connection before it runs any.
func readTenantBatch(br pgx.BatchResults, read func(pgx.BatchResults) error) error {
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	err := read(br)
	tag, cerr := br.Exec()
	switch {
	case err != nil:
		return err
	case cerr != nil:
		return cerr
	case tag.String() == "ROLLBACK":
		return pgx.ErrTxCommitRollback
	}
	return nil
}

func (q tenantDB) Query(ctx context.Context, sql string, args ...any) (storesql.Rows, error) {
	tenant, ok := q.s.tenantOf(ctx)
	if !ok {
		return querier{q: q.s.pool}.Query(ctx, sql, args...)
	}
	c, err := q.s.pool.Acquire(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	br := c.SendBatch(ctx, tenantBatch(q.s.tenantRole, tenant, sql, args))
	for range 2 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			endTx(ctx, c)
			c.Release()
			return nil, interpretError(err) // maybe the statement's (readTenantBatch)
		}
	}
	rs, err := br.Query()
	if err != nil {
		rs.Close()
		_ = br.Close()
		endTx(ctx, c)
		c.Release()
		return nil, interpretError(err)
	}
	return &tenantRows{pgRows: pgRows{rs}, ctx: ctx, br: br, c: c}, nil
}

// tenantRows are the rows of a tenantDB query: its transaction ends, and
// its connection goes back to the pool, when they are closed. COMMIT was
// sent with the query, so the server commits as soon as the statement is
// done, while the rows are still being read; that changes nothing for a
// reader, whose snapshot was the statement's.
type tenantRows struct {
	pgRows
	ctx context.Context
	br  pgx.BatchResults
	c   *pgxpool.Conn
	err error // Close's, once closed
}

func (r *tenantRows) Close() error {
	if r.c == nil {
		return r.err
	}
	c := r.c
	r.c = nil
	r.Rows.Close()
	err := r.Rows.Err()
	tag, cerr := r.br.Exec()
	if err == nil && cerr == nil && tag.String() == "ROLLBACK" {
		cerr = pgx.ErrTxCommitRollback
	}
	if err == nil {
		err = cerr
	}
	if berr := r.br.Close(); err == nil {
		err = berr
	}
	endTx(r.ctx, c)
	c.Release()
	r.err = interpretError(err)
	return r.err
}

// copyAsOwner runs a COPY into batch_rows in a tenant's transaction.
// PostgreSQL refuses COPY FROM into a table with row-level security for a
// role the policies apply to ("COPY FROM not supported with row-level
// security"), so the COPY alone runs as the connection's own role (the
// one it had before the transaction, then the tenant role again, both
// for the transaction only), after checking here what the policy
// would have checked of each row: every row COPY writes has the ingest's
// tenant_id (copySource), which must be the transaction's tenant. The
// statements before it (the batch's INSERT, a re-run's reads) and after
// it (the duplicate check, the chunks, the event) run as the tenant role.
//
// A temporary table as the role, then INSERT ... SELECT into batch_rows,
// would have the policy check the rows instead, no more strictly (the
// policy looks at tenant_id only), for a quarter more time per ingest.
func (d pgDriver) copyAsOwner(ctx context.Context, q querier, p storesql.InsertRowsParams, copyRows func() error) error {
	return d.asOwner(ctx, q, p.TenantID, "copy rows", copyRows)
}

// asOwner runs f as the connection's own role in a transaction of tenant
// (see copyAsOwner), for a statement the tenant role may not run: a COPY,
// or the TRUNCATE of a batch's partition of batch_values (a partition
// has no policy of its own and is not granted to the tenant role, which
// reaches the values through batch_values only).
func (d pgDriver) asOwner(ctx context.Context, q querier, tenant, what string, f func() error) error {
	if tenant != q.tenant {
		return fmt.Errorf("%s of tenant %q in a transaction of tenant %q", what, tenant, q.tenant)
	}
	if _, err := q.q.Exec(ctx, `SELECT set_config('role', $1, true)`, q.ownRole); err != nil {
		return fmt.Errorf("%s: %w", what, interpretError(err))
	}
	if err := f(); err != nil {
		return err
	}
	if _, err := q.q.Exec(ctx, `SELECT set_config('role', $1, true)`, d.s.tenantRole); err != nil {
		return fmt.Errorf("%s: %w", what, interpretError(err))
	}
	return nil
}

// tenantRoleLockKey is the first half of the advisory lock key that
// serialises EnsureTenantRole on a role; the second is the role's name.
const tenantRoleLockKey int32 = 0x726f6c65 // "role"

// EnsureTenantRole creates Config.TenantRole, NOLOGIN, when it does not
// exist, makes the current user a member (so that it can SET ROLE to it)
// and grants it what the store's statements need of the schema: USAGE on
// the schema; SELECT, INSERT, UPDATE and DELETE on every table row-level
// security protects; SELECT on schema_migrations; USAGE on the sequences
// of serial columns of those tables (identity columns need none). Tables
// without row-level security, such as workers, are not granted: a tenant
// must not read them. It is idempotent, and safe to call from many
// processes at once: callers are serialised on the schema (against
// migrators too) and on the role, and a role another database of the
// cluster created meanwhile is taken as it is.
//
// Grants name the tables as they are: call it after Migrate, at every
// start of a service, so that the tables a later migration adds are
// granted too. It needs a user that may create roles (CREATEROLE) and
// owns the tables, as the migrating user does.
func (s *Store) EnsureTenantRole(ctx context.Context) error {
	if s.tenantRole == "" {
		return errors.New("ensure tenant role: Config.TenantRole is empty")
	}
	role, schema := storesql.QuoteIdent(s.tenantRole), storesql.QuoteIdent(s.schema)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2)), pg_advisory_xact_lock($3, hashtext($4))`,
			migrationLockKey, s.schema, tenantRoleLockKey, s.tenantRole); err != nil {
			return err
		}
		if err := createRole(ctx, tx, s.tenantRole); err != nil {
			return err
		}
		// A superuser, a BYPASSRLS role and a table's owner (or a member
		// of it) are not subject to the policies: as the tenant role,
		// such a role would make them decoration. SET ROLE needs
		// membership; from PostgreSQL 16, with the SET option, which a
		// role's creator does not get by default.
		var member, bypasses bool
		if err := tx.QueryRow(ctx, `SELECT pg_has_role(current_user, r.oid,
				CASE WHEN current_setting('server_version_num')::int >= 160000 THEN 'SET' ELSE 'MEMBER' END),
			r.rolsuper OR r.rolbypassrls OR EXISTS (SELECT 1 FROM pg_class c
				WHERE c.relnamespace = CAST($2 AS regnamespace) AND c.relrowsecurity AND pg_has_role(r.oid, c.relowner, 'MEMBER'))
			FROM pg_roles r WHERE r.rolname = $1`, s.tenantRole, schema).Scan(&member, &bypasses); err != nil {
			return err
		}
		if bypasses {
			return fmt.Errorf("role %s is a superuser, has BYPASSRLS or owns tables of schema %s: row-level security would not apply to it", role, schema)
		}
		if !member {
			if _, err := tx.Exec(ctx, `GRANT `+role+` TO CURRENT_USER`); err != nil {
				return fmt.Errorf("grant %s to the current user: %w", role, err)
			}
		}
		if err := grantTenantTables(ctx, tx, role, schema); err != nil {
			return err
		}
		// GRANT by a user that may not grant (it owns neither the schema
		// nor the tables) warns, and grants nothing.
		var granted bool
		if err := tx.QueryRow(ctx, `SELECT has_schema_privilege($1, CAST($2 AS regnamespace), 'USAGE') AND NOT EXISTS (SELECT 1 FROM pg_class c
			WHERE c.relnamespace = CAST($2 AS regnamespace) AND c.relkind IN ('r', 'p') AND c.relrowsecurity
			  AND NOT (has_table_privilege($1, c.oid, 'SELECT') AND has_table_privilege($1, c.oid, 'INSERT')
			       AND has_table_privilege($1, c.oid, 'UPDATE') AND has_table_privilege($1, c.oid, 'DELETE')))`,
			s.tenantRole, schema).Scan(&granted); err != nil {
			return err
		}
		if !granted {
			return fmt.Errorf("the current user could not grant %s the schema %s and its tables: it must own them", role, schema)
		}
		// Last, as it changes the transaction's user: the store's own
		// first statement, so that a user that is a member but may not
		// SET ROLE (PostgreSQL 16's SET option) fails here, not at the
		// first request.
		if _, err := tx.Exec(ctx, setTenantSQL, s.tenantRole, ""); err != nil {
			return fmt.Errorf("set role %s: %w", role, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ensure tenant role %s: %w", role, interpretError(err))
	}
	return nil
}

// grantTenantTables grants role the schema, its tenant tables and their
// sequences, and read access to the migrations and the turn clock.
func grantTenantTables(ctx context.Context, tx pgx.Tx, role, schema string) error {
	if _, err := tx.Exec(ctx, `GRANT USAGE ON SCHEMA `+schema+` TO `+role); err != nil {
		return err
	}
	tables, err := scanNames(tx.Query(ctx, `SELECT c.relname FROM pg_class c
		WHERE c.relnamespace = CAST($1 AS regnamespace) AND c.relkind IN ('r', 'p') AND c.relrowsecurity
		ORDER BY c.relname`, schema))
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	if len(tables) > 0 {
		if _, err := tx.Exec(ctx, `GRANT SELECT, INSERT, UPDATE, DELETE ON `+qualified(schema, tables)+` TO `+role); err != nil {
			return err
		}
	}
	var migrated bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schema+".schema_migrations").Scan(&migrated); err != nil {
		return err
	}
	if migrated {
		if _, err := tx.Exec(ctx, `GRANT SELECT ON `+schema+`.schema_migrations TO `+role); err != nil {
			return err
		}
	}
	// The turn clock (migration 0008) holds no tenant's data: a
	// tenant's transaction reads it to queue a batch's chunks.
	var clock bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schema+".turn_clock").Scan(&clock); err != nil {
		return err
	}
	if clock {
		if _, err := tx.Exec(ctx, `GRANT SELECT ON `+schema+`.turn_clock TO `+role); err != nil {
			return err
		}
	}
	// A serial column's nextval needs USAGE on its sequence; an
	// identity column's does not (and USAGE would let the role read
	// the sequence's last value: how many batches all tenants made).
	seqs, err := scanNames(tx.Query(ctx, `SELECT s.relname FROM pg_class s
		JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.oid AND d.deptype = 'a'
		JOIN pg_class t ON t.oid = d.refobjid
		WHERE s.relkind = 'S' AND s.relnamespace = CAST($1 AS regnamespace) AND t.relrowsecurity
		ORDER BY s.relname`, schema))
	if err != nil {
		return fmt.Errorf("list sequences: %w", err)
	}
	if len(seqs) > 0 {
		if _, err := tx.Exec(ctx, `GRANT USAGE ON SEQUENCE `+qualified(schema, seqs)+` TO `+role); err != nil {
			return err
		}
	}
	return nil
}

// createRole creates a NOLOGIN role unless it exists. Roles belong to the
// cluster, not to a database, so the advisory lock (a database's) does not
// cover a caller on another database: when one creates it meanwhile, the
// duplicate is taken for the role, under a savepoint.
func createRole(ctx context.Context, tx pgx.Tx, name string) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, `CREATE ROLE `+storesql.QuoteIdent(name)+` NOLOGIN`); err != nil {
		_ = sp.Rollback(ctx)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "42710" || pe.Code == "23505") { // duplicate_object; unique_violation on pg_authid
			return nil
		}
		return fmt.Errorf("create role: %w", err)
	}
	return sp.Commit(ctx)
}

// scanNames reads a query's one text column.
func scanNames(rs pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rs, pgx.RowTo[string])
}

// qualified is "schema"."a", "schema"."b", ...
func qualified(schema string, names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = schema + "." + storesql.QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}
