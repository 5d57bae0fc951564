package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/postgres"
)

// BenchmarkRowsFilterPage pages through the problem rows of a
// 1,000,000-row batch (100,000 invalid: every tenth row) by keyset, 100
// rows a page, as the admin page's grid does: one op is one page, read
// from where the last left off, starting over at the end. The issue's
// bound is 100 ms of server time per page. The batch is written once by
// the store's own ingest (COPY), in the benchmark's schema, and left
// unanalysed, as a batch just imported is, through a pool readied as
// batchctl readies its own (ConfigurePool). With -short (make test runs
// every benchmark once) it has 10,000 rows.
func BenchmarkRowsFilterPage(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 10_000
	}
	s := teststore.PostgresCustomPlans(b)
	ctx := context.Background()
	start := time.Now()
	bt, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "a", Kind: "k", SourceName: "big.csv",
		Header: []string{"email", "name", "signup_date"}, Rows: problemRows(n)})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("ingested %d rows in %s", n, time.Since(start).Round(time.Millisecond))
	inv := []rows.State{rows.StateInvalid}
	for _, c := range []struct {
		name string
		f    driver.RowFilter
	}{
		{"state=invalid", driver.RowFilter{States: inv}},
		{"state=invalid,failed&code=bad_date", driver.RowFilter{States: []rows.State{rows.StateInvalid, rows.StateFailed}, Code: "bad_date"}},
		{"code=required&column=email", driver.RowFilter{Code: "required", Column: "email"}},
		// One invalid row in a hundred: the worst of the three codes.
		{"state=invalid&code=out_of_range", driver.RowFilter{States: inv, Code: "out_of_range"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var after int64
			for b.Loop() {
				page, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "a", BatchID: bt.ID, Filter: c.f, AfterRowNo: after, Limit: 100})
				if err != nil {
					b.Fatal(err)
				}
				after = 0
				if len(page) == 100 {
					after = page[99].RowNo
				}
			}
		})
	}
	bulkOnce(b, s, bt.ID)
}

// bulkOnce times, once each, the two bulk writes over the batch's
// problem rows: an edit of every bad_date row (read by keyset pages of
// 1,000, as the engine reads them, and written a page per statement) and
// a skip of every other invalid row in one statement. Logged (-v), not
// reported: a second run would find nothing left to change.
func bulkOnce(b *testing.B, s *postgres.Store, id int64) {
	ctx := context.Background()
	start := time.Now()
	var (
		edits []driver.RowEdit
		after int64
	)
	for {
		page, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "a", BatchID: id, Filter: driver.RowFilter{States: []rows.State{rows.StateInvalid}, Code: "bad_date"},
			AfterRowNo: after, Limit: 1000})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range page {
			r.Values[2] = "2024-02-01"
			edits = append(edits, driver.RowEdit{RowNo: r.RowNo, From: r.State, State: rows.StateValid, Values: r.Values})
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].RowNo
	}
	read := time.Since(start)
	n, err := s.RowsEdit(ctx, driver.RowsEditParams{TenantID: "a", BatchID: id, Rows: edits, Actor: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("bulk edit of %d rows: read %s, written %s", n, read.Round(time.Millisecond), (time.Since(start) - read).Round(time.Millisecond))
	start = time.Now()
	n, err = s.RowsBulk(ctx, driver.RowsBulkParams{TenantID: "a", BatchID: id, Action: driver.BulkSkip, Message: "skipped by bench: x",
		Filter: driver.RowFilter{States: []rows.State{rows.StateInvalid}}, Actor: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("bulk skip of %d rows: %s", n, time.Since(start).Round(time.Millisecond))
}

// problemRows yields n rows of three cells, every tenth invalid: half of
// those with a bad_date on signup_date, most of the others required on
// email, one in a hundred out_of_range on signup_date.
func problemRows(n int) func(yield func(driver.IngestRow, error) bool) {
	return func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			no := int64(i + 2)
			r := driver.IngestRow{RowNo: no, ChunkNo: int64(i / 1000), State: rows.StateValid,
				Values: []string{fmt.Sprintf("user%d@example.com", i), "Ann Example", "2024-01-31"}}
			if i%10 == 9 {
				e := rows.FieldError{Row: no, Column: "email", Code: rows.CodeRequired, Message: "is required"}
				switch {
				case i%1000 == 999:
					e = rows.FieldError{Row: no, Column: "signup_date", Code: rows.CodeOutOfRange, Message: "is out of range"}
				case i%20 == 19:
					e = rows.FieldError{Row: no, Column: "signup_date", Code: rows.CodeBadDate, Message: "not a date"}
				}
				r.State, r.Errors = rows.StateInvalid, []rows.FieldError{e}
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}
