// Package postgres is the batch store for more than one process or machine:
// PostgreSQL through pgx/v5 and pgxpool.
//
// The engine's tables live in their own schema ("rowfate" unless
// Config.Schema says otherwise), so they never collide with an
// application's own tables in the same database. Every statement names the
// schema; the pool's search_path is left alone.
//
// The statements themselves are shared with the SQLite store
// (store/internal/storesql); this package supplies what is PostgreSQL's own: the
// pool and its transactions, the advisory lock that serialises migrators,
// COPY for ingest and one set-based UPDATE ... FROM unnest(...) per flush.
// All lease times are the database's now(), never a worker's clock.
//
// ARCHITECTURE.md at the repository root describes the data model.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/migrations"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/internal/storesql"
)

var _ driver.Store = (*Store)(nil)

// DefaultSchema is the schema of the engine's tables unless Config.Schema
// names another.
const DefaultSchema = "rowfate"

// migrationLockKey is the first half of the advisory lock key that
// serialises migrations; the second half is the schema, so that separate
// schemas (tests) do not wait on each other.
const migrationLockKey int32 = 0x726f7766 // "rowf"

// Config configures a Store. The zero value is usable.
type Config struct {
	// Schema holds the engine's tables; Migrate creates it. Defaults to
	// DefaultSchema ("rowfate").
	Schema string
	// TenantRole, when set, is the role every transaction and statement
	// with a tenant in its context (driver.WithTenant) runs as, with
	// app.tenant_id set to that tenant, both for that transaction only:
	// the row-level security policies of migration 0006 then let it see
	// and write that tenant's rows only, underneath the queries' own
	// tenant filters. It must not own the tables (the owner bypasses the
	// policies); EnsureTenantRole creates it and grants what it needs.
	// Without a tenant in the context (workers, migrations, token
	// checks) statements run as the pool's own user, as they do when
	// TenantRole is empty, the default.
	TenantRole string
}

// Store is the batch store on a PostgreSQL pool.
type Store struct {
	*storesql.Store
	pool   *pgxpool.Pool
	schema string
	// tenantRole is Config.TenantRole.
	tenantRole string
}

// New returns a store on an existing pool; cfg may be nil. The caller keeps
// ownership of the pool: Close does not close it. Make the pool from a
// configuration ConfigurePool readied: without it, a database of many
// batches locks every batch's values partition on some reads.
func New(pool *pgxpool.Pool, cfg *Config) *Store {
	schema := DefaultSchema
	if cfg != nil && cfg.Schema != "" {
		schema = cfg.Schema
	}
	s := &Store{pool: pool, schema: schema}
	if cfg != nil {
		s.tenantRole = cfg.TenantRole
	}
	d := dialect(schema)
	d.ShowIngest = true
	d.ValuesApart = true
	d.BesideSessions = int(pool.Config().MaxConns-1) / 2
	s.Store = storesql.New(s.driver(), d)
	return s
}

func dialect(schema string) *storesql.Dialect {
	return &storesql.Dialect{
		Engine:      migrations.Postgres,
		Schema:      schema,
		PagePrelude: "SET LOCAL enable_sort = off",
		Now:         "now()",
		Clock:       "clock_timestamp()",
		Ms:          "interval '1 millisecond'",
		TimeType:    "timestamptz",
		ForUpdate:   " FOR UPDATE",
		SkipLocked:  " FOR UPDATE OF ch SKIP LOCKED",
		InText: func(col, param string) string {
			return fmt.Sprintf("(CAST(%s AS text[]) IS NULL OR %s = ANY(%s))", param, col, param)
		},
		ListArg: func(ss []string) any {
			if ss == nil {
				return nil
			}
			return ss
		},
		TextIn: func(col, param string) string {
			return fmt.Sprintf("%s = ANY(CAST(%s AS text[]))", col, param)
		},
		InInt: func(col, param string) string {
			return fmt.Sprintf("%s = ANY(CAST(%s AS bigint[]))", col, param)
		},
		IntListArg: func(ns []int64) any { return ns },
		InBytes: func(col, param string) string {
			return fmt.Sprintf("%s = ANY(CAST(%s AS bytea[]))", col, param)
		},
		BytesListArg: func(bs [][]byte) any { return bs },
		JSONRecords: func(param string, cols map[string]string) string {
			return fmt.Sprintf("jsonb_to_recordset(CAST(%s AS jsonb)) AS u(%s)", param, storesql.ColumnList(cols, func(name, typ string) string { return name + " " + typ }))
		},
		WithRecords: func(param string, cols map[string]string) string {
			return fmt.Sprintf("WITH u AS (SELECT * FROM jsonb_to_recordset(CAST(%s AS jsonb)) AS x(%s))", param, storesql.ColumnList(cols, func(name, typ string) string { return name + " " + typ }))
		},
		JSONError: func(rowExpr string, text ...string) string {
			members := "'row', " + rowExpr
			for i := 0; i+1 < len(text); i += 2 {
				members += fmt.Sprintf(", '%s', CAST(%s AS text)", text[i], text[i+1])
			}
			return "jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(" + members + ")))"
		},
		HasTable: func(table string) (string, []any) {
			return `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = $1 AND tablename = $2)`, []any{schema, table}
		},
	}
}

// Pool returns the store's pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema of the engine's tables.
func (s *Store) Schema() string { return s.schema }

// Close is a no-op: the pool belongs to the caller.
func (s *Store) Close() error { return nil }

// interpretError maps pgx errors to the engine's sentinels. pgx.ErrNoRows
// already matches sql.ErrNoRows, which the shared statements look for.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("%w: %v", driver.ErrConflict, err)
	}
	if IsTransient(err) {
		return fmt.Errorf("%w: %w", driver.ErrTransient, err)
	}
	return err
}

// IsTransient reports whether a retry may clear err, an error from pgx
// (the store's own errors already match driver.ErrTransient): the server
// went away or restarts (a terminated backend, an admin shutdown), the
// connection broke, or the transaction lost a serialisation race or a
// deadlock. A cancelled or expired context is the caller's decision, never
// transient.
func IsTransient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "40001", pe.Code == "40P01", // serialization_failure, deadlock_detected
			strings.HasPrefix(pe.Code, "08"),                           // connection exceptions
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // admin/crash shutdown, cannot connect now
			pe.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		strings.Contains(err.Error(), "conn closed")
}

// pgDriver adapts the pool to storesql.Driver.
type pgDriver struct{ s *Store }

func (s *Store) driver() storesql.Driver { return pgDriver{s} }

// pgxQuerier is what a pool and a transaction have in common.
type pgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// copier is what COPY needs of pgx: a transaction, or the connection of a
// tenant's transaction (tenantTx).
type copier interface {
	Conn() *pgx.Conn
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// querier adapts pgx to storesql.Querier; tx is set inside a transaction,
// for the statements (COPY) that need pgx itself, and tenant inside a
// transaction scoped to a tenant (tenantTx), with ownRole, the role the
// connection had before it ("none": the session user).
type querier struct {
	q       pgxQuerier
	tx      copier
	tenant  string
	ownRole string
}

func (q querier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.q.Exec(ctx, sql, args...)
	if err != nil {
		return 0, interpretError(err)
	}
	return tag.RowsAffected(), nil
}

func (q querier) Query(ctx context.Context, sql string, args ...any) (storesql.Rows, error) {
	rs, err := q.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	return pgRows{rs}, nil
}

func (q querier) QueryRow(ctx context.Context, sql string, args ...any) storesql.Row {
	return pgRow{q.q.QueryRow(ctx, sql, args...)}
}

type pgRows struct{ pgx.Rows }

func (r pgRows) Scan(dest ...any) error { return interpretError(r.Rows.Scan(dest...)) }
func (r pgRows) Err() error             { return interpretError(r.Rows.Err()) }
func (r pgRows) Close() error {
	r.Rows.Close()
	return interpretError(r.Rows.Err())
}

type pgRow struct{ pgx.Row }

func (r pgRow) Scan(dest ...any) error { return interpretError(r.Row.Scan(dest...)) }

// DB is the pool; with a TenantRole, a pool whose statements run in a
// transaction of their own when their context carries a tenant (tenantDB).
func (d pgDriver) DB() storesql.Querier {
	if d.s.tenantRole != "" {
		return tenantDB(d)
	}
	return querier{q: d.s.pool}
}

// InTx runs f in a transaction: as the tenant role, scoped to the tenant,
// when there is a TenantRole and ctx carries a tenant.
func (d pgDriver) InTx(ctx context.Context, f func(storesql.Querier) error) error {
	if tenant, ok := d.s.tenantOf(ctx); ok {
		return interpretError(d.s.tenantTx(ctx, tenant, func(q querier) error { return f(q) }))
	}
	return interpretError(pgx.BeginFunc(ctx, d.s.pool, func(tx pgx.Tx) error {
		return f(querier{q: tx, tx: tx})
	}))
}

// LockMigrations takes a transaction-scoped advisory lock keyed on the
// schema, then creates the schema and makes it the transaction's
// search_path, so the migration files name their tables unqualified. The
// lock comes first: two CREATE SCHEMA IF NOT EXISTS at once can still
// collide on the catalog's unique index.
func (d pgDriver) LockMigrations(ctx context.Context, q storesql.Querier) error {
	if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrationLockKey, d.s.schema); err != nil {
		return err
	}
	ident := storesql.QuoteIdent(d.s.schema)
	if _, err := q.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+ident); err != nil {
		return fmt.Errorf("create schema %s: %w", ident, err)
	}
	_, err := q.Exec(ctx, `SELECT set_config('search_path', $1, true)`, ident)
	return err
}

// Notify sends a notification on the schema's work channel; PostgreSQL
// delivers it when the transaction commits, never before.
func (d pgDriver) Notify(ctx context.Context, q storesql.Querier) error {
	_, err := q.Exec(ctx, `SELECT pg_notify($1, '')`, d.s.channel())
	return err
}

// channel is the LISTEN/NOTIFY channel of the schema's work.
func (s *Store) channel() string { return "rowfate_work_" + s.schema }

// NotifyEvent sends "batch:seq" on the schema's events channel, delivered
// on commit: the id and sequence only, never the payload, so the
// notification stays small and the log stays the one source.
func (d pgDriver) NotifyEvent(ctx context.Context, q storesql.Querier, batchID, seq int64) error {
	_, err := q.Exec(ctx, `SELECT pg_notify($1, $2)`, d.s.eventsChannel(), strconv.FormatInt(batchID, 10)+":"+strconv.FormatInt(seq, 10))
	return err
}

// eventsChannel is the LISTEN/NOTIFY channel of the schema's batch events.
func (s *Store) eventsChannel() string { return "rowfate_events_" + s.schema }

// InsertRows streams a batch's rows with COPY; in a tenant's transaction
// as the owner, once the rows' tenant is checked (copyAsOwner).
func (d pgDriver) InsertRows(ctx context.Context, q storesql.Querier, p storesql.InsertRowsParams) error {
	pq := q.(querier)
	tx := pq.tx
	var now time.Time
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return err
	}
	src := newCopySource(p.Rows, p.BatchID, p.TenantID, now)
	defer src.stop()
	if p.ValuesApart {
		copyRows := func() error { return d.copyApart(ctx, tx, src) }
		if pq.tenant != "" {
			return d.copyAsOwner(ctx, pq, p, copyRows)
		}
		return copyRows()
	}
	copyRows := func() error {
		if err := copyBinary(ctx, tx, pgx.Identifier{d.s.schema, "batch_rows"}, allRowColumns, src.fillRows); err != nil {
			if src.err != nil {
				return src.err // the source's own error, not COPY's wrapping of it
			}
			return fmt.Errorf("copy rows: %w", interpretError(err))
		}
		return nil
	}
	if pq.tenant != "" {
		return d.copyAsOwner(ctx, pq, p, copyRows)
	}
	return copyRows()
}

// copySource encodes the engine's rows for a binary COPY (copyBinary).
type copySource struct {
	next   func() (driver.IngestRow, error, bool)
	stop   func()
	batch  int64
	tenant string
	now    time.Time
	err    error
	// apart: the values are copied into batch_values, a group at a time
	// (copyApart); rowNos and payloads are the group's so far, and done
	// says the rows ran out.
	apart    bool
	rowNos   []int64
	payloads [][]byte
	done     bool
}

func newCopySource(seq iter.Seq2[driver.IngestRow, error], id int64, tenant string, now time.Time) *copySource {
	next, stop := iter.Pull2(seq)
	return &copySource{next: next, stop: stop, batch: id, tenant: tenant, now: now}
}

// allRowColumns are the columns of batch_rows fillRows writes, payload
// among them unless the values are apart (rowColumns).
var allRowColumns = []string{"batch_id", "row_no", "tenant_id", "chunk_no", "state", "payload", "errors", "next_attempt_at", "updated_at", "key_digest", "result_id", "attempts"}

// fillRows appends rows to buf, in the order of allRowColumns (without
// payload when apart), until it holds copyBufferSize bytes; done once
// the rows ran out or, apart, the group is full (its values are copied
// next).
func (c *copySource) fillRows(buf []byte) ([]byte, bool, error) {
	for len(buf) < copyBufferSize {
		if c.apart && len(c.rowNos) >= valuesGroupRows {
			return buf, true, nil
		}
		r, err, ok := c.next()
		if !ok {
			c.done = true
			return buf, true, nil
		}
		if err != nil {
			c.err = err
			return buf, false, err
		}
		payload, err := storesql.EncodeValues(r.Values)
		if err != nil {
			c.err = err
			return buf, false, err
		}
		errs, err := storesql.EncodeErrors(r.Errors)
		if err != nil {
			c.err = err
			return buf, false, err
		}
		if c.apart {
			// The values wait for the group's second COPY; batch_rows
			// takes its default, the JSON null.
			c.rowNos, c.payloads = append(c.rowNos, r.RowNo), append(c.payloads, payload)
			buf = appendTuple(buf, len(rowColumns))
		} else {
			buf = appendTuple(buf, len(allRowColumns))
		}
		buf = appendInt8(buf, c.batch)
		buf = appendInt8(buf, r.RowNo)
		buf = appendText(buf, c.tenant)
		buf = appendInt8(buf, r.ChunkNo)
		buf = appendText(buf, string(r.State))
		if !c.apart {
			buf = appendJSONB(buf, payload)
		}
		buf = appendJSONB(buf, errs)
		if r.State.Open() {
			buf = appendTimestamptz(buf, c.now.Add(r.RetryDelay))
		} else {
			buf = appendNull(buf)
		}
		buf = appendTimestamptz(buf, c.now)
		buf = appendBytea(buf, r.KeyDigest)
		if r.ResultID != "" {
			buf = appendText(buf, r.ResultID)
		} else {
			buf = appendNull(buf)
		}
		buf = appendInt4(buf, int32(r.Attempts))
	}
	return buf, false, nil
}

// fillValues returns the fill of the group's values, in the order of
// valueColumns.
func (c *copySource) fillValues() func([]byte) ([]byte, bool, error) {
	at := 0
	return func(buf []byte) ([]byte, bool, error) {
		for ; at < len(c.rowNos) && len(buf) < copyBufferSize; at++ {
			buf = appendTuple(buf, len(valueColumns))
			buf = appendInt8(buf, c.batch)
			buf = appendInt8(buf, c.rowNos[at])
			buf = appendText(buf, c.tenant)
			buf = appendJSONB(buf, c.payloads[at])
		}
		return buf, at == len(c.rowNos), nil
	}
}

// UpdateOutcomes writes a flush's outcomes with one set-based UPDATE.
//
// Right after a large COPY the planner has no statistics for the new rows,
// estimates the chunk's range at one row and picks a nested loop that
// rescans the unnest'ed outcomes once per row: 0.4-1.5 s per 1,000-row
// flush of a 100k-row batch. A hash join is right whatever the statistics
// say, so nested loops are off for this one statement, and the chunk's row
// range bounds the scan.
func (d pgDriver) UpdateOutcomes(ctx context.Context, q storesql.Querier, p storesql.UpdateOutcomesParams) error {
	n := len(p.Outcomes)
	var (
		rowNos = make([]int64, n)
		states = make([]string, n)
		ids    = make([]*string, n)
		errs   = make([]*string, n)
		delays = make([]int64, n)
	)
	for i, o := range p.Outcomes {
		rowNos[i], states[i], delays[i] = o.RowNo, string(o.State), o.RetryDelay.Milliseconds()
		if o.ResultID != "" {
			ids[i] = &o.ResultID
		}
		if o.Error != nil {
			b, err := storesql.EncodeErrors([]rows.FieldError{*o.Error})
			if err != nil {
				return err
			}
			s := string(b)
			errs[i] = &s
		}
	}
	// A few rows over a wide range (Sparse) are found by their numbers
	// (= ANY, index lookups) before they are joined: with the range's
	// statistics as wrong as above, the planner scanned the range
	// (estimated at 40 rows, 670,000 in fact) once per outcome, 6 s for
	// 3,700 outcomes, whichever joins it was allowed.
	joins, rowsIn := []string{"nestloop"}, ""
	if p.Sparse {
		joins, rowsIn = nil, "r.row_no = ANY($1::bigint[]) AND "
	}
	if err := setJoins(ctx, q, joins, "off"); err != nil {
		return err
	}
	where, attempts := p.OutcomeRows("r.")
	if _, err := q.Exec(ctx, `UPDATE `+storesql.QuoteIdent(d.s.schema)+`.batch_rows r
		SET state = u.state, result_id = u.result_id, errors = u.errors::jsonb, attempts = `+attempts+`,
		    next_attempt_at = CASE WHEN u.state IN `+storesql.OpenStates+`
		        THEN now() + u.delay_ms * interval '1 millisecond' END,
		    updated_at = now()
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[])
		    AS u(row_no, state, result_id, errors, delay_ms)
		WHERE r.batch_id = $6 AND r.tenant_id = $7 AND r.row_no = u.row_no AND `+where+`
		  AND `+rowsIn+`r.row_no BETWEEN $8 AND $9`,
		rowNos, states, ids, errs, delays, p.BatchID, p.TenantID, p.First, p.Last); err != nil {
		return err
	}
	return setJoins(ctx, q, joins, "on")
}

// setJoins turns the planner's join methods on or off for the rest of the
// transaction.
func setJoins(ctx context.Context, q storesql.Querier, joins []string, to string) error {
	for _, j := range joins {
		if _, err := q.Exec(ctx, `SET LOCAL enable_`+j+` = `+to); err != nil {
			return err
		}
	}
	return nil
}

// Listen calls wake on every notification of work in the store's schema
// (sent when rows become due: an import, a retry, a resume) until ctx is
// done. Notifications are a hint only: workers poll as well, so one lost
// while reconnecting delays work, never loses it. wake is also called after
// every reconnect, in case something was sent meanwhile.
func (s *Store) Listen(ctx context.Context, wake func()) error {
	return s.listen(ctx, s.channel(), func(string) { wake() }, wake)
}

// NotifyEvents calls f with the batch and sequence number of every event
// committed in the store's schema, by any process, until ctx is done; and
// with batch 0 after every reconnect, since notifications sent meanwhile
// are lost.
func (s *Store) NotifyEvents(ctx context.Context, f func(batchID, seq int64)) error {
	return s.listen(ctx, s.eventsChannel(), func(payload string) {
		id, seq, ok := strings.Cut(payload, ":")
		b, err1 := strconv.ParseInt(id, 10, 64)
		n, err2 := strconv.ParseInt(seq, 10, 64)
		if ok && err1 == nil && err2 == nil {
			f(b, n)
		}
	}, func() { f(0, 0) })
}

// listen holds one connection of the pool for LISTEN on a channel and,
// when that connection breaks (a terminated backend, a server restart),
// takes another and listens again, waiting 100ms doubling to 5s between
// tries; it calls listening each time it listens anew.
func (s *Store) listen(ctx context.Context, channel string, got func(payload string), listening func()) error {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, channel, got, listening)
		if ctx.Err() != nil {
			return nil
		}
		_ = err // the next round says it again if it lasts
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
	return nil
}

func (s *Store) listenOnce(ctx context.Context, channel string, got func(string), listening func()) error {
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A LISTEN connection must not go back to the pool still listening:
	// it is taken out of the pool and closed when done.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		got(n.Payload)
	}
}
