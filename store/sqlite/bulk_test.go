package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/internal/storesql"
)

// The statements issue 28 replaced, kept to measure the new ones against
// (the benchmarks) and to check that both write the same rows (the tests).

// updateOutcomesPerRow is UpdateOutcomes before issue 28: one prepared
// UPDATE per outcome.
func updateOutcomesPerRow(ctx context.Context, q storesql.Querier, p storesql.UpdateOutcomesParams) error {
	where, attempts := p.OutcomeRows("")
	upd, err := q.(querier).q.PrepareContext(ctx, `UPDATE batch_rows
		SET state = ?, result_id = ?, errors = ?, attempts = `+attempts+`,
		    next_attempt_at = CASE WHEN ? IN `+storesql.OpenStates+` THEN `+now+` + ? END,
		    updated_at = `+now+`
		WHERE batch_id = ? AND row_no = ? AND tenant_id = ? AND `+where+`
		  AND row_no BETWEEN ? AND ?`)
	if err != nil {
		return err
	}
	defer upd.Close()
	for _, o := range p.Outcomes {
		var errArg, idArg any
		if o.Error != nil {
			b, err := storesql.EncodeErrors([]rows.FieldError{*o.Error})
			if err != nil {
				return err
			}
			errArg = string(b)
		}
		if o.ResultID != "" {
			idArg = o.ResultID
		}
		if _, err := upd.ExecContext(ctx, string(o.State), idArg, errArg, string(o.State), o.RetryDelay.Milliseconds(),
			p.BatchID, o.RowNo, p.TenantID, p.First, p.Last); err != nil {
			return fmt.Errorf("record row %d: %w", o.RowNo, interpretError(err))
		}
	}
	return nil
}

// insertRowsPerRow is InsertRows before issue 28: one prepared INSERT,
// run per row.
func insertRowsPerRow(ctx context.Context, q storesql.Querier, p storesql.InsertRowsParams) error {
	ins, err := q.(querier).q.PrepareContext(ctx, `INSERT INTO batch_rows
		(batch_id, row_no, tenant_id, chunk_no, state, payload, errors, next_attempt_at, updated_at, key_digest, result_id, attempts)
		VALUES (?, ?, ?, ?, ?, ?, ?, CASE WHEN ? THEN `+now+` + ? END, `+now+`, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	for r, err := range p.Rows {
		if err != nil {
			return err
		}
		payload, err := storesql.EncodeValues(r.Values)
		if err != nil {
			return err
		}
		errs, err := storesql.EncodeErrors(r.Errors)
		if err != nil {
			return err
		}
		var errArg any
		if errs != nil {
			errArg = string(errs)
		}
		var idArg any
		if r.ResultID != "" {
			idArg = r.ResultID
		}
		if _, err := ins.ExecContext(ctx, p.BatchID, r.RowNo, p.TenantID, r.ChunkNo, string(r.State), string(payload), errArg, r.State.Open(), r.RetryDelay.Milliseconds(),
			nilIfEmpty(r.KeyDigest), idArg, r.Attempts); err != nil {
			return fmt.Errorf("insert row %d: %w", r.RowNo, interpretError(err))
		}
	}
	return nil
}

type insertFunc func(context.Context, storesql.Querier, storesql.InsertRowsParams) error

// benchRows are n rows of 8 cells in 1,000-row chunks, as an import
// makes them: one in 20 invalid with an error, the others with a key
// digest; one in 10 of those worked at ingest (an outcome with it).
func benchRows(n int) []driver.IngestRow {
	out := make([]driver.IngestRow, n)
	for i := range out {
		r := driver.IngestRow{RowNo: int64(i + 2), ChunkNo: int64(i / 1000), State: rows.StateValid,
			Values: []string{fmt.Sprintf("C%07d", i), "Jane <O'Neil>", fmt.Sprintf("jane.%d@example.com", i), "Nürnberg",
				"1234.50", "2024-03-01", "", "a note, with \"quotes\""}}
		switch {
		case i%20 == 7:
			r.State = rows.StateInvalid
			r.Errors = []rows.FieldError{{Row: r.RowNo, Column: "email", Field: "Email", Code: "invalid_email", Message: "must be a valid email"}}
		case i%10 == 3:
			r.State, r.ResultID, r.Attempts = rows.StateSucceeded, fmt.Sprintf("cus_%d", i), 1
		case i%10 == 5:
			r.State, r.Attempts, r.RetryDelay = rows.StateRetrying, 1, 1500*time.Millisecond
			r.Errors = []rows.FieldError{{Row: r.RowNo, Code: "processor", Message: "503 from upstream"}}
		}
		if r.State != rows.StateInvalid {
			d := sha256.Sum256([]byte(r.Values[0]))
			r.KeyDigest = d[:]
		}
		out[i] = r
	}
	return out
}

// benchOutcomes are a flush's outcomes for rows first..last: most
// succeeded, some to retry, some failed, one malformed (unknown).
func benchOutcomes(first, last int64) []driver.RowOutcome {
	var out []driver.RowOutcome
	for n := first; n <= last; n++ {
		o := driver.RowOutcome{RowNo: n, State: rows.StateSucceeded, ResultID: fmt.Sprintf("cus_%d", n)}
		switch n % 20 {
		case 3, 9:
			o = driver.RowOutcome{RowNo: n, State: rows.StateRetrying, RetryDelay: time.Duration(n%7+1) * time.Second,
				Error: &rows.FieldError{Code: "processor", Message: fmt.Sprintf("503 <%d> & \u2028 \"later\"", n)}}
		case 11:
			o = driver.RowOutcome{RowNo: n, State: rows.StateFailed, Error: &rows.FieldError{Code: "processor", Message: "declined"}}
		case 17:
			o = driver.RowOutcome{RowNo: n, State: rows.StateUnknown, Error: &rows.FieldError{Code: "unknown", Message: "no answer"}}
		}
		out = append(out, o)
	}
	return out
}

func benchStore(tb testing.TB) (*Store, liteDriver) {
	tb.Helper()
	s, err := Open(testdb.SQLitePath(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s, liteDriver{s}
}

// ingest writes rs as batch id in transactions of 5,000 rows, as
// Store.BatchIngest does on SQLite.
func ingest(tb testing.TB, d liteDriver, insert insertFunc, id int64, rs []driver.IngestRow) {
	tb.Helper()
	ctx := context.Background()
	for i := 0; i < len(rs); i += 5000 {
		part := rs[i:min(i+5000, len(rs))]
		if err := d.InTx(ctx, func(q storesql.Querier) error {
			return insert(ctx, q, storesql.InsertRowsParams{BatchID: id, TenantID: "t", Rows: sliceOf(part)})
		}); err != nil {
			tb.Fatal(err)
		}
	}
}

func sliceOf(rs []driver.IngestRow) iter.Seq2[driver.IngestRow, error] {
	return func(yield func(driver.IngestRow, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// storedRow is a row as stored, its times made relative: the clock moves
// between two writes, the delay it sets must not.
type storedRow struct {
	RowNo, Chunk                int64
	Tenant, State, Payload      string
	Errors, Result              sql.NullString
	Attempts                    int64
	DueAfter                    sql.NullInt64
	Digest                      []byte
	ResultType, ErrType, PayTyp string
}

func readRows(tb testing.TB, s *Store, id int64) []storedRow {
	tb.Helper()
	rs, err := s.db.Query(`SELECT row_no, chunk_no, tenant_id, state, payload, errors, result_id, attempts,
			next_attempt_at - updated_at, key_digest, typeof(result_id), typeof(errors), typeof(payload)
		FROM batch_rows WHERE batch_id = ? ORDER BY row_no`, id)
	if err != nil {
		tb.Fatal(err)
	}
	defer rs.Close()
	var out []storedRow
	for rs.Next() {
		var r storedRow
		if err := rs.Scan(&r.RowNo, &r.Chunk, &r.Tenant, &r.State, &r.Payload, &r.Errors, &r.Result, &r.Attempts,
			&r.DueAfter, &r.Digest, &r.ResultType, &r.ErrType, &r.PayTyp); err != nil {
			tb.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func sameRows(t *testing.T, what string, got, want []storedRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s: row %d\n got %+v\nwant %+v", what, got[i].RowNo, got[i], want[i])
		}
	}
}

// TestUpdateOutcomesAsPerRow: the one UPDATE writes what the per-row
// statements wrote, for a claimed and a deferred lease, and leaves alone
// the rows the condition excludes: out of the chunk's range, of another
// tenant, not processing (or, deferred, not due).
func TestUpdateOutcomesAsPerRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, d := benchStore(t)
	rs := benchRows(3000)
	odd := "id \xff\xfe not UTF-8 \x00 <&>"
	for _, deferred := range []bool{false, true} {
		for id, update := range map[int64]func(context.Context, storesql.Querier, storesql.UpdateOutcomesParams) error{1: updateOutcomesPerRow, 2: d.UpdateOutcomes} {
			id += map[bool]int64{false: 0, true: 10}[deferred]
			ingest(t, d, d.InsertRows, id, rs)
			if !deferred {
				if _, err := s.db.Exec(`UPDATE batch_rows SET state = 'processing', attempts = attempts + 1 WHERE batch_id = ? AND state IN ('valid', 'retrying')`, id); err != nil {
					t.Fatal(err)
				}
			}
			outs := benchOutcomes(1000, 2100) // past the chunk's last row
			outs[4].ResultID = odd
			outs = append(outs, driver.RowOutcome{RowNo: 1010, State: rows.StateFailed, Error: &rows.FieldError{Code: "dup", Message: "a second outcome"}})
			if err := d.InTx(ctx, func(q storesql.Querier) error {
				return update(ctx, q, storesql.UpdateOutcomesParams{BatchID: id, TenantID: "t", First: 1000, Last: 2001, Outcomes: outs, Deferred: deferred})
			}); err != nil {
				t.Fatal(err)
			}
		}
		base := map[bool]int64{false: 0, true: 10}[deferred]
		want, got := readRows(t, s, base+1), readRows(t, s, base+2)
		sameRows(t, fmt.Sprintf("deferred %v", deferred), got, want)
		if want[1004-2].Result.String != odd || want[1011-2].State != "failed" || want[2002-2].State == "succeeded" {
			t.Fatalf("outcomes not written as expected: %+v, %+v, %+v", want[1004-2], want[1011-2], want[2002-2])
		}
	}
}

// TestUpdateOutcomesTenant: another tenant's rows are not written.
func TestUpdateOutcomesTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, d := benchStore(t)
	ingest(t, d, d.InsertRows, 1, benchRows(50))
	if err := d.InTx(ctx, func(q storesql.Querier) error {
		return d.UpdateOutcomes(ctx, q, storesql.UpdateOutcomesParams{BatchID: 1, TenantID: "other", First: 2, Last: 51, Outcomes: benchOutcomes(2, 51), Deferred: true})
	}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM batch_rows WHERE state IN ('failed', 'unknown')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows of tenant t written by tenant other's flush (%v)", n, err)
	}
}

// BenchmarkFlush measures UpdateOutcomes alone, in its transaction but
// without the commit (the same pages are written either way): one
// 1,000-row chunk's outcomes in a 100,000-row batch, its rows processing.
func BenchmarkFlush(b *testing.B) {
	for _, v := range []struct {
		name   string
		update func(liteDriver) func(context.Context, storesql.Querier, storesql.UpdateOutcomesParams) error
	}{
		{"perrow", func(liteDriver) func(context.Context, storesql.Querier, storesql.UpdateOutcomesParams) error {
			return updateOutcomesPerRow
		}},
		{"set", func(d liteDriver) func(context.Context, storesql.Querier, storesql.UpdateOutcomesParams) error {
			return d.UpdateOutcomes
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			s, d := benchStore(b)
			ingest(b, d, d.InsertRows, 1, benchRows(100_000))
			update := v.update(d)
			chunk := int64(0)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				first, last := chunk*1000+2, chunk*1000+1001
				chunk = (chunk + 1) % 100
				if _, err := s.db.Exec(`UPDATE batch_rows SET state = 'processing' WHERE batch_id = 1 AND row_no BETWEEN ? AND ?`, first, last); err != nil {
					b.Fatal(err)
				}
				outs := benchOutcomes(first, last)
				tx, err := s.db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				err = update(ctx, querier{q: tx}, storesql.UpdateOutcomesParams{BatchID: 1, TenantID: "t", First: first, Last: last, Outcomes: outs})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkIngest measures InsertRows: a 100,000-row batch of 1,000-row
// chunks, in transactions of 5,000 rows.
func BenchmarkIngest(b *testing.B) {
	rs := benchRows(100_000)
	for _, v := range insertVariants() {
		b.Run(v.name, func(b *testing.B) {
			s, d := benchStore(b)
			b.ResetTimer()
			for i := range b.N {
				ingest(b, d, v.insert(d), int64(i+1), rs)
				b.StopTimer()
				if _, err := s.db.Exec(`DELETE FROM batch_rows`); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*len(rs))/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func insertVariants() []struct {
	name   string
	insert func(liteDriver) insertFunc
} {
	return []struct {
		name   string
		insert func(liteDriver) insertFunc
	}{
		{"perrow", func(d liteDriver) insertFunc { return insertRowsPerRow }},
		{"new", func(d liteDriver) insertFunc { return d.InsertRows }},
	}
}

// TestInsertRowsAsPerRow: InsertRows stores what the per-row INSERT
// stored, column by column and type by type.
func TestInsertRowsAsPerRow(t *testing.T) {
	t.Parallel()
	s, d := benchStore(t)
	rs := benchRows(2345)
	rs[3].ResultID = "id \xff\xfe not UTF-8 \x00 <&>"
	rs[4].Values = nil
	rs[5].Values = []string{strings.Repeat("x", 5000), "\xff"}
	ingest(t, d, insertRowsPerRow, 1, rs)
	ingest(t, d, d.InsertRows, 2, rs)
	sameRows(t, "insert", readRows(t, s, 2), readRows(t, s, 1))
}

// TestInsertRowsConflict: a row written twice fails the insert as a
// conflict, naming the rows of its INSERT, whether it is in a full group
// or in the rows left over.
func TestInsertRowsConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, d := benchStore(t)
	rs := benchRows(250)
	ingest(t, d, d.InsertRows, 1, rs)
	for _, again := range [][]driver.IngestRow{rs[:insertGroup], rs[240:]} {
		err := d.InTx(ctx, func(q storesql.Querier) error {
			return d.InsertRows(ctx, q, storesql.InsertRowsParams{BatchID: 1, TenantID: "t", Rows: sliceOf(again)})
		})
		want := fmt.Sprintf("insert rows %d to %d", again[0].RowNo, again[len(again)-1].RowNo)
		if !errors.Is(err, driver.ErrConflict) || !strings.Contains(fmt.Sprint(err), want) {
			t.Fatalf("rows %d-%d written again: %v, want a conflict saying %q", again[0].RowNo, again[len(again)-1].RowNo, err, want)
		}
	}
}

// The claim's marking (storesql's markProcessing, an UPDATE ... RETURNING)
// and the same in two statements, for the report on issue 28: on SQLite a
// RETURNING clause runs a trigger program per row that stores the row,
// payload included, before the first one is returned. Within the claim's
// BEGIN IMMEDIATE transaction nothing writes between a SELECT and an
// UPDATE with the same condition and one clock reading, so they take the
// same rows.
const (
	markCond = `batch_id = $1 AND row_no BETWEEN $2 AND $3 AND tenant_id = $4
		AND state IN ` + storesql.ClaimableStates + ` AND next_attempt_at <= `
	markReturning = `UPDATE batch_rows SET state = 'processing', attempts = attempts + 1, updated_at = ` + now + `
		WHERE ` + markCond + now + ` RETURNING row_no, payload, attempts`
	markSelect = `SELECT row_no, payload, attempts + 1 FROM batch_rows WHERE ` + markCond + `$5 ORDER BY row_no`
	markUpdate = `UPDATE batch_rows SET state = 'processing', attempts = attempts + 1, updated_at = ` + now + `
		WHERE ` + markCond + `$5`
)

func readMarked(tb testing.TB, rs *sql.Rows, err error) int {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		var (
			row, attempts int64
			payload       string
		)
		if err := rs.Scan(&row, &payload, &attempts); err != nil {
			tb.Fatal(err)
		}
		n++
	}
	if err := rs.Err(); err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkClaimMark measures marking a 1,000-row chunk's due rows
// processing and reading them, in a 100,000-row batch.
func BenchmarkClaimMark(b *testing.B) {
	for _, form := range []string{"returning", "select_update"} {
		b.Run(form, func(b *testing.B) {
			ctx := context.Background()
			s, d := benchStore(b)
			rs := benchRows(100_000)
			for i := range rs {
				rs[i].State, rs[i].Errors, rs[i].RetryDelay = rows.StateValid, nil, 0
			}
			ingest(b, d, d.InsertRows, 1, rs)
			chunk := int64(0)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				first, last := chunk*1000+2, chunk*1000+1001
				chunk = (chunk + 1) % 100
				if _, err := s.db.Exec(`UPDATE batch_rows SET state = 'valid' WHERE batch_id = 1 AND row_no BETWEEN ? AND ?`, first, last); err != nil {
					b.Fatal(err)
				}
				tx, err := s.db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var n int
				if form == "returning" {
					r, err := tx.QueryContext(ctx, markReturning, 1, first, last, "t")
					n = readMarked(b, r, err)
				} else {
					var clock int64
					if err := tx.QueryRowContext(ctx, `SELECT `+now).Scan(&clock); err != nil {
						b.Fatal(err)
					}
					r, err := tx.QueryContext(ctx, markSelect, 1, first, last, "t", clock)
					n = readMarked(b, r, err)
					if _, err := tx.ExecContext(ctx, markUpdate, 1, first, last, "t", clock); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if n != 1000 {
					b.Fatalf("%d rows marked, want 1000", n)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
