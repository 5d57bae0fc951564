package storesql

import (
	"cmp"
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/migrations"
)

// Dialect is what differs between the engines in the text of the shared
// SQL. Statements are written once with $N placeholders (both engines
// accept them) and these tokens, which Expand replaces:
//
//	{t}           the schema prefix of the engine's tables ("rowfate". or nothing)
//	{now}         the database clock in the time columns' representation
//	{clock}       the clock as it is now, not as the transaction began
//	{ms}          one millisecond in that representation's arithmetic
//	{time}        the type of a time column
//	{for_update}  a row lock on the selected row (nothing on SQLite, whose
//	              BEGIN IMMEDIATE transactions are already exclusive)
//	{skip_locked} the claim's lock: FOR UPDATE OF ch SKIP LOCKED
type Dialect struct {
	// Engine names the migrations to apply.
	Engine migrations.Engine
	// Schema is the PostgreSQL schema of the engine's tables; "" on SQLite.
	Schema string
	// IngestTxRows, when above 0, writes an ingest's rows in transactions
	// of that many rows (see Store.BatchIngest); 0 writes them in one.
	IngestTxRows int
	// ShowIngest commits an ingest's batch row first and writes its rows
	// in one transaction, which accepts the batch (see
	// Store.ingestBeside): an engine whose writers run at once.
	ShowIngest bool
	// ValuesApart: a batch ingested by this store keeps its rows' values
	// in batch_values, one partition per batch (PostgreSQL, migration
	// 0014), not in batch_rows.payload, which is then the JSON null and
	// still holds the values of the batches ingested before. Readers take
	// the values row when there is one (valuesOf); a purge truncates the
	// batch's partition (Driver.ValuesTruncate).
	ValuesApart bool
	// BesideSessions is how many ingests that work their rows
	// (BatchIngestParams.WorkFunc) may at once write them in a second
	// session, beside the one that works them; the others write them
	// themselves. Each holds two connections, the first waiting on the
	// second: a pool of n connections gives at most (n-1)/2, so that the
	// first sessions can never hold every connection.
	BesideSessions int
	// MarkInTwo marks a claim's rows processing with a SELECT and an
	// UPDATE under one reading of the clock instead of one UPDATE ...
	// RETURNING: SQLite runs a RETURNING clause as a program per row that
	// stores the row, payload included, before the first is returned
	// (BenchmarkClaimMark in store/sqlite). Only for a dialect whose
	// clock is integer milliseconds and whose claim transaction excludes
	// every other writer, so that both statements see the same rows.
	MarkInTwo bool
	// PagePrelude, when set, runs in a keyset page's transaction before
	// the page is read (RowsList): on PostgreSQL "SET LOCAL enable_sort =
	// off". Right after a bulk load the planner's statistics say a batch
	// has a row or two, and it sorts the whole batch to return 50 rows
	// (28 ms at 100,000 rows, growing with the batch) instead of walking
	// the primary key, which is in row order already.
	PagePrelude string
	Now         string
	// Clock is Now at the moment of the statement; defaults to Now.
	Clock      string
	Ms         string
	TimeType   string
	ForUpdate  string
	SkipLocked string
	// InText renders "col is one of the texts in parameter $n, or $n is
	// NULL"; ListArg renders the argument for it.
	InText  func(col, param string) string
	ListArg func([]string) any
	// TextIn renders "col is one of the texts in parameter $n" (as
	// ListArg renders them, never NULL).
	TextIn func(col, param string) string
	// InInt renders "col is one of the integers in parameter $n";
	// IntListArg renders the argument for it.
	InInt      func(col, param string) string
	IntListArg func([]int64) any
	// InBytes renders "col is one of the byte strings in parameter $n";
	// BytesListArg renders the argument for it.
	InBytes      func(col, param string) string
	BytesListArg func([][]byte) any
	// JSONRecords renders a table u of the records of a JSON array
	// parameter (an array of objects, JSONArg), with the given columns and
	// SQL types, for INSERT ... SELECT.
	JSONRecords func(param string, cols map[string]string) string
	// WithRecords renders "WITH u AS (...)", the same table u as a common
	// table expression, for UPDATE ... FROM u. SQLite must materialise it:
	// as a FROM subquery its planner loops over the target's rows and
	// re-parses the whole JSON array for each one (quadratic: a 20,000-row
	// re-run took 7 minutes).
	WithRecords func(param string, cols map[string]string) string
	// JSONError renders a row's errors column: one field error of the row
	// rowExpr, with text members given as name and expression pairs
	// ("code", "$6", "message", "$7"); a NULL member is left out.
	JSONError func(rowExpr string, text ...string) string
	// HasTable returns a query whose one boolean answer says whether the
	// engine's table exists.
	HasTable func(table string) (string, []any)

	replacer *strings.Replacer
}

// Expand replaces the dialect's tokens in a statement.
func (d *Dialect) Expand(sql string) string {
	if d.replacer == nil {
		prefix := ""
		if d.Schema != "" {
			prefix = QuoteIdent(d.Schema) + "."
		}
		d.replacer = strings.NewReplacer(
			"{t}", prefix,
			"{now}", d.Now,
			"{clock}", cmp.Or(d.Clock, d.Now),
			"{ms}", d.Ms,
			"{time}", d.TimeType,
			"{for_update}", d.ForUpdate,
			"{skip_locked}", d.SkipLocked,
		)
	}
	return d.replacer.Replace(sql)
}

// QuoteIdent quotes an SQL identifier.
func QuoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// Querier is what the shared SQL needs of a connection or a transaction.
// Each driver adapts its own (pgx, database/sql) and maps its errors to the
// driver package's sentinels; a query that finds no row returns an error
// matching sql.ErrNoRows.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
}

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is a single-row result.
type Row interface {
	Scan(dest ...any) error
}

// Driver is what an engine supplies to the shared Store: its connection
// and transactions, its migration lock, and the two bulk statements whose
// fastest form differs between the engines.
type Driver interface {
	// DB returns a querier outside any transaction.
	DB() Querier
	// InTx runs f in one transaction, committed when f returns nil.
	InTx(ctx context.Context, f func(q Querier) error) error
	// LockMigrations serialises migrators inside q's transaction and
	// makes the schema the default for the migration's statements.
	LockMigrations(ctx context.Context, q Querier) error
	// InsertRows writes a batch's ingested rows.
	InsertRows(ctx context.Context, q Querier, p InsertRowsParams) error
	// ValuesPartition makes a batch's partition of batch_values, in
	// transactions of its own, before any of its rows is written
	// (Dialect.ValuesApart); a no-op on an engine without one.
	ValuesPartition(ctx context.Context, batchID int64) error
	// ValuesApart says whether a batch's values are in its partition of
	// batch_values (false for a batch ingested before there were any).
	ValuesApart(ctx context.Context, q Querier, batchID int64) (bool, error)
	// ValuesTruncate drops every value in a batch's partition, in q's
	// transaction: the purge of a batch whose values are apart.
	ValuesTruncate(ctx context.Context, q Querier, batchID int64, tenantID string) error
	// UpdateOutcomes writes a flush's row outcomes: only rows of the chunk
	// (row_no between first and last) that are still processing.
	UpdateOutcomes(ctx context.Context, q Querier, p UpdateOutcomesParams) error
	// Notify tells idle workers of other processes that rows are due,
	// on commit of q's transaction (a hint; they poll anyway).
	Notify(ctx context.Context, q Querier) error
	// NotifyEvent tells other processes, on commit of q's transaction,
	// that the batch appended the event with that sequence number.
	NotifyEvent(ctx context.Context, q Querier, batchID, seq int64) error
}

// InsertRowsParams are the parameters of Driver.InsertRows.
type InsertRowsParams struct {
	BatchID  int64
	TenantID string
	Rows     iter.Seq2[driver.IngestRow, error]
	// ValuesApart writes the rows' values into the batch's partition of
	// batch_values (Driver.ValuesApart), not into batch_rows.payload.
	ValuesApart bool
}

// UpdateOutcomesParams are the parameters of Driver.UpdateOutcomes.
type UpdateOutcomesParams struct {
	BatchID     int64
	TenantID    string
	First, Last int64
	Outcomes    []driver.RowOutcome
	// Deferred: the rows are still due, not processing, and the update
	// counts their attempt (driver.ChunkFlushParams.Deferred).
	Deferred bool
	// Sparse: the outcomes are a few rows spread over First..Last (the
	// key filter's false alarms over a whole batch), to be found one by
	// one rather than by a scan of the range.
	Sparse bool
}

// OutcomeRows is the condition on a row an outcome may be written to, and
// the attempts it then has: a row the claim marked processing, or, for a
// deferred lease, a row still due (its attempt counted now).
func (p UpdateOutcomesParams) OutcomeRows(alias string) (where, attempts string) {
	if p.Deferred {
		return alias + "state IN ('valid', 'retrying')", alias + "attempts + 1"
	}
	return alias + "state = 'processing'", alias + "attempts"
}

// Time scans a time column of either engine: a timestamptz (PostgreSQL)
// or integer milliseconds since the epoch (SQLite).
type Time struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (t *Time) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*t = Time{}
	case time.Time:
		*t = Time{Time: v, Valid: true}
	case int64:
		*t = Time{Time: time.UnixMilli(v), Valid: true}
	default:
		return &scanError{v}
	}
	return nil
}

// Ptr returns the time, or nil when NULL.
func (t Time) Ptr() *time.Time {
	if !t.Valid {
		return nil
	}
	tm := t.Time
	return &tm
}

type scanError struct{ v any }

func (e *scanError) Error() string { return "storesql: cannot scan a time from " + typeName(e.v) }

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "text"
	case []byte:
		return "bytes"
	case float64:
		return "a float"
	}
	return "an unknown type"
}

// ColumnList renders the columns of a JSONRecords table in a stable order.
func ColumnList(cols map[string]string, render func(name, typ string) string) string {
	names := make([]string, 0, len(cols))
	for n := range cols {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = render(n, cols[n])
	}
	return strings.Join(out, ", ")
}

// JSONArg renders records as the JSON array parameter of JSONRecords.
func JSONArg(records any) (string, error) {
	b, err := json.Marshal(records)
	return string(b), err
}

// tx adapts a Querier to driver.Tx, for a transactional processor.
type tx struct {
	q      Querier
	engine batchtype.Dialect
}

func txOf(q Querier, d *Dialect) driver.Tx { return tx{q: q, engine: batchtype.Dialect(d.Engine)} }

func (t tx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return t.q.Exec(ctx, sql, args...)
}

func (t tx) Query(ctx context.Context, sql string, args ...any) (driver.TxRows, error) {
	return t.q.Query(ctx, sql, args...)
}

func (t tx) QueryRow(ctx context.Context, sql string, args ...any) driver.TxRow {
	return t.q.QueryRow(ctx, sql, args...)
}

func (t tx) Engine() batchtype.Dialect { return t.engine }
