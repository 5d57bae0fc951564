package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
)

type workerOptions struct {
	batch     int64
	workers   int
	untilDone bool
}

func (c *cli) workerCommand() *cobra.Command {
	var o workerOptions
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Work the open batches of the tenant",
		Long: `Claim chunks of open batches (one batch with --batch), run their rows
through the kind's processor and record every row's outcome, until
interrupted or, with --until-done, until there is nothing left: no row to
work now and none that will be due later, including rows a crashed worker
still holds until its lease expires (the worker says which and until
when, and waits). Any number of worker processes may run against one
PostgreSQL database; leases and fencing tokens keep each row with one
owner at a time.`,
		Example: `  batchctl worker --until-done
  batchctl worker --database postgres://db/app --workers 8
  batchctl worker --batch 7 --until-done -o json`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.workers <= 0 {
				return usagef("--workers must be 1 or more, not %d", o.workers)
			}
			app, err := c.open(cmd.Context(), readWrite)
			if err != nil {
				return err
			}
			defer app.close()
			p := batch.WorkParams{BatchID: o.batch, TenantIDs: []string{c.global.tenant}, Workers: o.workers, UntilDone: o.untilDone,
				WaitFunc: func(d batch.ChunkDue) {
					if d.LeaseOwner != "" {
						fmt.Fprintf(c.stderr, "waiting: chunk %d of batch %d is leased by %s until %s\n", d.ChunkNo, d.BatchID, d.LeaseOwner, d.LeaseExpiresAt.Format("15:04:05.000"))
					} else {
						fmt.Fprintf(c.stderr, "waiting: chunk %d of batch %d has rows due at %s\n", d.ChunkNo, d.BatchID, d.DueAt.Format("15:04:05.000"))
					}
				}}
			stats, err := app.engine.Work(cmd.Context(), p)
			if err != nil {
				return err
			}
			if c.global.output == "json" {
				return c.json(map[string]int64{"chunks": stats.Chunks, "rows": stats.Rows, "lease_lost": stats.LeaseLost})
			}
			fmt.Fprintf(c.stdout, "worked %d rows in %d chunks (%d leases lost)\n", stats.Rows, stats.Chunks, stats.LeaseLost)
			return nil
		},
	}
	cmd.Flags().Int64Var(&o.batch, "batch", 0, "only this batch")
	cmd.Flags().IntVar(&o.workers, "workers", 2, "concurrent workers in this process")
	cmd.Flags().BoolVar(&o.untilDone, "until-done", false, "exit when there is nothing left to do")
	return cmd
}
