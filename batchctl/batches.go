package batchctl

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
)

func (c *cli) batchesCommand() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "batches",
		Short: "List the tenant's recent batches, newest first",
		Long: `List the tenant's batches, newest first, each with its counts by state.
It changes nothing.`,
		Example: `  batchctl batches --limit 5
  batchctl batches --tenant acme -o json`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit <= 0 {
				return usagef("--limit must be 1 or more, not %d", limit)
			}
			app, err := c.open(cmd.Context(), readOnly)
			if err != nil {
				return err
			}
			defer app.close()
			bs, err := app.engine.Batches(cmd.Context(), batch.BatchesParams{TenantID: c.global.tenant, Limit: limit})
			if err != nil {
				return err
			}
			if c.global.output == "json" {
				return c.json(toBatchesJSON(bs))
			}
			for _, b := range bs {
				if err := c.printBatch(c.stdout, b, false); err != nil {
					return err
				}
			}
			if len(bs) == 0 {
				fmt.Fprintln(c.stdout, "no batches")
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many batches")
	return cmd
}
