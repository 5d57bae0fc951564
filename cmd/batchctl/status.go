package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

func cmdStatus(ctx context.Context, e *env, args []string) (int, error) {
	pos, err := e.parse(flag.NewFlagSet("status", flag.ContinueOnError), args)
	if err != nil {
		return 0, err
	}
	id, err := batchArg(pos)
	if err != nil {
		return 0, err
	}
	a, err := e.open(ctx, false)
	if err != nil {
		return 0, err
	}
	defer a.close()
	b, err := a.store.BatchGet(ctx, batch.BatchGetParams{TenantID: e.tenant, ID: id})
	if err != nil {
		return 0, err
	}
	if err := e.printBatch(b, true); err != nil {
		return 0, err
	}
	if e.output == "text" {
		for _, w := range b.Warnings {
			fmt.Fprintf(e.stdout, "warning: %s\n", w)
		}
	}
	if b.Status == batch.StatusRunning {
		return exitOK, nil
	}
	return batchExit(b), nil
}

func batchArg(pos []string) (int64, error) {
	if len(pos) != 1 {
		return 0, usagef("need exactly one <batch> id, got %d arguments", len(pos))
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("batch id must be a positive number, not %q", pos[0])
	}
	return id, nil
}

// printBatch writes a batch summary; hints adds the commands to dig deeper.
func (e *env) printBatch(b *batch.Batch, hints bool) error {
	if e.output == "json" {
		return e.json(b)
	}
	fmt.Fprintf(e.stdout, "batch %d  %s  %s  (%s, tenant %s)\n", b.ID, b.Status, b.SourceName, b.Kind, b.TenantID)
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
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
	if !hints {
		return nil
	}
	for _, s := range []rows.State{rows.StateInvalid, rows.StateFailed, rows.StateDead, rows.StateUnknown} {
		if b.Counts[s] > 0 {
			fmt.Fprintf(e.stdout, "list the %s rows: batchctl rows %d --state %s%s\n", s, b.ID, s, e.flagsHint())
		}
	}
	return nil
}

// flagsHint repeats the flags a follow-up command needs to see the same
// batch.
func (e *env) flagsHint() string {
	h := ""
	if e.tenant != "default" {
		h += " --tenant " + e.tenant
	}
	if e.database != "rowfate.db" && !isPostgres(e.database) {
		h += " --database " + e.database
	}
	return h
}
