package batchctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
)

type recalcOptions struct {
	importOptions
	where []string
}

func (c *cli) recalcCommand() *cobra.Command {
	var o recalcOptions
	cmd := &cobra.Command{
		Use:   "recalc <kind>",
		Short: "Recalculate rows a query yields (a bulk recalculation), as a batch",
		Long: `Create a batch from a recalculation kind's query (every customer of the
tenant, or those --where keeps), read in keyset pages, streaming, and work
its rows like an import's: with leases, effects, counts, live progress,
cancel and re-run. The batch records the query's parameters.

A cancelled recalculation is finished with ` + "`batchctl rerun <batch>`" + `: it
works the rows that were not done, and never again those that were.

Exit codes as for import.`,
		Example: `  batchctl recalc customers-tier
  batchctl recalc customers-tier --where 'country=DE and amount>=100'
  batchctl recalc customers-tier --no-work && batchctl worker --until-done`,
		Args: args(1, "<kind>"),
		RunE: func(cmd *cobra.Command, a []string) error { return c.runRecalc(cmd.Context(), a[0], o) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.where, "where", nil, "filter of the query, such as 'country=DE and amount>=100' (repeatable: joined with and)")
	f.IntVar(&o.workers, "workers", 2, "concurrent workers for the batch's rows")
	f.BoolVar(&o.noWork, "no-work", false, "only create the batch; leave its rows for `batchctl worker`")
	f.DurationVar(&o.interval, "progress-interval", 2*time.Second, "on a non-terminal, print a progress line at most this often (0: none)")
	return cmd
}

func (c *cli) runRecalc(ctx context.Context, kind string, o recalcOptions) error {
	reg, err := c.registry(ctx)
	if err != nil {
		return err
	}
	if !reg.IsRecalc(kind) {
		var names []string
		for _, k := range reg.Kinds() {
			if k.Direction == batch.DirectionRecalc {
				names = append(names, k.Name)
			}
		}
		return usagef("%q is not a recalculation; recalculations: %s", kind, strings.Join(names, ", "))
	}
	if o.workers <= 0 {
		return usagef("--workers must be 1 or more, not %d", o.workers)
	}
	var params map[string]string
	if len(o.where) > 0 {
		params = map[string]string{"where": strings.Join(o.where, " and ")}
	}
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	b, err := app.engine.Recalc(ctx, batch.RecalcParams{TenantID: c.global.tenant, Kind: kind, Params: params})
	if err != nil {
		if errors.Is(err, batch.ErrBadParams) {
			return usagef("%v", err)
		}
		return interrupted(ctx, err, "nothing was written")
	}
	fmt.Fprintf(c.stderr, "batch %d created (%s, %d rows)\n", b.ID, b.SourceName, b.Counts.Total())
	if !o.noWork {
		if b, err = c.work(ctx, app, b, o.importOptions); err != nil {
			return err
		}
	}
	return c.printOutcome(b)
}
