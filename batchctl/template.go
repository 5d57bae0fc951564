package batchctl

import (
	"github.com/spf13/cobra"
)

func (c *cli) templateCommand() *cobra.Command {
	var o fileFlags
	cmd := &cobra.Command{
		Use:   "template <kind>",
		Short: "Write an empty file with a kind's header and an example row",
		Long: `Write the file a user fills in for an import of the kind: its header and,
when the kind has one, an example row. As XLSX (--file ending in .xlsx, or
--format xlsx) the header is frozen, required columns are marked and
columns with fixed values offer them as a dropdown. It changes nothing (a
kind stored from a Table Schema is read from the database). -o json prints
the columns instead: name, example, required, fixed values, note.`,
		Example: `  batchctl template customers -f customers.xlsx
  batchctl template customers > customers.csv`,
		Args: args(1, "<kind>"),
		RunE: func(cmd *cobra.Command, a []string) error {
			kind := a[0]
			reg, err := c.registryWith(cmd.Context(), kind)
			if err != nil {
				return err
			}
			if !reg.Has(kind) {
				return usagef("unknown kind %q; known kinds: %s", kind, kindNames(reg.Kinds()))
			}
			if c.global.output == "json" {
				// The template's columns as data, for a program that builds
				// its own form or file.
				cols, err := reg.TemplateColumns(kind)
				if err != nil {
					return err
				}
				return c.json(toTemplateJSON(cols))
			}
			format, err := o.resolve()
			if err != nil {
				return err
			}
			w, commit, abort, err := c.outputFile(o.file)
			if err != nil {
				return err
			}
			if err := writeTemplate(w, reg, kind, format); err != nil {
				abort()
				return err
			}
			return commit()
		},
	}
	o.add(cmd.Flags(), "template")
	return cmd
}
