package storesql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/failpoint"
	"github.com/rowfate/rowfate/migrations"
	"github.com/rowfate/rowfate/rows"
)

// Store implements driver.Store once for both engines: every statement is
// written here, with the dialect's tokens, and a driver supplies only its
// connection, its migration lock and its two bulk statements. The stores in
// store/postgres and store/sqlite embed it.
type Store struct {
	d   *Dialect
	drv Driver
	q   statements
	c   control
	e   eventStatements
	r   reviewStatements
	sv  serviceStatements
	k   kindStatements
	hub eventHub
}

// New returns the shared store for a driver and its dialect.
func New(drv Driver, d *Dialect) *Store {
	s := &Store{d: d, drv: drv}
	s.q = newStatements(d)
	s.c = newControl(d)
	s.e = newEventStatements(d)
	s.r = newReviewStatements(d)
	s.sv = newServiceStatements(d)
	s.k = newKindStatements(d)
	return s
}

// Dialect returns the store's dialect.
func (s *Store) Dialect() *Dialect { return s.d }

// statements are the shared statements, expanded once for the dialect.
type statements struct {
	insertBatch, ingestSummary, insertChunks, markDuplicates                      string
	nextSeq, finish, sumChunks                                                    string
	batchGet, batchList, batchFind                                                string
	findChunk, leaseChunk, markProcessing, dueRows, recount, recountFree          string
	leaseRenew, leaseCheck, checkLease, rowsList, rowsCount, migrationsTable      string
	nextDue, killExhausted, batchStatus, leaseHeld, cancelLeft, sweepDead         string
	giveBack, recordEffects, releaseEffects, ingestRenew, ingestDone, deadIngests string
	turnCount, turnTenant, turnChunks, turnAdvance                                string
	lockGroup, regroup, regroupAll                                                string
	dropBatch                                                                     []string
	migrationsApplied, migrationInsert, schemaVersion                             string
}

// workable is the condition on a batch b whose rows workers may claim: it
// runs and nothing pauses it, itself, its kind or its tenant.
const workable = `b.status = 'running' AND NOT b.paused AND NOT EXISTS (SELECT 1 FROM {t}pauses p
	WHERE p.tenant_id = b.tenant_id AND (p.scope = 'tenant' OR (p.scope = 'kind' AND p.value = b.kind)))`

// batchColumns and batchFrom select a batch with its totals, summed over
// its count groups in the same query; scanBatch reads them.
const batchColumns = `b.id, b.tenant_id, b.kind, b.source_name, b.source_digest, b.status, b.header,
	b.options, b.skipped_empty, b.created_at, b.finished_at, b.paused`

func newStatements(d *Dialect) statements {
	sums := SumColumns()
	return statements{
		insertBatch: d.Expand(`INSERT INTO {t}batches (tenant_id, kind, source_name, header, options, idempotency_key, max_attempts, status, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, {now}) RETURNING id`),
		ingestRenew: d.Expand(`UPDATE {t}batches SET ingest_expires_at = {now} + CAST($2 AS bigint) * {ms} WHERE id = $1`),
		ingestDone:  d.Expand(`UPDATE {t}batches SET status = 'running', ingest_expires_at = NULL WHERE id = $1 AND status = 'ingesting'`),
		deadIngests: d.Expand(`SELECT id FROM {t}batches WHERE status = 'ingesting' AND ingest_expires_at < {now}`),
		dropBatch: []string{
			d.Expand(`DELETE FROM {t}batch_rows WHERE batch_id = $1`),
			d.Expand(`DELETE FROM {t}batch_chunks WHERE batch_id = $1`),
			d.Expand(`DELETE FROM {t}batch_count_groups WHERE batch_id = $1`),
			d.Expand(`DELETE FROM {t}batch_events WHERE batch_id = $1`),
			d.Expand(`DELETE FROM {t}batches WHERE id = $1`),
		},
		ingestSummary: d.Expand(`UPDATE {t}batches SET source_digest = $1, skipped_empty = $2, options = $3 WHERE id = $4`),
		// A valid row whose key an earlier valid row of the batch has is a
		// duplicate; the error names that first row. The window sorts the
		// batch's digests in the database, not in the importer's memory.
		markDuplicates: d.Expand(`UPDATE {t}batch_rows AS r
			SET state = 'invalid', next_attempt_at = NULL,
			    errors = ` + d.JSONError("r.row_no", "column", "NULLIF($2, '')", "field", "NULLIF($3, '')",
			"code", "'"+string(rows.CodeDuplicateKey)+"'", "message", "'same ' || $4 || ' as row ' || d.first") + `
			FROM (SELECT row_no, first FROM (
				SELECT row_no, first_value(row_no) OVER (PARTITION BY key_digest ORDER BY row_no) AS first
				FROM {t}batch_rows WHERE batch_id = $1 AND key_digest IS NOT NULL) w
				WHERE first <> row_no) d
			WHERE r.batch_id = $1 AND r.row_no = d.row_no`),
		insertChunks: d.Expand(`INSERT INTO {t}batch_chunks
			(batch_id, chunk_no, tenant_id, first_row_no, last_row_no, next_due_at, ` + CountColumns() + `)
			SELECT batch_id, chunk_no, tenant_id, min(row_no), max(row_no),
				min(next_attempt_at) FILTER (WHERE state IN ` + OpenStates + `), ` + CountAggregates() + `
			FROM {t}batch_rows WHERE batch_id = $1 GROUP BY batch_id, chunk_no, tenant_id`),
		nextSeq: d.Expand(`UPDATE {t}batches SET event_seq = event_seq + 1 WHERE id = $1
			RETURNING event_seq, tenant_id, paused, {clock}`),
		// A batch finishes when no chunk has open rows, and runs again when
		// rows are retried; a cancelled batch stays cancelled.
		finish: d.Expand(`UPDATE {t}batches SET
				status = CASE
					WHEN status = 'running' AND NOT EXISTS (SELECT 1 FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) THEN 'finished'
					WHEN status = 'finished' AND EXISTS (SELECT 1 FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) THEN 'running'
					ELSE status END,
				finished_at = CASE
					WHEN status = 'running' AND NOT EXISTS (SELECT 1 FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) THEN {now}
					WHEN status = 'finished' AND EXISTS (SELECT 1 FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) THEN NULL
					ELSE finished_at END
			WHERE id = $1 RETURNING status`),
		sumChunks: d.Expand(`SELECT ` + sums + ` FROM {t}batch_count_groups WHERE batch_id = $1`),
		// Count groups (migration 0009): a group's counts are overwritten
		// from its chunks', after its row is locked in a statement of its
		// own, so that on PostgreSQL the aggregate's snapshot is taken
		// once every flush that recounted a chunk of the group before this
		// one has committed (a single upsert would aggregate a snapshot
		// from before the lock, and lose that flush's counts).
		lockGroup: d.Expand(`SELECT 1 FROM {t}batch_count_groups
			WHERE batch_id = $1 AND group_no = CAST($2 AS bigint) / ` + groupSizeSQL + `{for_update}`),
		regroup: d.Expand(`UPDATE {t}batch_count_groups SET (` + CountColumns() + `) = (
				SELECT ` + sums + ` FROM {t}batch_chunks c
				WHERE c.batch_id = {t}batch_count_groups.batch_id
				  AND c.chunk_no >= {t}batch_count_groups.group_no * ` + groupSizeSQL + `
				  AND c.chunk_no < ({t}batch_count_groups.group_no + 1) * ` + groupSizeSQL + `)
			WHERE batch_id = $1 AND group_no = CAST($2 AS bigint) / ` + groupSizeSQL),
		// Every group of a batch, made when missing: after an ingest, or
		// a batch-wide recount, which holds every chunk's lock.
		regroupAll: d.Expand(`INSERT INTO {t}batch_count_groups (batch_id, group_no, tenant_id, ` + CountColumns() + `)
			SELECT batch_id, chunk_no / ` + groupSizeSQL + `, min(tenant_id), ` + sums + `
			FROM {t}batch_chunks WHERE batch_id = $1
			GROUP BY batch_id, chunk_no / ` + groupSizeSQL + `
			ON CONFLICT (batch_id, group_no) DO UPDATE SET ` + excludedCounts()),
		batchGet: d.Expand(`SELECT ` + batchColumns + `, ` + prefixed(sums, "c.") + `
			FROM {t}batches b LEFT JOIN {t}batch_count_groups c ON c.batch_id = b.id
			WHERE b.id = $1 AND b.tenant_id = $2
			GROUP BY b.id`),
		batchFind: d.Expand(`SELECT ` + batchColumns + `, ` + prefixed(sums, "c.") + `
			FROM {t}batches b LEFT JOIN {t}batch_count_groups c ON c.batch_id = b.id
			WHERE b.tenant_id = $1 AND (($2 <> '' AND b.idempotency_key = $2)
			   OR ($2 = '' AND b.kind = $3 AND b.source_digest = $4))
			GROUP BY b.id ORDER BY b.id DESC LIMIT 1`),
		// The page is chosen first, so the join sums only its batches' groups.
		batchList: d.Expand(`WITH page AS (
				SELECT id FROM {t}batches WHERE tenant_id = $1 AND (CAST($2 AS bigint) = 0 OR id < $2)
				  AND (CAST($4 AS text) = '' OR status = $4) AND (CAST($5 AS text) = '' OR kind = $5)
				ORDER BY id DESC LIMIT $3)
			SELECT ` + batchColumns + `, ` + prefixed(sums, "c.") + `
			FROM page JOIN {t}batches b ON b.id = page.id
			LEFT JOIN {t}batch_count_groups c ON c.batch_id = b.id
			GROUP BY b.id ORDER BY b.id DESC`),
		// A chunk of a cancelled batch is claimable too when rows of a dead
		// worker's lease are left in it: its claim sweeps them to cancelled,
		// so recovery needs no cleanup job.
		findChunk: d.Expand(`SELECT ch.batch_id, ch.chunk_no, ch.tenant_id, b.kind, b.header, b.options, b.max_attempts, b.status,
				ch.first_row_no, ch.last_row_no, ch.lease_expires_at IS NULL, ch.turn
			FROM {t}batch_chunks ch JOIN {t}batches b ON b.id = ch.batch_id
			WHERE ch.next_due_at IS NOT NULL AND ch.next_due_at <= {now}
			  AND (ch.lease_expires_at IS NULL OR ch.lease_expires_at < {now})
			  AND ((` + workable + `) OR b.status = 'cancelled')
			  AND (CAST($1 AS bigint) = 0 OR ch.batch_id = $1)
			  AND ` + d.InText("ch.tenant_id", "$2") + `
			  AND ` + d.InText("b.kind", "$3") + `
			ORDER BY ch.turn, ch.batch_id, ch.chunk_no
			LIMIT 1{skip_locked}`),
		// Fair turns (migration 0008): a batch's open chunks are queued
		// at the back of its tenant's queue, which starts no earlier than
		// the clock; a claim moves the clock up to its chunk's turn.
		turnCount: d.Expand(`SELECT count(*) FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL`),
		turnTenant: d.Expand(`INSERT INTO {t}tenant_turns AS tt (tenant_id, next_turn)
			SELECT $1, turn + $2 FROM {t}turn_clock WHERE true
			ON CONFLICT (tenant_id) DO UPDATE SET next_turn = CASE
				WHEN tt.next_turn > (SELECT turn FROM {t}turn_clock) THEN tt.next_turn
				ELSE (SELECT turn FROM {t}turn_clock) END + $2
			RETURNING next_turn - $2`),
		turnChunks: d.Expand(`UPDATE {t}batch_chunks SET turn = $2 + r.k
			FROM (SELECT chunk_no, row_number() OVER (ORDER BY chunk_no) - 1 AS k
				FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) r
			WHERE {t}batch_chunks.batch_id = $1 AND {t}batch_chunks.chunk_no = r.chunk_no`),
		turnAdvance: d.Expand(`UPDATE {t}turn_clock SET turn = $1 WHERE turn < $1`),
		nextDue: d.Expand(`SELECT ch.batch_id, ch.chunk_no, ch.next_due_at, COALESCE(ch.lease_owner, ''), ch.lease_expires_at
			FROM {t}batch_chunks ch JOIN {t}batches b ON b.id = ch.batch_id
			WHERE ch.next_due_at IS NOT NULL AND ((` + workable + `) OR b.status = 'cancelled')
			  AND (CAST($1 AS bigint) = 0 OR ch.batch_id = $1)
			  AND ` + d.InText("ch.tenant_id", "$2") + `
			  AND ` + d.InText("b.kind", "$3") + `
			ORDER BY ch.next_due_at, ch.batch_id, ch.chunk_no
			LIMIT 1`),
		// A row that has used every attempt when it is due again was worked
		// by workers that crashed or lost their lease each time: it is dead,
		// with a reason, rather than retried forever. But when its effect
		// key is still claimed, one of those workers may have run the
		// effect before it died: unknown, to reconcile, not dead.
		killExhausted: d.Expand(`UPDATE {t}batch_rows
			SET state = CASE WHEN ` + effectClaimed(d) + ` THEN 'unknown' ELSE 'dead' END,
			    next_attempt_at = NULL, updated_at = {now},
			    errors = CASE WHEN ` + effectClaimed(d) + `
			        THEN ` + d.JSONError("row_no", "code", "$6", "message", "$8") + `
			        ELSE ` + d.JSONError("row_no", "code", "$6", "message", "$7") + ` END
			WHERE batch_id = $1 AND row_no BETWEEN $2 AND $3 AND tenant_id = $4
			  AND state IN ` + ClaimableStates + ` AND next_attempt_at <= {now} AND attempts >= $5`),
		batchStatus: d.Expand(`SELECT status FROM {t}batches WHERE id = $1`),
		leaseHeld: d.Expand(`SELECT 1 FROM {t}batch_chunks
			WHERE batch_id = $1 AND chunk_no = $2 AND lease_token = $3 AND tenant_id = $4 AND lease_expires_at > {now}`),
		// Rows a flush leaves processing in a cancelled batch's chunk were
		// this lease's and not run by it: cancelled, or unknown when a
		// worker before it claimed their effect (deadRowState).
		cancelLeft: d.Expand(`UPDATE {t}batch_rows SET ` + deadRowState(d, "$5", "$6") + `, next_attempt_at = NULL, updated_at = {now}
			WHERE batch_id = $1 AND tenant_id = $2 AND row_no BETWEEN $3 AND $4 AND state = 'processing'`),
		// Claims a lease made and gives back unrun.
		releaseEffects: d.Expand(`DELETE FROM {t}effects
			WHERE tenant_id = $1 AND batch_id = $2 AND row_no BETWEEN $3 AND $4 AND state = 'claimed' AND ` + d.TextIn("effect_key", "$5")),
		// Rows a dead worker left processing in a cancelled batch's chunk,
		// swept by the claim that finds them: cancelled, or unknown when
		// their effect may have happened (deadRowState).
		sweepDead: d.Expand(`UPDATE {t}batch_rows SET ` + deadRowState(d, "$5", "$6") + `, next_attempt_at = NULL, updated_at = {now}
			WHERE batch_id = $1 AND tenant_id = $2 AND row_no BETWEEN $3 AND $4 AND state = 'processing'`),
		// Rows claimed but not worked get their state and attempt back.
		giveBack: d.Expand(`UPDATE {t}batch_rows
			SET state = CASE WHEN attempts > 1 THEN 'retrying' ELSE 'valid' END, attempts = attempts - 1, updated_at = {now}
			WHERE batch_id = $1 AND tenant_id = $2 AND row_no BETWEEN $3 AND $4 AND state = 'processing'
			  AND ` + d.InInt("row_no", "$5")),
		// Bounded to the flushing chunk's rows, as the outcomes are.
		recordEffects: d.Expand(d.WithRecords("$3", map[string]string{"k": "text", "s": "text", "r": "text", "n": "bigint"}) + `
			UPDATE {t}effects AS e SET state = u.s, result_id = u.r, run_until = NULL,
				done_at = CASE WHEN u.s = 'claimed' THEN NULL ELSE {now} END FROM u
			WHERE e.tenant_id = $1 AND e.batch_id = $2 AND e.effect_key = u.k AND e.row_no = u.n AND e.row_no BETWEEN $4 AND $5`),
		leaseChunk: d.Expand(`UPDATE {t}batch_chunks
			SET lease_owner = $1, lease_token = lease_token + 1,
			    lease_expires_at = {now} + CAST($2 AS bigint) * {ms}, last_claimed_at = {now}, lease_deferred = $5
			WHERE batch_id = $3 AND chunk_no = $4 RETURNING lease_token`),
		// A deferred claim reads the due rows and writes none of them.
		dueRows: d.Expand(`SELECT row_no, payload, attempts + 1 FROM {t}batch_rows
			WHERE batch_id = $1 AND row_no BETWEEN $2 AND $3 AND tenant_id = $4
			  AND state IN ('valid', 'retrying') AND next_attempt_at <= {now}
			ORDER BY row_no`),
		markProcessing: d.Expand(`UPDATE {t}batch_rows
			SET state = 'processing', attempts = attempts + 1, updated_at = {now}
			WHERE batch_id = $1 AND row_no BETWEEN $2 AND $3 AND tenant_id = $4
			  AND state IN ` + ClaimableStates + ` AND next_attempt_at <= {now}
			RETURNING row_no, payload, attempts`),
		recount:     d.Expand(recountSQL("")),
		recountFree: d.Expand(recountSQL(", lease_owner = NULL, lease_expires_at = NULL, lease_deferred = false")),
		// A lease is fenced by its token and by the database's clock: one
		// past its expiry is lost even when nobody has claimed the chunk
		// since (a worker stalled past its lease must not renew, flush or
		// run an effect when it wakes up).
		leaseRenew: d.Expand(`UPDATE {t}batch_chunks SET lease_expires_at = {now} + CAST($1 AS bigint) * {ms}
			WHERE batch_id = $2 AND chunk_no = $3 AND lease_token = $4 AND tenant_id = $5
			  AND lease_expires_at > {now}
			  AND EXISTS (SELECT 1 FROM {t}batches b WHERE b.id = $2 AND ` + workable + `)`),
		leaseCheck: d.Expand(`SELECT COALESCE(lease_token = $3 AND lease_expires_at > {now}, false),
				EXISTS (SELECT 1 FROM {t}batches b WHERE b.id = $1 AND ` + workable + `)
			FROM {t}batch_chunks WHERE batch_id = $1 AND chunk_no = $2 AND tenant_id = $4`),
		// A lease is held from its claim to its releasing flush: a token
		// that still matches but was released writes nothing either.
		checkLease: d.Expand(`SELECT first_row_no, last_row_no FROM {t}batch_chunks
			WHERE batch_id = $1 AND chunk_no = $2 AND lease_token = $3 AND tenant_id = $4
			  AND lease_expires_at > {now}{for_update}`),
		rowsList: d.Expand(`SELECT row_no, chunk_no, state, payload, errors, result_id, attempts, reviewed, updated_at
			FROM {t}batch_rows
			WHERE tenant_id = $1 AND batch_id = $2 AND ($3 = '' OR state = $3) AND row_no > $4
			ORDER BY row_no LIMIT $5`),
		rowsCount: d.Expand(`SELECT state, count(*) FROM {t}batch_rows
			WHERE tenant_id = $1 AND batch_id = $2 GROUP BY state`),
		migrationsTable: d.Expand(`CREATE TABLE IF NOT EXISTS {t}schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at {time} NOT NULL)`),
		migrationsApplied: d.Expand(`SELECT version FROM {t}schema_migrations`),
		migrationInsert: d.Expand(`INSERT INTO {t}schema_migrations (version, name, applied_at)
			VALUES ($1, $2, {now})`),
		schemaVersion: d.Expand(`SELECT COALESCE(max(version), 0) FROM {t}schema_migrations`),
	}
}

// recountSQL overwrites a chunk's counts and next_due_at from one aggregate
// over its rows; lease is appended to the SET list (to release the lease).
func recountSQL(lease string) string {
	return `UPDATE {t}batch_chunks SET (` + CountColumns() + `, next_due_at) = (
			SELECT ` + CountAggregates() + `, min(next_attempt_at) FILTER (WHERE state IN ` + OpenStates + `)
			FROM {t}batch_rows r
			WHERE r.batch_id = {t}batch_chunks.batch_id
			  AND r.row_no BETWEEN {t}batch_chunks.first_row_no AND {t}batch_chunks.last_row_no)` + lease + `
		WHERE batch_id = $1 AND chunk_no = $2`
}

func prefixed(sums, prefix string) string {
	// SumColumns names bare n_ columns; in a join they belong to c.
	return strings.ReplaceAll(sums, "sum(n_", "sum("+prefix+"n_")
}

// Migrate applies the pending migrations in one transaction under the
// driver's migration lock. It refuses, changing nothing, a database that
// has migrations this build does not know.
func (s *Store) Migrate(ctx context.Context) error {
	all, err := migrations.Load(s.d.Engine)
	if err != nil {
		return err
	}
	return s.drv.InTx(ctx, func(q Querier) error {
		if err := s.drv.LockMigrations(ctx, q); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		if _, err := q.Exec(ctx, s.q.migrationsTable); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		applied, err := s.applied(ctx, q)
		if err != nil {
			return err
		}
		if v := newest(applied); v > latest(all) {
			return fmt.Errorf("%w: it has migration %d, this build knows up to %d; upgrade batchctl", driver.ErrSchemaNewer, v, latest(all))
		}
		for _, m := range migrations.Pending(all, applied) {
			if _, err := q.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := q.Exec(ctx, s.q.migrationInsert, m.Version, m.Name); err != nil {
				return fmt.Errorf("record migration %d: %w", m.Version, err)
			}
		}
		// Every process that opens the database to write migrates first:
		// the place to find ingests whose process died.
		return s.cleanIngests(ctx, q)
	})
}

func (s *Store) applied(ctx context.Context, q Querier) (map[int]bool, error) {
	rs, err := q.Query(ctx, s.q.migrationsApplied)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	for rs.Next() {
		var v int
		if err := rs.Scan(&v); err != nil {
			rs.Close()
			return nil, err
		}
		applied[v] = true
	}
	return applied, rs.Close()
}

func newest(applied map[int]bool) int {
	n := 0
	for v := range applied {
		n = max(n, v)
	}
	return n
}

func latest(all []migrations.Migration) int {
	if len(all) == 0 {
		return 0
	}
	return all[len(all)-1].Version
}

// SchemaStatus reads the schema's version without creating anything.
func (s *Store) SchemaStatus(ctx context.Context) (batchtype.SchemaStatus, error) {
	all, err := migrations.Load(s.d.Engine)
	if err != nil {
		return batchtype.SchemaStatus{}, err
	}
	st := batchtype.SchemaStatus{Latest: latest(all)}
	query, args := s.d.HasTable("schema_migrations")
	var exists bool
	if err := s.drv.DB().QueryRow(ctx, query, args...).Scan(&exists); err != nil {
		return st, fmt.Errorf("read schema version: %w", err)
	}
	if !exists {
		return st, nil
	}
	if err := s.drv.DB().QueryRow(ctx, s.q.schemaVersion).Scan(&st.Current); err != nil {
		return st, fmt.Errorf("read schema version: %w", err)
	}
	return st, nil
}

// BatchIngest creates a batch and writes all its rows with their outcome,
// its chunks and a first event. On PostgreSQL that is one transaction
// (COPY). A store whose writers exclude each other (SQLite) writes the rows
// in transactions of IngestTxRows rows instead, so that other processes can
// write between them, into a batch that is 'ingesting' (no claim sees it)
// until the last transaction makes it running; a failed ingest removes it,
// and one whose process died is removed by the next Migrate.
func (s *Store) BatchIngest(ctx context.Context, p driver.BatchIngestParams) (*batchtype.Batch, error) {
	header, err := json.Marshal(nonNil(p.Header))
	if err != nil {
		return nil, err
	}
	opts := BatchOptions{Warnings: p.Warnings, Conventions: p.Conventions, Recalc: p.Recalc, KindVersion: p.KindVersion}
	options, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	var key any
	if p.IdempotencyKey != "" {
		key = p.IdempotencyKey
	}
	maxAttempts := p.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 5
	}
	var id int64
	insertBatch := func(q Querier, status string) error {
		if err := q.QueryRow(ctx, s.q.insertBatch, p.TenantID, p.Kind, p.SourceName, string(header), string(options), key, maxAttempts, status).Scan(&id); err != nil {
			return fmt.Errorf("insert batch: %w", err)
		}
		return nil
	}
	accept := func(q Querier, evs *[]committedEvent) error {
		var sum driver.IngestSummary
		if p.SummaryFunc != nil {
			sum = p.SummaryFunc()
		}
		opts.ErrorCounts, opts.Width = sum.ErrorCounts, sum.Width
		opts.Warnings = append(opts.Warnings, sum.Warnings...)
		if k := p.DuplicateKey; k.Name != "" {
			n, err := q.Exec(ctx, s.q.markDuplicates, id, k.Column, k.Field, k.Name)
			if err != nil {
				return fmt.Errorf("find duplicate keys: %w", err)
			}
			opts.ErrorCounts = addErrorCount(opts.ErrorCounts, rows.ErrorCount{Column: k.Column, Code: rows.CodeDuplicateKey, Count: n})
		}
		final, err := json.Marshal(opts)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, s.q.ingestSummary, sum.SourceDigest, sum.SkippedEmpty, string(final), id); err != nil {
			return fmt.Errorf("record digest: %w", err)
		}
		if _, err := q.Exec(ctx, s.q.insertChunks, id); err != nil {
			return fmt.Errorf("insert chunks: %w", err)
		}
		if _, err := q.Exec(ctx, s.q.regroupAll, id); err != nil {
			return fmt.Errorf("count groups: %w", err)
		}
		if err := s.queueTurns(ctx, q, id, p.TenantID); err != nil {
			return err
		}
		if _, err = s.afterChange(ctx, q, id, batchtype.EventStarted, evs); err != nil {
			return err
		}
		return s.drv.Notify(ctx, q)
	}
	if s.d.IngestTxRows <= 0 {
		err = s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
			if err := insertBatch(q, "running"); err != nil {
				return err
			}
			if err := s.drv.InsertRows(ctx, q, InsertRowsParams{BatchID: id, TenantID: p.TenantID, Rows: p.Rows}); err != nil {
				return err
			}
			return accept(q, evs)
		})
	} else {
		err = s.ingestInParts(ctx, p, insertBatch, accept, &id)
	}
	if err != nil {
		return nil, err
	}
	return s.BatchGet(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: id})
}

// ingestLease is how long an 'ingesting' batch lives without its importer
// renewing it: a part of IngestTxRows rows takes well under a second.
const ingestLease = 2 * time.Minute

func (s *Store) ingestInParts(ctx context.Context, p driver.BatchIngestParams, insertBatch func(Querier, string) error, accept func(Querier, *[]committedEvent) error, id *int64) error {
	err := s.drv.InTx(ctx, func(q Querier) error {
		if err := insertBatch(q, "ingesting"); err != nil {
			return err
		}
		_, err := q.Exec(ctx, s.q.ingestRenew, *id, ingestLease.Milliseconds())
		return err
	})
	if err != nil {
		return err
	}
	// Each part is read from the source before its transaction begins:
	// reading (and validating) the file never holds the write lock.
	next, stop := iter.Pull2(p.Rows)
	defer stop()
	buf := make([]driver.IngestRow, 0, s.d.IngestTxRows)
	for more := true; more; {
		buf = buf[:0]
		for len(buf) < s.d.IngestTxRows {
			r, err, ok := next()
			if !ok {
				more = false
				break
			}
			if err != nil {
				s.removeIngest(*id)
				return err
			}
			buf = append(buf, r)
		}
		err = s.drv.InTx(ctx, func(q Querier) error {
			if err := s.drv.InsertRows(ctx, q, InsertRowsParams{BatchID: *id, TenantID: p.TenantID, Rows: sliceRows(buf)}); err != nil {
				return err
			}
			_, err := q.Exec(ctx, s.q.ingestRenew, *id, ingestLease.Milliseconds())
			return err
		})
		if err != nil {
			s.removeIngest(*id)
			return err
		}
	}
	err = s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
		if _, err := q.Exec(ctx, s.q.ingestDone, *id); err != nil {
			return err
		}
		return accept(q, evs)
	})
	if err != nil {
		s.removeIngest(*id)
	}
	return err
}

// removeIngest removes a batch whose ingest failed, with whatever of it was
// written. It runs even when the ingest's context was cancelled (Ctrl-C).
func (s *Store) removeIngest(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = s.drv.InTx(ctx, func(q Querier) error { return s.dropBatch(ctx, q, id) })
}

// dropBatch deletes a batch and everything of it.
func (s *Store) dropBatch(ctx context.Context, q Querier, id int64) error {
	for _, stmt := range s.q.dropBatch {
		if _, err := q.Exec(ctx, stmt, id); err != nil {
			return err
		}
	}
	return nil
}

// cleanIngests removes the batches whose ingest died with its process.
func (s *Store) cleanIngests(ctx context.Context, q Querier) error {
	rs, err := q.Query(ctx, s.q.deadIngests)
	if err != nil {
		return fmt.Errorf("find abandoned ingests: %w", err)
	}
	var ids []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			rs.Close()
			return err
		}
		ids = append(ids, id)
	}
	if err := rs.Close(); err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.dropBatch(ctx, q, id); err != nil {
			return fmt.Errorf("remove abandoned ingest %d: %w", id, err)
		}
	}
	return nil
}

// afterChange finishes the batch when no row is open and appends an event
// with the batch totals. It first takes the batch row's lock with the
// sequence-number UPDATE: that serialises every change of the batch, so
// commit order equals sequence order, and the finish check (a second
// statement, so a new snapshot under READ COMMITTED) sees every other
// chunk's committed flush. Checking before the lock, or inside the locking
// statement, is write skew: two last flushes each see the other's chunk
// still open, and neither finishes the batch.
func (s *Store) afterChange(ctx context.Context, q Querier, id int64, typ batchtype.EventType, evs *[]committedEvent) (*driver.FlushResult, error) {
	var (
		seq            int64
		tenant, status string
		paused         bool
		now            Time
	)
	if err := q.QueryRow(ctx, s.q.nextSeq, id).Scan(&seq, &tenant, &paused, &now); err != nil {
		return nil, fmt.Errorf("next event seq: %w", err)
	}
	if err := q.QueryRow(ctx, s.q.finish, id).Scan(&status); err != nil {
		return nil, fmt.Errorf("finish batch: %w", err)
	}
	dests, counts := CountDests()
	if err := q.QueryRow(ctx, s.q.sumChunks, id).Scan(dests...); err != nil {
		return nil, fmt.Errorf("sum chunks: %w", err)
	}
	ev, err := s.appendEvent(ctx, q, id, typ, status, paused, counts(), seq, tenant, now)
	if err != nil {
		return nil, err
	}
	if err := s.drv.NotifyEvent(ctx, q, id, seq); err != nil {
		return nil, fmt.Errorf("notify event: %w", err)
	}
	*evs = append(*evs, committedEvent{batchID: id, seq: seq})
	return &driver.FlushResult{Counts: ev.Counts, Finished: ev.Status == batchtype.StatusFinished, EventSeq: seq}, nil
}

// scanBatch reads a row of batchColumns and the chunk sums.
func scanBatch(r interface{ Scan(...any) error }) (*batchtype.Batch, error) {
	var (
		b                 batchtype.Batch
		status            string
		header, options   string
		created, finished Time
	)
	dests, counts := CountDests()
	err := r.Scan(append([]any{&b.ID, &b.TenantID, &b.Kind, &b.SourceName, &b.SourceDigest, &status, &header,
		&options, &b.SkippedEmpty, &created, &finished, &b.Paused}, dests...)...)
	if err != nil {
		return nil, err
	}
	b.Status = batchtype.Status(status)
	b.CreatedAt, b.FinishedAt, b.Counts = created.Time, finished.Ptr(), counts()
	if err := json.Unmarshal([]byte(header), &b.Header); err != nil {
		return nil, fmt.Errorf("batch %d header: %w", b.ID, err)
	}
	var opts BatchOptions
	if err := json.Unmarshal([]byte(options), &opts); err != nil {
		return nil, fmt.Errorf("batch %d options: %w", b.ID, err)
	}
	b.Warnings, b.ErrorCounts, b.Conventions, b.Width, b.Recalc = opts.Warnings, opts.ErrorCounts, opts.Conventions, opts.Width, opts.Recalc
	b.KindVersion = opts.KindVersion
	return &b, nil
}

// BatchGet returns a batch with its totals, or driver.ErrNotFound.
func (s *Store) BatchGet(ctx context.Context, p driver.BatchGetParams) (*batchtype.Batch, error) {
	b, err := scanBatch(s.drv.DB().QueryRow(ctx, s.q.batchGet, p.ID, p.TenantID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get batch %d: %w", p.ID, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get batch %d: %w", p.ID, err)
	}
	return b, nil
}

// BatchFind returns the batch of an idempotency key, or the newest of a
// kind with a source digest, or driver.ErrNotFound.
func (s *Store) BatchFind(ctx context.Context, p driver.BatchFindParams) (*batchtype.Batch, error) {
	b, err := scanBatch(s.drv.DB().QueryRow(ctx, s.q.batchFind, p.TenantID, p.IdempotencyKey, p.Kind, p.SourceDigest))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, driver.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("find batch: %w", err)
	}
	return b, nil
}

// BatchList lists a tenant's batches, newest first, with their totals, in
// one query.
func (s *Store) BatchList(ctx context.Context, p driver.BatchListParams) ([]*batchtype.Batch, error) {
	if p.Limit <= 0 {
		p.Limit = 20
	}
	rs, err := s.drv.DB().Query(ctx, s.q.batchList, p.TenantID, p.BeforeID, p.Limit, string(p.Status), p.Kind)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	defer rs.Close()
	out := []*batchtype.Batch{}
	for rs.Next() {
		b, err := scanBatch(rs)
		if err != nil {
			return nil, fmt.Errorf("list batches: %w", err)
		}
		out = append(out, b)
	}
	if err := rs.Close(); err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	return out, nil
}

// ChunkClaim leases the due chunk with the lowest turn (skipping, on
// PostgreSQL, chunks another transaction is claiming), moves its due rows
// that have used every attempt to dead, marks the others processing and
// returns them.
func (s *Store) ChunkClaim(ctx context.Context, p driver.ChunkClaimParams) (*driver.Lease, error) {
	// A claim that only settles rows (every due row of its chunk was out
	// of attempts) finishes that work in its own transaction and looks
	// again; a bound keeps a run of such chunks from holding the caller.
	for range maxSettlingClaims {
		var (
			l       driver.Lease
			settled bool
		)
		err := s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
			var turn int64
			var err error
			if settled, err = s.claim(ctx, q, p, &l, &turn, evs); err != nil {
				return err
			}
			// Last, so that the clock's row is locked for as short a time as
			// can be, and only when this claim moves it. A claim confined to
			// one batch (batchctl import working its own file) says nothing
			// about the other tenants' queues, so it leaves the clock alone.
			if p.BatchID != 0 {
				return nil
			}
			if _, err := q.Exec(ctx, s.q.turnAdvance, turn); err != nil {
				return fmt.Errorf("advance the turn clock: %w", err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !settled {
			return &l, nil
		}
	}
	return nil, driver.ErrNoWork
}

// maxSettlingClaims bounds how many chunks one ChunkClaim settles without
// finding a row to hand out.
const maxSettlingClaims = 16

// claim is ChunkClaim's transaction, but for the turn clock: it sets
// *turn to the claimed chunk's. settled reports a chunk whose due rows
// were all out of attempts: they are dead, the chunk is recounted and
// free again, the batch finished if that was its last open work (in this
// transaction, so that no flush has to follow), and there is nothing to
// hand out.
func (s *Store) claim(ctx context.Context, q Querier, p driver.ChunkClaimParams, l *driver.Lease, turn *int64, evs *[]committedEvent) (settled bool, err error) {
	var (
		first, last     int64
		header, options string
		maxAttempts     int
		status          string
		released        bool // the last lease ended in a flush
	)
	err = q.QueryRow(ctx, s.q.findChunk, p.BatchID, s.d.ListArg(p.TenantIDs), s.d.ListArg(p.Kinds)).
		Scan(&l.BatchID, &l.ChunkNo, &l.TenantID, &l.Kind, &header, &options, &maxAttempts, &status, &first, &last, &released, turn)
	if errors.Is(err, sql.ErrNoRows) {
		return false, driver.ErrNoWork
	}
	if err != nil {
		return false, fmt.Errorf("find chunk: %w", err)
	}
	if err := json.Unmarshal([]byte(header), &l.Header); err != nil {
		return false, fmt.Errorf("batch %d header: %w", l.BatchID, err)
	}
	var opts BatchOptions
	if err := json.Unmarshal([]byte(options), &opts); err != nil {
		return false, fmt.Errorf("batch %d options: %w", l.BatchID, err)
	}
	l.Conventions = opts.Conventions
	l.Cancelled = status == string(batchtype.StatusCancelled)
	l.Deferred = released && !l.Cancelled && slices.Contains(p.DeferKinds, l.Kind)
	if err := q.QueryRow(ctx, s.q.leaseChunk, p.Owner, p.LeaseDuration.Milliseconds(), l.BatchID, l.ChunkNo, l.Deferred).Scan(&l.Token); err != nil {
		return false, fmt.Errorf("lease chunk: %w", err)
	}
	l.Owner = p.Owner
	if l.Cancelled {
		// The rows a dead worker left: their fate is settled here;
		// the flush that follows recounts and ends the lease.
		if _, err := q.Exec(ctx, s.q.sweepDead, l.BatchID, l.TenantID, first, last, string(rows.CodeCancelledLate), deadRowMessage); err != nil {
			return false, fmt.Errorf("sweep rows of a cancelled batch: %w", err)
		}
		return false, nil
	}
	if l.Deferred {
		// No worker died holding this chunk, so no row can have used
		// its attempts without an outcome: nothing to kill, nothing
		// to mark, nothing to recount.
		return false, s.leasedRows(ctx, q, l, s.q.dueRows, l.BatchID, first, last, l.TenantID)
	}
	msg := fmt.Sprintf("used all %d attempts: each time, its worker stopped (crashed, was killed, or lost its lease) before it recorded an outcome", maxAttempts)
	unknownMsg := msg + "; its effect key was claimed, so a worker may have run its effect before it stopped: reconcile it"
	if _, err := q.Exec(ctx, s.q.killExhausted, l.BatchID, first, last, l.TenantID, maxAttempts, string(rows.CodeExhausted), msg, unknownMsg); err != nil {
		return false, fmt.Errorf("rows out of attempts: %w", err)
	}
	if err := s.leasedRows(ctx, q, l, s.q.markProcessing, l.BatchID, first, last, l.TenantID); err != nil {
		return false, fmt.Errorf("mark rows processing: %w", err)
	}
	if len(l.Rows) > 0 {
		return false, s.recount(ctx, q, l.BatchID, l.ChunkNo, false)
	}
	if err := s.recount(ctx, q, l.BatchID, l.ChunkNo, true); err != nil {
		return false, err
	}
	if _, err := s.afterChange(ctx, q, l.BatchID, batchtype.EventProgress, evs); err != nil {
		return false, err
	}
	return true, nil
}

// queueTurns queues the open chunks of a batch of tenant at the back of
// the tenant's queue, in chunk order: a new batch, or one a re-run or a
// resume opens again (which, with its old turns, would go ahead of every
// other tenant's work). See migration 0008.
func (s *Store) queueTurns(ctx context.Context, q Querier, batchID int64, tenant string) error {
	var n, base int64
	if err := q.QueryRow(ctx, s.q.turnCount, batchID).Scan(&n); err != nil {
		return fmt.Errorf("queue chunks: %w", err)
	}
	if n == 0 {
		return nil
	}
	if err := q.QueryRow(ctx, s.q.turnTenant, tenant, n).Scan(&base); err != nil {
		return fmt.Errorf("queue chunks: %w", err)
	}
	if _, err := q.Exec(ctx, s.q.turnChunks, batchID, base); err != nil {
		return fmt.Errorf("queue chunks: %w", err)
	}
	return nil
}

// leasedRows reads a claim's rows (row, payload, attempts) into l, in row
// order.
func (s *Store) leasedRows(ctx context.Context, q Querier, l *driver.Lease, stmt string, args ...any) error {
	rs, err := q.Query(ctx, stmt, args...)
	if err != nil {
		return err
	}
	for rs.Next() {
		var (
			r       driver.LeasedRow
			payload string
		)
		if err := rs.Scan(&r.RowNo, &payload, &r.Attempts); err != nil {
			rs.Close()
			return err
		}
		if r.Values, err = DecodeValues([]byte(payload)); err != nil {
			rs.Close()
			return err
		}
		l.Rows = append(l.Rows, r)
	}
	if err := rs.Close(); err != nil {
		return err
	}
	// RETURNING gives no order.
	slices.SortFunc(l.Rows, func(a, b driver.LeasedRow) int { return cmp.Compare(a.RowNo, b.RowNo) })
	return nil
}

// ChunkNextDue returns the open chunk due soonest, or driver.ErrNoWork.
func (s *Store) ChunkNextDue(ctx context.Context, p driver.ChunkNextDueParams) (*batchtype.ChunkDue, error) {
	var (
		d              batchtype.ChunkDue
		due, leaseEnds Time
	)
	err := s.drv.DB().QueryRow(ctx, s.q.nextDue, p.BatchID, s.d.ListArg(p.TenantIDs), s.d.ListArg(p.Kinds)).
		Scan(&d.BatchID, &d.ChunkNo, &due, &d.LeaseOwner, &leaseEnds)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, driver.ErrNoWork
	}
	if err != nil {
		return nil, fmt.Errorf("next due chunk: %w", err)
	}
	d.DueAt, d.LeaseExpiresAt = due.Time, leaseEnds.Time
	return &d, nil
}

// recount overwrites a chunk's counts and next_due_at from its rows, and
// ends its lease when release is set.
func (s *Store) recount(ctx context.Context, q Querier, batchID, chunkNo int64, release bool) error {
	stmt := s.q.recount
	if release {
		stmt = s.q.recountFree
	}
	if _, err := q.Exec(ctx, stmt, batchID, chunkNo); err != nil {
		return fmt.Errorf("recount chunk %d: %w", chunkNo, err)
	}
	var one int
	switch err := q.QueryRow(ctx, s.q.lockGroup, batchID, chunkNo).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		// Every chunk's group is made with the chunk; this is a batch
		// from before migration 0009's backfill could see it.
		if _, err := q.Exec(ctx, s.q.regroupAll, batchID); err != nil {
			return fmt.Errorf("count groups: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("lock the count group of chunk %d: %w", chunkNo, err)
	}
	if _, err := q.Exec(ctx, s.q.regroup, batchID, chunkNo); err != nil {
		return fmt.Errorf("recount the group of chunk %d: %w", chunkNo, err)
	}
	return nil
}

// recountAll overwrites the counts of every chunk of a batch, then of
// every count group, from the rows. The caller holds every chunk's lock.
func (s *Store) recountAll(ctx context.Context, q Querier, batchID int64) error {
	if _, err := q.Exec(ctx, s.c.recountBatch, batchID); err != nil {
		return fmt.Errorf("recount: %w", err)
	}
	if _, err := q.Exec(ctx, s.q.regroupAll, batchID); err != nil {
		return fmt.Errorf("count groups: %w", err)
	}
	return nil
}

// LeaseRenew extends a lease if its token still holds and its batch may
// still be worked.
func (s *Store) LeaseRenew(ctx context.Context, p driver.LeaseRenewParams) error {
	n, err := s.drv.DB().Exec(ctx, s.q.leaseRenew, p.LeaseDuration.Milliseconds(), p.BatchID, p.ChunkNo, p.Token, p.TenantID)
	if err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	if n > 0 {
		return nil
	}
	var one int
	err = s.drv.DB().QueryRow(ctx, s.q.leaseHeld, p.BatchID, p.ChunkNo, p.Token, p.TenantID).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return driver.ErrLeaseLost
	case err != nil:
		return fmt.Errorf("renew lease: %w", err)
	}
	return driver.ErrBatchStopped
}

// LeaseCheck tells whether a lease still holds and its batch may still be
// worked, without writing: see driver.Store.
func (s *Store) LeaseCheck(ctx context.Context, p driver.LeaseRenewParams) error {
	var held, workable bool
	err := s.drv.DB().QueryRow(ctx, s.q.leaseCheck, p.BatchID, p.ChunkNo, p.Token, p.TenantID).Scan(&held, &workable)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return driver.ErrLeaseLost
	case err != nil:
		return fmt.Errorf("check lease: %w", err)
	case !held:
		return driver.ErrLeaseLost
	case !workable:
		return driver.ErrBatchStopped
	}
	return nil
}

// ChunkFlush records outcomes under the lease's fencing token: the chunk
// row is locked and checked first (no row: the lease is lost and nothing is
// written), which also serialises recounts of the chunk. A transactional
// processor's EffectFunc runs next, in the same transaction, so its writes
// commit with the outcomes or not at all.
func (s *Store) ChunkFlush(ctx context.Context, p driver.ChunkFlushParams) (*driver.FlushResult, error) {
	var res *driver.FlushResult
	err := s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
		var first, last int64
		err := q.QueryRow(ctx, s.q.checkLease, p.BatchID, p.ChunkNo, p.Token, p.TenantID).Scan(&first, &last)
		if errors.Is(err, sql.ErrNoRows) {
			return driver.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("check lease: %w", err)
		}
		// A cancel locks the batch's chunks before it changes the batch,
		// so with this chunk locked the status cannot change under us.
		var status string
		if err := q.QueryRow(ctx, s.q.batchStatus, p.BatchID).Scan(&status); err != nil {
			return fmt.Errorf("batch status: %w", err)
		}
		cancelled := status == string(batchtype.StatusCancelled)
		outcomes := p.Outcomes
		unworked := p.Unworked
		switch {
		case cancelled:
			outcomes = cancelledOutcomes(outcomes)
			for _, r := range p.InFlight {
				outcomes = append(outcomes, driver.RowOutcome{RowNo: r, State: rows.StateUnknown, Error: &rows.FieldError{Row: r, Code: rows.CodeCancelledLate,
					Message: "the batch was cancelled while this row's effect was under way: it may have happened; reconcile it"}})
			}
		default:
			unworked = append(slices.Clip(unworked), p.InFlight...)
		}
		switch {
		case cancelled:
		case p.EffectFunc != nil:
			more, err := p.EffectFunc(ctx, txOf(q, s.d))
			if err != nil {
				return err
			}
			outcomes = append(slices.Clip(outcomes), more...)
		}
		if len(outcomes) > 0 {
			if err := s.drv.UpdateOutcomes(ctx, q, UpdateOutcomesParams{BatchID: p.BatchID, TenantID: p.TenantID, First: first, Last: last, Outcomes: outcomes, Deferred: p.Deferred}); err != nil {
				return fmt.Errorf("record outcomes: %w", err)
			}
			if err := s.recordEffects(ctx, q, p.TenantID, p.BatchID, first, last, outcomes); err != nil {
				return err
			}
		}
		if len(p.Released) > 0 {
			if _, err := q.Exec(ctx, s.q.releaseEffects, p.TenantID, p.BatchID, first, last, s.d.ListArg(p.Released)); err != nil {
				return fmt.Errorf("release effect keys: %w", err)
			}
		}
		switch {
		case cancelled:
			if _, err := q.Exec(ctx, s.q.cancelLeft, p.BatchID, p.TenantID, first, last, string(rows.CodeCancelledLate), deadRowMessage); err != nil {
				return fmt.Errorf("cancel rows: %w", err)
			}
		case len(unworked) > 0:
			if _, err := q.Exec(ctx, s.q.giveBack, p.BatchID, p.TenantID, first, last, s.d.IntListArg(unworked)); err != nil {
				return fmt.Errorf("give back rows: %w", err)
			}
		}
		if err := s.recount(ctx, q, p.BatchID, p.ChunkNo, p.Release); err != nil {
			return err
		}
		res, err = s.afterChange(ctx, q, p.BatchID, batchtype.EventProgress, evs)
		if res != nil {
			res.Cancelled = cancelled
		}
		failpoint.Hit(failpoint.InAck) // a crash before the commit: nothing of the flush stays
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// cancelledOutcomes are what a flush records when the batch was cancelled
// while the lease's rows were worked: no row succeeds after a cancel, but a
// row whose processor reported success may have had its effect, so it is
// unknown (to be reconciled), not cancelled; a row still to be retried is
// cancelled; a failure stays a failure.
func cancelledOutcomes(outs []driver.RowOutcome) []driver.RowOutcome {
	out := make([]driver.RowOutcome, len(outs))
	for i, o := range outs {
		switch o.State {
		case rows.StateSucceeded:
			o.State = rows.StateUnknown
			o.Error = &rows.FieldError{Row: o.RowNo, Code: rows.CodeCancelledLate,
				Message: "the batch was cancelled while this row's effect was under way: it may have happened (result " + o.ResultID + "); reconcile it"}
			o.ResultID = ""
		case rows.StateRetrying:
			o.State = rows.StateCancelled
		}
		out[i] = o
	}
	return out
}

// effectRecord is one outcome on an effect key, as recordEffects reads it.
type effectRecord struct {
	Key    string `json:"k"`
	State  string `json:"s"`
	Result string `json:"r"`
	Row    int64  `json:"n"`
}

// recordEffects records the outcomes of rows with a claimed effect key: done
// with the result, failed, or unknown; a retrying row keeps its claim.
// Every one of them ran and answered, so none of their runs is under way
// any more (run_until is cleared).
func (s *Store) recordEffects(ctx context.Context, q Querier, tenant string, batchID, first, last int64, outs []driver.RowOutcome) error {
	var recs []effectRecord
	for _, o := range outs {
		if o.EffectKey == "" {
			continue
		}
		var state string
		switch o.State {
		case rows.StateSucceeded:
			state = "done"
		case rows.StateFailed, rows.StateDead:
			state = "failed"
		case rows.StateUnknown:
			state = "unknown"
		case rows.StateRetrying:
			state = "claimed" // kept for the next attempt; its run is over
		default:
			continue
		}
		recs = append(recs, effectRecord{Key: o.EffectKey, State: state, Result: o.ResultID, Row: o.RowNo})
	}
	if len(recs) == 0 {
		return nil
	}
	arg, err := JSONArg(recs)
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, s.q.recordEffects, tenant, batchID, arg, first, last); err != nil {
		return fmt.Errorf("record effects: %w", err)
	}
	return nil
}

// RowsList pages through a batch's rows in row order.
func (s *Store) RowsList(ctx context.Context, p driver.RowsListParams) ([]batchtype.Row, error) {
	if p.Limit <= 0 {
		p.Limit = 100
	}
	if s.d.PagePrelude == "" {
		return s.rowsList(ctx, s.drv.DB(), p)
	}
	var out []batchtype.Row
	err := s.drv.InTx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, s.d.PagePrelude); err != nil {
			return fmt.Errorf("list rows: %w", err)
		}
		var err error
		out, err = s.rowsList(ctx, q, p)
		return err
	})
	return out, err
}

func (s *Store) rowsList(ctx context.Context, q Querier, p driver.RowsListParams) ([]batchtype.Row, error) {
	rs, err := q.Query(ctx, s.q.rowsList, p.TenantID, p.BatchID, string(p.State), p.AfterRowNo, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list rows: %w", err)
	}
	defer rs.Close()
	var out []batchtype.Row
	for rs.Next() {
		var (
			r        batchtype.Row
			state    string
			payload  string
			errs     sql.NullString
			resultID sql.NullString
			updated  Time
		)
		if err := rs.Scan(&r.RowNo, &r.ChunkNo, &state, &payload, &errs, &resultID, &r.Attempts, &r.Reviewed, &updated); err != nil {
			return nil, fmt.Errorf("list rows: %w", err)
		}
		r.BatchID, r.State, r.ResultID, r.Updated = p.BatchID, rows.State(state), resultID.String, updated.Time
		if r.Values, err = DecodeValues([]byte(payload)); err != nil {
			return nil, err
		}
		if r.Errors, err = DecodeErrors([]byte(errs.String)); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rs.Close(); err != nil {
		return nil, fmt.Errorf("list rows: %w", err)
	}
	return out, nil
}

// RowsCount counts a batch's rows by state with a fresh aggregate.
func (s *Store) RowsCount(ctx context.Context, p driver.RowsCountParams) (rows.Counts, error) {
	rs, err := s.drv.DB().Query(ctx, s.q.rowsCount, p.TenantID, p.BatchID)
	if err != nil {
		return nil, fmt.Errorf("count rows: %w", err)
	}
	defer rs.Close()
	c := rows.Counts{}
	for rs.Next() {
		var (
			st string
			n  int64
		)
		if err := rs.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count rows: %w", err)
		}
		c[rows.State(st)] = n
	}
	if err := rs.Close(); err != nil {
		return nil, fmt.Errorf("count rows: %w", err)
	}
	return c, nil
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// sliceRows yields rows already read.
func sliceRows(rs []driver.IngestRow) iter.Seq2[driver.IngestRow, error] {
	return func(yield func(driver.IngestRow, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// addErrorCount adds c to counts, keeping the order ErrorTally.Counts
// gives: most frequent first, then by column and code.
func addErrorCount(counts []rows.ErrorCount, c rows.ErrorCount) []rows.ErrorCount {
	if c.Count == 0 {
		return counts
	}
	var t rows.ErrorTally
	for _, e := range append(slices.Clone(counts), c) {
		t.AddCount(e)
	}
	return t.Counts()
}
