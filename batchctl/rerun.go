package batchctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// actorFlag is the --actor of the commands that change rows by hand,
// recorded in the batch's history.
type actorFlag struct{ name string }

func (a *actorFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.name, "actor", "", "who makes the change, for the batch's history (default: the user name)")
}

func (a *actorFlag) get() string {
	if a.name != "" {
		return a.name
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "batchctl"
}

type rerunOptions struct {
	importOptions
	actor actorFlag
}

func (c *cli) rerunCommand() *cobra.Command {
	var o rerunOptions
	cmd := &cobra.Command{
		Use:   "rerun <batch> [file]",
		Short: "Parse a batch's rows again, keeping what is completed or reviewed",
		Long: `Re-run a batch: parse again every row that is neither completed nor
reviewed, and work the rows that are now valid.

Without a file, the stored rows are validated again under the kind's
current rules (after the rules changed). The conventions given here
(--locale, --decimal-comma, --date-order, --date-format, --map, --ignore)
replace the batch's for every row parsed again, with a file or without
one: a batch imported without its locale is fixed by a re-run with it.
The batch keeps them, and its history the old ones. With a file (a
corrected error report, or a corrected copy of the whole file), its rows
replace the batch's: matched by the report's row column when the file is
this batch's error report, else by the kind's natural key (customers:
email), else by row number. A file row that matches no row of the batch
is added to it; a row of the batch the file does not mention is left as
it is.

Protected rows are never touched: succeeded and skipped rows, and rows a
reviewer edited (batchctl row set). A file row that matches one is passed
over, and a natural key that repeats a protected row's stays invalid. Rows
whose outcome is unknown must be reconciled first (batchctl reconcile),
and rows being worked finished: the re-run says which and stops. A
cancelled batch is reopened. Valid rows run under their effect keys, so an
effect already done is not run again.

The counts afterwards come from a recount over all the batch's rows. The
re-run is recorded in the batch's history (batchctl history).

Exit codes as for import.`,
		Example: `  batchctl rerun 7                     # the kind's rules changed
  batchctl errors 7 -f errors.csv && batchctl rerun 7 errors.csv
  batchctl import customers errors.csv  # the same: a report names its batch
  batchctl rerun 7 fixed.xlsx --sheet Data --no-work
  batchctl rerun 7 --locale de          # imported without its locale`,
		Args: func(cmd *cobra.Command, a []string) error {
			if len(a) < 1 || len(a) > 2 {
				return usagef("rerun needs <batch> and optionally a [file], got %d arguments", len(a))
			}
			_, err := parseBatchID(a[0])
			return err
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			path := ""
			if len(a) == 2 {
				path = a[1]
			}
			return c.runRerun(cmd.Context(), id, path, o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.workers, "workers", 2, "concurrent workers for the batch's rows")
	f.BoolVar(&o.noWork, "no-work", false, "only re-parse; leave the valid rows for batchctl worker")
	f.DurationVar(&o.interval, "progress-interval", 2*time.Second, "on a non-terminal, print a progress line at most this often (0: none)")
	o.read.add(f)
	o.actor.add(cmd)
	return cmd
}

func (c *cli) runRerun(ctx context.Context, id int64, path string, o rerunOptions) error {
	if o.workers <= 0 {
		return usagef("--workers must be 1 or more, not %d", o.workers)
	}
	ip := batch.ImportParams{}
	if err := o.read.apply(&ip); err != nil {
		return err
	}
	if _, err := c.database(); err != nil {
		return err
	}
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	p := batch.RerunParams{TenantID: c.global.tenant, BatchID: id, Read: ip.Read, Conventions: ip.Conventions, Actor: o.actor.get()}
	if path != "" {
		f, err := openInput(path)
		if err != nil {
			return err
		}
		defer f.Close()
		p.Source, p.SourceName = f, path
	}
	return c.rerun(ctx, app, p, o.importOptions)
}

// rerun re-runs a batch, says what it did, works its rows and prints the
// outcome.
func (c *cli) rerun(ctx context.Context, app *app, p batch.RerunParams, o importOptions) error {
	if err := c.oneOffKind(ctx, app, p.BatchID); err != nil {
		return err
	}
	res, err := app.engine.Rerun(ctx, p)
	if err != nil {
		if errors.Is(err, batch.ErrNotFound) {
			return fmt.Errorf("batch %d of tenant %q: %w", p.BatchID, c.global.tenant, batch.ErrNotFound)
		}
		return interrupted(ctx, err, "nothing was changed")
	}
	how := "its stored rows under the kind's current rules"
	if p.SourceName != "" {
		how = fmt.Sprintf("%s (rows matched by %s)", p.SourceName, res.MatchedBy)
	}
	fmt.Fprintf(c.stderr, "batch %d re-run with %s: %d rows parsed again, %d added (%d valid, %d invalid); %d rows of the file matched completed or reviewed rows and were kept\n",
		p.BatchID, how, res.Reparsed, res.Added, res.Valid, res.Invalid, res.Kept)
	b := res.Batch
	if !o.noWork {
		if b, err = c.work(ctx, app, b, o); err != nil {
			return err
		}
	}
	return c.printOutcome(b)
}

func (c *cli) rowCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "row",
		Short: "Review rows: set their cells, replace in them, skip or retry them",
		Long: `Review rows of a batch by hand: one row (named by its number), or every row
a filter selects (--state, --code, --column; --all for every row). An edit
validates the row again through every phase of its kind (and against the
batch's other natural keys); a valid row is then worked by the next
worker. A skip is a reviewer's decision that the row needs no work. Either
way the row is reviewed from then on: a re-run keeps it as the reviewer
left it. Completed rows, rows being worked and rows of unknown outcome
cannot be changed. Every change is recorded in the batch's history, with
its old and new values, or with the filter and the number of rows.
--dry-run counts the rows a filter would change.`,
		Example: `  batchctl row set 7 12 amount=12.50
  batchctl row skip 7 13 --reason "test order"
  batchctl row skip 7 --reason "dates lost" --state invalid --code bad_date --dry-run
  batchctl row set 7 country=PT --code required --column country
  batchctl row replace 7 --in amount --find , --replace . --code not_a_number
  batchctl row retry 7 --state failed
  batchctl history 7`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(c.stderr, cmd.UsageString())
			return &exitCode{exitUsage}
		},
	}
	cmd.AddCommand(c.rowSetCommand(), c.rowSkipCommand(), c.rowRetryCommand(), c.rowReplaceCommand())
	return cmd
}

func rowArgs(cmd *cobra.Command, a []string, min int) (int64, int64, error) {
	if len(a) < min {
		return 0, 0, usagef("%s needs <batch> <row>%s", cmd.CommandPath(), map[bool]string{true: " column=value...", false: ""}[min > 2])
	}
	id, err := parseBatchID(a[0])
	if err != nil {
		return 0, 0, err
	}
	row, err := strconv.ParseInt(a[1], 10, 64)
	if err != nil || row <= 0 {
		return 0, 0, usagef("row must be a positive number, not %q", a[1])
	}
	return id, row, nil
}

func (c *cli) rowSetCommand() *cobra.Command {
	var (
		actor actorFlag
		f     rowFilterFlags
	)
	cmd := &cobra.Command{
		Use:   "set <batch> [<row>] column=value...",
		Short: "Set cells of a row, or a column of the rows a filter selects, and validate them again",
		Long: `Set cells of a row (by the kind's column names, or the file's header) and
validate the row again. It prints the row as it is now: valid (the next
worker works it) or invalid with its new errors. Exit code 3 when the row
is still invalid.

Without a row, set one column of every row the filter selects (--state,
--code, --column, --where, or --all), validated again as one row is, in one
transaction recorded in the history as one edit; --dry-run counts them.`,
		Example: `  batchctl row set 7 12 amount=12.50
  batchctl row set 7 12 email=ann@example.com 'name=Ann Lee' --actor ann
  batchctl row set 7 country=PT --state invalid --column country --dry-run
  batchctl row set 7 country=DE --where "country = Germany"`,
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) >= 2 && strings.Contains(a[1], "=") {
				id, err := parseBatchID(a[0])
				if err != nil {
					return err
				}
				return c.bulkSet(cmd, id, a[1:], f, actor)
			}
			if f.given(cmd) {
				return usagef("a row and a filter: give <row>, or filter flags, not both")
			}
			id, rowNo, err := rowArgs(cmd, a, 3)
			if err != nil {
				return err
			}
			set := map[string]string{}
			for _, kv := range a[2:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || strings.TrimSpace(k) == "" {
					return usagef("%q is not column=value", kv)
				}
				set[strings.TrimSpace(k)] = v
			}
			app, err := c.open(cmd.Context(), readWrite)
			if err != nil {
				return err
			}
			defer app.close()
			if err := c.oneOffKind(cmd.Context(), app, id); err != nil {
				return err
			}
			r, err := app.engine.EditRow(cmd.Context(), batch.EditRowParams{TenantID: c.global.tenant, BatchID: id, RowNo: rowNo, Set: set, Actor: actor.get()})
			if err != nil {
				return err
			}
			if c.global.output == "json" {
				if err := c.json(toRowJSON(r)); err != nil {
					return err
				}
			} else {
				b, err := app.engine.Batch(cmd.Context(), batch.BatchParams{TenantID: c.global.tenant, ID: id})
				if err != nil {
					return err
				}
				fmt.Fprintf(c.stdout, "row %d  %s", r.RowNo, r.State)
				if len(r.Errors) > 0 {
					fmt.Fprintf(c.stdout, "  %s", rows.FieldErrors(r.Errors).Error())
				}
				if r.ValuesPurged {
					fmt.Fprintf(c.stdout, "\n    (values purged %s by %s)\n", purgedDate(b), b.ValuesPurgedBy)
				} else {
					fmt.Fprintf(c.stdout, "\n    %s\n", recordLine(b.Header, r.Values))
				}
			}
			if r.State != rows.StateValid {
				return exitWith(exitRows)
			}
			return nil
		},
	}
	f.add(cmd, "", true)
	actor.add(cmd)
	return cmd
}

func (c *cli) rowSkipCommand() *cobra.Command {
	var (
		actor  actorFlag
		reason string
		f      rowFilterFlags
	)
	cmd := &cobra.Command{
		Use:   "skip <batch> [<row>] --reason TEXT",
		Short: "Skip a row, or the rows a filter selects: a reviewer's decision that they need no work",
		Long: `Skip a row: a reviewer's decision that it needs no work, kept from then on
with the reason. Without a row, skip every row the filter selects (--state,
--code, --column, --where, or --all) that a reviewer may skip, in one change
recorded in the history with the filter and the number of rows; --dry-run
counts them.`,
		Example: `  batchctl row skip 7 12 --reason "duplicate of a phone order"
  batchctl row skip 7 --reason "dates lost" --code bad_date --dry-run
  batchctl row skip 7 --reason "not ours" --state invalid --where "country in (FR, IT)"`,
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				id, err := parseBatchID(a[0])
				if err != nil {
					return err
				}
				return c.bulkSkip(cmd, id, reason, f, actor)
			}
			if f.given(cmd) {
				return usagef("a row and a filter: give <row>, or filter flags, not both")
			}
			id, rowNo, err := rowArgs(cmd, a, 2)
			if err != nil {
				return err
			}
			if len(a) > 2 {
				return usagef("skip takes <batch> <row> only; give the reason with --reason")
			}
			if strings.TrimSpace(reason) == "" {
				return usagef("a skip needs --reason")
			}
			app, err := c.open(cmd.Context(), readWrite)
			if err != nil {
				return err
			}
			defer app.close()
			if err := app.engine.SkipRow(cmd.Context(), batch.SkipRowParams{TenantID: c.global.tenant, BatchID: id, RowNo: rowNo, Reason: reason, Actor: actor.get()}); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "row %d of batch %d skipped\n", rowNo, id)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the row is skipped (required; kept with the row and in the history)")
	f.add(cmd, "", true)
	actor.add(cmd)
	return cmd
}

func (c *cli) historyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "history <batch>",
		Short: "A batch's re-runs, edits and skips: who, when, what changed",
		Example: `  batchctl history 7
  batchctl history 7 -o json`,
		Args: batchIDArg,
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			app, err := c.open(cmd.Context(), readOnly)
			if err != nil {
				return err
			}
			defer app.close()
			h, err := c.history(cmd.Context(), app.engine, id)
			if err != nil {
				return err
			}
			if c.global.output == "json" {
				return c.json(toHistoryJSON(h))
			}
			if len(h) == 0 {
				fmt.Fprintf(c.stdout, "batch %d has no re-runs, edits or skips\n", id)
				return nil
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WHEN\tWHO\tWHAT\tROW\tDETAIL")
			for _, e := range h {
				row := ""
				if e.RowNo > 0 {
					row = strconv.FormatInt(e.RowNo, 10)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.At.UTC().Format("2006-01-02 15:04:05"), e.Actor, e.Action, row, describeDetail(e))
			}
			return tw.Flush()
		},
	}
}

// describeDetail is a history entry's detail in a line.
func describeDetail(e batchtype.HistoryEntry) string {
	var d struct {
		Changes  map[string]struct{ Old, New string } `json:"changes"`
		From, To string
		Reason   string
		Source   string
		Reparsed int64
		Added    int64
		Valid    int64
		Invalid  int64
		Kept     int64
		// Conventions are a re-run's old and new ones, when it changed
		// them.
		Conventions *struct{ Old, New rows.Conventions }
	}
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return string(e.Detail)
	}
	if line, ok := describeBulk(e); ok {
		return line
	}
	switch e.Action {
	case "edit":
		var parts []string
		for col, ch := range d.Changes {
			parts = append(parts, fmt.Sprintf("%s: %q -> %q", col, ch.Old, ch.New))
		}
		return strings.Join(parts, ", ") + fmt.Sprintf(" (%s -> %s)", d.From, d.To)
	case "skip":
		return fmt.Sprintf("%q (was %s)", d.Reason, d.From)
	case "settle":
		var st struct {
			From, To string
			ResultID string `json:"result_id"`
			Reason   string
		}
		_ = json.Unmarshal(e.Detail, &st)
		line := fmt.Sprintf("%s -> %s", st.From, st.To)
		if st.ResultID != "" {
			line += " (" + st.ResultID + ")"
		}
		if st.Reason != "" {
			line += fmt.Sprintf(": %q", st.Reason)
		}
		return line
	case "rerun":
		src := d.Source
		if src == "" {
			src = "stored rows"
		}
		line := fmt.Sprintf("%s: %d parsed again, %d added, %d valid, %d invalid, %d kept", src, d.Reparsed, d.Added, d.Valid, d.Invalid, d.Kept)
		if c := d.Conventions; c != nil {
			line += fmt.Sprintf("; conventions were %q, now %q", conventionsOrDefault(c.Old), conventionsOrDefault(c.New))
		}
		return line
	}
	return string(e.Detail)
}

// conventionsOrDefault describes conventions for the history.
func conventionsOrDefault(c rows.Conventions) string {
	if s := describeConventions(c); s != "" {
		return s
	}
	return "the defaults"
}

// history reads a batch's whole history, page by page.
func (c *cli) history(ctx context.Context, eng *batch.Engine, id int64) ([]batchtype.HistoryEntry, error) {
	var all []batchtype.HistoryEntry
	p := batch.HistoryParams{TenantID: c.global.tenant, BatchID: id, Limit: 500}
	for {
		page, err := eng.History(ctx, p)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < p.Limit {
			return all, nil
		}
		p.AfterID = page[len(page)-1].ID
	}
}
