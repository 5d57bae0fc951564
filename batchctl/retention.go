package batchctl

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
)

type retentionSetOptions struct {
	kind       string
	valuesDays int
}

func (c *cli) retentionCommand() *cobra.Command {
	var o retentionSetOptions
	set := &cobra.Command{
		Use:   "set",
		Short: "Set how long the tenant's batches keep their rows' values",
		Long: `Set --tenant's retention policy for --kind (or, without --kind, for every
kind without a policy of its own): the rows' values (the cells as read) of
a batch are dropped --values-days days after it finished or was cancelled.
Outcomes (state, result id, attempts), errors and counts are kept. batchctl
serve applies the policies on its retention sweep; batchctl purge --policy
applies them now. Setting a policy again replaces it.`,
		Example: `  batchctl retention set --kind customers --tenant acme --values-days 30
  batchctl retention set --tenant acme --values-days 90`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.retentionSet(cmd.Context(), o) },
	}
	set.Flags().StringVar(&o.kind, "kind", "", "the kind the policy is for (default: every kind of the tenant without a policy of its own)")
	set.Flags().IntVar(&o.valuesDays, "values-days", 0, "days after a batch ended that its rows' values are dropped (1 or more)")
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the tenant's retention policies",
		Long:    `List --tenant's retention policies by kind ("*" is every kind without a policy of its own). It changes nothing.`,
		Example: `  batchctl retention list --tenant acme -o json`,
		Args:    args(0, ""),
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.retentionList(cmd.Context()) },
	}
	var rmKind string
	rm := &cobra.Command{
		Use:     "rm",
		Short:   "Remove a retention policy",
		Long:    `Remove --tenant's retention policy for --kind (without --kind: its policy for every kind). Values already dropped stay dropped.`,
		Example: `  batchctl retention rm --kind customers --tenant acme`,
		Args:    args(0, ""),
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.retentionRemove(cmd.Context(), rmKind) },
	}
	rm.Flags().StringVar(&rmKind, "kind", "", "the kind whose policy is removed (default: the tenant's policy for every kind)")
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Manage how long the tenant's rows keep their values",
		Long: `A row's values are the cells of its file: customer data that a tenant may
have to delete. A retention policy drops them a number of days after their
batch ended; the batch keeps its rows' outcomes, errors and counts, and
says when and how its values went. See batchctl purge.`,
		Example: `  batchctl retention set --kind customers --tenant acme --values-days 30
  batchctl retention list --tenant acme`,
		GroupID: "admin",
		RunE: func(*cobra.Command, []string) error {
			return usagef("retention needs a subcommand: set, list or rm")
		},
	}
	cmd.AddCommand(set, list, rm)
	return cmd
}

func (c *cli) retentionSet(ctx context.Context, o retentionSetOptions) error {
	if o.valuesDays < 1 {
		return usagef("--values-days must be 1 or more, not %d", o.valuesDays)
	}
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	p, err := app.engine.RetentionSet(ctx, batch.RetentionSetParams{TenantID: c.global.tenant, Kind: o.kind, ValuesDays: o.valuesDays})
	if err != nil {
		return err
	}
	if c.global.output == "json" {
		return c.json(toPolicyJSON(*p))
	}
	fmt.Fprintf(c.stdout, "tenant %q, %s: rows' values dropped %d days after their batch ended\n", p.TenantID, kindLabel(p.Kind), p.ValuesDays)
	return nil
}

func (c *cli) retentionList(ctx context.Context) error {
	app, err := c.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer app.close()
	ps, err := app.engine.Retention(ctx, c.global.tenant)
	if err != nil {
		return err
	}
	if c.global.output == "json" {
		out := make([]policyJSON, len(ps))
		for i, p := range ps {
			out[i] = toPolicyJSON(p)
		}
		return c.json(out)
	}
	if len(ps) == 0 {
		fmt.Fprintf(c.stdout, "no retention policy for tenant %q: rows keep their values; set one: batchctl retention set --values-days 30%s\n", c.global.tenant, c.hint())
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tVALUES DAYS\tUPDATED")
	for _, p := range ps {
		k := p.Kind
		if k == "" {
			k = "*"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", k, p.ValuesDays, p.UpdatedAt.Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func (c *cli) retentionRemove(ctx context.Context, kind string) error {
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	if err := app.engine.RetentionRemove(ctx, c.global.tenant, kind); err != nil {
		if errors.Is(err, batch.ErrNotFound) {
			return fmt.Errorf("tenant %q has no retention policy for %s (batchctl retention list%s)", c.global.tenant, kindLabel(kind), c.hint())
		}
		return err
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"tenant_id": c.global.tenant, "kind": kind, "removed": true})
	}
	fmt.Fprintf(c.stdout, "retention policy of tenant %q for %s removed\n", c.global.tenant, kindLabel(kind))
	return nil
}

func kindLabel(kind string) string {
	if kind == "" {
		return "every kind without a policy of its own"
	}
	return "kind " + kind
}

type policyJSON struct {
	TenantID   string    `json:"tenant_id"`
	Kind       string    `json:"kind"`
	ValuesDays int       `json:"values_days"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func toPolicyJSON(p batchtype.RetentionPolicy) policyJSON {
	return policyJSON{TenantID: p.TenantID, Kind: p.Kind, ValuesDays: p.ValuesDays, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}
