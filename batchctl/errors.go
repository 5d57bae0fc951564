package batchctl

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

type errorsOptions struct {
	out    fileFlags
	states string
}

func (c *cli) errorsCommand() *cobra.Command {
	var o errorsOptions
	cmd := &cobra.Command{
		Use:   "errors <batch>",
		Short: "Write a batch's problem rows to a file to fix and import again",
		Long: `Write the rows a user has to look at (invalid, failed, dead and unknown,
or the --state list) as a file: the file's own columns with each row's
cells as read, then a "row" column (its row in the original file) and an
"error" column. As CSV it is UTF-8 with a byte order mark; as XLSX
(--file ending in .xlsx, or --format xlsx) the header is frozen and every
cell an error names is highlighted, with the message as a comment. Every
cell is protected against formula injection.

Without --file the report goes to standard output. It changes nothing in
the database.`,
		Example: `  batchctl errors 7 -f errors.xlsx
  batchctl errors 7 --state failed,dead -f retry.csv
  batchctl errors 7 > errors.csv`,
		Args: batchIDArg,
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			return c.errorsReport(cmd, id, o)
		},
	}
	o.out.add(cmd.Flags(), "report")
	cmd.Flags().StringVar(&o.states, "state", "", "comma-separated states to list (default: invalid,failed,dead,unknown)")
	return cmd
}

func (c *cli) errorsReport(cmd *cobra.Command, id int64, o errorsOptions) error {
	var want []rows.State
	if o.states != "" {
		for _, s := range strings.Split(o.states, ",") {
			st := rows.State(strings.TrimSpace(s))
			if !st.Valid() {
				return usagef("unknown state %q", s)
			}
			want = append(want, st)
		}
	}
	format, err := o.out.resolve()
	if err != nil {
		return err
	}
	toStdout := o.out.toStdout()
	if toStdout && c.global.output == "json" {
		return usagef("-o json prints a summary: name the report's file with -f")
	}
	ctx := cmd.Context()
	app, err := c.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer app.close()
	w, commit, abort, err := c.outputFile(o.out.file)
	if err != nil {
		return err
	}
	if err := c.oneOffKind(ctx, app, id); err != nil {
		abort()
		return err
	}
	n, err := app.engine.ErrorReport(ctx, batch.ErrorReportParams{TenantID: c.global.tenant, BatchID: id, States: want, Format: format.Name()}, w)
	if err != nil {
		abort()
		return err
	}
	if n == 0 && !toStdout {
		// Nothing to fix: a report of no rows would only be imported back
		// as a re-run that changes nothing.
		abort()
		if c.global.output == "json" {
			return c.json(map[string]any{"batch_id": id, "file": nil, "rows": 0})
		}
		fmt.Fprintf(c.stderr, "batch %d has no problem rows: nothing to fix, no file written\n", id)
		return nil
	}
	if err := commit(); err != nil {
		return err
	}
	if toStdout {
		return nil
	}
	kind := "<kind>"
	next := ""
	if b, err := app.engine.Batch(ctx, batch.BatchParams{TenantID: c.global.tenant, ID: id}); err == nil {
		kind = b.Kind
		if b.KindDefinition != "" {
			// No registry knows the kind by name: the batch does.
			next = fmt.Sprintf("batchctl rerun %d %s%s", id, shellQuote(o.out.file), c.hint())
		}
	}
	if next == "" {
		next = fmt.Sprintf("batchctl import %s %s%s", kind, shellQuote(o.out.file), c.hint())
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"batch_id": id, "file": o.out.file, "format": format.Name(), "rows": n, "next": next})
	}
	fmt.Fprintf(c.stderr, "wrote %d rows to %s; fix them and run: %s\n", n, o.out.file, next)
	return nil
}
