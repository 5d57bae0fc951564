package batchctl

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
)

func (c *cli) statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status <batch>",
		Short: "Show a batch and its counts by state",
		Long: `Show a batch: its status, source, kind, tenant and the number of rows in
each state, with the commands that list the rows to look at, and the
warnings its file gave (unknown columns, say). It changes nothing.

Exit code 3 when the batch finished with invalid, failed, dead or unknown
rows, or its failure bound paused it (import --max-failed); 0 while it
runs or when every row succeeded.`,
		Example: `  batchctl status 7
  batchctl status 7 -o json`,
		Args: batchIDArg,
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			app, err := c.open(cmd.Context(), readOnly)
			if err != nil {
				return err
			}
			defer app.close()
			b, err := app.engine.Batch(cmd.Context(), batch.BatchParams{TenantID: c.global.tenant, ID: id})
			if err != nil {
				return err
			}
			if err := c.printBatch(c.stdout, b, true); err != nil {
				return err
			}
			return exitWith(batchExit(b))
		},
	}
}

// batchIDArg wants one positive batch id.
func batchIDArg(_ *cobra.Command, a []string) error {
	if len(a) != 1 {
		return usagef("need exactly one <batch> id, got %d arguments", len(a))
	}
	_, err := parseBatchID(a[0])
	return err
}

func parseBatchID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("batch id must be a positive number, not %q", s)
	}
	return id, nil
}
