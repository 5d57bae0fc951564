package batchctl

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// problemStates are the states a user has to look at.
var problemStates = []rows.State{rows.StateInvalid, rows.StateFailed, rows.StateDead, rows.StateUnknown}

// batchExit is the exit code a batch's outcome maps to: 3 only for a
// batch that finished (or was cancelled) with problem rows, or that its
// failure bound paused. A batch still running has no outcome yet, so
// `import --no-work && batchctl worker` goes on to the worker.
func batchExit(b *batchtype.Batch) int {
	if b.Status == batchtype.StatusRunning && b.Paused && b.FailuresExceeded() {
		return exitRows // paused by its failure bound: a person must act
	}
	if b.Status == batchtype.StatusRunning {
		return exitOK
	}
	for _, s := range problemStates {
		if b.Counts[s] > 0 {
			return exitRows
		}
	}
	return exitOK
}

// printBatch writes a batch summary; hints adds the commands to dig deeper.
func (c *cli) printBatch(w io.Writer, b *batchtype.Batch, hints bool) error {
	if c.global.output == "json" {
		return jsonTo(w, toBatchJSON(b))
	}
	status := string(b.Status)
	if b.Paused && b.Status == batchtype.StatusRunning {
		status = "paused" // running, but no worker claims its rows
	}
	fmt.Fprintf(w, "batch %d  %s  %s  (%s, tenant %s)\n", b.ID, status, b.SourceName, b.Kind, b.TenantID)
	if hints && len(b.Recalc) > 0 {
		// What a filtered export (or a recalculation) read, as the
		// flags that would read it again; a listing leaves it out.
		fmt.Fprintf(w, "filter: %s\n", filterFlags(b.Recalc))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, s := range rows.States {
		if n := b.Counts[s]; n > 0 {
			fmt.Fprintf(tw, "  %s\t%d\t\n", s, n)
		}
	}
	fmt.Fprintf(tw, "  total\t%d\t\n", b.Counts.Total())
	if b.SkippedEmpty > 0 {
		fmt.Fprintf(tw, "  empty rows skipped\t%d\t\n", b.SkippedEmpty)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if b.ValuesPurgedAt != nil {
		fmt.Fprintf(w, "values purged %s by %s: rows keep their outcomes and errors, not their cells\n", purgedDate(b), b.ValuesPurgedBy)
	}
	if !b.MaxFailed.IsZero() {
		failures, worked := batchtype.FailureBound(b.Counts)
		fmt.Fprintf(w, "max-failed %s: %d of %d rows failed so far\n", b.MaxFailed, failures, worked)
		if b.Paused && b.Status == batchtype.StatusRunning && b.MaxFailed.Exceeded(failures, worked) {
			fmt.Fprintf(w, "paused: its failures passed its max-failed %s; list them: batchctl rows %d --state failed%s\n", b.MaxFailed, b.ID, c.hint())
			fmt.Fprintf(w, "to go on, resume it with a higher bound, or none: batchctl resume %d --max-failed none%s\n", b.ID, c.hint())
		}
	}
	if !hints {
		return nil
	}
	for _, wn := range b.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warningText(wn))
	}
	if s := describeConventions(b.Conventions); s != "" {
		fmt.Fprintln(w, s)
	}
	if err := printErrorCounts(w, b.ErrorCounts); err != nil {
		return err
	}
	for _, s := range problemStates {
		if b.Counts[s] > 0 {
			fmt.Fprintf(w, "list the %s rows: batchctl rows %d --state %s%s\n", s, b.ID, s, c.hint())
		}
	}
	return nil
}

// outputFile opens path for a command whose output is a file, or standard
// output for "" and "-". The file is written to a temporary name and
// renamed on commit, so a failed write never leaves half a file behind.
func (c *cli) outputFile(path string) (w io.Writer, commit func() error, abort func(), err error) {
	if path == "" || path == "-" {
		return c.stdout, func() error { return nil }, func() {}, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".batchctl-*.tmp")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create %s: %w", path, unwrapPath(err))
	}
	// CreateTemp makes the file private (0600); a report or export is an
	// ordinary file, so give it the mode os.Create would (0666 less umask:
	// Chmod does not apply the umask, so take the common 022 off).
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, nil, nil, fmt.Errorf("create %s: %w", path, err)
	}
	commit = func() error {
		if err := tmp.Close(); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
	abort = func() { tmp.Close(); os.Remove(tmp.Name()) }
	return tmp, commit, abort, nil
}

// unwrapPath drops the *PathError wrapper when the message names the file.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// recordLine shows a record as header=value pairs.
func recordLine(header, values []string) string {
	parts := make([]string, len(values))
	for i, v := range values {
		h := fmt.Sprintf("#%d", i+1)
		if i < len(header) {
			h = header[i]
		}
		parts[i] = fmt.Sprintf("%s=%q", h, v)
	}
	return strings.Join(parts, " ")
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// kindNames lists names for "known kinds: ..." messages.
func kindNames(ks []batch.KindInfo) string {
	var names []string
	for _, k := range ks {
		if k.Direction != batch.DirectionRecalc {
			names = append(names, k.Name)
		}
	}
	return strings.Join(names, ", ")
}

// printErrorCounts writes the count of field errors by column and code, so
// that a user sees what is wrong with a file before reading any row.
func printErrorCounts(w io.Writer, counts []rows.ErrorCount) error {
	if len(counts) == 0 {
		return nil
	}
	fmt.Fprintln(w, "errors by column and code:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range counts {
		col := c.Column
		if col == "" {
			col = "(row)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\n", col, c.Code, c.Count)
	}
	return tw.Flush()
}

// describeConventions says how a file's numbers and dates were read, when
// that is anything but the default.
func describeConventions(c rows.Conventions) string {
	var parts []string
	if c.Number.Decimal != 0 || len(c.Number.Groups) > 0 {
		parts = append(parts, "numbers as "+c.Number.Describe())
	}
	if c.DateOrder != rows.DateOrderUnknown {
		d := "dates " + c.DateOrder.Words()
		if c.DateOrderRow > 0 {
			d += fmt.Sprintf(", as row %d reads no other way", c.DateOrderRow)
		}
		parts = append(parts, d)
	}
	if c.DateFormat != rows.DateFormatUndeclared {
		parts = append(parts, "compact dates as "+string(c.DateFormat))
	}
	for _, r := range c.Renames {
		parts = append(parts, fmt.Sprintf("column %q as %s", r.From, r.To))
	}
	if len(parts) == 0 {
		return ""
	}
	return "read " + strings.Join(parts, ", ")
}

// filterFlags spells a batch's recorded filter (Batch.Recalc) as the
// flags of export and recalc, in name order: "--batch 3 --state
// succeeded --where 'country=DE'".
func filterFlags(params map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		parts = append(parts, "--"+k+" "+shellQuote(params[k]))
	}
	return strings.Join(parts, " ")
}
