package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

func cmdRows(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("rows", flag.ContinueOnError)
	state := fs.String("state", "", "only rows in this state")
	limit := fs.Int("limit", 100, "at most this many rows (0: all)")
	after := fs.Int64("after", 0, "only rows after this row number")
	pos, err := e.parse(fs, args)
	if err != nil {
		return 0, err
	}
	id, err := batchArg(pos)
	if err != nil {
		return 0, err
	}
	if *state != "" && !rows.State(*state).Valid() {
		return 0, usagef("unknown state %q", *state)
	}
	if *limit < 0 {
		// A negative limit would list nothing and exit 0, which a script
		// would read as "no such rows".
		return 0, usagef("--limit must be 0 (all rows) or more, not %d", *limit)
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
	var out []batch.Row
	cursor := *after
	for *limit == 0 || len(out) < *limit {
		page := 500
		if *limit > 0 {
			page = min(page, *limit-len(out))
		}
		rs, err := a.store.RowsList(ctx, batch.RowsListParams{TenantID: e.tenant, BatchID: id, State: rows.State(*state), AfterRowNo: cursor, Limit: page})
		if err != nil {
			return 0, err
		}
		out = append(out, rs...)
		if len(rs) < page {
			break
		}
		cursor = rs[len(rs)-1].RowNo
	}
	if e.output == "json" {
		if out == nil {
			out = []batch.Row{}
		}
		return exitOK, e.json(out)
	}
	for _, r := range out {
		fmt.Fprintf(e.stdout, "row %d  %s", r.RowNo, r.State)
		if r.ResultID != "" {
			fmt.Fprintf(e.stdout, "  id=%s", r.ResultID)
		}
		if len(r.Errors) > 0 {
			fmt.Fprintf(e.stdout, "  %s", rows.FieldErrors(r.Errors).Error())
		}
		fmt.Fprintf(e.stdout, "\n    %s\n", recordLine(b.Header, r.Values))
	}
	if len(out) == 0 {
		fmt.Fprintln(e.stdout, "no rows")
	}
	return exitOK, nil
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
