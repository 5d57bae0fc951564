// Package postgres is the batch.Store for more than one process or machine:
// PostgreSQL through pgx/v5 and pgxpool.
//
// Ingest streams rows with COPY inside the transaction that creates the
// batch; claims take one chunk row with FOR UPDATE SKIP LOCKED; a flush
// locks its chunk row, checks the fencing token and updates its rows with
// one set-based UPDATE ... FROM unnest(...). All lease times are the
// database's now(), never a worker's clock.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/internal/storesql"
	"github.com/rowfate/rowfate/migrations"
	"github.com/rowfate/rowfate/rows"
)

var _ batch.Store = (*Store)(nil)

// migrationLockKey is the first half of the advisory lock key that
// serialises migrations; the second half is the schema, so that separate
// schemas (tests) do not wait on each other.
const migrationLockKey int32 = 0x726f7766 // "rowf"

// Store is a batch.Store on a PostgreSQL pool.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on an existing pool. The caller keeps ownership of
// the pool: Close does not close it.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool returns the store's pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close is a no-op: the pool belongs to the caller.
func (s *Store) Close() error { return nil }

// interpretError maps pgx errors to the engine's sentinels.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return batch.ErrNotFound
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("%w: %v", batch.ErrConflict, err)
	}
	return err
}

func (s *Store) inTx(ctx context.Context, f func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.pool, f)
	return interpretError(err)
}

// Migrate applies pending migrations in one transaction under a
// transaction-scoped advisory lock.
func (s *Store) Migrate(ctx context.Context) error {
	all, err := migrations.Load(migrations.Postgres)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, migrationLockKey); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		rs, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		vs, err := pgx.CollectRows(rs, pgx.RowTo[int])
		if err != nil {
			return err
		}
		applied := map[int]bool{}
		for _, v := range vs {
			applied[v] = true
		}
		for _, m := range migrations.Pending(all, applied) {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
}

// BatchIngest writes a batch, COPYs its rows, derives its chunks and appends
// the first event, in one transaction.
func (s *Store) BatchIngest(ctx context.Context, p batch.BatchIngestParams) (*batch.Batch, error) {
	var id int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var txNow time.Time
		if err := tx.QueryRow(ctx, `INSERT INTO batches (tenant_id, kind, source_name, header, options)
			VALUES ($1, $2, $3, $4, $5) RETURNING id, now()`, p.TenantID, p.Kind, p.SourceName, p.Header,
			storesql.BatchOptions{Warnings: p.Warnings}).Scan(&id, &txNow); err != nil {
			return fmt.Errorf("insert batch: %w", err)
		}
		src := newCopySource(p.Rows, id, p.TenantID, txNow)
		defer src.stop()
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"batch_rows"},
			[]string{"batch_id", "row_no", "tenant_id", "chunk_no", "state", "payload", "errors", "next_attempt_at", "updated_at"},
			src); err != nil {
			if src.err != nil {
				return src.err // the source's own error, not COPY's wrapping of it
			}
			return fmt.Errorf("copy rows: %w", err)
		}
		var sum batch.IngestSummary
		if p.SummaryFunc != nil {
			sum = p.SummaryFunc()
		}
		if _, err := tx.Exec(ctx, `UPDATE batches SET source_digest = $1, skipped_empty = $2 WHERE id = $3`, sum.SourceDigest, sum.SkippedEmpty, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO batch_chunks
			(batch_id, chunk_no, tenant_id, first_row_no, last_row_no, next_due_at, `+storesql.CountColumns()+`)
			SELECT batch_id, chunk_no, tenant_id, min(row_no), max(row_no),
				min(next_attempt_at) FILTER (WHERE state IN `+storesql.OpenStates+`), `+storesql.CountAggregates()+`
			FROM batch_rows WHERE batch_id = $1 GROUP BY batch_id, chunk_no, tenant_id`, id); err != nil {
			return fmt.Errorf("insert chunks: %w", err)
		}
		_, err := afterChange(ctx, tx, id, "ingested")
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.BatchGet(ctx, batch.BatchGetParams{TenantID: p.TenantID, ID: id})
}

// copySource adapts the engine's row iterator to pgx.CopyFromSource.
type copySource struct {
	next   func() (batch.IngestRow, error, bool)
	stop   func()
	batch  int64
	tenant string
	now    time.Time
	vals   []any
	err    error
}

func newCopySource(seq iter.Seq2[batch.IngestRow, error], id int64, tenant string, now time.Time) *copySource {
	next, stop := iter.Pull2(seq)
	return &copySource{next: next, stop: stop, batch: id, tenant: tenant, now: now}
}

func (c *copySource) Next() bool {
	r, err, ok := c.next()
	if !ok {
		return false
	}
	if err != nil {
		c.err = err
		return false
	}
	payload, err := storesql.EncodeValues(r.Values)
	if err != nil {
		c.err = err
		return false
	}
	errs, err := storesql.EncodeErrors(r.Errors)
	if err != nil {
		c.err = err
		return false
	}
	var errArg, next any
	if errs != nil {
		errArg = errs
	}
	if r.State.Open() {
		next = c.now
	}
	c.vals = []any{c.batch, r.RowNo, c.tenant, r.ChunkNo, string(r.State), payload, errArg, next, c.now}
	return true
}

func (c *copySource) Values() ([]any, error) { return c.vals, nil }
func (c *copySource) Err() error             { return c.err }

// afterChange finishes the batch when no row is open and appends an event
// with the batch totals. It first takes the batch row's lock with the
// sequence-number UPDATE: that serialises every flush of the batch, so
// commit order equals sequence order, and the finish check below (a new
// snapshot under READ COMMITTED) sees every other chunk's committed flush.
// Checking before the lock is write skew: two last flushes each see the
// other's chunk still open, and neither finishes the batch.
func afterChange(ctx context.Context, tx pgx.Tx, id int64, typ string) (*batch.FlushResult, error) {
	var (
		seq    int64
		tenant string
	)
	if err := tx.QueryRow(ctx, `UPDATE batches SET event_seq = event_seq + 1 WHERE id = $1
		RETURNING event_seq, tenant_id`, id).Scan(&seq, &tenant); err != nil {
		return nil, fmt.Errorf("next event seq: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE batches SET status = 'finished', finished_at = now()
		WHERE id = $1 AND status = 'running'
		AND NOT EXISTS (SELECT 1 FROM batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL)`, id); err != nil {
		return nil, fmt.Errorf("finish batch: %w", err)
	}
	var status string
	if err := tx.QueryRow(ctx, `SELECT status FROM batches WHERE id = $1`, id).Scan(&status); err != nil {
		return nil, fmt.Errorf("batch status: %w", err)
	}
	dests, counts := storesql.CountDests()
	if err := tx.QueryRow(ctx, `SELECT `+storesql.SumColumns()+` FROM batch_chunks WHERE batch_id = $1`, id).Scan(dests...); err != nil {
		return nil, fmt.Errorf("sum chunks: %w", err)
	}
	res := &batch.FlushResult{Counts: counts(), Finished: status == string(batch.StatusFinished), EventSeq: seq}
	payload, err := json.Marshal(storesql.EventPayload{Counts: res.Counts, Finished: res.Finished})
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO batch_events (tenant_id, batch_id, seq, type, payload)
		VALUES ($1, $2, $3, $4, $5)`, tenant, id, seq, typ, payload); err != nil {
		return nil, fmt.Errorf("append event: %w", err)
	}
	return res, nil
}

// BatchGet returns a batch with totals summed over its chunks.
func (s *Store) BatchGet(ctx context.Context, p batch.BatchGetParams) (*batch.Batch, error) {
	var (
		b      batch.Batch
		status string
		opts   storesql.BatchOptions
	)
	err := s.pool.QueryRow(ctx, `SELECT id, tenant_id, kind, source_name, source_digest, status, header,
			options, skipped_empty, created_at, finished_at
		FROM batches WHERE id = $1 AND tenant_id = $2`, p.ID, p.TenantID).
		Scan(&b.ID, &b.TenantID, &b.Kind, &b.SourceName, &b.SourceDigest, &status, &b.Header, &opts, &b.SkippedEmpty, &b.CreatedAt, &b.FinishedAt)
	if err != nil {
		return nil, fmt.Errorf("get batch %d: %w", p.ID, interpretError(err))
	}
	b.Status = batch.Status(status)
	b.Warnings = opts.Warnings
	dests, counts := storesql.CountDests()
	if err := s.pool.QueryRow(ctx, `SELECT `+storesql.SumColumns()+` FROM batch_chunks WHERE batch_id = $1 AND tenant_id = $2`, p.ID, p.TenantID).Scan(dests...); err != nil {
		return nil, fmt.Errorf("get batch %d: totals: %w", p.ID, err)
	}
	b.Counts = counts()
	return &b, nil
}

// ChunkClaim leases the claimable chunk served longest ago, skipping chunks
// another transaction is claiming.
func (s *Store) ChunkClaim(ctx context.Context, p batch.ChunkClaimParams) (*batch.Lease, error) {
	var l batch.Lease
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var first, last int64
		err := tx.QueryRow(ctx, `WITH c AS (
				SELECT ch.batch_id, ch.chunk_no
				FROM batch_chunks ch JOIN batches b ON b.id = ch.batch_id
				WHERE ch.next_due_at IS NOT NULL AND ch.next_due_at <= now()
				  AND (ch.lease_expires_at IS NULL OR ch.lease_expires_at < now())
				  AND b.status = 'running' AND NOT b.paused
				  AND ($1::bigint = 0 OR ch.batch_id = $1)
				  AND ($2::text[] IS NULL OR ch.tenant_id = ANY($2))
				ORDER BY ch.last_claimed_at NULLS FIRST, ch.batch_id, ch.chunk_no
				LIMIT 1
				FOR UPDATE OF ch SKIP LOCKED)
			UPDATE batch_chunks ch
			SET lease_owner = $3, lease_token = ch.lease_token + 1,
			    lease_expires_at = now() + $4::bigint * interval '1 millisecond', last_claimed_at = now()
			FROM c WHERE ch.batch_id = c.batch_id AND ch.chunk_no = c.chunk_no
			RETURNING ch.batch_id, ch.chunk_no, ch.tenant_id, ch.lease_token, ch.first_row_no, ch.last_row_no`,
			p.BatchID, p.TenantIDs, p.Owner, p.LeaseDuration.Milliseconds()).
			Scan(&l.BatchID, &l.ChunkNo, &l.TenantID, &l.Token, &first, &last)
		if errors.Is(err, pgx.ErrNoRows) {
			return batch.ErrNoWork
		}
		if err != nil {
			return fmt.Errorf("lease chunk: %w", err)
		}
		l.Owner = p.Owner
		if err := tx.QueryRow(ctx, `SELECT kind, header FROM batches WHERE id = $1`, l.BatchID).Scan(&l.Kind, &l.Header); err != nil {
			return fmt.Errorf("batch %d: %w", l.BatchID, err)
		}
		rs, err := tx.Query(ctx, `UPDATE batch_rows
			SET state = 'processing', attempts = attempts + 1, updated_at = now()
			WHERE batch_id = $1 AND row_no BETWEEN $2 AND $3 AND tenant_id = $4
			  AND state IN `+storesql.ClaimableStates+` AND next_attempt_at <= now()
			RETURNING row_no, payload, attempts`, l.BatchID, first, last, l.TenantID)
		if err != nil {
			return fmt.Errorf("mark rows processing: %w", err)
		}
		l.Rows, err = pgx.CollectRows(rs, func(r pgx.CollectableRow) (batch.LeasedRow, error) {
			var lr batch.LeasedRow
			err := r.Scan(&lr.RowNo, &lr.Values, &lr.Attempts)
			return lr, err
		})
		if err != nil {
			return fmt.Errorf("mark rows processing: %w", err)
		}
		slices.SortFunc(l.Rows, func(a, b batch.LeasedRow) int { return int(a.RowNo - b.RowNo) })
		return recount(ctx, tx, l.BatchID, l.ChunkNo, false)
	})
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// recount overwrites a chunk's counts and next_due_at from its rows.
func recount(ctx context.Context, tx pgx.Tx, batchID, chunkNo int64, release bool) error {
	lease := ""
	if release {
		lease = ", lease_owner = NULL, lease_expires_at = NULL"
	}
	_, err := tx.Exec(ctx, `UPDATE batch_chunks SET (`+storesql.CountColumns()+`, next_due_at) = (
			SELECT `+storesql.CountAggregates()+`, min(next_attempt_at) FILTER (WHERE state IN `+storesql.OpenStates+`)
			FROM batch_rows r
			WHERE r.batch_id = batch_chunks.batch_id
			  AND r.row_no BETWEEN batch_chunks.first_row_no AND batch_chunks.last_row_no)`+lease+`
		WHERE batch_id = $1 AND chunk_no = $2`, batchID, chunkNo)
	if err != nil {
		return fmt.Errorf("recount chunk %d: %w", chunkNo, err)
	}
	return nil
}

// LeaseRenew extends a lease if its token still holds.
func (s *Store) LeaseRenew(ctx context.Context, p batch.LeaseRenewParams) error {
	tag, err := s.pool.Exec(ctx, `UPDATE batch_chunks SET lease_expires_at = now() + $1::bigint * interval '1 millisecond'
		WHERE batch_id = $2 AND chunk_no = $3 AND lease_token = $4 AND tenant_id = $5
		  AND lease_expires_at IS NOT NULL`,
		p.LeaseDuration.Milliseconds(), p.BatchID, p.ChunkNo, p.Token, p.TenantID)
	if err != nil {
		return fmt.Errorf("renew lease: %w", interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return batch.ErrLeaseLost
	}
	return nil
}

// ChunkFlush records outcomes under the lease's fencing token: the chunk row
// is locked and checked first, which also serialises recounts of the chunk.
func (s *Store) ChunkFlush(ctx context.Context, p batch.ChunkFlushParams) (*batch.FlushResult, error) {
	n := len(p.Outcomes)
	var (
		rowNos = make([]int64, n)
		states = make([]string, n)
		ids    = make([]*string, n)
		errs   = make([]*string, n)
		delays = make([]int64, n)
	)
	for i, o := range p.Outcomes {
		if err := rows.Transition(rows.StateProcessing, o.State); err != nil {
			return nil, fmt.Errorf("row %d: %w", o.RowNo, err)
		}
		rowNos[i], states[i], delays[i] = o.RowNo, string(o.State), o.RetryDelay.Milliseconds()
		if o.ResultID != "" {
			ids[i] = &o.ResultID
		}
		if o.Error != nil {
			b, err := storesql.EncodeErrors([]rows.FieldError{*o.Error})
			if err != nil {
				return nil, err
			}
			s := string(b)
			errs[i] = &s
		}
	}
	var res *batch.FlushResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var first, last int64
		err := tx.QueryRow(ctx, `SELECT first_row_no, last_row_no FROM batch_chunks
			WHERE batch_id = $1 AND chunk_no = $2 AND lease_token = $3 AND tenant_id = $4
			FOR UPDATE`, p.BatchID, p.ChunkNo, p.Token, p.TenantID).Scan(&first, &last)
		if errors.Is(err, pgx.ErrNoRows) {
			return batch.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("check lease: %w", err)
		}
		// Right after a large COPY the planner has no statistics for the
		// new rows, estimates the chunk's range at one row and picks a
		// nested loop that rescans the unnest'ed outcomes once per row:
		// 0.4-1.5 s per 1,000-row flush of a 100k-row batch. A hash join
		// is right whatever the statistics say, so nested loops are off
		// for this one statement, and the range bounds the scan of rows.
		if n > 0 {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_nestloop = off`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE batch_rows r
				SET state = u.state, result_id = u.result_id, errors = u.errors::jsonb,
				    next_attempt_at = CASE WHEN u.state IN `+storesql.OpenStates+`
				        THEN now() + u.delay_ms * interval '1 millisecond' END,
				    updated_at = now()
				FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[])
				    AS u(row_no, state, result_id, errors, delay_ms)
				WHERE r.batch_id = $6 AND r.tenant_id = $7 AND r.row_no = u.row_no AND r.state = 'processing'
				  AND r.row_no BETWEEN $8 AND $9`,
				rowNos, states, ids, errs, delays, p.BatchID, p.TenantID, first, last); err != nil {
				return fmt.Errorf("record outcomes: %w", err)
			}
			if _, err := tx.Exec(ctx, `SET LOCAL enable_nestloop = on`); err != nil {
				return err
			}
		}
		if err := recount(ctx, tx, p.BatchID, p.ChunkNo, p.Release); err != nil {
			return err
		}
		res, err = afterChange(ctx, tx, p.BatchID, "progress")
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
	rs, err := s.pool.Query(ctx, `SELECT row_no, chunk_no, state, payload, errors, result_id, attempts, updated_at
		FROM batch_rows
		WHERE tenant_id = $1 AND batch_id = $2 AND ($3 = '' OR state = $3) AND row_no > $4
		ORDER BY row_no LIMIT $5`, p.TenantID, p.BatchID, string(p.State), p.AfterRowNo, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list rows: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (batch.Row, error) {
		var (
			row      batch.Row
			state    string
			resultID *string
		)
		err := r.Scan(&row.RowNo, &row.ChunkNo, &state, &row.Values, &row.Errors, &resultID, &row.Attempts, &row.Updated)
		row.BatchID, row.State = p.BatchID, rows.State(state)
		if resultID != nil {
			row.ResultID = *resultID
		}
		return row, err
	})
	if err != nil {
		return nil, fmt.Errorf("list rows: %w", err)
	}
	return out, nil
}

// RowsCount counts rows by state with a fresh aggregate.
func (s *Store) RowsCount(ctx context.Context, p batch.RowsCountParams) (rows.Counts, error) {
	rs, err := s.pool.Query(ctx, `SELECT state, count(*) FROM batch_rows
		WHERE tenant_id = $1 AND batch_id = $2 GROUP BY state`, p.TenantID, p.BatchID)
	if err != nil {
		return nil, fmt.Errorf("count rows: %w", interpretError(err))
	}
	c := rows.Counts{}
	var (
		st string
		n  int64
	)
	_, err = pgx.ForEachRow(rs, []any{&st, &n}, func() error {
		c[rows.State(st)] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count rows: %w", err)
	}
	return c, nil
}

// BatchList lists a tenant's batches, newest first.
func (s *Store) BatchList(ctx context.Context, p batch.BatchListParams) ([]*batch.Batch, error) {
	if p.Limit <= 0 {
		p.Limit = 20
	}
	rs, err := s.pool.Query(ctx, `SELECT id FROM batches WHERE tenant_id = $1 AND ($2 = 0 OR id < $2)
		ORDER BY id DESC LIMIT $3`, p.TenantID, p.BeforeID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", interpretError(err))
	}
	ids, err := pgx.CollectRows(rs, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
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
