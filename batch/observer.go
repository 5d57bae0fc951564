package batch

import (
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// Observer hears what an engine's workers do, for metrics (package metrics
// implements it for Prometheus). Its methods are called from the workers'
// goroutines, once per claim or flush, so they must be cheap, must not
// block and must be safe for concurrent use. Each is told the batch's kind
// and nothing finer: a tenant or batch id would make a metric per batch.
type Observer interface {
	// ChunkClaimed is called when a worker took a lease on a chunk.
	ChunkClaimed(kind string)
	// LeaseLost is called when a renewal found the lease gone (it
	// expired, and the chunk may be claimed again): the work stops, and
	// nothing of it is recorded.
	LeaseLost(kind string)
	// StaleAckRejected is called when the store refused a flush because
	// its fencing token was no longer the chunk's: nothing was written,
	// and the chunk's new owner works the rows.
	StaleAckRejected(kind string)
	// RowsRecorded is called once a flush committed: n of its rows took
	// outcome state (succeeded, failed, retrying, dead or unknown). It is
	// not called for a flush refused or rolled back, nor for one that
	// found its batch cancelled (the store recorded cancelled rows, not
	// the outcomes decided).
	RowsRecorded(kind string, state rows.State, n int)
}

// nopObserver is the Observer of an engine configured with none.
type nopObserver struct{}

func (nopObserver) ChunkClaimed(string)                  {}
func (nopObserver) LeaseLost(string)                     {}
func (nopObserver) StaleAckRejected(string)              {}
func (nopObserver) RowsRecorded(string, rows.State, int) {}

// recorded tells the observer of a committed flush's outcomes, one call
// per state rather than per row.
func (e *Engine) recorded(kind string, outcomes ...[]driver.RowOutcome) {
	by := map[rows.State]int{}
	for _, outs := range outcomes {
		for _, o := range outs {
			by[o.State]++
		}
	}
	for st, n := range by {
		e.observer.RowsRecorded(kind, st, n)
	}
}
