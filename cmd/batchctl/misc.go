package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
)

func cmdBatches(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("batches", flag.ContinueOnError)
	limit := fs.Int("limit", 20, "at most this many batches")
	pos, err := e.parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 0 {
		return 0, usagef("batches takes no arguments")
	}
	a, err := e.open(ctx, false)
	if err != nil {
		return 0, err
	}
	defer a.close()
	bs, err := a.store.BatchList(ctx, batch.BatchListParams{TenantID: e.tenant, Limit: *limit})
	if err != nil {
		return 0, err
	}
	if e.output == "json" {
		return exitOK, e.json(bs)
	}
	for _, b := range bs {
		if err := e.printBatch(b, false); err != nil {
			return 0, err
		}
	}
	if len(bs) == 0 {
		fmt.Fprintln(e.stdout, "no batches")
	}
	return exitOK, nil
}

func cmdMigrate(ctx context.Context, e *env, args []string) (int, error) {
	pos, err := e.parse(flag.NewFlagSet("migrate", flag.ContinueOnError), args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 0 {
		return 0, usagef("migrate takes no arguments")
	}
	a, err := e.open(ctx, true) // opening migrates
	if err != nil {
		return 0, err
	}
	a.close()
	if e.output == "json" {
		return exitOK, e.json(map[string]string{"status": "migrated"})
	}
	fmt.Fprintln(e.stdout, "schema is up to date")
	return exitOK, nil
}

func cmdKinds(_ context.Context, e *env, args []string) (int, error) {
	pos, err := e.parse(flag.NewFlagSet("kinds", flag.ContinueOnError), args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 0 {
		return 0, usagef("kinds takes no arguments")
	}
	// Listing kinds needs no database: the processors are never called.
	reg, err := registry(nil, customers.SQLite)
	if err != nil {
		return 0, err
	}
	kinds := reg.Kinds()
	if e.output == "json" {
		return exitOK, e.json(kinds)
	}
	for _, k := range kinds {
		cols := make([]string, len(k.Columns))
		for i, c := range k.Columns {
			cols[i] = c.Name
		}
		fmt.Fprintf(e.stdout, "%s\t%s\n  columns: %s\n  required: %s\n", k.Name, k.Description, strings.Join(cols, ", "), strings.Join(k.Required, ", "))
	}
	return exitOK, nil
}
