package sqlite

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/internal/storesql"
)

// insertGroup is how many rows one INSERT of InsertRows writes. Each
// execution of a statement costs about as much as writing a row in
// modernc's SQLite, so a prepared INSERT of 100 rows ingests about a fifth
// faster than one of a row (BenchmarkIngest). 50 or 250 rows measured
// about the same, 500 slower; numbered parameters (?NNN, to bind the batch
// and tenant once) three times slower, as the driver looks each one up by
// name; and an INSERT ... SELECT from a JSON array of the rows slower than
// a row at a time.
const insertGroup = 100

// insertColumns is one row of an INSERT: insertArgs appends its arguments.
// A row is due at once when its state is open (delayed for a retry), else
// never.
const insertColumns = `(?, ?, ?, ?, ?, ?, ?, CASE WHEN ? THEN ` + now + ` + ? END, ` + now + `, ?, ?, ?)`

// insertRowsSQL inserts n rows.
func insertRowsSQL(n int) string {
	return `INSERT INTO batch_rows
		(batch_id, row_no, tenant_id, chunk_no, state, payload, errors, next_attempt_at, updated_at, key_digest, result_id, attempts)
		VALUES ` + strings.Repeat(insertColumns+", ", n-1) + insertColumns
}

// insertArgs appends a row's arguments for insertColumns.
func insertArgs(args []any, p storesql.InsertRowsParams, r driver.IngestRow) ([]any, error) {
	payload, err := storesql.EncodeValues(r.Values)
	if err != nil {
		return nil, err
	}
	errs, err := storesql.EncodeErrors(r.Errors)
	if err != nil {
		return nil, err
	}
	var errArg, idArg any
	if errs != nil {
		errArg = string(errs)
	}
	if r.ResultID != "" {
		idArg = r.ResultID
	}
	return append(args, p.BatchID, r.RowNo, p.TenantID, r.ChunkNo, string(r.State), string(payload), errArg, r.State.Open(), r.RetryDelay.Milliseconds(),
		nilIfEmpty(r.KeyDigest), idArg, r.Attempts), nil
}

// InsertRows writes a batch's rows insertGroup at a time, with one prepared
// INSERT of that many rows; the rows left over at the end are one INSERT
// of their own.
func (liteDriver) InsertRows(ctx context.Context, q storesql.Querier, p storesql.InsertRowsParams) error {
	sq, stmts := q.(querier).q, q.(querier).stmts
	if stmts == nil {
		stmts = &txStmts{}
		defer stmts.close()
	}
	const width = 12 // the arguments of insertColumns
	args := make([]any, 0, insertGroup*width)
	var first, last int64 // the rows in args, for errors
	write := func() error {
		var err error
		if n := len(args) / width; n < insertGroup {
			_, err = sq.ExecContext(ctx, insertRowsSQL(n), args...)
		} else {
			if stmts.insert == nil {
				stmts.insert, err = sq.PrepareContext(ctx, insertRowsSQL(insertGroup))
			}
			if err == nil {
				_, err = stmts.insert.ExecContext(ctx, args...)
			}
		}
		if err != nil {
			return fmt.Errorf("insert rows %d to %d: %w", first, last, interpretError(err))
		}
		args = args[:0]
		return nil
	}
	for r, err := range p.Rows {
		if err != nil {
			return err
		}
		if len(args) == 0 {
			first = r.RowNo
		}
		last = r.RowNo
		if args, err = insertArgs(args, p, r); err != nil {
			return err
		}
		if len(args) == insertGroup*width {
			if err := write(); err != nil {
				return err
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	return write()
}

// nilIfEmpty stores an absent digest as NULL, not as an empty BLOB.
func nilIfEmpty(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// outcomeRecord is one outcome in UpdateOutcomes' JSON array. The result
// id travels as hex, so that its bytes are stored as given: as a JSON
// string, bytes that are not UTF-8 would come back as U+FFFD. The errors
// are EncodeErrors' JSON text, as a string, stored as it is.
type outcomeRecord struct {
	Row    int64   `json:"n"`
	State  string  `json:"s"`
	Result *string `json:"r"`
	Errors *string `json:"e"`
	Delay  int64   `json:"d"`
}

// updateOutcomesSQL is UpdateOutcomes' statement for the condition and
// attempts of UpdateOutcomesParams.OutcomeRows. The records are
// materialised (Dialect.WithRecords says why), from jsonb_each: json_each
// hands each record over as text, which json_extract parses again (a
// third of the statement's time). The chunk's range bounds the records,
// not the rows: on b.row_no it made the planner walk the range and scan
// every record for each row (quadratic, 40 ms a flush); on u.n each
// record finds its row by the primary key. One clock reading serves every
// row, as one transaction's now() does on PostgreSQL.
func updateOutcomesSQL(where, attempts string) string {
	return `WITH u AS MATERIALIZED (SELECT json_extract(value, '$.n') AS n, json_extract(value, '$.s') AS s,
			json_extract(value, '$.r') AS r, json_extract(value, '$.e') AS e, json_extract(value, '$.d') AS d
			FROM jsonb_each($1))
		UPDATE batch_rows AS b
		SET state = u.s, result_id = CAST(unhex(u.r) AS TEXT), errors = u.e, attempts = ` + attempts + `,
		    next_attempt_at = CASE WHEN u.s IN ` + storesql.OpenStates + ` THEN ` + now + ` + u.d END,
		    updated_at = ` + now + `
		FROM u
		WHERE b.batch_id = $2 AND b.row_no = u.n AND b.tenant_id = $3 AND ` + where + `
		  AND u.n BETWEEN $4 AND $5`
}

// UpdateOutcomes writes a flush's outcomes with one UPDATE from a JSON
// array of them, as PostgreSQL does from arrays: a fifth faster than a
// prepared UPDATE run per row, for a 1,000-row chunk (BenchmarkFlush).
// Most of what is left is SQLite writing the rows: an UPDATE ... FROM
// collects the new rows first, then finds each row again to write it.
func (liteDriver) UpdateOutcomes(ctx context.Context, q storesql.Querier, p storesql.UpdateOutcomesParams) error {
	recs := make([]outcomeRecord, 0, len(p.Outcomes))
	// An UPDATE ... FROM takes one of a row's records, any one; one
	// statement per outcome recorded the first, as this keeps it.
	seen := make(map[int64]struct{}, len(p.Outcomes))
	for _, o := range p.Outcomes {
		if _, dup := seen[o.RowNo]; dup {
			continue
		}
		seen[o.RowNo] = struct{}{}
		rec := outcomeRecord{Row: o.RowNo, State: string(o.State), Delay: o.RetryDelay.Milliseconds()}
		if o.Error != nil {
			b, err := storesql.EncodeErrors([]rows.FieldError{*o.Error})
			if err != nil {
				return err
			}
			s := string(b)
			rec.Errors = &s
		}
		if o.ResultID != "" {
			s := hex.EncodeToString([]byte(o.ResultID))
			rec.Result = &s
		}
		recs = append(recs, rec)
	}
	arg, err := storesql.JSONArg(recs)
	if err != nil {
		return err
	}
	where, attempts := p.OutcomeRows("b.")
	if _, err := q.Exec(ctx, updateOutcomesSQL(where, attempts), arg, p.BatchID, p.TenantID, p.First, p.Last); err != nil {
		return fmt.Errorf("record %d outcomes: %w", len(recs), err)
	}
	return nil
}
