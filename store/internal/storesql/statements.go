package storesql

import (
	"strings"

	"github.com/rowfate/rowfate/rows"
)

// statements are the shared statements, expanded once for the dialect.
type statements struct {
	insertBatch, ingestSummary, insertChunks, markDuplicates, markCandidates                                   string
	suspectRows, markCandidatesRows                                                                            string
	nextSeq, finish, sumChunks                                                                                 string
	batchGet, batchList, batchFind                                                                             string
	findChunk, leaseChunk, markProcessing, dueRows, recount, recountFree                                       string
	clockNow, markSelect, markUpdate                                                                           string
	leaseRenew, leaseCheck, checkLease, rowsList, rowsCount, migrationsTable                                   string
	nextDue, killExhausted, batchStatus, leaseHeld, cancelLeft, sweepDead, cancelUnanswered                    string
	giveBack, recordEffects, releaseEffects, ingestRenew, ingestDone, deadIngests, claimIngest, claimAbandoned string
	turnCount, turnTenant, turnChunks, turnAdvance                                                             string
	lockGroup, regroup, regroupAll                                                                             string
	dropBatch                                                                                                  []string
	migrationsApplied, migrationInsert, schemaVersion                                                          string
}

// workable is the condition on a batch b whose rows workers may claim: it
// runs and nothing pauses it, itself, its kind or its tenant.
const workable = `b.status = 'running' AND NOT b.paused AND NOT EXISTS (SELECT 1 FROM {t}pauses p
	WHERE p.tenant_id = b.tenant_id AND (p.scope = 'tenant' OR (p.scope = 'kind' AND p.value = b.kind)))`

// batchColumns and batchFrom select a batch with its totals, summed over
// its count groups in the same query; scanBatch reads them.
const batchColumns = `b.id, b.tenant_id, b.kind, b.source_name, b.source_digest, b.status, b.header,
	b.options, b.skipped_empty, b.created_at, b.finished_at, b.paused, b.max_failed, b.values_purged_at, b.values_purged_by`

// newStatements expands the shared statements for the dialect, a part at
// a time.
func newStatements(d *Dialect) statements {
	var s statements
	s.ingestAndCounts(d)
	s.readsAndClaims(d)
	s.leasesAndRows(d)
	return s
}

// ingestAndCounts: ingest, its clean-up, and the counts.
func (s *statements) ingestAndCounts(d *Dialect) {
	sums := SumColumns()
	s.insertBatch = d.Expand(`INSERT INTO {t}batches (tenant_id, kind, source_name, header, options, idempotency_key, max_attempts, status, max_failed, source_digest, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, {now}) RETURNING id`)
	s.ingestRenew = d.Expand(`UPDATE {t}batches SET ingest_expires_at = {now} + CAST($2 AS bigint) * {ms} WHERE id = $1 AND status = 'ingesting'`)
	s.ingestDone = d.Expand(`UPDATE {t}batches SET status = 'running', ingest_expires_at = NULL WHERE id = $1 AND status = 'ingesting'`)
	// An ingest that never ended keeps its lease's end, cancelled or not
	// (ingestDone clears it): such a batch, and only such, is removed.
	s.deadIngests = d.Expand(`SELECT id FROM {t}batches WHERE ingest_expires_at < {now}`)
	// claimIngest locks a batch whose ingest never ended, its lease run
	// out unless $2: 0 rows when the ingest ended after all.
	s.claimIngest = d.Expand(`UPDATE {t}batches SET ingest_expires_at = ingest_expires_at
		WHERE id = $1 AND ingest_expires_at IS NOT NULL AND ($2 OR ingest_expires_at < {now})`)
	s.claimAbandoned = d.Expand(`UPDATE {t}batches SET ingest_expires_at = ingest_expires_at
		WHERE id = $1 AND tenant_id = $2 AND ingest_expires_at < {now}`)
	s.dropBatch = []string{
		d.Expand(`DELETE FROM {t}batch_rows WHERE batch_id = $1`),
	}
	if d.ValuesApart {
		// A DELETE, not a TRUNCATE: the batch being dropped is an ingest
		// that failed or died, whose values were rolled back with it,
		// so there is nothing to scan; its empty partition is left, as
		// a drop would wait for every running import (ValuesPartition).
		s.dropBatch = append(s.dropBatch, d.Expand(`DELETE FROM {t}batch_values WHERE batch_id = $1`))
	}
	s.dropBatch = append(s.dropBatch,
		d.Expand(`DELETE FROM {t}batch_chunks WHERE batch_id = $1`),
		d.Expand(`DELETE FROM {t}batch_count_groups WHERE batch_id = $1`),
		d.Expand(`DELETE FROM {t}batch_events WHERE batch_id = $1`),
		d.Expand(`DELETE FROM {t}batches WHERE id = $1`),
	)
	s.ingestSummary = d.Expand(`UPDATE {t}batches SET source_digest = $1, skipped_empty = $2, options = $3 WHERE id = $4`)
	// A valid row whose key an earlier valid row of the batch has is a
	// duplicate; the error names that first row. markDuplicates finds
	// them with a window over the batch's digests, sorted in the database,
	// not in the importer's memory; markCandidates does it among the rows whose
	// digest is one of $5 only (DuplicateKey.Screen): a scan of the
	// batch's rows with a small hash set, not a sort of every digest.
	duplicates := func(rowsWith string) string {
		return d.Expand(`UPDATE {t}batch_rows AS r
		SET state = 'invalid', next_attempt_at = NULL,
		    errors = ` + d.JSONError("r.row_no", "column", "NULLIF($2, '')", "field", "NULLIF($3, '')",
			"code", "'"+string(rows.CodeDuplicateKey)+"'", "message", "'same ' || $4 || ' as row ' || d.first") + `
		FROM (SELECT row_no AS dup_no, first FROM (
			SELECT row_no, first_value(row_no) OVER (PARTITION BY key_digest ORDER BY row_no) AS first
			FROM {t}batch_rows WHERE batch_id = $1 AND ` + rowsWith + `) w
			WHERE first <> row_no) d
		WHERE r.batch_id = $1 AND r.row_no = d.dup_no`)
	}
	s.markDuplicates = duplicates("key_digest IS NOT NULL")
	s.markCandidates = duplicates(d.InBytes("key_digest", "$5"))
	// markCandidates naming the rows it made invalid, for the suspects an
	// importer held (Screened.Held).
	// (SQLite's RETURNING takes no table name: row_no is r's alone.)
	s.markCandidatesRows = s.markCandidates + ` RETURNING row_no`
	s.suspectRows = d.Expand(`SELECT r.row_no, r.chunk_no, ` + d.valuesOf("r", "$1") + ` FROM {t}batch_rows r
		WHERE batch_id = $1 AND ` + d.InInt("row_no", "$2") + ` AND state = 'valid'
		ORDER BY row_no`)
	s.insertChunks = insertChunksSQL(d)
	s.nextSeq = d.Expand(`UPDATE {t}batches SET event_seq = event_seq + 1 WHERE id = $1
		RETURNING event_seq, tenant_id, paused, {clock}`)
	// A batch finishes when no chunk has open rows, and runs again when
	// rows are retried; a cancelled batch stays cancelled.
	s.finish = d.Expand(`UPDATE {t}batches SET
			status = CASE
				WHEN status = 'running' AND NOT EXISTS (SELECT 1 FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) THEN 'finished'
				WHEN status = 'finished' AND EXISTS (SELECT 1 FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) THEN 'running'
				ELSE status END,
			finished_at = CASE
				WHEN status = 'running' AND NOT EXISTS (SELECT 1 FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) THEN {now}
				WHEN status = 'finished' AND EXISTS (SELECT 1 FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) THEN NULL
				ELSE finished_at END
		WHERE id = $1 RETURNING status`)
	s.sumChunks = d.Expand(`SELECT ` + sums + ` FROM {t}batch_count_groups WHERE batch_id = $1`)
	// Count groups (migration 0009): a group's counts are overwritten
	// from its chunks', after its row is locked in a statement of its
	// own, so that on PostgreSQL the aggregate's snapshot is taken
	// once every flush that recounted a chunk of the group before this
	// one has committed (a single upsert would aggregate a snapshot
	// from before the lock, and lose that flush's counts).
	s.lockGroup = d.Expand(`SELECT 1 FROM {t}batch_count_groups
		WHERE batch_id = $1 AND group_no = CAST($2 AS bigint) / ` + groupSizeSQL + `{for_update}`)
	s.regroup = d.Expand(`UPDATE {t}batch_count_groups SET (` + CountColumns() + `) = (
			SELECT ` + sums + ` FROM {t}batch_chunks c
			WHERE c.batch_id = {t}batch_count_groups.batch_id
			  AND c.chunk_no >= {t}batch_count_groups.group_no * ` + groupSizeSQL + `
			  AND c.chunk_no < ({t}batch_count_groups.group_no + 1) * ` + groupSizeSQL + `)
		WHERE batch_id = $1 AND group_no = CAST($2 AS bigint) / ` + groupSizeSQL)
	// Every group of a batch, made when missing: after an ingest, or
	// a batch-wide recount, which holds every chunk's lock.
	s.regroupAll = d.Expand(`INSERT INTO {t}batch_count_groups (batch_id, group_no, tenant_id, ` + CountColumns() + `)
		SELECT batch_id, chunk_no / ` + groupSizeSQL + `, min(tenant_id), ` + sums + `
		FROM {t}batch_chunks WHERE batch_id = $1
		GROUP BY batch_id, chunk_no / ` + groupSizeSQL + `
		ON CONFLICT (batch_id, group_no) DO UPDATE SET ` + excludedCounts())
	s.batchGet = d.Expand(`SELECT ` + batchColumns + `, ` + prefixed(sums, "c.") + `
		FROM {t}batches b LEFT JOIN {t}batch_count_groups c ON c.batch_id = b.id
		WHERE b.id = $1 AND b.tenant_id = $2
		GROUP BY b.id`)
}

// insertChunksSQL writes a batch's chunks and their counts, from one
// aggregate of its rows in two levels: by chunk and state, then by chunk,
// so that a row costs one group's lookup, not a filter per state (a third
// of the statement's time over 1,000,000 rows, on either engine).
func insertChunksSQL(d *Dialect) string {
	return d.Expand(`INSERT INTO {t}batch_chunks
		(batch_id, chunk_no, tenant_id, first_row_no, last_row_no, next_due_at, ` + CountColumns() + `)
		SELECT $1, chunk_no, tenant_id, min(lo), max(hi),
			min(due) FILTER (WHERE state IN ` + OpenStates + `), ` + stateSums("n") + `
		FROM (SELECT chunk_no, tenant_id, state, min(row_no) AS lo, max(row_no) AS hi, min(next_attempt_at) AS due, count(*) AS n
			FROM {t}batch_rows WHERE batch_id = $1 GROUP BY chunk_no, tenant_id, state) g
		GROUP BY chunk_no, tenant_id`)
}

// readsAndClaims: batches read back, and what a claim asks.
func (s *statements) readsAndClaims(d *Dialect) {
	sums := SumColumns()
	s.batchFind = d.Expand(`SELECT ` + batchColumns + `, ` + prefixed(sums, "c.") + `
		FROM {t}batches b LEFT JOIN {t}batch_count_groups c ON c.batch_id = b.id
		WHERE b.tenant_id = $1 AND (($2 <> '' AND b.idempotency_key = $2)
		   OR ($2 = '' AND b.kind = $3 AND b.source_digest = $4))
		GROUP BY b.id ORDER BY b.id DESC LIMIT 1`)
	// The page is chosen first, so the join sums only its batches' groups.
	s.batchList = d.Expand(`WITH page AS (
			SELECT id FROM {t}batches x WHERE tenant_id = $1 AND (CAST($2 AS bigint) = 0 OR id < $2)
			  AND (CAST($4 AS text) = '' OR status = $4) AND (CAST($5 AS text) = '' OR kind = $5)
			  AND (CAST($6 AS bigint) = 0 OR paused OR EXISTS (SELECT 1 FROM {t}batch_count_groups g
			    WHERE g.batch_id = x.id AND g.n_invalid + g.n_failed + g.n_dead + g.n_unknown > 0))
			ORDER BY id DESC LIMIT $3)
		SELECT ` + batchColumns + `, ` + prefixed(sums, "c.") + `
		FROM page JOIN {t}batches b ON b.id = page.id
		LEFT JOIN {t}batch_count_groups c ON c.batch_id = b.id
		GROUP BY b.id ORDER BY b.id DESC`)
	// A chunk of a cancelled batch is claimable too when rows of a dead
	// worker's lease are left in it: its claim sweeps them to cancelled,
	// so recovery needs no cleanup job.
	s.findChunk = d.Expand(`SELECT ch.batch_id, ch.chunk_no, ch.tenant_id, b.kind, b.header, b.options, b.max_attempts, b.status,
			ch.first_row_no, ch.last_row_no, ch.lease_expires_at IS NULL, ch.turn
		FROM {t}batch_chunks ch JOIN {t}batches b ON b.id = ch.batch_id
		WHERE ch.next_due_at IS NOT NULL AND ch.next_due_at <= {now}
		  AND (ch.lease_expires_at IS NULL OR ch.lease_expires_at < {now})
		  AND ((` + workable + `) OR b.status = 'cancelled')
		  AND (CAST($1 AS bigint) = 0 OR ch.batch_id = $1)
		  AND ` + d.InText("ch.tenant_id", "$2") + `
		  AND ` + d.InText("b.kind", "$3") + `
		ORDER BY ch.turn, ch.batch_id, ch.chunk_no
		LIMIT 1{skip_locked}`)
	// Fair turns (migration 0008): a batch's open chunks are queued
	// at the back of its tenant's queue, which starts no earlier than
	// the clock; a claim moves the clock up to its chunk's turn.
	s.turnCount = d.Expand(`SELECT count(*) FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL`)
	s.turnTenant = d.Expand(`INSERT INTO {t}tenant_turns AS tt (tenant_id, next_turn)
		SELECT $1, turn + $2 FROM {t}turn_clock WHERE true
		ON CONFLICT (tenant_id) DO UPDATE SET next_turn = CASE
			WHEN tt.next_turn > (SELECT turn FROM {t}turn_clock) THEN tt.next_turn
			ELSE (SELECT turn FROM {t}turn_clock) END + $2
		RETURNING next_turn - $2`)
	s.turnChunks = d.Expand(`UPDATE {t}batch_chunks SET turn = $2 + r.k
		FROM (SELECT chunk_no, row_number() OVER (ORDER BY chunk_no) - 1 AS k
			FROM {t}batch_chunks WHERE batch_id = $1 AND next_due_at IS NOT NULL) r
		WHERE {t}batch_chunks.batch_id = $1 AND {t}batch_chunks.chunk_no = r.chunk_no`)
	s.turnAdvance = d.Expand(`UPDATE {t}turn_clock SET turn = $1 WHERE turn < $1`)
	s.nextDue = d.Expand(`SELECT ch.batch_id, ch.chunk_no, ch.next_due_at, COALESCE(ch.lease_owner, ''), ch.lease_expires_at
		FROM {t}batch_chunks ch JOIN {t}batches b ON b.id = ch.batch_id
		WHERE ch.next_due_at IS NOT NULL AND ((` + workable + `) OR b.status = 'cancelled')
		  AND (CAST($1 AS bigint) = 0 OR ch.batch_id = $1)
		  AND ` + d.InText("ch.tenant_id", "$2") + `
		  AND ` + d.InText("b.kind", "$3") + `
		ORDER BY ch.next_due_at, ch.batch_id, ch.chunk_no
		LIMIT 1`)
	// A row that has used every attempt when it is due again was worked
	// by workers that crashed or lost their lease each time: it is dead,
	// with a reason, rather than retried forever. But when its effect
	// key is still claimed, one of those workers may have run the
	// effect before it died: unknown, to reconcile, not dead.
	s.killExhausted = d.Expand(`UPDATE {t}batch_rows
		SET state = CASE WHEN ` + effectClaimed(d) + ` THEN 'unknown' ELSE 'dead' END,
		    next_attempt_at = NULL, updated_at = {now},
		    errors = CASE WHEN ` + effectClaimed(d) + `
		        THEN ` + d.JSONError("row_no", "code", "$6", "message", "$8") + `
		        ELSE ` + d.JSONError("row_no", "code", "$6", "message", "$7") + ` END
		WHERE batch_id = $1 AND row_no BETWEEN $2 AND $3 AND tenant_id = $4
		  AND state IN ` + ClaimableStates + ` AND next_attempt_at <= {now} AND attempts >= $5`)
	s.batchStatus = d.Expand(`SELECT status, paused, max_failed FROM {t}batches WHERE id = $1`)
	s.leaseHeld = d.Expand(`SELECT 1 FROM {t}batch_chunks
		WHERE batch_id = $1 AND chunk_no = $2 AND lease_token = $3 AND tenant_id = $4 AND lease_expires_at > {now}`)
}

// leasesAndRows: cancelling, effects, leases, rows, migrations.
func (s *statements) leasesAndRows(d *Dialect) {
	// Rows a flush leaves processing in a cancelled batch's chunk were
	// this lease's and not run by it: cancelled, or unknown when a
	// worker before it claimed their effect (deadRowState).
	s.cancelLeft = d.Expand(`UPDATE {t}batch_rows SET ` + deadRowState(d, "$5", "$6") + `, next_attempt_at = NULL, updated_at = {now}
		WHERE batch_id = $1 AND tenant_id = $2 AND row_no BETWEEN $3 AND $4 AND state = 'processing'`)
	// Rows a cancelled flush ends, asking for a retry, whose key an
	// earlier run ran without an answer (unanswered): that run may have
	// had its effect, so they are unknown, not cancelled.
	s.cancelUnanswered = d.Expand(`UPDATE {t}batch_rows SET state = 'unknown', errors = ` + d.JSONError("row_no", "code", "$5", "message", "$6") + `, updated_at = {now}
		WHERE batch_id = $1 AND tenant_id = $2 AND row_no BETWEEN $3 AND $4 AND state = 'cancelled'
		  AND EXISTS (SELECT 1 FROM {t}effects e
		    WHERE e.tenant_id = {t}batch_rows.tenant_id AND e.batch_id = {t}batch_rows.batch_id AND e.row_no = {t}batch_rows.row_no
		      AND e.state = 'claimed' AND e.unanswered)`)
	// Claims a lease made and gives back unrun.
	s.releaseEffects = d.Expand(`DELETE FROM {t}effects
		WHERE tenant_id = $1 AND batch_id = $2 AND row_no BETWEEN $3 AND $4 AND state = 'claimed' AND ` + d.TextIn("effect_key", "$5"))
	// Rows a dead worker left processing in a cancelled batch's chunk,
	// swept by the claim that finds them: cancelled, or unknown when
	// their effect may have happened (deadRowState).
	s.sweepDead = d.Expand(`UPDATE {t}batch_rows SET ` + deadRowState(d, "$5", "$6") + `, next_attempt_at = NULL, updated_at = {now}
		WHERE batch_id = $1 AND tenant_id = $2 AND row_no BETWEEN $3 AND $4 AND state = 'processing'`)
	// Rows claimed but not worked get their state and attempt back.
	s.giveBack = d.Expand(`UPDATE {t}batch_rows
		SET state = CASE WHEN attempts > 1 THEN 'retrying' ELSE 'valid' END, attempts = attempts - 1, updated_at = {now}
		WHERE batch_id = $1 AND tenant_id = $2 AND row_no BETWEEN $3 AND $4 AND state = 'processing'
		  AND ` + d.InInt("row_no", "$5"))
	// Bounded to the flushing chunk's rows, as the outcomes are.
	// done_at is when the key's last run answered: settled, or, for a key
	// kept claimed for a retry, failed. A run that failed with an error
	// to retry not marked NotApplied (u.a) may have had its effect:
	// unanswered, for good, as a run that never answered is (rerunEffect).
	s.recordEffects = d.Expand(d.WithRecords("$3", map[string]string{"k": "text", "s": "text", "r": "text", "n": "bigint", "a": "bigint"}) + `
		UPDATE {t}effects AS e SET state = u.s, result_id = u.r, run_until = NULL, unanswered = (e.unanswered OR u.a = 1),
			done_at = {now} FROM u
		WHERE e.tenant_id = $1 AND e.batch_id = $2 AND e.effect_key = u.k AND e.row_no = u.n AND e.row_no BETWEEN $4 AND $5`)
	s.leaseChunk = d.Expand(`UPDATE {t}batch_chunks
		SET lease_owner = $1, lease_token = lease_token + 1,
		    lease_expires_at = {now} + CAST($2 AS bigint) * {ms}, last_claimed_at = {now}, lease_deferred = $5
		WHERE batch_id = $3 AND chunk_no = $4 RETURNING lease_token`)
	// A deferred claim reads the due rows and writes none of them.
	s.dueRows = d.Expand(`SELECT r.row_no, ` + d.valuesOf("r", "$1") + `, r.attempts + 1 FROM {t}batch_rows r
		WHERE batch_id = $1 AND row_no BETWEEN $2 AND $3 AND tenant_id = $4
		  AND state IN ('valid', 'retrying') AND next_attempt_at <= {now}
		ORDER BY row_no`)
	s.markProcessing = d.Expand(`UPDATE {t}batch_rows AS r
		SET state = 'processing', attempts = attempts + 1, updated_at = {now}
		WHERE batch_id = $1 AND row_no BETWEEN $2 AND $3 AND tenant_id = $4
		  AND state IN ` + ClaimableStates + ` AND next_attempt_at <= {now}
		RETURNING r.row_no, ` + d.valuesOf("r", "$1") + `, r.attempts`)
	// markProcessing in two statements (Dialect.MarkInTwo), with the
	// clock as $5, read once by clockNow.
	marked := `batch_id = $1 AND row_no BETWEEN $2 AND $3 AND tenant_id = $4
		  AND state IN ` + ClaimableStates + ` AND next_attempt_at <= $5`
	s.clockNow = d.Expand(`SELECT {now}`)
	s.markSelect = d.Expand(`SELECT r.row_no, ` + d.valuesOf("r", "$1") + `, r.attempts + 1 FROM {t}batch_rows r WHERE ` + marked + ` ORDER BY row_no`)
	s.markUpdate = d.Expand(`UPDATE {t}batch_rows SET state = 'processing', attempts = attempts + 1, updated_at = $5 WHERE ` + marked)
	s.recount = d.Expand(recountSQL(""))
	s.recountFree = d.Expand(recountSQL(", lease_owner = NULL, lease_expires_at = NULL, lease_deferred = false"))
	// A lease is fenced by its token and by the database's clock: one
	// past its expiry is lost even when nobody has claimed the chunk
	// since (a worker stalled past its lease must not renew, flush or
	// run an effect when it wakes up).
	s.leaseRenew = d.Expand(`UPDATE {t}batch_chunks SET lease_expires_at = {now} + CAST($1 AS bigint) * {ms}
		WHERE batch_id = $2 AND chunk_no = $3 AND lease_token = $4 AND tenant_id = $5
		  AND lease_expires_at > {now}
		  AND EXISTS (SELECT 1 FROM {t}batches b WHERE b.id = $2 AND ` + workable + `)`)
	s.leaseCheck = d.Expand(`SELECT COALESCE(lease_token = $3 AND lease_expires_at > {now}, false),
			EXISTS (SELECT 1 FROM {t}batches b WHERE b.id = $1 AND ` + workable + `)
		FROM {t}batch_chunks WHERE batch_id = $1 AND chunk_no = $2 AND tenant_id = $4`)
	// A lease is held from its claim to its releasing flush: a token
	// that still matches but was released writes nothing either.
	s.checkLease = d.Expand(`SELECT first_row_no, last_row_no FROM {t}batch_chunks
		WHERE batch_id = $1 AND chunk_no = $2 AND lease_token = $3 AND tenant_id = $4
		  AND lease_expires_at > {now}{for_update}`)
	s.rowsList = rowsListSQL(d, "")
	s.rowsCount = d.Expand(`SELECT state, count(*) FROM {t}batch_rows
		WHERE tenant_id = $1 AND batch_id = $2 GROUP BY state`)
	s.migrationsTable = d.Expand(`CREATE TABLE IF NOT EXISTS {t}schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at {time} NOT NULL)`)
	s.migrationsApplied = d.Expand(`SELECT version FROM {t}schema_migrations`)
	s.migrationInsert = d.Expand(`INSERT INTO {t}schema_migrations (version, name, applied_at)
		VALUES ($1, $2, {now})`)
	s.schemaVersion = d.Expand(`SELECT COALESCE(max(version), 0) FROM {t}schema_migrations`)
}

// rowsListSQL is RowsList's page, with the condition of a filter's Where
// (whereCond: " AND ...", its parameters from $8) or "".
func rowsListSQL(d *Dialect, cond string) string {
	return d.Expand(`SELECT r.row_no, r.chunk_no, r.state, ` + d.valuesOf("r", "$2") + `, r.errors, r.result_id, r.attempts, r.reviewed, r.updated_at
		FROM {t}batch_rows r
		WHERE r.tenant_id = $1 AND r.batch_id = $2 AND ` + rowFilterSQL(d, "r", "$3", "$4", "$5") + ` AND r.row_no > $6` + cond + `
		ORDER BY r.row_no LIMIT $7`)
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
