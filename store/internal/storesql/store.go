package storesql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"

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
	rt  retentionStatements
	vs  valuesStatements
	b   bulkStatements
	hub eventHub
	// beside holds a token per ingest writing its rows in a second
	// session (Dialect.BesideSessions).
	beside chan struct{}
}

// New returns the shared store for a driver and its dialect.
func New(drv Driver, d *Dialect) *Store {
	s := &Store{d: d, drv: drv, beside: make(chan struct{}, max(d.BesideSessions, 0))}
	s.q = newStatements(d)
	s.c = newControl(d)
	s.e = newEventStatements(d)
	s.r = newReviewStatements(d)
	s.sv = newServiceStatements(d)
	s.k = newKindStatements(d)
	s.rt = newRetentionStatements(d)
	s.vs = newValuesStatements(d, replaceRows(d, ""))
	s.b = newBulkStatements(d)
	return s
}

// Dialect returns the store's dialect.
func (s *Store) Dialect() *Dialect { return s.d }

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

// afterChange finishes the batch when no row is open and appends an event
// with the batch totals. It first takes the batch row's lock with the
// sequence-number UPDATE: that serialises every change of the batch, so
// commit order equals sequence order, and the finish check (a second
// statement, so a new snapshot under READ COMMITTED) sees every other
// chunk's committed flush. Checking before the lock, or inside the locking
// statement, is write skew: two last flushes each see the other's chunk
// still open, and neither finishes the batch.
func (s *Store) afterChange(ctx context.Context, q Querier, id int64, typ batchtype.EventType, evs *[]committedEvent) (*driver.FlushResult, error) {
	return s.afterChangeWhy(ctx, q, id, typ, "", evs)
}

// afterChangeWhy is afterChange with the reason of an event the engine
// caused (batchtype.Event.Reason).
func (s *Store) afterChangeWhy(ctx context.Context, q Querier, id int64, typ batchtype.EventType, reason string, evs *[]committedEvent) (*driver.FlushResult, error) {
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
	ev, err := s.appendEvent(ctx, q, id, typ, reason, status, paused, counts(), seq, tenant, now)
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
		maxFailed         string
		created, finished Time
		purged            Time
	)
	dests, counts := CountDests()
	err := r.Scan(append([]any{&b.ID, &b.TenantID, &b.Kind, &b.SourceName, &b.SourceDigest, &status, &header,
		&options, &b.SkippedEmpty, &created, &finished, &b.Paused, &maxFailed, &purged, &b.ValuesPurgedBy}, dests...)...)
	if err != nil {
		return nil, err
	}
	if b.MaxFailed, err = batchtype.ParseThreshold(maxFailed); err != nil {
		return nil, fmt.Errorf("batch %d max_failed: %w", b.ID, err)
	}
	b.Status = batchtype.Status(status)
	b.CreatedAt, b.FinishedAt, b.Counts, b.ValuesPurgedAt = created.Time, finished.Ptr(), counts(), purged.Ptr()
	if err := json.Unmarshal([]byte(header), &b.Header); err != nil {
		return nil, fmt.Errorf("batch %d header: %w", b.ID, err)
	}
	var opts BatchOptions
	if err := json.Unmarshal([]byte(options), &opts); err != nil {
		return nil, fmt.Errorf("batch %d options: %w", b.ID, err)
	}
	b.Warnings, b.ErrorCounts, b.Conventions, b.Width, b.Recalc = []batchtype.Warning(opts.Warnings), opts.ErrorCounts, opts.Conventions, opts.Width, opts.Recalc
	b.KindVersion, b.KindDefinition, b.OptionsDigest, b.Export = opts.KindVersion, opts.KindDefinition, opts.OptionsDigest, opts.Export
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
	rs, err := s.drv.DB().Query(ctx, s.q.batchList, p.TenantID, p.BeforeID, p.Limit, string(p.Status), p.Kind, boolInt(p.NeedsAttention))
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

// boolInt is a flag as both engines' SQL compares it: 0 or 1.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
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
		var (
			status    string
			paused    bool
			maxFailed string
		)
		if err := q.QueryRow(ctx, s.q.batchStatus, p.BatchID).Scan(&status, &paused, &maxFailed); err != nil {
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
		if cancelled {
			if _, err := q.Exec(ctx, s.q.cancelUnanswered, p.BatchID, p.TenantID, first, last, string(rows.CodeCancelledLate), unansweredMessage); err != nil {
				return fmt.Errorf("cancel rows: %w", err)
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
		typ, reason := batchtype.EventProgress, ""
		if status == string(batchtype.StatusRunning) && !paused && maxFailed != "" {
			if reason, err = s.failureBound(ctx, q, p.BatchID, p.TenantID, maxFailed); err != nil {
				return err
			}
			if reason != "" {
				typ = batchtype.EventPaused
			}
		}
		res, err = s.afterChangeWhy(ctx, q, p.BatchID, typ, reason, evs)
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

// failureBound pauses a running batch whose failures pass its bound
// maxFailed (batchtype.FailureBound), in the caller's transaction, and
// returns why; "" when they do not pass it. In a flush, the pause commits
// with the outcomes that passed the bound: no claim after it takes the
// batch's rows, and the leases under way stop at their next renewal.
func (s *Store) failureBound(ctx context.Context, q Querier, id int64, tenant, maxFailed string) (string, error) {
	bound, err := batchtype.ParseThreshold(maxFailed)
	if err != nil {
		return "", fmt.Errorf("batch %d max_failed: %w", id, err)
	}
	dests, counts := CountDests()
	if err := q.QueryRow(ctx, s.q.sumChunks, id).Scan(dests...); err != nil {
		return "", fmt.Errorf("sum chunks: %w", err)
	}
	c := counts()
	failures, worked := batchtype.FailureBound(c)
	if c.Open() == 0 || !bound.Exceeded(failures, worked) {
		return "", nil // nothing left to stop, or within the bound
	}
	if _, err := q.Exec(ctx, s.c.pauseBatch, id, tenant, true); err != nil {
		return "", fmt.Errorf("pause batch: %w", err)
	}
	return failureReason(failures, worked, bound), nil
}

// failureReason is the reason of a pause by a batch's failure bound.
func failureReason(failures, worked int64, bound batchtype.Threshold) string {
	return fmt.Sprintf("%d of %d rows failed, more than its max-failed %s", failures, worked, bound)
}

// cancelledOutcomes are what a flush records when the batch was cancelled
// while the lease's rows were worked: no row succeeds after a cancel, but a
// row whose processor reported success may have had its effect, so it is
// unknown (to be reconciled), not cancelled. A row still to be retried is
// cancelled, unless it ran its effect key and the error did not say the
// call had no effect (NotApplied): such an error does not say the effect
// did not happen (a program whose own call timed out after the downstream
// applied it exits 1), and only the retry the cancel ends would have found
// out, so it is unknown, as a cancel that commits first makes the row
// (cancelRows, deadRowState). A row cancelled here is unknown after all
// when an earlier run of its key may have had its effect (the flush's
// cancelUnanswered). A failure stays a failure.
func cancelledOutcomes(outs []driver.RowOutcome) []driver.RowOutcome {
	out := make([]driver.RowOutcome, len(outs))
	for i, o := range outs {
		switch {
		case o.State == rows.StateSucceeded:
			o.State = rows.StateUnknown
			o.Error = &rows.FieldError{Row: o.RowNo, Code: rows.CodeCancelledLate,
				Message: "the batch was cancelled while this row's effect was under way: it may have happened (result " + o.ResultID + "); reconcile it"}
			o.ResultID = ""
		case o.State == rows.StateRetrying && o.EffectKey != "" && !o.NotApplied:
			o.State = rows.StateUnknown
			last := ""
			if o.Error != nil {
				last = " (" + o.Error.Message + ")"
			}
			o.Error = &rows.FieldError{Row: o.RowNo, Code: rows.CodeCancelledLate,
				Message: "the batch was cancelled before this row's retry; its run failed" + last + " without saying whether its effect happened: it may have; reconcile it"}
			o.RetryDelay = 0
		case o.State == rows.StateRetrying:
			o.State = rows.StateCancelled
		}
		out[i] = o
	}
	return out
}

// unansweredMessage is the error of a row cancelUnanswered makes unknown.
const unansweredMessage = "the batch was cancelled before this row's retry, but an earlier attempt ran its effect and stopped without saying whether it happened: it may have; reconcile it"

// effectRecord is one outcome on an effect key, as recordEffects reads it.
type effectRecord struct {
	Key    string `json:"k"`
	State  string `json:"s"`
	Result string `json:"r"`
	Row    int64  `json:"n"`
	// Maybe is 1 for a run that failed with an error to retry not marked
	// NotApplied: its effect may have happened (effects.unanswered).
	Maybe int64 `json:"a"`
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
		var maybe int64
		switch o.State {
		case rows.StateSucceeded:
			state = "done"
		case rows.StateFailed, rows.StateDead:
			state = "failed"
		case rows.StateUnknown:
			state = "unknown"
		case rows.StateRetrying:
			state = "claimed" // kept for the next attempt; its run is over
			if !o.NotApplied {
				maybe = 1
			}
		default:
			continue
		}
		recs = append(recs, effectRecord{Key: o.EffectKey, State: state, Result: o.ResultID, Row: o.RowNo, Maybe: maybe})
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
	f := p.Filter
	if len(f.States) == 0 && p.State != "" {
		f.States = []rows.State{p.State}
	}
	args := append([]any{p.TenantID, p.BatchID}, s.filterArgs(f)...)
	args, stmt := append(args, p.AfterRowNo, p.Limit), s.q.rowsList
	if f.Where != "" {
		conds, whereArgs, err := s.whereCond(ctx, q, p.TenantID, p.BatchID, f, "$2", 8)
		if err != nil {
			return nil, fmt.Errorf("list rows: %w", err)
		}
		args, stmt = append(args, whereArgs...), rowsListSQL(s.d, conds[0])
	}
	rs, err := q.Query(ctx, stmt, args...)
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
		// A purged row has no values: nil, and said so, never an empty row.
		if r.ValuesPurged = payload == purgedPayload; !r.ValuesPurged {
			if r.Values, err = DecodeValues([]byte(payload)); err != nil {
				return nil, err
			}
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
