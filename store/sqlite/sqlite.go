// Package sqlite is the embedded batch.Store: one SQLite file, written by one
// process, through modernc.org/sqlite (pure Go, no cgo).
//
// The database runs in WAL mode with a busy timeout, and the store holds a
// single connection. SQLite allows one writer at a time anyway; funnelling
// every statement through one connection turns lock contention into
// queueing inside database/sql instead of SQLITE_BUSY errors, and makes
// every transaction (BEGIN IMMEDIATE) as exclusive as the chunk-row lock that
// PostgreSQL takes explicitly.
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/internal/storesql"
	"github.com/rowfate/rowfate/migrations"
	"github.com/rowfate/rowfate/rows"
)

var _ batch.Store = (*Store)(nil)

// now is the database clock in integer milliseconds.
const now = "CAST(unixepoch('subsec') * 1000 AS INTEGER)"

// Store is a batch.Store on one SQLite file.
type Store struct {
	db *sql.DB
}

// Open opens (creating if needed) the SQLite database at path and returns a
// store on it. It does not migrate; call Migrate.
func Open(path string) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// DB returns the underlying database, for processors that write to the same
// file (the demo customers table).
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// interpretError maps SQLite errors to the engine's sentinels.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return batch.ErrNotFound
	}
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT {
		return fmt.Errorf("%w: %v", batch.ErrConflict, err)
	}
	return err
}

// Migrate applies pending migrations in one BEGIN IMMEDIATE transaction.
func (s *Store) Migrate(ctx context.Context) error {
	all, err := migrations.Load(migrations.SQLite)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
			return err
		}
		applied := map[int]bool{}
		rs, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		for rs.Next() {
			var v int
			if err := rs.Scan(&v); err != nil {
				rs.Close()
				return err
			}
			applied[v] = true
		}
		if err := rs.Close(); err != nil {
			return err
		}
		for _, m := range migrations.Pending(all, applied) {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, `+now+`)`, m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return interpretError(err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return interpretError(err)
	}
	return interpretError(tx.Commit())
}

// BatchIngest writes a batch, its rows, chunks and first event in one
// transaction.
func (s *Store) BatchIngest(ctx context.Context, p batch.BatchIngestParams) (*batch.Batch, error) {
	header, err := json.Marshal(p.Header)
	if err != nil {
		return nil, err
	}
	options, err := json.Marshal(storesql.BatchOptions{Warnings: p.Warnings})
	if err != nil {
		return nil, err
	}
	var id int64
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO batches (tenant_id, kind, source_name, header, options, created_at)
			VALUES (?, ?, ?, ?, ?, `+now+`) RETURNING id`, p.TenantID, p.Kind, p.SourceName, string(header), string(options)).Scan(&id); err != nil {
			return fmt.Errorf("insert batch: %w", err)
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO batch_rows
			(batch_id, row_no, tenant_id, chunk_no, state, payload, errors, next_attempt_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, CASE WHEN ? THEN `+now+` END, `+now+`)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for r, err := range p.Rows {
			if err != nil {
				return err
			}
			payload, err := storesql.EncodeValues(r.Values)
			if err != nil {
				return err
			}
			errs, err := storesql.EncodeErrors(r.Errors)
			if err != nil {
				return err
			}
			var errArg any
			if errs != nil {
				errArg = string(errs)
			}
			if _, err := ins.ExecContext(ctx, id, r.RowNo, p.TenantID, r.ChunkNo, string(r.State), string(payload), errArg, r.State.Open()); err != nil {
				return fmt.Errorf("insert row %d: %w", r.RowNo, err)
			}
		}
		var sum batch.IngestSummary
		if p.SummaryFunc != nil {
			sum = p.SummaryFunc()
		}
		if _, err := tx.ExecContext(ctx, `UPDATE batches SET source_digest = ?, skipped_empty = ? WHERE id = ?`, sum.SourceDigest, sum.SkippedEmpty, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO batch_chunks
			(batch_id, chunk_no, tenant_id, first_row_no, last_row_no, next_due_at, `+storesql.CountColumns()+`)
			SELECT batch_id, chunk_no, tenant_id, min(row_no), max(row_no),
				min(next_attempt_at) FILTER (WHERE state IN `+storesql.OpenStates+`), `+storesql.CountAggregates()+`
			FROM batch_rows WHERE batch_id = ? GROUP BY batch_id, chunk_no, tenant_id`, id); err != nil {
			return fmt.Errorf("insert chunks: %w", err)
		}
		_, err = s.afterChange(ctx, tx, id, "ingested")
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.BatchGet(ctx, batch.BatchGetParams{TenantID: p.TenantID, ID: id})
}

// afterChange finishes the batch when no row is open and appends an event
// with the batch totals, taking the next sequence number in this
// transaction. The order (sequence number first, then the finish check)
// matches the PostgreSQL store, where it matters; here BEGIN IMMEDIATE
// already serialises writers.
func (s *Store) afterChange(ctx context.Context, tx *sql.Tx, id int64, typ string) (*batch.FlushResult, error) {
	var (
		seq    int64
		tenant string
		status string
	)
	if err := tx.QueryRowContext(ctx, `UPDATE batches SET event_seq = event_seq + 1 WHERE id = ?
		RETURNING event_seq, tenant_id`, id).Scan(&seq, &tenant); err != nil {
		return nil, fmt.Errorf("next event seq: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `UPDATE batches SET
			status = CASE WHEN NOT EXISTS (SELECT 1 FROM batch_chunks WHERE batch_id = ? AND next_due_at IS NOT NULL)
				AND status = 'running' THEN 'finished' ELSE status END,
			finished_at = CASE WHEN status = 'running' AND NOT EXISTS (SELECT 1 FROM batch_chunks WHERE batch_id = ? AND next_due_at IS NOT NULL)
				THEN `+now+` ELSE finished_at END
		WHERE id = ? RETURNING status`, id, id, id).Scan(&status); err != nil {
		return nil, fmt.Errorf("finish batch: %w", err)
	}
	dests, counts := storesql.CountDests()
	if err := tx.QueryRowContext(ctx, `SELECT `+storesql.SumColumns()+` FROM batch_chunks WHERE batch_id = ?`, id).Scan(dests...); err != nil {
		return nil, fmt.Errorf("sum chunks: %w", err)
	}
	res := &batch.FlushResult{Counts: counts(), Finished: status == string(batch.StatusFinished), EventSeq: seq}
	payload, err := json.Marshal(storesql.EventPayload{Counts: res.Counts, Finished: res.Finished})
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO batch_events (tenant_id, batch_id, seq, type, payload, created_at)
		VALUES (?, ?, ?, ?, ?, `+now+`)`, tenant, id, seq, typ, string(payload)); err != nil {
		return nil, fmt.Errorf("append event: %w", err)
	}
	return res, nil
}

// BatchGet returns a batch with totals summed over its chunks.
func (s *Store) BatchGet(ctx context.Context, p batch.BatchGetParams) (*batch.Batch, error) {
	var (
		b        batch.Batch
		header   string
		options  string
		created  int64
		finished sql.NullInt64
		status   string
	)
	err := s.db.QueryRowContext(ctx, `SELECT id, tenant_id, kind, source_name, source_digest, status, header,
			options, skipped_empty, created_at, finished_at
		FROM batches WHERE id = ? AND tenant_id = ?`, p.ID, p.TenantID).
		Scan(&b.ID, &b.TenantID, &b.Kind, &b.SourceName, &b.SourceDigest, &status, &header, &options, &b.SkippedEmpty, &created, &finished)
	if err != nil {
		return nil, fmt.Errorf("get batch %d: %w", p.ID, interpretError(err))
	}
	b.Status = batch.Status(status)
	b.CreatedAt = time.UnixMilli(created)
	if finished.Valid {
		t := time.UnixMilli(finished.Int64)
		b.FinishedAt = &t
	}
	if err := json.Unmarshal([]byte(header), &b.Header); err != nil {
		return nil, fmt.Errorf("get batch %d: header: %w", p.ID, err)
	}
	var opts storesql.BatchOptions
	if err := json.Unmarshal([]byte(options), &opts); err != nil {
		return nil, fmt.Errorf("get batch %d: options: %w", p.ID, err)
	}
	b.Warnings = opts.Warnings
	dests, counts := storesql.CountDests()
	if err := s.db.QueryRowContext(ctx, `SELECT `+storesql.SumColumns()+` FROM batch_chunks WHERE batch_id = ? AND tenant_id = ?`, p.ID, p.TenantID).Scan(dests...); err != nil {
		return nil, fmt.Errorf("get batch %d: totals: %w", p.ID, err)
	}
	b.Counts = counts()
	return &b, nil
}

// tenantFilter returns a JSON array argument for `? IS NULL OR tenant_id IN
// (SELECT value FROM json_each(?))`.
func tenantFilter(ids []string) (any, error) {
	if ids == nil {
		return nil, nil
	}
	b, err := json.Marshal(ids)
	return string(b), err
}

// ChunkClaim leases the claimable chunk served longest ago.
func (s *Store) ChunkClaim(ctx context.Context, p batch.ChunkClaimParams) (*batch.Lease, error) {
	tenants, err := tenantFilter(p.TenantIDs)
	if err != nil {
		return nil, err
	}
	var l batch.Lease
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var (
			first, last int64
			header      string
		)
		err := tx.QueryRowContext(ctx, `SELECT c.batch_id, c.chunk_no, c.tenant_id, b.kind, b.header, c.first_row_no, c.last_row_no
			FROM batch_chunks c JOIN batches b ON b.id = c.batch_id
			WHERE c.next_due_at IS NOT NULL AND c.next_due_at <= `+now+`
			  AND (c.lease_expires_at IS NULL OR c.lease_expires_at < `+now+`)
			  AND b.status = 'running' AND NOT b.paused
			  AND (? = 0 OR c.batch_id = ?)
			  AND (? IS NULL OR c.tenant_id IN (SELECT value FROM json_each(?)))
			ORDER BY c.last_claimed_at NULLS FIRST, c.batch_id, c.chunk_no
			LIMIT 1`, p.BatchID, p.BatchID, tenants, tenants).
			Scan(&l.BatchID, &l.ChunkNo, &l.TenantID, &l.Kind, &header, &first, &last)
		if errors.Is(err, sql.ErrNoRows) {
			return batch.ErrNoWork
		}
		if err != nil {
			return fmt.Errorf("find chunk: %w", err)
		}
		if err := json.Unmarshal([]byte(header), &l.Header); err != nil {
			return fmt.Errorf("batch %d header: %w", l.BatchID, err)
		}
		if err := tx.QueryRowContext(ctx, `UPDATE batch_chunks
			SET lease_owner = ?, lease_token = lease_token + 1,
			    lease_expires_at = `+now+` + ?, last_claimed_at = `+now+`
			WHERE batch_id = ? AND chunk_no = ? RETURNING lease_token`,
			p.Owner, p.LeaseDuration.Milliseconds(), l.BatchID, l.ChunkNo).Scan(&l.Token); err != nil {
			return fmt.Errorf("lease chunk: %w", err)
		}
		l.Owner = p.Owner
		rs, err := tx.QueryContext(ctx, `UPDATE batch_rows
			SET state = 'processing', attempts = attempts + 1, updated_at = `+now+`
			WHERE batch_id = ? AND row_no BETWEEN ? AND ? AND tenant_id = ?
			  AND state IN `+storesql.ClaimableStates+` AND next_attempt_at <= `+now+`
			RETURNING row_no, payload, attempts`, l.BatchID, first, last, l.TenantID)
		if err != nil {
			return fmt.Errorf("mark rows processing: %w", err)
		}
		for rs.Next() {
			var (
				r       batch.LeasedRow
				payload string
			)
			if err := rs.Scan(&r.RowNo, &payload, &r.Attempts); err != nil {
				rs.Close()
				return err
			}
			if r.Values, err = storesql.DecodeValues([]byte(payload)); err != nil {
				rs.Close()
				return err
			}
			l.Rows = append(l.Rows, r)
		}
		if err := rs.Close(); err != nil {
			return err
		}
		sortLeased(l.Rows)
		return s.recount(ctx, tx, l.BatchID, l.ChunkNo, false)
	})
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// recount overwrites a chunk's counts and next_due_at from its rows.
func (s *Store) recount(ctx context.Context, tx *sql.Tx, batchID, chunkNo int64, release bool) error {
	lease := ""
	if release {
		lease = ", lease_owner = NULL, lease_expires_at = NULL"
	}
	_, err := tx.ExecContext(ctx, `UPDATE batch_chunks SET (`+storesql.CountColumns()+`, next_due_at) = (
			SELECT `+storesql.CountAggregates()+`, min(next_attempt_at) FILTER (WHERE state IN `+storesql.OpenStates+`)
			FROM batch_rows r
			WHERE r.batch_id = batch_chunks.batch_id
			  AND r.row_no BETWEEN batch_chunks.first_row_no AND batch_chunks.last_row_no)`+lease+`
		WHERE batch_id = ? AND chunk_no = ?`, batchID, chunkNo)
	if err != nil {
		return fmt.Errorf("recount chunk %d: %w", chunkNo, err)
	}
	return nil
}

// LeaseRenew extends a lease if its token still holds.
func (s *Store) LeaseRenew(ctx context.Context, p batch.LeaseRenewParams) error {
	res, err := s.db.ExecContext(ctx, `UPDATE batch_chunks SET lease_expires_at = `+now+` + ?
		WHERE batch_id = ? AND chunk_no = ? AND lease_token = ? AND tenant_id = ?
		  AND lease_expires_at IS NOT NULL`,
		p.LeaseDuration.Milliseconds(), p.BatchID, p.ChunkNo, p.Token, p.TenantID)
	if err != nil {
		return fmt.Errorf("renew lease: %w", interpretError(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return batch.ErrLeaseLost
	}
	return nil
}

// ChunkFlush records outcomes under the lease's fencing token.
func (s *Store) ChunkFlush(ctx context.Context, p batch.ChunkFlushParams) (*batch.FlushResult, error) {
	var res *batch.FlushResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM batch_chunks
			WHERE batch_id = ? AND chunk_no = ? AND lease_token = ? AND tenant_id = ?`,
			p.BatchID, p.ChunkNo, p.Token, p.TenantID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return batch.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("check lease: %w", err)
		}
		upd, err := tx.PrepareContext(ctx, `UPDATE batch_rows
			SET state = ?, result_id = ?, errors = ?,
			    next_attempt_at = CASE WHEN ? IN `+storesql.OpenStates+` THEN `+now+` + ? END,
			    updated_at = `+now+`
			WHERE batch_id = ? AND row_no = ? AND tenant_id = ? AND state = 'processing'`)
		if err != nil {
			return err
		}
		defer upd.Close()
		for _, o := range p.Outcomes {
			if err := rows.Transition(rows.StateProcessing, o.State); err != nil {
				return fmt.Errorf("row %d: %w", o.RowNo, err)
			}
			var errArg, idArg any
			if o.Error != nil {
				b, err := storesql.EncodeErrors([]rows.FieldError{*o.Error})
				if err != nil {
					return err
				}
				errArg = string(b)
			}
			if o.ResultID != "" {
				idArg = o.ResultID
			}
			if _, err := upd.ExecContext(ctx, string(o.State), idArg, errArg, string(o.State), o.RetryDelay.Milliseconds(),
				p.BatchID, o.RowNo, p.TenantID); err != nil {
				return fmt.Errorf("record row %d: %w", o.RowNo, err)
			}
		}
		if err := s.recount(ctx, tx, p.BatchID, p.ChunkNo, p.Release); err != nil {
			return err
		}
		res, err = s.afterChange(ctx, tx, p.BatchID, "progress")
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// RowsList pages through a batch's rows.
func (s *Store) RowsList(ctx context.Context, p batch.RowsListParams) ([]batch.Row, error) {
	if p.Limit <= 0 {
		p.Limit = 100
	}
	rs, err := s.db.QueryContext(ctx, `SELECT row_no, chunk_no, state, payload, errors, result_id, attempts, updated_at
		FROM batch_rows
		WHERE tenant_id = ? AND batch_id = ? AND (? = '' OR state = ?) AND row_no > ?
		ORDER BY row_no LIMIT ?`, p.TenantID, p.BatchID, string(p.State), string(p.State), p.AfterRowNo, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list rows: %w", interpretError(err))
	}
	defer rs.Close()
	var out []batch.Row
	for rs.Next() {
		var (
			r        batch.Row
			state    string
			payload  string
			errs     sql.NullString
			resultID sql.NullString
			updated  int64
		)
		if err := rs.Scan(&r.RowNo, &r.ChunkNo, &state, &payload, &errs, &resultID, &r.Attempts, &updated); err != nil {
			return nil, err
		}
		r.BatchID, r.State, r.ResultID, r.Updated = p.BatchID, rows.State(state), resultID.String, time.UnixMilli(updated)
		if r.Values, err = storesql.DecodeValues([]byte(payload)); err != nil {
			return nil, err
		}
		if r.Errors, err = storesql.DecodeErrors([]byte(errs.String)); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// RowsCount counts rows by state with a fresh aggregate.
func (s *Store) RowsCount(ctx context.Context, p batch.RowsCountParams) (rows.Counts, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT state, count(*) FROM batch_rows
		WHERE tenant_id = ? AND batch_id = ? GROUP BY state`, p.TenantID, p.BatchID)
	if err != nil {
		return nil, fmt.Errorf("count rows: %w", interpretError(err))
	}
	defer rs.Close()
	c := rows.Counts{}
	for rs.Next() {
		var (
			st string
			n  int64
		)
		if err := rs.Scan(&st, &n); err != nil {
			return nil, err
		}
		c[rows.State(st)] = n
	}
	return c, rs.Err()
}

// sortLeased orders rows by row_no: RETURNING gives no order.
func sortLeased(rs []batch.LeasedRow) {
	slices.SortFunc(rs, func(a, b batch.LeasedRow) int { return cmp.Compare(a.RowNo, b.RowNo) })
}

// BatchList lists a tenant's batches, newest first.
func (s *Store) BatchList(ctx context.Context, p batch.BatchListParams) ([]*batch.Batch, error) {
	if p.Limit <= 0 {
		p.Limit = 20
	}
	rs, err := s.db.QueryContext(ctx, `SELECT id FROM batches WHERE tenant_id = ? AND (? = 0 OR id < ?)
		ORDER BY id DESC LIMIT ?`, p.TenantID, p.BeforeID, p.BeforeID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", interpretError(err))
	}
	var ids []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			rs.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rs.Close(); err != nil {
		return nil, err
	}
	out := make([]*batch.Batch, 0, len(ids))
	for _, id := range ids {
		b, err := s.BatchGet(ctx, batch.BatchGetParams{TenantID: p.TenantID, ID: id})
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
