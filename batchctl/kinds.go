package batchctl

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func (c *cli) kindsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "kinds",
		Short: "List the kinds that can be imported and exported",
		Long: `List every kind with its direction (import, export or recalc), its columns
and the columns an import requires: the built-in ones and, when the
database exists, the kinds stored from Table Schema files (batchctl kind
add), with their source ("schema v3"). It changes nothing.`,
		Example: `  batchctl kinds
  batchctl kinds -o json`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The stored kinds too, when there is a database.
			reg, err := c.registryWith(cmd.Context(), "\x00stored")
			if err != nil {
				return err
			}
			kinds := append(reg.Kinds(), reg.ExportKinds()...)
			if c.global.output == "json" {
				return c.json(toKindsJSON(kinds))
			}
			for _, k := range kinds {
				cols := make([]string, len(k.Columns))
				for i, col := range k.Columns {
					cols[i] = col.Name
				}
				source := ""
				if k.Source != "" {
					source = ", " + k.Source
				}
				fmt.Fprintf(c.stdout, "%s (%s%s)\t%s\n  columns: %s\n", k.Name, k.Direction, source, k.Description, strings.Join(cols, ", "))
				if k.Guarantee != "" {
					fmt.Fprintf(c.stdout, "  effects: %s\n", k.Guarantee)
				}
				if len(k.Required) > 0 {
					fmt.Fprintf(c.stdout, "  required: %s\n", strings.Join(k.Required, ", "))
				}
			}
			return nil
		},
	}
}
