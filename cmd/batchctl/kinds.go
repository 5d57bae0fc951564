package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func (c *cli) kindsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "kinds",
		Short: "List the kinds that can be imported and exported",
		Long: `List every registered kind with its direction (import or export), its
columns and the columns an import requires. It opens no database.`,
		Example: `  batchctl kinds
  batchctl kinds -o json`,
		Args: args(0, ""),
		RunE: func(*cobra.Command, []string) error {
			reg, err := registry()
			if err != nil {
				return err
			}
			kinds := append(reg.Kinds(), reg.ExportKinds()...)
			if c.global.output == "json" {
				return c.json(kinds)
			}
			for _, k := range kinds {
				cols := make([]string, len(k.Columns))
				for i, col := range k.Columns {
					cols[i] = col.Name
				}
				fmt.Fprintf(c.stdout, "%s (%s)\t%s\n  columns: %s\n", k.Name, k.Direction, k.Description, strings.Join(cols, ", "))
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
