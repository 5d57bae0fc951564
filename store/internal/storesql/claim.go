package storesql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

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
	if err := s.markProcessing(ctx, q, l, first, last); err != nil {
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

// markProcessing marks a claim's due rows processing, counting their
// attempt, and reads them into l.
func (s *Store) markProcessing(ctx context.Context, q Querier, l *driver.Lease, first, last int64) error {
	if !s.d.MarkInTwo {
		return s.leasedRows(ctx, q, l, s.q.markProcessing, l.BatchID, first, last, l.TenantID)
	}
	var now int64
	if err := q.QueryRow(ctx, s.q.clockNow).Scan(&now); err != nil {
		return err
	}
	if err := s.leasedRows(ctx, q, l, s.q.markSelect, l.BatchID, first, last, l.TenantID, now); err != nil {
		return err
	}
	n, err := q.Exec(ctx, s.q.markUpdate, l.BatchID, first, last, l.TenantID, now)
	if err != nil {
		return err
	}
	if n != int64(len(l.Rows)) {
		// Cannot happen while the claim's transaction excludes other
		// writers; a lease over rows it did not read must not be taken.
		return fmt.Errorf("marked %d rows processing, read %d", n, len(l.Rows))
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
