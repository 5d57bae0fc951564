package batchctl

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

type exportOptions struct {
	out   fileFlags
	sheet string
}

func (c *cli) exportCommand() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export <kind>",
		Short: "Write a kind's rows to a CSV or XLSX file, recorded as a batch",
		Long: `Write every row of an export kind to a file and record the export as a
batch with one outcome per row: succeeded (written) or failed (with the
reason it was not written). The file is written to a temporary name and
renamed when complete, so a failed export leaves no half file.

Text cells that begin with = + - @, tab, CR or LF get a leading ' against
formula injection, unless the kind's column is tagged raw. Without --file
the file goes to standard output and the summary to standard error.`,
		Example: `  batchctl export customers -f customers.xlsx
  batchctl export customers --format csv > customers.csv`,
		Args: args(1, "<kind>"),
		RunE: func(cmd *cobra.Command, a []string) error {
			kind := a[0]
			reg, err := c.registryWith(cmd.Context(), kind)
			if err != nil {
				return err
			}
			if !reg.HasExport(kind) {
				return usagef("unknown export kind %q; known kinds: %s", kind, kindNames(reg.ExportKinds()))
			}
			format, err := o.out.resolve()
			if err != nil {
				return err
			}
			toStdout := o.out.toStdout()
			if !toStdout {
				// Fail on a bad destination before opening the database.
				if st, err := os.Stat(filepath.Dir(o.out.file)); err != nil || !st.IsDir() {
					return fmt.Errorf("export to %s: no such folder %s", o.out.file, filepath.Dir(o.out.file))
				}
			}
			app, err := c.open(cmd.Context(), create)
			if err != nil {
				return err
			}
			defer app.close()
			w, commit, abort, err := c.outputFile(o.out.file)
			if err != nil {
				return err
			}
			name := o.out.file
			if toStdout {
				name = "-"
			}
			b, err := app.engine.Export(cmd.Context(), kind, batch.ExportParams{TenantID: c.global.tenant, DestName: name, Dest: w, Format: format.Name(), Write: rows.WriteOptions{Sheet: o.sheet}})
			if err != nil {
				abort()
				return err
			}
			if err := commit(); err != nil {
				return err
			}
			out := c.stdout
			if toStdout {
				out = c.stderr // the file took standard output
			}
			if err := c.printBatch(out, b, true); err != nil {
				return err
			}
			return exitWith(batchExit(b))
		},
	}
	o.out.add(cmd.Flags(), "export")
	cmd.Flags().StringVar(&o.sheet, "sheet", "", "XLSX sheet name (default: the kind's name)")
	return cmd
}
