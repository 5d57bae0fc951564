package batchctl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

type rowsOptions struct {
	state, code, column, where string
	limit                      int
	after                      int64
}

func (c *cli) rowsCommand() *cobra.Command {
	var o rowsOptions
	cmd := &cobra.Command{
		Use:   "rows <batch>",
		Short: "List a batch's rows with their state, errors or result ids",
		Long: `List a batch's rows in file order: each row's number (as a spreadsheet
shows it), state, result id or errors, and its cells. It changes nothing.

Pages with --after (the last row number seen) and --limit; when more rows
follow, the text output ends with the command for the next page.`,
		Example: `  batchctl rows 7 --state invalid
  batchctl rows 7 --state invalid,failed --code bad_date --column signup_date
  batchctl rows 7 --where "country = DE and note is null"
  batchctl rows 7 --after 120 --limit 50
  batchctl rows 7 --limit 0 -o json    # every row`,
		Args: batchIDArg,
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			return c.rows(cmd, id, o)
		},
	}
	cmd.Flags().StringVar(&o.state, "state", "", "only rows in these states (invalid, failed, dead, unknown, succeeded, ...; a comma list)")
	cmd.Flags().StringVar(&o.code, "code", "", "only rows with an error of this code (bad_date, required, ...)")
	cmd.Flags().StringVar(&o.column, "column", "", "only rows with an error on this column, as the file's header spells it")
	cmd.Flags().StringVar(&o.where, "where", "", whereUsage)
	cmd.Flags().IntVar(&o.limit, "limit", 100, "at most this many rows (0: all)")
	cmd.Flags().Int64Var(&o.after, "after", 0, "only rows after this row number")
	return cmd
}

func (c *cli) rows(cmd *cobra.Command, id int64, o rowsOptions) error {
	f, err := (&rowFilterFlags{states: o.state, code: o.code, column: o.column, where: o.where}).filter()
	if err != nil {
		return err
	}
	if o.limit < 0 {
		// A negative limit would list nothing and exit 0, which a script
		// would read as "no such rows".
		return usagef("--limit must be 0 (all rows) or more, not %d", o.limit)
	}
	ctx := cmd.Context()
	app, err := c.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer app.close()
	b, err := app.engine.Batch(ctx, batch.BatchParams{TenantID: c.global.tenant, ID: id})
	if err != nil {
		return err
	}
	var out []batchtype.Row
	cursor, more := o.after, false
	for o.limit == 0 || len(out) < o.limit {
		page := 500
		if o.limit > 0 {
			// One row past the limit tells whether more follow.
			page = min(page, o.limit-len(out)+1)
		}
		rs, err := app.engine.Rows(ctx, batch.RowsParams{TenantID: c.global.tenant, BatchID: id, Filter: f, AfterRowNo: cursor, Limit: page})
		if errors.Is(err, batch.ErrInvalidRequest) {
			return usagef("%v", err)
		}
		if err != nil {
			return err
		}
		if o.limit > 0 && len(out)+len(rs) > o.limit {
			rs, more = rs[:o.limit-len(out)], true
		}
		out = append(out, rs...)
		if more || len(rs) < page {
			break
		}
		cursor = rs[len(rs)-1].RowNo
	}
	if c.global.output == "json" {
		if out == nil {
			out = []batchtype.Row{}
		}
		return c.json(toRowsJSON(out))
	}
	for _, r := range out {
		fmt.Fprintf(c.stdout, "row %d  %s", r.RowNo, r.State)
		if r.ResultID != "" {
			fmt.Fprintf(c.stdout, "  id=%s", r.ResultID)
		}
		if len(r.Errors) > 0 {
			fmt.Fprintf(c.stdout, "  %s", fieldErrorsText(r.Errors))
		}
		if r.ValuesPurged {
			fmt.Fprintf(c.stdout, "\n    (values purged %s by %s)\n", purgedDate(b), b.ValuesPurgedBy)
			continue
		}
		fmt.Fprintf(c.stdout, "\n    %s\n", recordLine(b.Header, r.Values))
	}
	if len(out) == 0 {
		fmt.Fprintln(c.stdout, "no rows")
	}
	if more {
		c.printMore(b, o, out)
	}
	return nil
}

// printMore ends a page that stopped at --limit with how many rows are
// left, when the counts tell, and the command for the next page.
func (c *cli) printMore(b *batchtype.Batch, o rowsOptions, page []batchtype.Row) {
	last := page[len(page)-1].RowNo
	filter := ""
	for _, fl := range []struct{ name, value string }{{"state", o.state}, {"code", o.code}, {"column", o.column}, {"where", o.where}} {
		if fl.value != "" {
			filter += " --" + fl.name + " " + shellQuote(fl.value)
		}
	}
	next := fmt.Sprintf("batchctl rows %d%s --after %d --limit %d%s", b.ID, filter, last, o.limit, c.hint())
	// The counts tell what is left of one state or of all, not of a list
	// of states or of an error.
	total, known := b.Counts.Total(), o.code == "" && o.column == "" && o.where == "" && !strings.Contains(o.state, ",")
	if o.state != "" {
		total = b.Counts[rows.State(o.state)]
	}
	if known && o.after == 0 && total > int64(len(page)) {
		fmt.Fprintf(c.stdout, "%d more (use --limit/--after): %s\n", total-int64(len(page)), next)
		return
	}
	fmt.Fprintf(c.stdout, "more rows follow (use --limit/--after): %s\n", next)
}

// purgedDate is when b's values were purged, as the CLI prints it.
func purgedDate(b *batchtype.Batch) string {
	if b == nil || b.ValuesPurgedAt == nil {
		return "?"
	}
	return b.ValuesPurgedAt.UTC().Format("2006-01-02")
}
