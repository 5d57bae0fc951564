package batchctl

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
)

type purgeOptions struct {
	batch     int64
	olderThan time.Duration
	policy    bool
	dryRun    bool
}

func (c *cli) purgeCommand() *cobra.Command {
	var o purgeOptions
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Drop the rows' values of ended batches",
		Long: `Drop the rows' values (the cells as read) of --tenant's batches: one
(--batch N), those that finished or were cancelled longer ago than
--older-than, or those past the tenant's retention policies (--policy). The
batches keep their rows' outcomes (state, result id, attempts), errors and
counts; each purge is recorded in the batch's history, and from then on a
re-run, a retry, an edit or the error report of the batch is refused,
naming when its values were purged. A running batch is never purged: named,
it is refused; by age or policy, it is left for a later purge. Purging a
batch again changes nothing. --dry-run prints what would be purged.`,
		Example: `  batchctl purge --batch 12 --tenant acme
  batchctl purge --older-than 720h --dry-run
  batchctl purge --policy --tenant acme -o json`,
		Args:    args(0, ""),
		GroupID: "batches",
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.purge(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.Int64Var(&o.batch, "batch", 0, "purge this batch")
	f.DurationVar(&o.olderThan, "older-than", 0, "purge the batches that ended longer ago than this (720h: 30 days)")
	f.BoolVar(&o.policy, "policy", false, "purge the batches past the tenant's retention policies (batchctl retention list)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print what would be purged; change nothing")
	return cmd
}

func (c *cli) purge(ctx context.Context, o purgeOptions) error {
	n := 0
	for _, set := range []bool{o.batch != 0, o.olderThan != 0, o.policy} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return usagef("purge needs exactly one of --batch, --older-than and --policy")
	case o.batch < 0:
		return usagef("--batch must be a batch id, not %d", o.batch)
	case o.olderThan < 0:
		return usagef("--older-than must be positive, not %s", o.olderThan)
	}
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	var all []batchtype.Purge
	for {
		ps, err := app.engine.Purge(ctx, batch.PurgeParams{TenantID: c.global.tenant, BatchID: o.batch, OlderThan: o.olderThan,
			Policy: o.policy, DryRun: o.dryRun, Actor: "batchctl", Limit: 100})
		all = append(all, ps...)
		// A dry run selects the same batches again: one page is all it
		// can show; a purge goes on until a page comes back short.
		if err != nil || o.batch != 0 || o.dryRun || len(ps) < 100 {
			if err != nil {
				return err
			}
			break
		}
	}
	return c.printPurges(all, o.dryRun)
}

func (c *cli) printPurges(ps []batchtype.Purge, dryRun bool) error {
	if c.global.output == "json" {
		out := make([]map[string]any, len(ps))
		for i, p := range ps {
			out[i] = map[string]any{"batch_id": p.BatchID, "tenant_id": p.TenantID, "kind": p.Kind, "rows": p.Rows,
				"ended_at": p.EndedAt, "dry_run": dryRun, "already": p.Already, "by": p.By}
			if !p.At.IsZero() {
				out[i]["purged_at"] = p.At
			}
		}
		return c.json(out)
	}
	if len(ps) == 0 {
		fmt.Fprintln(c.stdout, "no batch to purge")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tKIND\tROWS\tENDED\tVALUES")
	var rowsN int64
	for _, p := range ps {
		what := "purged " + p.At.Format("2006-01-02 15:04") + " by " + p.By
		switch {
		case p.Already:
			what = "already purged " + p.At.Format("2006-01-02 15:04") + " by " + p.By
		case dryRun:
			what = "would be purged"
		}
		rowsN += p.Rows
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", p.BatchID, p.Kind, p.Rows, p.EndedAt.Format("2006-01-02 15:04"), what)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verb := "purged"
	if dryRun {
		verb = "would be purged (dry run: nothing changed)"
	}
	fmt.Fprintf(c.stdout, "%d batches, %d rows %s\n", len(ps), rowsN, verb)
	return nil
}
