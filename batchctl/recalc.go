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

A filter (--where) is read by a grammar: comparisons (= != <> < <= > >=)
on the columns the kind allows, and, or, not, parentheses, in (...),
is [not] null, values quoted ('DE', "it's") or bare (DE, 500). A filter
it cannot read is a usage error (exit 2) saying where, and nothing is
recorded. A query that matches no row creates no batch: it says so and
exits 1, so that exit 0 always means a batch to follow.

Exit codes otherwise as for import.`,
		Example: `  batchctl recalc customers-tier
  batchctl recalc customers-tier --where 'country=DE and amount>=100'
  batchctl recalc customers-tier --where "(country in (DE, AT) or amount >= 500) and tier != 'gold'"
  batchctl recalc customers-tier --no-work && batchctl worker --until-done`,
		Args: args(1, "<kind>"),
		RunE: func(cmd *cobra.Command, a []string) error { return c.runRecalc(cmd.Context(), a[0], o) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.where, "where", nil, "filter of the query, such as 'country=DE or amount>=100' (repeatable: each is parenthesised and joined with and)")
	f.IntVar(&o.workers, "workers", 2, "concurrent workers for the batch's rows")
	f.BoolVar(&o.noWork, "no-work", false, "only create the batch; leave its rows for batchctl worker")
	f.DurationVar(&o.interval, "progress-interval", 2*time.Second, "on a non-terminal, print a progress line at most this often (0: none)")
	return cmd
}

func (c *cli) runRecalc(ctx context.Context, kind string, o recalcOptions) error {
	// A recalculation stored from a file is in the database's kinds.
	reg, err := c.registryWith(ctx, kind)
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
		params = map[string]string{"where": joinWhere(o.where)}
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
		if errors.Is(err, batch.ErrNoMatch) {
			what := "the recalculation's query yields no row"
			if params != nil {
				what = fmt.Sprintf("no row matches --where %s", shellQuote(params["where"]))
			}
			return fmt.Errorf("recalc %s: %s: nothing to recalculate, no batch created", kind, what)
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

// joinWhere joins repeated --where filters with and, each in parentheses
// so that an or in one stays inside it; a single one is kept as written.
func joinWhere(ws []string) string {
	if len(ws) == 1 {
		return ws[0]
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = "(" + w + ")"
	}
	return strings.Join(parts, " and ")
}
