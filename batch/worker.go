package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/failpoint"
)

// WorkParams configure a run of workers.
type WorkParams struct {
	// BatchID limits work to one batch; 0 means any batch.
	BatchID int64
	// TenantIDs limits work to these tenants; nil means any. With a
	// BatchID, the batch must belong to one of them (to DefaultTenant
	// when nil), or Work returns ErrNotFound before doing anything.
	TenantIDs []string
	// Workers is the number of concurrent workers. Defaults to 2.
	Workers int
	// UntilDone returns once there is nothing left to do: no chunk is
	// claimable and no open chunk of a running batch in scope is left
	// (for a BatchID: the batch is finished). Rows that are due later, or
	// held by another worker's lease (one that crashed holds them until
	// its lease expires), are waited for. When false, workers poll until
	// ctx is done.
	UntilDone bool
	// WaitFunc, when set, is told about the chunk an UntilDone run waits
	// for: leased by another worker, or due later. It is called once per
	// chunk and lease, from any worker goroutine.
	WaitFunc func(batchtype.ChunkDue)
	// Grace is how long, once ctx is done, the rows being worked may take
	// to finish; rows still unfinished then are given back to the batch
	// without using an attempt. Defaults to 10s.
	Grace time.Duration
}

// WorkStats counts what a run did.
type WorkStats struct {
	Chunks    int64 // chunks flushed
	Rows      int64 // row outcomes recorded
	LeaseLost int64 // flushes rejected because the lease had moved on
	// Stopped counts leases whose batch was cancelled or paused while
	// they worked.
	Stopped int64
	// GivenBack counts rows claimed but not worked (a shutdown, a pause),
	// returned without using an attempt.
	GivenBack int64
	// Retries counts transient database errors retried.
	Retries int64
	// UnknownKinds are the kinds of open batches in scope this engine
	// does not know: other workers must work them.
	UnknownKinds []string
}

func (s *WorkStats) add(o WorkStats) {
	s.Chunks += o.Chunks
	s.Rows += o.Rows
	s.LeaseLost += o.LeaseLost
	s.Stopped += o.Stopped
	s.GivenBack += o.GivenBack
	s.Retries += o.Retries
}

// run is one Work call's shared state.
type run struct {
	p      WorkParams
	tenant string // the batch's tenant, for a BatchID
	// The kinds to claim are read from the registry at every claim: a
	// dynamic kind may be registered while the workers run.
	// hard is cancelled Grace after the caller's ctx: what processors see.
	hard    context.Context
	waiter  *waiter
	unknown unknownKinds
}

// Work runs workers that claim chunks, process their due rows and record
// each row's outcome. It returns when ctx is done (nil error) or, with
// UntilDone, when the work is done. A transient database error (a dropped
// connection, a restarting server) is retried with backoff, in claims,
// renewals and flushes alike; any other database error ends the run.
func (e *Engine) Work(ctx context.Context, p WorkParams) (WorkStats, error) {
	r := &run{p: p, waiter: &waiter{f: p.WaitFunc, owner: e.owner}}
	if p.BatchID != 0 {
		// Find the batch before doing anything: a batch outside the
		// tenant scope is ErrNotFound at once, not after its rows ran.
		b, err := e.findBatch(ctx, p)
		if err != nil {
			return WorkStats{}, err
		}
		r.tenant = b.TenantID
	}
	grace := p.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	hard, stopHard := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHard()
	r.hard = hard
	stopAfter := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, stopHard)
		context.AfterFunc(hard, func() { t.Stop() })
	})
	defer stopAfter()
	if l, ok := e.store.(Listener); ok {
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { _ = l.Listen(lctx, e.bell.ring) }()
	}
	n := p.Workers
	if n <= 0 {
		n = 2
	}
	var (
		mu    sync.Mutex
		total WorkStats
	)
	e.checkKinds(ctx, r)
	g, gctx := errgroup.WithContext(ctx)
	for range n {
		g.Go(func() error {
			s, err := e.workLoop(gctx, r)
			mu.Lock()
			total.add(s)
			mu.Unlock()
			return err
		})
	}
	err := g.Wait()
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = nil // stopping is not a failure
	}
	total.UnknownKinds = r.unknown.list()
	return total, err
}

// Listener is implemented by a store that tells idle workers of other
// processes that rows are due (PostgreSQL LISTEN/NOTIFY). Listen calls
// wake on every notification until ctx is done, listening again after any
// reconnect. A notification is a hint: workers poll anyway, so a lost one
// delays work, never loses it.
type Listener interface {
	Listen(ctx context.Context, wake func()) error
}

func (e *Engine) workLoop(ctx context.Context, r *run) (WorkStats, error) {
	var s WorkStats
	for {
		if ctx.Err() != nil {
			return s, nil
		}
		// The bell is taken before the claim: a ring while the claim runs,
		// or between its finding nothing and the wait, must still wake
		// this worker (rows made due then are not in what it saw).
		wake := e.bell.wait()
		var lease *driver.Lease
		var sent time.Time // when the claim that won was sent
		err := e.retry(ctx, &s, "claim", func(ctx context.Context) (err error) {
			sent = time.Now()
			lease, err = e.store.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: e.owner, TenantIDs: r.p.TenantIDs, BatchID: r.p.BatchID, LeaseDuration: e.lease, Kinds: e.registry.names(), DeferKinds: e.registry.transactionalNames()})
			return err
		})
		if errors.Is(err, ErrNoWork) {
			if r.p.UntilDone {
				done, err := e.done(ctx, r)
				if err != nil || done {
					return s, err
				}
			}
			e.checkKinds(ctx, r)
			select {
			case <-ctx.Done():
				return s, nil
			case <-wake:
			case <-time.After(e.poll):
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return s, nil
			}
			return s, fmt.Errorf("claim chunk: %w", err)
		}
		e.observer.ChunkClaimed(lease.Kind)
		failpoint.Hit(failpoint.AfterClaim)
		c, err := e.workChunk(ctx, r, lease, sent, &s)
		switch {
		case errors.Is(err, ErrLeaseLost):
			// Not an ack and not a failure: the new owner works the rows.
			s.LeaseLost++
			e.logger.WarnContext(ctx, "lease lost", "batch_id", lease.BatchID, "chunk_no", lease.ChunkNo, "token", lease.Token)
		case err != nil:
			return s, err
		default:
			s.Chunks++
			s.Rows += int64(c.outcomes)
			s.GivenBack += int64(c.givenBack)
			if c.stopped {
				s.Stopped++
			}
		}
	}
}

// retry runs f until it succeeds, fails with an error that is not
// transient, or ctx is done, waiting 100ms doubling to 5s between tries.
func (e *Engine) retry(ctx context.Context, s *WorkStats, what string, f func(ctx context.Context) error) error {
	delay := 100 * time.Millisecond
	for {
		err := f(ctx)
		if err == nil || !errors.Is(err, ErrTransient) {
			return err
		}
		s.Retries++
		e.logger.WarnContext(ctx, "database error, retrying", "op", what, "in", delay, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// done reports whether there is nothing left to wait for: no open chunk of
// a running batch in scope of a kind this engine knows (for a BatchID: the
// batch is no longer running). Otherwise it tells the waiter what the run
// waits for.
func (e *Engine) done(ctx context.Context, r *run) (bool, error) {
	var cancelled bool
	if r.p.BatchID != 0 {
		b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: r.tenant, ID: r.p.BatchID})
		if err != nil {
			if errors.Is(err, ErrTransient) {
				return false, nil // ask again at the next poll
			}
			return false, fmt.Errorf("check batch %d: %w", r.p.BatchID, err)
		}
		if b.Status != batchtype.StatusRunning && b.Status != batchtype.StatusCancelled {
			return true, nil
		}
		if b.Paused && b.FailuresExceeded() {
			// Paused by its failure bound: nothing happens until a
			// person raises the bound and resumes it.
			return true, nil
		}
		cancelled = b.Status == batchtype.StatusCancelled
		if !e.registry.Has(b.Kind) {
			return false, fmt.Errorf("batch %d is of kind %q, which this engine does not know: %w", b.ID, b.Kind, ErrUnknownKind)
		}
	}
	due, err := e.store.ChunkNextDue(ctx, driver.ChunkNextDueParams{TenantIDs: r.p.TenantIDs, BatchID: r.p.BatchID, Kinds: e.registry.names()})
	if errors.Is(err, ErrNoWork) {
		// A running batch with no open chunk is finished by its last
		// flush, which the next check of a BatchID sees; a cancelled one
		// stays cancelled, and is done once no row of a dead worker's
		// lease is left to sweep.
		return r.p.BatchID == 0 || cancelled, nil
	}
	if errors.Is(err, ErrTransient) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check open chunks: %w", err)
	}
	r.waiter.tell(*due)
	return false, nil
}

// checkKinds reports, once each, the kinds of open batches in scope that
// this engine does not know: a worker that knows them must work them, and
// this one leaves them alone rather than failing their rows.
func (e *Engine) checkKinds(ctx context.Context, r *run) {
	if !r.unknown.due() {
		return
	}
	open, err := e.store.KindsOpen(ctx, r.p.TenantIDs)
	if err != nil {
		return // a hint only; the next idle round asks again
	}
	for _, k := range open {
		if !e.registry.Has(k) && r.unknown.add(k) {
			e.logger.WarnContext(ctx, "open batches of a kind this worker does not know; a worker that knows it must work them", "kind", k)
		}
	}
}

// unknownKinds remembers the unknown kinds reported, and when they were
// last looked for.
type unknownKinds struct {
	mu    sync.Mutex
	kinds []string
	last  time.Time
}

func (u *unknownKinds) due() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if time.Since(u.last) < time.Minute {
		return false
	}
	u.last = time.Now()
	return true
}

func (u *unknownKinds) add(k string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if slices.Contains(u.kinds, k) {
		return false
	}
	u.kinds = append(u.kinds, k)
	return true
}

func (u *unknownKinds) list() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.kinds)
}

// findBatch looks p.BatchID up under each tenant of the scope (the default
// tenant when the scope is empty) and returns it, or ErrNotFound.
func (e *Engine) findBatch(ctx context.Context, p WorkParams) (*batchtype.Batch, error) {
	tenants := p.TenantIDs
	if len(tenants) == 0 {
		tenants = []string{DefaultTenant}
	}
	for _, t := range tenants {
		b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: t, ID: p.BatchID})
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("batch %d: %w", p.BatchID, ErrNotFound)
}

// waiter tells a WaitFunc once about each chunk and lease an UntilDone run
// waits for, leaving out the leases of this engine's own workers.
type waiter struct {
	f     func(batchtype.ChunkDue)
	owner string
	mu    sync.Mutex
	last  batchtype.ChunkDue
}

func (w *waiter) tell(d batchtype.ChunkDue) {
	if w.f == nil || d.LeaseOwner == w.owner {
		return
	}
	w.mu.Lock()
	if d.BatchID == w.last.BatchID && d.ChunkNo == w.last.ChunkNo && d.LeaseOwner == w.last.LeaseOwner {
		w.mu.Unlock()
		return
	}
	w.last = d
	w.mu.Unlock()
	w.f(d)
}

// bell wakes idle workers: ring closes the channel every waiter holds and
// starts a new one.
type bell struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *bell) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *bell) ring() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
	}
	b.ch = make(chan struct{})
}
