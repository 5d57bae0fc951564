package batchctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// rowFilterFlags are the row filter and the safety flags of the bulk row
// commands (row skip, retry, set and replace without a row).
type rowFilterFlags struct {
	states, code, column, where string
	all, dryRun                 bool
}

// add binds the flags; all is offered where an empty filter may mean
// every row.
func (f *rowFilterFlags) add(cmd *cobra.Command, states string, all bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.states, "state", states, "only rows in these states (a comma list: invalid,failed)")
	fl.StringVar(&f.code, "code", "", "only rows with an error of this code (bad_date, required, duplicate_key, ...)")
	fl.StringVar(&f.column, "column", "", "only rows with an error on this column, as the file's header spells it")
	fl.StringVar(&f.where, "where", "", whereUsage)
	if all {
		fl.BoolVar(&f.all, "all", false, "act on every row the command may change when no filter is given")
	}
	fl.BoolVar(&f.dryRun, "dry-run", false, "count the rows the command would change, and change nothing")
}

// whereUsage is the --where flag's help, of rows and the bulk commands.
const whereUsage = "only rows whose cells hold for EXPR, over the file's header columns compared as text as written (\"country = DE and note is null\")"

// given reports whether a filter flag was set on the command line.
func (f *rowFilterFlags) given(cmd *cobra.Command) bool {
	for _, n := range []string{"state", "code", "column", "where", "all", "dry-run"} {
		if fl := cmd.Flags().Lookup(n); fl != nil && fl.Changed {
			return true
		}
	}
	return false
}

// filter parses the flags into the engine's filter.
func (f *rowFilterFlags) filter() (batch.RowFilter, error) {
	out := batch.RowFilter{Code: f.code, Column: f.column, Where: f.where}
	for _, s := range strings.Split(f.states, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !rows.State(s).Valid() {
			return out, usagef("unknown state %q", s)
		}
		out.States = append(out.States, rows.State(s))
	}
	return out, nil
}

// bulk runs a bulk action through the engine, as the API does, and says
// what it did (or would do, with --dry-run).
func (c *cli) bulk(ctx context.Context, p batch.BulkRowsParams, f rowFilterFlags) error {
	filter, err := f.filter()
	if err != nil {
		return err
	}
	p.TenantID, p.Filter, p.All, p.Preview = c.global.tenant, filter, f.all, f.dryRun
	if filter.Empty() && !f.all {
		return usagef("the filter is empty: give --state, --code, --column or --where, or --all for every row")
	}
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	if p.Action == batch.BulkSet || p.Action == batch.BulkReplace {
		if err := c.oneOffKind(ctx, app, p.BatchID); err != nil {
			return err
		}
	}
	res, err := app.engine.BulkRows(ctx, p)
	if errors.Is(err, batch.ErrInvalidRequest) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if c.global.output == "json" {
		if err := c.json(bulkJSON{Action: string(res.Action), Preview: res.Preview, Matched: res.Matched, Changed: res.Changed, Valid: res.Valid, Invalid: res.Invalid}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(c.stdout, bulkLine(p, res))
	}
	if res.Invalid > 0 {
		return exitWith(exitRows)
	}
	return nil
}

// bulkLine says what a bulk action did, or would do.
func bulkLine(p batch.BulkRowsParams, res batch.BulkResult) string {
	n := res.Changed
	if res.Preview {
		n = res.Matched
	}
	what := fmt.Sprintf("%s of batch %d", plural(n, "row"), p.BatchID)
	var done, would string
	switch p.Action {
	case batch.BulkSkip:
		done, would = "skipped "+what, "skip "+what
	case batch.BulkRetry:
		done, would = "retried "+what, "retry "+what
	case batch.BulkSet:
		done = fmt.Sprintf("set %s=%s in %s", p.Column, p.Value, what)
		would = done
	default:
		done = fmt.Sprintf("replaced %q with %q in %s of %s", p.Find, p.Replace, p.Column, what)
		would = fmt.Sprintf("replace %q with %q in %s of %s", p.Find, p.Replace, p.Column, what)
	}
	if res.Preview {
		return "would " + would
	}
	if p.Action == batch.BulkSet || p.Action == batch.BulkReplace {
		return fmt.Sprintf("%s: %s valid, %s invalid", done, grouped(res.Valid), grouped(res.Invalid))
	}
	return done
}

// plural is "1 row" or "1,204 rows".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return grouped(n) + " " + noun + "s"
}

// grouped writes n with its thousands grouped: 1,204.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// bulkSkip is row skip without a row: every row the filter selects.
func (c *cli) bulkSkip(cmd *cobra.Command, id int64, reason string, f rowFilterFlags, actor actorFlag) error {
	if strings.TrimSpace(reason) == "" {
		return usagef("a skip needs --reason")
	}
	return c.bulk(cmd.Context(), batch.BulkRowsParams{BatchID: id, Action: batch.BulkSkip, Reason: reason, Actor: actor.get()}, f)
}

// bulkSet is row set without a row: one column of every row the filter
// selects.
func (c *cli) bulkSet(cmd *cobra.Command, id int64, assignments []string, f rowFilterFlags, actor actorFlag) error {
	if len(assignments) != 1 {
		return usagef("a set of many rows changes one column: give one column=value, not %d", len(assignments))
	}
	k, v, ok := strings.Cut(assignments[0], "=")
	if !ok || strings.TrimSpace(k) == "" {
		return usagef("%q is not column=value", assignments[0])
	}
	return c.bulk(cmd.Context(), batch.BulkRowsParams{BatchID: id, Action: batch.BulkSet, Column: strings.TrimSpace(k), Value: v, Actor: actor.get()}, f)
}

func (c *cli) rowRetryCommand() *cobra.Command {
	var (
		actor actorFlag
		f     rowFilterFlags
	)
	cmd := &cobra.Command{
		Use:   "retry <batch> [--state failed,dead] [--code C] [--column COL] [--where EXPR]",
		Short: "Make the failed or dead rows a filter selects due again",
		Long: `Make every failed or dead row of a batch the filter selects due again,
with its attempts reset (unknown rows too, when --state names unknown: for
a person who knows their effect did not happen). Effects already done are
not run again. The retry is one change in the database, recorded in the
batch's history with the filter and the number of rows; --dry-run counts
the rows and changes nothing.`,
		Example: `  batchctl row retry 7
  batchctl row retry 7 --code timeout --dry-run
  batchctl row retry 7 --state unknown
  batchctl row retry 7 --where "country = DE"`,
		Args: args(1, "<batch>"),
		RunE: func(cmd *cobra.Command, a []string) error {
			id, err := parseBatchID(a[0])
			if err != nil {
				return err
			}
			return c.bulk(cmd.Context(), batch.BulkRowsParams{BatchID: id, Action: batch.BulkRetry, Actor: actor.get()}, f)
		},
	}
	f.add(cmd, "failed,dead", false)
	actor.add(cmd)
	return cmd
}

func (c *cli) rowReplaceCommand() *cobra.Command {
	var (
		actor          actorFlag
		f              rowFilterFlags
		in, find, repl string
	)
	cmd := &cobra.Command{
		Use:   "replace <batch> --in COLUMN --find X --replace Y",
		Short: "Find and replace in a column of the rows a filter selects",
		Long: `Replace every occurrence of --find with --replace in one column's cell of
every row the filter selects whose cell holds it, and validate those rows
again through every phase of their kind, as row set does. Completed,
skipped, worked and unknown rows are never changed. The rows are written a
page per statement in one transaction, recorded in the batch's history as
one edit; --dry-run counts them and changes nothing. Exit code 3 when rows
are still invalid after it.`,
		Example: `  batchctl row replace 7 --in signup_date --find . --replace - --code bad_date
  batchctl row replace 7 --in country --find UK --replace GB --all --dry-run
  batchctl row replace 7 --in phone --find " " --replace "" --where "country = DE"`,
		Args: args(1, "<batch>"),
		RunE: func(cmd *cobra.Command, a []string) error {
			id, err := parseBatchID(a[0])
			if err != nil {
				return err
			}
			if in == "" || find == "" || !cmd.Flags().Changed("replace") {
				return usagef("replace needs --in COLUMN, --find X and --replace Y")
			}
			return c.bulk(cmd.Context(), batch.BulkRowsParams{BatchID: id, Action: batch.BulkReplace, Column: in, Find: find, Replace: repl, Actor: actor.get()}, f)
		},
	}
	cmd.Flags().StringVar(&in, "in", "", "the column to change (the kind's column name or the file's header)")
	cmd.Flags().StringVar(&find, "find", "", "the text to find in the cell")
	cmd.Flags().StringVar(&repl, "replace", "", "what each occurrence becomes (may be empty)")
	f.add(cmd, "", true)
	actor.add(cmd)
	return cmd
}

// describeBulk is a bulk action's history entry in a line; ok is false
// for another entry.
func describeBulk(e batchtype.HistoryEntry) (string, bool) {
	var d struct {
		Filter *batch.RowFilter `json:"filter"`
		All    bool             `json:"all"`
		Rows   int64            `json:"rows"`
		Reason string           `json:"reason"`
		Column string           `json:"column"`
		Value  *string          `json:"value"`
		Find   string           `json:"find"`
		Repl   string           `json:"replace"`
		Valid  int64            `json:"valid"`
		Inv    int64            `json:"invalid"`
	}
	if e.RowNo != 0 || json.Unmarshal(e.Detail, &d) != nil || d.Filter == nil {
		return "", false
	}
	var where []string
	if len(d.Filter.States) > 0 {
		where = append(where, "state "+strings.Join(d.Filter.StateTexts(), ","))
	}
	if d.Filter.Code != "" {
		where = append(where, "code "+d.Filter.Code)
	}
	if d.Filter.Column != "" {
		where = append(where, "column "+d.Filter.Column)
	}
	if d.Filter.Where != "" {
		where = append(where, "where "+d.Filter.Where)
	}
	if len(where) == 0 {
		where = append(where, "every row")
	}
	line := fmt.Sprintf("%s (%s)", plural(d.Rows, "row"), strings.Join(where, ", "))
	switch {
	case e.Action == "skip":
		line += fmt.Sprintf(": %q", d.Reason)
	case e.Action == "edit" && d.Value != nil:
		line += fmt.Sprintf(": %s=%s, %d valid, %d invalid", d.Column, *d.Value, d.Valid, d.Inv)
	case e.Action == "edit":
		line += fmt.Sprintf(": %q -> %q in %s, %d valid, %d invalid", d.Find, d.Repl, d.Column, d.Valid, d.Inv)
	}
	return line, true
}
