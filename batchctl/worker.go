package batchctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
)

// kindReload is how often long-running commands read the stored kinds
// again.
const kindReload = 5 * time.Second

type workerOptions struct {
	batch     int64
	workers   int
	untilDone bool
	token     string
	grace     time.Duration
	lease     time.Duration
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
owner at a time.

On PostgreSQL, a shared database, a worker needs a credential
(--worker-token or ROWFATE_WORKER_TOKEN; make one with batchctl
worker-token create): it works only its tenants (or the one --tenant
names), and its name is recorded on every lease it takes. On a local SQLite
file it needs none and works the --tenant's batches. A
batch of a kind this worker does not know is left to workers that know it.
On SIGINT or SIGTERM it stops claiming, lets the rows under way finish for
--grace, and gives the rest back without using an attempt. It checks its
credential again every third of --lease: once the credential is revoked
(batchctl worker-token revoke) it stops the same way, says so and exits 1.`,
		Example: `  batchctl worker --until-done
  batchctl worker --database postgres://db/app --workers 8
  batchctl worker --batch 7 --until-done -o json`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.workers <= 0 {
				return usagef("--workers must be 1 or more, not %d", o.workers)
			}
			c.lease = o.lease
			app, err := c.openPatiently(cmd.Context(), readWrite)
			if err != nil {
				return err
			}
			defer app.close()
			id, err := c.workerIdentity(cmd.Context(), app.engine, o.token, cmd.Flags().Changed("tenant"))
			if err != nil {
				return err
			}
			if o.batch > 0 {
				if err := c.oneOffKind(cmd.Context(), app, o.batch); err != nil {
					return err
				}
			}
			eng, err := batch.NewEngine(batch.Config{Store: app.store, Registry: app.engine.Registry(), Logger: c.logger, WorkerName: id.name, LeaseDuration: o.lease})
			if err != nil {
				return err
			}
			p := batch.WorkParams{BatchID: o.batch, TenantIDs: id.tenants, Workers: o.workers, UntilDone: o.untilDone, Grace: o.grace,
				WaitFunc: func(d batchtype.ChunkDue) {
					if d.LeaseOwner != "" {
						fmt.Fprintf(c.stderr, "waiting: chunk %d of batch %d is leased by %s until %s\n", d.ChunkNo, d.BatchID, d.LeaseOwner, d.LeaseExpiresAt.Format("15:04:05.000"))
					} else {
						fmt.Fprintf(c.stderr, "waiting: chunk %d of batch %d has rows due at %s\n", d.ChunkNo, d.BatchID, d.DueAt.Format("15:04:05.000"))
					}
				}}
			// Kinds stored while the worker runs (batchctl kind add) are
			// worked from the next claim on.
			kctx, stopKinds := context.WithCancel(cmd.Context())
			defer stopKinds()
			go c.watchKinds(kctx, app, kindReload)
			// A revoked credential stops the work as a signal would; what
			// was done is still printed, then the revocation (exit 1).
			stats, err := c.workAs(cmd.Context(), eng, id, o.lease, p)
			var revoked *revokedError
			if err != nil && !errors.As(err, &revoked) {
				return err
			}
			if c.global.output == "json" {
				if jerr := c.json(map[string]any{"chunks": stats.Chunks, "rows": stats.Rows, "lease_lost": stats.LeaseLost,
					"given_back": stats.GivenBack, "retries": stats.Retries, "unknown_kinds": stats.UnknownKinds}); jerr != nil {
					return jerr
				}
				return err
			}
			fmt.Fprintf(c.stdout, "worked %d rows in %d chunks (%d leases lost)\n", stats.Rows, stats.Chunks, stats.LeaseLost)
			for _, k := range stats.UnknownKinds {
				fmt.Fprintf(c.stdout, "left alone: open batches of kind %q, which this worker does not know\n", k)
			}
			return err
		},
	}
	cmd.Flags().Int64Var(&o.batch, "batch", 0, "only this batch")
	cmd.Flags().IntVar(&o.workers, "workers", 2, "concurrent workers in this process")
	cmd.Flags().BoolVar(&o.untilDone, "until-done", false, "exit when there is nothing left to do")
	cmd.Flags().StringVar(&o.token, "worker-token", "", "the worker's credential (default $ROWFATE_WORKER_TOKEN)")
	cmd.Flags().DurationVar(&o.lease, "lease", 30*time.Second, "how long a claimed chunk is this worker's without a renewal (renewed every third); a crashed worker's rows wait this long")
	cmd.Flags().DurationVar(&o.grace, "grace", 10*time.Second, "on SIGINT/SIGTERM, how long rows under way may take to finish before they are given back")
	return cmd
}
