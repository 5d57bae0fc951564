package storesql

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
)

// ingestBeside is an ingest on an engine whose sessions write at once
// (Dialect.ShowIngest). The batch row is committed first, so that other
// processes see the batch ingesting and its progress; its rows are
// written in one transaction, which then accepts the batch. Rows that are
// worked as they are read (BatchIngestParams.WorkFunc) are written beside
// that transaction: it works each group of rows, its effects in its own
// transaction, and hands the group, outcomes set, to a second session that
// writes the rows (workBeside), so that the effect and the row write run
// on two server processes at once. When every row is written the second
// session commits, and the first accepts the batch and commits the
// effects.
//
// Nothing half applied is ever kept. The batch row is committed first,
// 'ingesting', with a lease the import renews: until the first session
// commits, the batch's rows are provisional, and no claim takes a batch
// that is ingesting. An ingest that fails removes the batch and its
// rows, its effects rolled back with the first session; one whose
// process died leaves an ingesting batch without effects, which the next
// Migrate, or an import of the same file (IngestAbandoned), removes once
// its lease ran out. A first session whose commit's answer was lost may
// have committed: removeIngest then finds the ingest ended and keeps the
// batch.
func (s *Store) ingestBeside(ctx context.Context, p driver.BatchIngestParams, insertBatch func(Querier, string) error, accept func(Querier, *[]committedEvent) error, id *int64) error {
	if err := s.showIngest(ctx, p, insertBatch, id); err != nil {
		return err
	}
	rctx, stopRenew := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.renewIngest(rctx, *id) })
	err := s.changeTx(ctx, func(q Querier, evs *[]committedEvent) error {
		if err := s.writeRows(ctx, q, p, *id); err != nil {
			return err
		}
		return s.ingestDone(ctx, q, *id, accept, evs)
	})
	stopRenew()
	wg.Wait()
	if err != nil {
		s.removeIngest(*id)
		return err
	}
	return nil
}

// writeRows writes an ingest's rows in q's transaction, or, when they are
// worked and a second session is free, beside it (workBeside).
func (s *Store) writeRows(ctx context.Context, q Querier, p driver.BatchIngestParams, id int64) error {
	if p.WorkFunc == nil {
		return s.insertRows(ctx, q, p, id)
	}
	select {
	case s.beside <- struct{}{}:
		defer func() { <-s.beside }()
		return s.workBeside(ctx, q, p, id)
	default:
		return s.insertRows(ctx, q, p, id) // as many as the pool allows are
	}
}

// showIngest commits an ingest's batch row first, ingesting, with its
// lease, and tells the importer (ShownFunc).
func (s *Store) showIngest(ctx context.Context, p driver.BatchIngestParams, insertBatch func(Querier, string) error, id *int64) error {
	if err := s.drv.InTx(ctx, func(q Querier) error {
		if err := insertBatch(q, "ingesting"); err != nil {
			return err
		}
		_, err := q.Exec(ctx, s.q.ingestRenew, *id, ingestLease.Milliseconds())
		return err
	}); err != nil {
		return err
	}
	// Its partition of batch_values, in transactions of their own: in
	// the ingest's, the attach's lock on batch_values would be held to
	// its commit, and every other attach would wait for it.
	if err := s.drv.ValuesPartition(ctx, *id); err != nil {
		s.removeIngest(*id)
		return fmt.Errorf("batch %d: %w", *id, err)
	}
	if p.ShownFunc != nil {
		p.ShownFunc()
	}
	return nil
}

// renewIngest renews an ingesting batch's lease until ctx is done. A
// renewal that fails is tried again at the next tick: the lease outlives
// two of them.
func (s *Store) renewIngest(ctx context.Context, id int64) {
	t := time.NewTicker(ingestLease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.drv.InTx(ctx, func(q Querier) error {
				_, err := q.Exec(ctx, s.q.ingestRenew, id, ingestLease.Milliseconds())
				return err
			})
		}
	}
}

// workBeside works p's rows in q's transaction, a group of whole chunks
// at a time, and writes each group, once worked, in a transaction of its
// own on a second session, which it commits when every row is written:
// before workBeside returns nil, and never when it returns an error.
func (s *Store) workBeside(ctx context.Context, q Querier, p driver.BatchIngestParams, id int64) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	groups := make(chan []driver.IngestRow, 1)
	// Buffers come back once written: the one being worked, one waiting
	// and one being written is all an ingest holds.
	free := make(chan []driver.IngestRow, 3)
	written := make(chan error, 1)
	go func() {
		written <- s.drv.InTx(wctx, func(wq Querier) error {
			for {
				select {
				case g, ok := <-groups:
					if !ok {
						return nil // every group written: commit
					}
					if err := s.drv.InsertRows(wctx, wq, InsertRowsParams{BatchID: id, TenantID: p.TenantID, Rows: sliceRows(g), ValuesApart: s.d.ValuesApart}); err != nil {
						return err
					}
					select {
					case free <- g[:0]:
					default:
					}
				case <-wctx.Done():
					return context.Cause(wctx)
				}
			}
		})
	}()
	var writeErr error
	var writerDone bool
	hand := func(g []driver.IngestRow) error {
		select {
		case groups <- g:
			return nil
		case writeErr = <-written:
			writerDone = true
			if writeErr == nil {
				writeErr = errors.New("the rows' writer stopped early")
			}
			return writeErr
		}
	}
	err := s.workGroups(ctx, q, p, id, hand, free)
	if err == nil {
		close(groups)
		writeErr, writerDone = <-written, true
		return writeErr
	}
	if !writerDone {
		cancel(err) // rolls the writer's transaction back
		<-written
	}
	return err
}

// workGroups reads p's rows into groups of whole chunks of about
// workGroupRows rows, works each (WorkFunc) in q's transaction and hands
// it on; a buffer comes from free when one is there (hand, or whoever
// it hands the group to, puts it back there when done with it).
func (s *Store) workGroups(ctx context.Context, q Querier, p driver.BatchIngestParams, id int64, hand func([]driver.IngestRow) error, free chan []driver.IngestRow) error {
	newBuf := func() []driver.IngestRow {
		select {
		case b := <-free:
			return b
		default:
			return make([]driver.IngestRow, 0, workGroupRows+1000)
		}
	}
	buf := newBuf()
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if err := p.WorkFunc(ctx, txOf(q, s.d), id, buf); err != nil {
			return err
		}
		if err := hand(buf); err != nil {
			return err
		}
		buf = newBuf()
		return nil
	}
	for r, err := range p.Rows {
		if err != nil {
			return err
		}
		if n := len(buf); n >= workGroupRows && buf[n-1].ChunkNo != r.ChunkNo {
			if err := flush(); err != nil {
				return err
			}
		}
		buf = append(buf, r)
	}
	return flush()
}
