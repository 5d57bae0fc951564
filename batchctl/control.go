package batchctl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

func (c *cli) cancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel <batch>",
		Short: "Cancel a running batch for good",
		Long: `Cancel a batch: no worker claims its rows again, its open rows become
cancelled at once, and rows being worked stop at their worker's next lease
renewal (their processors see their context cancelled). No row succeeds
after the cancel: a row whose effect finished too late to be stopped is
recorded unknown, to be reconciled. A cancel cannot be undone.`,
		Example: `  batchctl cancel 7`,
		Args:    batchIDArg,
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			app, err := c.open(cmd.Context(), readWrite)
			if err != nil {
				return err
			}
			defer app.close()
			b, err := app.engine.Cancel(cmd.Context(), c.global.tenant, id)
			if err != nil {
				return err
			}
			if c.global.output == "text" && b.Status != batchtype.StatusCancelled {
				fmt.Fprintf(c.stderr, "batch %d is %s: nothing to cancel\n", b.ID, b.Status)
			}
			return c.printBatch(c.stdout, b, true)
		},
	}
}

type pauseOptions struct {
	kind      string
	tenant    bool
	maxFailed string
}

func (c *cli) pauseCommand(pause bool) *cobra.Command {
	var o pauseOptions
	verb, Verb := "pause", "Pause"
	if !pause {
		verb, Verb = "resume", "Resume"
	}
	cmd := &cobra.Command{
		Use:   verb + " [<batch>]",
		Short: Verb + " a batch, a kind or the whole tenant",
		Long: Verb + ` work: of one batch, of every batch of a kind (--kind), or of
every batch of the tenant (--all). A pause is stored in the database and
every worker observes it at each claim and lease renewal: a worker stops a
paused batch's rows and gives the unfinished ones back without using an
attempt. Resuming lets workers claim them again.` + resumeNote(pause),
		Example: "  batchctl " + verb + " 7\n  batchctl " + verb + " --kind customers\n  batchctl " + verb + " --all --tenant acme",
		RunE: func(cmd *cobra.Command, a []string) error {
			targets := len(a)
			if o.kind != "" {
				targets++
			}
			if o.tenant {
				targets++
			}
			if targets != 1 {
				return usagef("%s needs exactly one of: a batch id, --kind K, --all", verb)
			}
			bound, err := batch.ParseThreshold(o.maxFailed)
			if err != nil {
				return usagef("--max-failed %v", err)
			}
			if cmd.Flags().Changed("max-failed") && len(a) == 0 {
				return usagef("--max-failed is a batch's bound: name the batch")
			}
			app, err := c.open(cmd.Context(), readWrite)
			if err != nil {
				return err
			}
			defer app.close()
			if len(a) == 1 {
				id, err := parseBatchID(a[0])
				if err != nil {
					return err
				}
				if cmd.Flags().Changed("max-failed") {
					if _, err := app.engine.Limit(cmd.Context(), c.global.tenant, id, bound); err != nil {
						return err
					}
				}
				b, err := app.engine.PauseBatch(cmd.Context(), c.global.tenant, id, pause)
				if errors.Is(err, batch.ErrPastBound) {
					return fmt.Errorf("%w; resume it with a higher bound, or none: batchctl resume %d --max-failed none%s", err, id, c.hint())
				}
				if err != nil {
					return err
				}
				return c.printBatch(c.stdout, b, false)
			}
			if err := app.engine.Pause(cmd.Context(), batch.PauseParams{TenantID: c.global.tenant, Kind: o.kind, Paused: pause}); err != nil {
				return err
			}
			what := "every batch of tenant " + c.global.tenant
			if o.kind != "" {
				what = "kind " + o.kind + " of tenant " + c.global.tenant
			}
			if c.global.output == "json" {
				return c.json(map[string]any{"tenant_id": c.global.tenant, "kind": o.kind, "paused": pause})
			}
			fmt.Fprintf(c.stdout, "%sd %s\n", verb, what)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.kind, "kind", "", verb+" every batch of this kind")
	cmd.Flags().BoolVar(&o.tenant, "all", false, verb+" every batch of the tenant")
	if !pause {
		cmd.Flags().StringVar(&o.maxFailed, "max-failed", "", "set the batch's failure bound (N, P% or none) before resuming it")
	}
	return cmd
}

// resumeNote is what resume's help adds to pause's.
func resumeNote(pause bool) string {
	if pause {
		return ""
	}
	return `

A batch its failure bound paused (import --max-failed) is not resumed while
its failures pass the bound: resume it with a higher one (--max-failed), or
none.`
}

func (c *cli) limitCommand() *cobra.Command {
	var maxFailed string
	cmd := &cobra.Command{
		Use:   "limit <batch> --max-failed N|P%|none",
		Short: "Change a batch's failure bound, while it runs",
		Long: `Set the bound on a batch's failed and dead rows (as import --max-failed
sets it): when more of its rows to work than N, or than P% of them, have
failed or died, the flush that passes the bound pauses the batch, with a
paused event that says why and a batch.paused webhook. none lifts it.

A running batch whose failures already pass the new bound is paused at
once. A paused batch stays paused: resume it (batchctl resume).`,
		Example: `  batchctl limit 7 --max-failed 5%
  batchctl limit 7 --max-failed none && batchctl resume 7`,
		Args: batchIDArg,
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			if !cmd.Flags().Changed("max-failed") {
				return usagef("limit needs --max-failed N, P%% or none")
			}
			bound, err := batch.ParseThreshold(maxFailed)
			if err != nil {
				return usagef("--max-failed %v", err)
			}
			app, err := c.open(cmd.Context(), readWrite)
			if err != nil {
				return err
			}
			defer app.close()
			b, err := app.engine.Limit(cmd.Context(), c.global.tenant, id, bound)
			if err != nil {
				return err
			}
			return c.printBatch(c.stdout, b, false)
		},
	}
	cmd.Flags().StringVar(&maxFailed, "max-failed", "", "the bound on failed and dead rows: N, P% of the rows to work, or none")
	return cmd
}

func (c *cli) retryCommand() *cobra.Command {
	var (
		states string
		o      rerunOptions
	)
	cmd := &cobra.Command{
		Use:   "retry <batch>",
		Short: "Work a batch's failed and dead rows again",
		Long: `Make a batch's failed and dead rows (or the --state list; unknown rows
only when you know their effect did not happen) due again, with their
attempts reset, reopen the batch and work them, as rerun does (--no-work
leaves them to batchctl worker). Effects already done are not run again:
a kind with effect keys finds them done and takes their result. The retry
is recorded in the batch's history (--actor).

Exit codes as for import.`,
		Example: `  batchctl retry 7
  batchctl retry 7 --state dead
  batchctl retry 7 --no-work && batchctl worker --batch 7 --until-done`,
		Args: batchIDArg,
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			var want []rows.State
			for _, s := range strings.Split(states, ",") {
				if s = strings.TrimSpace(s); s != "" {
					want = append(want, rows.State(s))
				}
			}
			for _, s := range want {
				if s != rows.StateFailed && s != rows.StateDead && s != rows.StateUnknown {
					return usagef("--state %s: only failed, dead and unknown rows can be retried", s)
				}
			}
			if o.workers <= 0 {
				return usagef("--workers must be 1 or more, not %d", o.workers)
			}
			return c.retry(cmd.Context(), id, want, o)
		},
	}
	cmd.Flags().StringVar(&states, "state", "failed,dead", "comma-separated states to retry: failed, dead, unknown")
	cmd.Flags().IntVar(&o.workers, "workers", 2, "concurrent workers for the batch's rows")
	cmd.Flags().BoolVar(&o.noWork, "no-work", false, "only make the rows due; leave them for batchctl worker")
	addProgressInterval(cmd.Flags().DurationVar, &o.interval)
	o.actor.add(cmd)
	return cmd
}

// retry makes a batch's rows in states due again, works them unless
// o.noWork, and prints the outcome.
func (c *cli) retry(ctx context.Context, id int64, states []rows.State, o rerunOptions) error {
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	if err := c.oneOffKind(ctx, app, id); err != nil {
		return err
	}
	n, err := app.engine.Retry(ctx, batch.RetryParams{TenantID: c.global.tenant, BatchID: id, States: states, Actor: o.actor.get()})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "%d rows of batch %d are due again\n", n, id)
	b, err := app.engine.Batch(ctx, batch.BatchParams{TenantID: c.global.tenant, ID: id})
	if err != nil {
		return err
	}
	if n > 0 && !o.noWork {
		if b, err = c.work(ctx, app, b, o.importOptions); err != nil {
			return err
		}
	}
	return c.printOutcome(b)
}

type reconcileOptions struct {
	row    int64
	all    bool
	as     string
	id     string
	reason string
	actor  actorFlag
}

func (c *cli) reconcileCommand() *cobra.Command {
	var o reconcileOptions
	cmd := &cobra.Command{
		Use:   "reconcile <batch>",
		Short: "Settle a batch's unknown rows",
		Long: `Settle rows whose outcome is unknown (a timeout, a lost answer, a panic,
a cancel that came too late: the effect may have happened). Without
--row or --all, the kind's reconciliation asks the downstream about each
unknown row, and settles those it answers for: customers-webhook asks
$ROWFATE_WEBHOOK_STATUS_URL, customers-exec runs
$ROWFATE_EXEC_RECONCILE_COMMAND. With --row N --as, a person who checked
settles one row: succeeded (give the result with --id), failed (with
--reason), or retry (its effect did not happen; work it again). With
--all --as succeeded|failed --reason, a person who checked the downstream
as a whole settles every unknown row of the batch at once; the reason is
kept with each failed row.`,
		Example: `  batchctl reconcile 7
  batchctl reconcile 7 --row 12 --as succeeded --id INV-0042
  batchctl reconcile 7 --row 13 --as failed --reason "not in the CRM"
  batchctl reconcile 7 --row 14 --as retry
  batchctl reconcile 7 --all --as failed --reason "none of them is in the CRM"`,
		Args: batchIDArg,
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			var state rows.State
			switch o.as {
			case "":
				if o.row != 0 || o.all {
					return usagef("--row and --all need --as succeeded|failed|retry")
				}
			case "succeeded":
				state = rows.StateSucceeded
			case "failed":
				state = rows.StateFailed
			case "retry":
				state = rows.StateValid
			default:
				return usagef("--as must be succeeded, failed or retry, not %q", o.as)
			}
			switch {
			case o.all && o.row != 0:
				return usagef("--all settles every unknown row: it takes no --row")
			case o.all && state == rows.StateValid:
				return usagef("--all settles rows as succeeded or failed; to work every unknown row again: batchctl retry %d --state unknown%s", id, c.hint())
			case o.all && o.reason == "":
				return usagef("--all needs --reason: it settles every unknown row of the batch on your word")
			case o.as != "" && !o.all && o.row <= 0:
				return usagef("--as needs --row N or --all")
			}
			app, err := c.open(cmd.Context(), readWrite)
			if err != nil {
				return err
			}
			defer app.close()
			switch {
			case o.all:
				n, err := app.engine.SettleAll(cmd.Context(), batch.SettleAllParams{TenantID: c.global.tenant, BatchID: id, State: state, ResultID: o.id, Reason: o.reason, Actor: o.actor.get()})
				if err != nil {
					return err
				}
				if c.global.output == "json" {
					return c.json(map[string]any{"batch_id": id, "state": state, "settled": n})
				}
				fmt.Fprintf(c.stdout, "settled %d unknown rows of batch %d as %s\n", n, id, state)
				return nil
			case o.row > 0:
				err := app.engine.Settle(cmd.Context(), batch.SettleParams{TenantID: c.global.tenant, BatchID: id, RowNo: o.row, State: state, ResultID: o.id, Reason: o.reason, Actor: o.actor.get()})
				if err != nil {
					return err
				}
				if c.global.output == "json" {
					return c.json(map[string]any{"batch_id": id, "row_no": o.row, "state": state})
				}
				fmt.Fprintf(c.stdout, "row %d of batch %d is %s\n", o.row, id, strings.Replace(string(state), "valid", "due again", 1))
				return nil
			}
			st, err := app.engine.Reconcile(cmd.Context(), c.global.tenant, id)
			if errors.Is(err, batch.ErrNoReconcile) {
				return fmt.Errorf("%w; settle its unknown rows by hand once you have checked: batchctl reconcile %d --all --as failed --reason \"...\"%s (or --as succeeded; one row: --row N --as succeeded|failed|retry)", err, id, c.hint())
			}
			if err != nil {
				return err
			}
			if c.global.output == "json" {
				return c.json(map[string]int64{"succeeded": st.Succeeded, "failed": st.Failed, "left": st.Left})
			}
			fmt.Fprintf(c.stdout, "reconciled: %d succeeded, %d failed, %d still unknown\n", st.Succeeded, st.Failed, st.Left)
			return nil
		},
	}
	cmd.Flags().Int64Var(&o.row, "row", 0, "the row to settle by hand")
	cmd.Flags().BoolVar(&o.all, "all", false, "settle every unknown row of the batch by hand (with --as and --reason)")
	cmd.Flags().StringVar(&o.as, "as", "", "succeeded, failed or retry (--all: succeeded or failed)")
	cmd.Flags().StringVar(&o.id, "id", "", "the result id, with --as succeeded")
	cmd.Flags().StringVar(&o.reason, "reason", "", "why: kept in the batch's history, and as a failed row's error; required with --all")
	o.actor.add(cmd)
	return cmd
}
