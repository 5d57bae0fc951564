package batchctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rowfate/rowfate/batch"
)

// defaultLease is the engine's lease when none is set (batch.Config).
const defaultLease = 30 * time.Second

// credentialCheckEvery is how often a running worker checks its
// credential again: every third of its lease, the rhythm of its lease
// renewals. A revoked worker so claims nothing more within a third of a
// lease, and with a --grace shorter than the rest of it holds nothing
// once the lease it had at the revocation would have run out.
func credentialCheckEvery(lease time.Duration) time.Duration {
	if lease <= 0 {
		lease = defaultLease
	}
	return lease / 3
}

// revokedError ends a worker whose credential was revoked while it ran.
type revokedError struct{ name string }

func (e *revokedError) Error() string {
	return fmt.Sprintf("worker %q was revoked (batchctl worker-token revoke): it claimed nothing more and recorded or gave back the rows it held", e.name)
}

// workAs runs eng.Work as the worker id and checks its credential again
// every credentialCheckEvery(lease) while it works. Once the store no
// longer finds the credential (revoked), the work's context is cancelled,
// so the engine stops the way it does on SIGINT: no more claims, the rows
// under way get p.Grace, the rest go back to their batch without using an
// attempt; workAs then returns the stats with a *revokedError. A check
// that fails (the database out of reach) is logged and made again at the
// next tick: only a revocation stops the worker. The development identity
// (no hash) has nothing to check. batchctl worker and the workers of
// batchctl serve both work through here.
func (c *cli) workAs(ctx context.Context, eng *batch.Engine, id workerID, lease time.Duration, p batch.WorkParams) (batch.WorkStats, error) {
	if id.hash == "" {
		return eng.Work(ctx, p)
	}
	wctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		c.checkCredential(wctx, eng, id, credentialCheckEvery(lease), stop)
	}()
	stats, err := eng.Work(wctx, p)
	stop(nil) // ends the checks; a cause set before stays
	<-checked
	var revoked *revokedError
	if errors.As(context.Cause(wctx), &revoked) {
		return stats, errors.Join(revoked, err)
	}
	return stats, err
}

// checkCredential asks the engine for id's credential every period until
// ctx is done, and calls stop with a *revokedError when it is gone.
func (c *cli) checkCredential(ctx context.Context, eng *batch.Engine, id workerID, period time.Duration, stop context.CancelCauseFunc) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := eng.WorkerAuth(ctx, batch.WorkerAuthParams{TokenHash: id.hash})
		switch {
		case errors.Is(err, batch.ErrNotFound):
			c.logger.Warn("worker credential revoked; stopping", "worker", id.name)
			stop(&revokedError{name: id.name})
			return
		case err != nil && ctx.Err() == nil:
			c.logger.Warn("check the worker credential; trying again", "worker", id.name, "err", err, "in", period)
		}
	}
}
