package storesql

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// BatchIngest creates a batch and writes all its rows with their outcome,
// its chunks and a first event. The batch row is committed first, status
// 'ingesting' (no claim sees it), so that other processes can watch the
// ingest's progress; the rows follow, on PostgreSQL in one transaction
// (COPY) that also makes the batch running (see ingestBeside). A store
// whose writers exclude each other (SQLite) writes the rows in
// transactions of IngestTxRows rows instead, so that other processes can
// write between them, until the last transaction makes it running; with a
// WorkFunc it writes the whole ingest in one transaction. A failed ingest
// removes the batch, and one whose process died is removed by the next
// Migrate once its lease ran out.
func (s *Store) BatchIngest(ctx context.Context, p driver.BatchIngestParams) (*batchtype.Batch, error) {
	header, err := json.Marshal(nonNil(p.Header))
	if err != nil {
		return nil, err
	}
	opts := BatchOptions{Warnings: storedWarnings(p.Warnings), Conventions: p.Conventions, Recalc: p.Recalc, KindVersion: p.KindVersion, KindDefinition: p.KindDefinition,
		OptionsDigest: p.OptionsDigest, Export: p.Export}
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
	accept := func(q Querier, evs *[]committedEvent) error {
		var sum driver.IngestSummary
		if p.SummaryFunc != nil {
			sum = p.SummaryFunc()
		}
		opts.ErrorCounts, opts.Width = sum.ErrorCounts, sum.Width
		opts.Warnings = append(opts.Warnings, sum.Warnings...)
		dups, screened, err := s.ingestDuplicates(ctx, q, id, p.DuplicateKey, p.WorkFunc != nil)
		if err != nil {
			return err
		}
		if dups > 0 {
			opts.ErrorCounts = addErrorCount(opts.ErrorCounts, rows.ErrorCount{Column: p.DuplicateKey.Column, Code: rows.CodeDuplicateKey, Count: dups})
		}
		if p.WorkFunc != nil && len(screened.Suspects) > 0 {
			if err := s.workSuspects(ctx, q, id, p, screened); err != nil {
				return err
			}
		}
		if p.AcceptFunc != nil {
			if err := p.AcceptFunc(dups); err != nil {
				return err
			}
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
		res, err := s.afterChange(ctx, q, id, batchtype.EventStarted, evs)
		if err != nil {
			return err
		}
		if res.Finished {
			// Nothing is left to work (every row invalid, or worked
			// inline): the batch finishes as it is accepted, with the
			// finished event, and its webhook, a flush would have made.
			if _, err := s.afterChange(ctx, q, id, batchtype.EventProgress, evs); err != nil {
				return err
			}
		}
		if err := s.boundAtIngest(ctx, q, id, p, evs); err != nil {
			return err
		}
		return s.drv.Notify(ctx, q)
	}
	insertBatch := func(q Querier, status string) error {
		err := q.QueryRow(ctx, s.q.insertBatch, p.TenantID, p.Kind, p.SourceName, string(header), string(options), key, maxAttempts, status, p.MaxFailed.String(), p.SourceDigest).Scan(&id)
		if err != nil {
			return fmt.Errorf("insert batch: %w", err)
		}
		if p.CreatedFunc != nil {
			p.CreatedFunc(id)
		}
		return nil
	}
	if err := s.ingest(ctx, p, insertBatch, accept, &id); err != nil {
		return nil, err
	}
	return s.BatchGet(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: id})
}

// ingest writes a batch row (insertBatch, which sets *id) and its rows,
// and accepts it: in one transaction, or in parts into a batch row
// committed first (Dialect.IngestTxRows).
func (s *Store) ingest(ctx context.Context, p driver.BatchIngestParams, insertBatch func(Querier, string) error, accept func(Querier, *[]committedEvent) error, id *int64) error {
	if s.d.ShowIngest {
		return s.ingestBeside(ctx, p, insertBatch, accept, id)
	}
	if s.d.IngestTxRows <= 0 || p.WorkFunc != nil {
		// One transaction: the batch row and its key are not seen by
		// others until the rows are in (a second import of the file
		// waits on the key, then finds the batch), and an ingest cut off
		// by a crash or a lost connection leaves nothing behind.
		return s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
			if err := insertBatch(q, "ingesting"); err != nil {
				return err
			}
			if err := s.insertRows(ctx, q, p, *id); err != nil {
				return err
			}
			return s.ingestDone(ctx, q, *id, accept, evs)
		})
	}
	if err := s.showIngest(ctx, p, insertBatch, id); err != nil {
		return err
	}
	if err := s.ingestInParts(ctx, p, accept, *id); err != nil {
		s.removeIngest(*id)
		return err
	}
	return nil
}

// ingestDuplicates makes invalid each row whose key an earlier row of the
// batch has, and returns how many, and what the importer's screen found
// (nothing when it screened none). With held, the suspects the importer
// held are to be worked: those found to repeat a key are dropped from
// Screened.Held, so that the rest are worked without being read back.
func (s *Store) ingestDuplicates(ctx context.Context, q Querier, id int64, k driver.DuplicateKey, held bool) (int64, driver.Screened, error) {
	var screened driver.Screened
	if k.Name == "" {
		return 0, screened, nil
	}
	stmt, args := s.q.markDuplicates, []any{id, k.Column, k.Field, k.Name}
	if k.Screen != nil {
		var ok bool
		if screened, ok = k.Screen(); ok {
			if len(screened.Candidates) == 0 {
				return 0, screened, nil
			}
			stmt, args = s.q.markCandidates, append(args, s.d.BytesListArg(screened.Candidates))
			if held && screened.Held != nil {
				n, err := s.dropDuplicates(ctx, q, &screened, args)
				return n, screened, err
			}
		}
	}
	n, err := q.Exec(ctx, stmt, args...)
	if err != nil {
		return 0, screened, fmt.Errorf("find duplicate keys: %w", err)
	}
	return n, screened, nil
}

// dropDuplicates runs markCandidates naming the rows it makes invalid,
// and drops those from the held suspects.
func (s *Store) dropDuplicates(ctx context.Context, q Querier, screened *driver.Screened, args []any) (int64, error) {
	rs, err := q.Query(ctx, s.q.markCandidatesRows, args...)
	if err != nil {
		return 0, fmt.Errorf("find duplicate keys: %w", err)
	}
	defer rs.Close()
	dups := map[int64]bool{}
	for rs.Next() {
		var row int64
		if err := rs.Scan(&row); err != nil {
			return 0, fmt.Errorf("find duplicate keys: %w", err)
		}
		dups[row] = true
	}
	if err := rs.Err(); err != nil {
		return 0, fmt.Errorf("find duplicate keys: %w", err)
	}
	if err := rs.Close(); err != nil {
		return 0, fmt.Errorf("find duplicate keys: %w", err)
	}
	if len(dups) > 0 {
		screened.Held = slices.DeleteFunc(slices.Clone(screened.Held), func(r driver.IngestRow) bool { return dups[r.RowNo] })
	}
	return int64(len(dups)), nil
}

// workSuspects hands WorkFunc, once the duplicates are found, the rows it
// held back as possible repeats (suspects, ascending) that are still
// valid (the filter's false alarms), with their key digest nil, as groups
// of at most workGroupRows, and records their outcomes as a flush would.
// They are a few in a thousand: a second write for them costs less than a
// filter large enough to have none. They are the rows the importer held
// (Screened.Held, the duplicates dropped), or else read back by row
// number, not by digest: a lookup each instead of a scan of the batch. It
// stops at a group WorkFunc leaves as it was (the work stopped: a failed
// call, the failure bound), for the workers.
func (s *Store) workSuspects(ctx context.Context, q Querier, id int64, p driver.BatchIngestParams, screened driver.Screened) error {
	if held := screened.Held; held != nil {
		for len(held) > 0 {
			n := min(len(held), workGroupRows)
			group := slices.Clone(held[:n]) // WorkFunc sets the outcomes in place
			held = held[n:]
			if done, err := s.workSuspectGroup(ctx, q, id, p, group); done || err != nil {
				return err
			}
		}
		return nil
	}
	for suspects := screened.Suspects; len(suspects) > 0; {
		n := min(len(suspects), workGroupRows)
		group, err := s.validRows(ctx, q, id, suspects[:n])
		if err != nil {
			return err
		}
		suspects = suspects[n:]
		if done, err := s.workSuspectGroup(ctx, q, id, p, group); done || err != nil {
			return err
		}
	}
	return nil
}

// workSuspectGroup works a group of suspects and records their outcomes;
// done when WorkFunc left every row of it as it was (the work stopped).
func (s *Store) workSuspectGroup(ctx context.Context, q Querier, id int64, p driver.BatchIngestParams, group []driver.IngestRow) (done bool, _ error) {
	if len(group) == 0 {
		return false, nil
	}
	if err := p.WorkFunc(ctx, txOf(q, s.d), id, group); err != nil {
		return false, err
	}
	outs := make([]driver.RowOutcome, 0, len(group))
	for _, r := range group {
		if r.State == rows.StateValid {
			continue
		}
		o := driver.RowOutcome{RowNo: r.RowNo, State: r.State, ResultID: r.ResultID, RetryDelay: r.RetryDelay}
		if len(r.Errors) > 0 {
			o.Error = &r.Errors[0]
		}
		outs = append(outs, o)
	}
	if len(outs) == 0 {
		return true, nil
	}
	first, last := group[0].RowNo, group[len(group)-1].RowNo
	if err := s.drv.UpdateOutcomes(ctx, q, UpdateOutcomesParams{BatchID: id, TenantID: p.TenantID, First: first, Last: last, Outcomes: outs, Deferred: true, Sparse: true}); err != nil {
		return false, fmt.Errorf("record outcomes: %w", err)
	}
	return false, nil
}

// validRows reads those of the rows numbered rowNos that are still valid.
func (s *Store) validRows(ctx context.Context, q Querier, id int64, rowNos []int64) ([]driver.IngestRow, error) {
	rs, err := q.Query(ctx, s.q.suspectRows, id, s.d.IntListArg(rowNos))
	if err != nil {
		return nil, fmt.Errorf("read held rows: %w", err)
	}
	defer rs.Close()
	var group []driver.IngestRow
	for rs.Next() {
		r := driver.IngestRow{State: rows.StateValid}
		var payload []byte
		if err := rs.Scan(&r.RowNo, &r.ChunkNo, &payload); err != nil {
			return nil, err
		}
		if r.Values, err = DecodeValues(payload); err != nil {
			return nil, err
		}
		group = append(group, r)
	}
	return group, rs.Err()
}

// insertRows writes an ingest's rows in q's transaction: streamed as they
// come, or, with a WorkFunc, in groups of whole chunks, each worked first.
func (s *Store) insertRows(ctx context.Context, q Querier, p driver.BatchIngestParams, id int64) error {
	if p.WorkFunc == nil {
		return s.drv.InsertRows(ctx, q, InsertRowsParams{BatchID: id, TenantID: p.TenantID, Rows: p.Rows, ValuesApart: s.d.ValuesApart})
	}
	free := make(chan []driver.IngestRow, 1)
	return s.workGroups(ctx, q, p, id, func(g []driver.IngestRow) error {
		free <- g[:0]
		return s.drv.InsertRows(ctx, q, InsertRowsParams{BatchID: id, TenantID: p.TenantID, Rows: sliceRows(g), ValuesApart: s.d.ValuesApart})
	}, free)
}

// workGroupRows is about how many rows an ingest with a WorkFunc reads
// before it works and writes them (whole chunks): enough that a COPY's
// round trips are paid once per several chunks, few enough to hold.
const workGroupRows = 4000

// boundAtIngest pauses a batch worked while it was ingested whose
// failures already pass its bound (see failureBound), with its event.
func (s *Store) boundAtIngest(ctx context.Context, q Querier, id int64, p driver.BatchIngestParams, evs *[]committedEvent) error {
	if p.WorkFunc == nil || p.MaxFailed.IsZero() {
		return nil
	}
	reason, err := s.failureBound(ctx, q, id, p.TenantID, p.MaxFailed.String())
	if err != nil || reason == "" {
		return err
	}
	_, err = s.afterChangeWhy(ctx, q, id, batchtype.EventPaused, reason, evs)
	return err
}

// ingestLease is how long an 'ingesting' batch lives without its importer
// renewing it: a part of IngestTxRows rows takes well under a second.
// While it lives, an import of the same file answers that batch ("being
// imported"), so the batch of an importer that died must not outlive it
// by much: the next process to open the database removes it after this.
const ingestLease = 30 * time.Second

// ingestDone makes an ingesting batch running and accepts it. Its status
// change is what ends the ingest's progress events: IngestProgress finds
// no ingesting batch after it (and one waiting on the batch row's lock
// sees the new status when the ingest commits).
func (s *Store) ingestDone(ctx context.Context, q Querier, id int64, accept func(Querier, *[]committedEvent) error, evs *[]committedEvent) error {
	n, err := q.Exec(ctx, s.q.ingestDone, id)
	if err != nil {
		return err
	}
	if n == 0 {
		// Cancelled while its file was read (BatchCancel): the ingest
		// fails, and the batch is removed.
		return fmt.Errorf("batch %d was cancelled while its file was read: %w", id, driver.ErrBatchStopped)
	}
	return accept(q, evs)
}

func (s *Store) ingestInParts(ctx context.Context, p driver.BatchIngestParams, accept func(Querier, *[]committedEvent) error, id int64) error {
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
				return err
			}
			buf = append(buf, r)
		}
		err := s.drv.InTx(ctx, func(q Querier) error {
			if err := s.drv.InsertRows(ctx, q, InsertRowsParams{BatchID: id, TenantID: p.TenantID, Rows: sliceRows(buf), ValuesApart: s.d.ValuesApart}); err != nil {
				return err
			}
			_, err := q.Exec(ctx, s.q.ingestRenew, id, ingestLease.Milliseconds())
			return err
		})
		if err != nil {
			return err
		}
	}
	return s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
		return s.ingestDone(ctx, q, id, accept, evs)
	})
}

// removeIngest removes a batch whose ingest failed, with whatever of it was
// written. It runs even when the ingest's context was cancelled (Ctrl-C).
// It removes only a batch whose ingest never ended (claimIngest): when a
// commit's answer was lost, the failure may be an ingest that went
// through, and that batch is kept.
func (s *Store) removeIngest(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = s.drv.InTx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, s.q.claimIngest, id, true)
		if err != nil || n == 0 {
			return err
		}
		return s.dropBatch(ctx, q, id)
	})
}

// IngestAbandoned implements driver.Store.
func (s *Store) IngestAbandoned(ctx context.Context, p driver.BatchGetParams) (bool, error) {
	var removed bool
	err := s.drv.InTx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, s.q.claimAbandoned, p.ID, p.TenantID)
		if err != nil || n == 0 {
			return err
		}
		removed = true
		return s.dropBatch(ctx, q, p.ID)
	})
	return removed, err
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
		// Claimed first: the batch row's lock waits for an ingest that is
		// committing after all, and then finds it ended.
		n, err := q.Exec(ctx, s.q.claimIngest, id, false)
		if err != nil {
			return fmt.Errorf("remove abandoned ingest %d: %w", id, err)
		}
		if n == 0 {
			continue
		}
		if err := s.dropBatch(ctx, q, id); err != nil {
			return fmt.Errorf("remove abandoned ingest %d: %w", id, err)
		}
	}
	return nil
}
