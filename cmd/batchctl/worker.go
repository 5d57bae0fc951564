package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/rowfate/rowfate/batch"
)

// cmdWorker works open batches: one batch (--batch) or any of the tenant's,
// until there is nothing left (--until-done) or until interrupted. Several
// worker processes may run against one PostgreSQL database.
func cmdWorker(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	id := fs.Int64("batch", 0, "only this batch")
	workers := fs.Int("workers", 2, "concurrent workers in this process")
	untilDone := fs.Bool("until-done", false, "exit when there is nothing left to do")
	pos, err := e.parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 0 {
		return 0, usagef("worker takes no arguments")
	}
	a, err := e.open(ctx, false)
	if err != nil {
		return 0, err
	}
	defer a.close()
	stats, err := a.engine.Work(ctx, batch.WorkParams{BatchID: *id, TenantIDs: []string{e.tenant}, Workers: *workers, UntilDone: *untilDone})
	if err != nil {
		return 0, err
	}
	if e.output == "json" {
		return exitOK, e.json(map[string]int64{"chunks": stats.Chunks, "rows": stats.Rows, "lease_lost": stats.LeaseLost})
	}
	fmt.Fprintf(e.stdout, "worked %d rows in %d chunks (%d leases lost)\n", stats.Rows, stats.Chunks, stats.LeaseLost)
	return exitOK, nil
}
