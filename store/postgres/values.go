package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/store/internal/storesql"
)

// A batch's values are in its own partition of batch_values (migration
// 0014, docs/RETENTION.md), so that its purge is a TRUNCATE.

// valuesGroupRows is how many rows a COPY into batch_rows takes before
// their values are copied into batch_values. One connection runs one COPY
// at a time, so the two alternate; a group's values are held meanwhile:
// about 1 MB at the customers file's 88 bytes a row, against a COPY's
// start of well under a millisecond per group.
const valuesGroupRows = 10000

// rowColumns are batch_rows' columns a COPY writes when the values go to
// batch_values: payload keeps its default, the JSON null.
var rowColumns = []string{"batch_id", "row_no", "tenant_id", "chunk_no", "state", "errors", "next_attempt_at", "updated_at", "key_digest", "result_id", "attempts"}

// valueColumns are batch_values' columns a COPY writes.
var valueColumns = []string{"batch_id", "row_no", "tenant_id", "payload"}

// copyApart copies src's rows into batch_rows and their values into
// batch_values, a group of valuesGroupRows rows at a time, both streamed
// from the engine's rows.
func (d pgDriver) copyApart(ctx context.Context, tx copier, src *copySource) error {
	src.apart = true
	for !src.done {
		src.rowNos, src.payloads = src.rowNos[:0], src.payloads[:0]
		if err := copyBinary(ctx, tx, pgx.Identifier{d.s.schema, "batch_rows"}, rowColumns, src.fillRows); err != nil {
			if src.err != nil {
				return src.err // the source's own error, not COPY's wrapping of it
			}
			return fmt.Errorf("copy rows: %w", interpretError(err))
		}
		if len(src.rowNos) == 0 {
			continue
		}
		if err := copyBinary(ctx, tx, pgx.Identifier{d.s.schema, "batch_values"}, valueColumns, src.fillValues()); err != nil {
			return fmt.Errorf("copy values: %w", interpretError(err))
		}
	}
	return nil
}

// valuesPartition is the quoted name of batch id's partition.
func (s *Store) valuesPartition(id int64) string {
	return storesql.QuoteIdent(s.schema) + "." + storesql.QuoteIdent("batch_values_"+strconv.FormatInt(id, 10))
}

// ValuesPartition makes batch id's partition of batch_values: FOR VALUES
// FROM (id) TO (id + 1), as the pool's own user (the tables' owner; a
// tenant role may create no table). The table is made first and then
// attached: ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on
// batch_values, which running imports' ROW EXCLUSIVE does not conflict
// with, where CREATE TABLE ... PARTITION OF takes ACCESS EXCLUSIVE and
// would wait for every import to commit (TestValuesAttachBesideImport).
// Both in one transaction, so a failure leaves no table behind.
func (d pgDriver) ValuesPartition(ctx context.Context, id int64) error {
	part, parent := d.s.valuesPartition(id), storesql.QuoteIdent(d.s.schema)+".batch_values"
	err := pgx.BeginFunc(ctx, d.s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE `+part+` (LIKE `+parent+`)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `ALTER TABLE `+parent+` ATTACH PARTITION `+part+
			` FOR VALUES FROM (`+strconv.FormatInt(id, 10)+`) TO (`+strconv.FormatInt(id+1, 10)+`)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("make partition of values: %w", interpretError(err))
	}
	return nil
}

// ValuesApart says whether batch id has its partition of batch_values;
// a batch ingested before migration 0014 has none.
func (d pgDriver) ValuesApart(ctx context.Context, q storesql.Querier, id int64) (bool, error) {
	var apart bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits
		WHERE inhrelid = to_regclass($1) AND inhparent = to_regclass($2))`,
		d.s.valuesPartition(id), storesql.QuoteIdent(d.s.schema)+".batch_values").Scan(&apart)
	return apart, err
}

// ValuesTruncate empties batch id's partition in q's transaction: its
// ACCESS EXCLUSIVE lock is the partition's alone, held to the purge's
// commit, and waits only for the readers of that batch's values. In a
// tenant's transaction it runs as the owner (asOwner), the batch's
// tenant checked by the purge under its lock first.
func (d pgDriver) ValuesTruncate(ctx context.Context, q storesql.Querier, id int64, tenant string) error {
	pq := q.(querier)
	truncate := func() error {
		_, err := pq.Exec(ctx, `TRUNCATE `+d.s.valuesPartition(id))
		return err
	}
	if pq.tenant != "" {
		return d.asOwner(ctx, pq, tenant, "truncate values", truncate)
	}
	return truncate()
}

// ConfigurePool readies a pool configuration for the store: each new
// connection runs with plan_cache_mode = force_custom_plan. The values of
// each batch are a partition of batch_values, and a prepared statement
// run a sixth time makes PostgreSQL build a generic plan, which locks
// every partition of the table and every partition's key: with 3,000
// batches, 6,003 locks for one read of one row, past the shared lock
// table of a default server (64 a connection) a few thousand batches
// on. A custom plan, made for the statement's own batch, locks that
// batch's partition alone (5 locks). Set in AfterConnect rather than as
// a startup parameter, which a pooler such as PgBouncer may refuse; an
// AfterConnect already set runs first.
func ConfigurePool(cfg *pgxpool.Config) {
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		_, err := conn.Exec(ctx, `SET plan_cache_mode = force_custom_plan`)
		return err
	}
}
