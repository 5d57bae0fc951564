package batchctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

type exportOptions struct {
	out   fileFlags
	sheet string
	// where, batch and state are the export's filter (batch.ExportFilter).
	where []string
	batch int64
	state string
}

func (c *cli) exportCommand() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export <kind>",
		Short: "Write a kind's rows to a CSV or XLSX file, recorded as a batch",
		Long: `Write every row of an export kind (or those its filters keep) to a file
and record the export as a batch with one outcome per row: succeeded
(written) or failed (with the reason it was not written). The file is
written to a temporary name and renamed when complete, so a failed export
leaves no half file.

Text cells that begin with = + - @, tab, CR or LF get a leading ' against
formula injection, unless the kind's column is tagged raw. Without --file
the file goes to standard output and the summary to standard error.

Filters keep some rows only, and combine with and:
  --where EXPR   rows matching a filter in recalc's grammar (comparisons
                 = != <> < <= > >=, and, or, not, parentheses, in (...),
                 is [not] null) over the kind's columns, which
                 ` + "`batchctl kinds`" + ` lists; every value is a bind parameter.
  --batch N      the rows import batch N (of this kind and tenant) wrote:
                 the rows whose result id one of its rows carries, which
                 a succeeded row does (a customer's id, a schema row's key).
  --state S      with --batch: the batch's rows in state S instead of
                 succeeded. Without --batch it is a usage error; rows
                 without a result id (failed, invalid) name no row.
A filter that does not read, an unknown column, a batch of another kind or
tenant, or a kind whose source cannot filter (a Go export kind with a
plain RowsFunc: "does not take --where") is a usage error (exit 2), and
nothing is written or recorded. The export's batch records its filter
(status prints it).`,
		Example: `  batchctl export customers -f customers.xlsx
  batchctl export customers --format csv > customers.csv
  batchctl export customers --where 'country=DE and amount>=100' -f de.csv
  batchctl export customers --batch 7 -f imported-by-7.csv`,
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
			filter, err := o.filter()
			if err != nil {
				return err
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
			b, err := app.engine.Export(cmd.Context(), kind, batch.ExportParams{TenantID: c.global.tenant, DestName: name, Dest: w, Format: format.Name(),
				Write: rows.WriteOptions{Sheet: o.sheet}, Filter: filter})
			if err != nil {
				abort()
				return filterUsage(err)
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
	cmd.Flags().StringArrayVar(&o.where, "where", nil, "only the rows a filter keeps, such as 'country=DE and amount>=100' (repeatable: joined with and)")
	cmd.Flags().Int64Var(&o.batch, "batch", 0, "only the rows import batch N of this kind wrote (its succeeded rows' result ids)")
	cmd.Flags().StringVar(&o.state, "state", "", "with --batch: the batch's rows in this state (default succeeded)")
	return cmd
}

// filter is the export's filter, checked as far as the command line can
// be without the database: a state without a batch, an unknown state.
func (o exportOptions) filter() (batch.ExportFilter, error) {
	f := batch.ExportFilter{Where: joinWhere(o.where), BatchID: o.batch, State: rows.State(o.state)}
	switch {
	case o.batch < 0:
		return f, usagef("--batch %d: a batch id is 1 or more", o.batch)
	case o.state != "" && o.batch == 0:
		return f, usagef("--state picks rows of a batch: name it with --batch N (--state %s --batch N)", o.state)
	case o.state != "" && !f.State.Valid():
		return f, usagef("--state %q: unknown state; states: %s", o.state, strings.Join(stateNames(), ", "))
	}
	return f, nil
}

// filterUsage turns an export filter the engine refused into a usage
// error that names the flag; any other error is returned as it is.
func filterUsage(err error) error {
	var fe *batch.FilterError
	if !errors.As(err, &fe) {
		return err
	}
	if fe.Unsupported {
		return usagef("export kind %s does not take --%s: its source cannot filter, and an unfiltered file is not what was asked", fe.Kind, fe.Option)
	}
	return usagef("export %s: --%s: %v", fe.Kind, fe.Option, fe.Err)
}
