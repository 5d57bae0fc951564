package customers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch"
)

// ProcessTx upserts a chunk's customers in the engine's flush transaction.
// It tries the whole chunk at once (one statement on PostgreSQL) under a
// savepoint; if a row fails, it rolls back to the savepoint and upserts row
// by row, each under its own savepoint, so one bad row costs only itself
// and the transaction stays usable for the others. A database error that a
// retry may clear (a dropped connection) fails the whole call: the engine
// rolls it back and retries the chunk.
//
// On SQLite the customers that do not exist yet are inserted first, with
// no savepoint open (insertFreshSQLite), and only the others take the
// savepoint path; after a chunk of mostly existing customers, the next
// insertFreshChunks take it at once.
func (p *Processor) ProcessTx(ctx context.Context, tx batch.Tx, cs []Customer) ([]batch.Result, error) {
	tenant := tenantOf(ctx)
	if tx.Engine() == Postgres {
		return p.upsertChunk(ctx, tx, tenant, cs)
	}
	if p.upsertsDue.Load() > 0 {
		p.upsertsDue.Add(-1)
		return p.upsertChunk(ctx, tx, tenant, cs)
	}
	out := make([]batch.Result, len(cs))
	left, err := insertFreshSQLite(ctx, tx, tenant, cs, out)
	if err != nil || len(left) == 0 {
		return out, err
	}
	if len(left) > len(cs)/2 {
		// Mostly customers that exist (a re-import): the next chunks are
		// upserted at once rather than tried twice.
		p.upsertsDue.Store(insertFreshChunks)
	}
	rest := make([]Customer, len(left))
	for j, i := range left {
		rest[j] = cs[i]
	}
	res, err := p.upsertChunk(ctx, tx, tenant, rest)
	if err != nil {
		return nil, err
	}
	for j, i := range left {
		out[i] = res[j]
	}
	return out, nil
}

// upsertChunk upserts customers under a savepoint, all at once and then,
// if that fails, one by one.
func (p *Processor) upsertChunk(ctx context.Context, tx batch.Tx, tenant string, cs []Customer) ([]batch.Result, error) {
	if _, err := tx.Exec(ctx, `SAVEPOINT customers_chunk`); err != nil {
		return nil, err
	}
	ids, err := p.upsertAll(ctx, tx, tenant, cs)
	if err == nil {
		out := make([]batch.Result, len(cs))
		for i, id := range ids {
			out[i].ID = strconv.FormatInt(id, 10)
		}
		_, err := tx.Exec(ctx, `RELEASE SAVEPOINT customers_chunk`)
		return out, err
	}
	if ctx.Err() != nil || errors.Is(err, batch.ErrTransient) {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT customers_chunk`); err != nil {
		return nil, err
	}
	out := make([]batch.Result, len(cs))
	for i, c := range cs {
		if _, err := tx.Exec(ctx, `SAVEPOINT customers_row`); err != nil {
			return nil, err
		}
		var id int64
		err := tx.QueryRow(ctx, upsertSQL, upsertArgs(tenant, c)...).Scan(&id)
		switch {
		case err == nil:
			out[i].ID = strconv.FormatInt(id, 10)
			if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT customers_row`); err != nil {
				return nil, err
			}
		case ctx.Err() != nil || errors.Is(err, batch.ErrTransient):
			return nil, err
		default:
			// A row the table refuses (a constraint): retrying it will
			// not help.
			out[i].Err = batch.Permanent(fmt.Errorf("upsert customer %s: %w", c.Email, err))
			if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT customers_row`); err != nil {
				return nil, err
			}
		}
	}
	_, err = tx.Exec(ctx, `RELEASE SAVEPOINT customers_chunk`)
	return out, err
}

// upsertAll upserts a chunk: on PostgreSQL one statement over unnest'ed
// arrays (one round trip instead of one per row), on SQLite one statement
// per sqliteUpsertRows rows.
func (p *Processor) upsertAll(ctx context.Context, tx batch.Tx, tenant string, cs []Customer) ([]int64, error) {
	if tx.Engine() == Postgres {
		return p.upsertAllPostgres(ctx, tx, tenant, cs)
	}
	ids := make([]int64, len(cs))
	for start := 0; start < len(cs); start += sqliteUpsertRows {
		group := cs[start:min(start+sqliteUpsertRows, len(cs))]
		args := make([]any, 0, 7*len(group))
		for _, c := range group {
			args = append(args, upsertArgs(tenant, c)...)
		}
		byEmail, err := customerIDs(ctx, tx, sqliteUpsertSQL(len(group)), args)
		if err != nil {
			return nil, fmt.Errorf("upsert %d customers: %w", len(group), err)
		}
		for i, c := range group {
			id, ok := byEmail[strings.ToLower(c.Email)]
			if !ok {
				return nil, fmt.Errorf("upsert returned no id for %s", c.Email)
			}
			ids[start+i] = id
		}
	}
	return ids, nil
}

// insertFreshSQLite inserts the customers of a chunk that do not exist
// yet, sqliteUpsertRows a statement, sets their results in out and returns
// the indexes of the others, in order: those that exist, a repeat of an
// email within the chunk, a row the table refuses. It opens no savepoint
// and none of its statements needs one: SQLite writes every page a
// savepoint or a statement that may abort half-way touches to a
// sub-journal first, and upserting a first import's customers (each one
// on another page of the email index) spent an eighth of the import
// writing that journal. INSERT OR IGNORE cannot abort half-way: a row in
// conflict is skipped, and RETURNING names the rows inserted.
func insertFreshSQLite(ctx context.Context, tx batch.Tx, tenant string, cs []Customer, out []batch.Result) ([]int, error) {
	var left []int
	for start := 0; start < len(cs); start += sqliteUpsertRows {
		group := cs[start:min(start+sqliteUpsertRows, len(cs))]
		args := make([]any, 0, 7*len(group))
		keys := make([]string, len(group))
		for i, c := range group {
			a := upsertArgs(tenant, c)
			keys[i] = a[1].(string)
			args = append(args, a...)
		}
		byEmail, err := customerIDs(ctx, tx, sqliteInsertSQL(len(group)), args)
		switch {
		case errors.Is(err, batch.ErrConflict) && ctx.Err() == nil:
			// A row the table refuses (a trigger's RAISE): the statement
			// stopped, and its rows, inserted or not, take the savepoint
			// path, which upserts the inserted ones again and finds the
			// refused one.
			byEmail = nil
		case err != nil:
			return nil, fmt.Errorf("insert %d customers: %w", len(group), err)
		}
		for i, k := range keys {
			// Only the first row of an email in the statement can be the
			// one inserted; a repeat was skipped and is upserted after it.
			if id, ok := byEmail[k]; ok {
				out[start+i].ID = strconv.FormatInt(id, 10)
				delete(byEmail, k)
				continue
			}
			left = append(left, start+i)
		}
	}
	return left, nil
}

// sqliteInsertSQL inserts n customers (upsertArgs's 7 parameters each)
// that do not exist yet, skipping any that does, and returns the email
// and id of each one inserted.
func sqliteInsertSQL(n int) string {
	return `INSERT OR IGNORE INTO customers (tenant_id, email, name, country, signup_date, amount, updated_at) VALUES ` +
		sqliteValues(n) + ` RETURNING email, id`
}

// sqliteValues is the VALUES list of n customers.
func sqliteValues(n int) string {
	return strings.Repeat(`(?, ?, ?, ?, ?, ?, ?), `, n-1) + `(?, ?, ?, ?, ?, ?, ?)`
}

// sqliteUpsertRows is how many customers one statement upserts on
// SQLite: the statement is parsed for every call (the engine's Tx has no
// prepared statements), and one statement per customer spent a third of
// an import's time in SQLite's parser.
const sqliteUpsertRows = 100

// sqliteUpsertSQL is upsertSQL for n customers at once, with ? parameters
// (7 a customer, in upsertArgs's order), returning each one's email and
// id. A customer twice in it is upserted twice, in order, as row by row.
func sqliteUpsertSQL(n int) string {
	return `INSERT INTO customers (tenant_id, email, name, country, signup_date, amount, updated_at) VALUES ` + sqliteValues(n) +
		` ON CONFLICT (tenant_id, email) DO UPDATE SET name = excluded.name,
		country = COALESCE(excluded.country, customers.country),
		signup_date = excluded.signup_date,
		amount = COALESCE(excluded.amount, customers.amount),
		updated_at = excluded.updated_at
	RETURNING email, id`
}

// upsertAllPostgres upserts a chunk with one statement. PostgreSQL refuses
// to update the same row twice in one INSERT ... ON CONFLICT, so repeated
// emails are folded first, the last row winning as it would row by row;
// every row with that email gets the one customer id.
//
// A chunk of customers none of which exists yet (a first import) is
// inserted without ON CONFLICT: PostgreSQL's speculative insertion, which
// ON CONFLICT needs, made the upsert 1.6 times as slow as a plain INSERT
// of the same rows. A plain INSERT that meets an existing customer fails
// at that row with a unique violation, rolled back to the caller's
// savepoint, and the chunk is upserted; after one such chunk the next
// insertFreshChunks are upserted at once, so that a re-import pays for no
// failed INSERT but every so often one that fails at its first row.
func (p *Processor) upsertAllPostgres(ctx context.Context, tx batch.Tx, tenant string, cs []Customer) ([]int64, error) {
	last := make(map[string]int, len(cs))
	keys := make([]string, len(cs))
	for i, c := range cs {
		keys[i] = strings.ToLower(c.Email)
		last[keys[i]] = i
	}
	n := len(last)
	var (
		emails, names, dates = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		// NULL: not in the file, keep the stored value.
		countries, amounts = make([]*string, 0, n), make([]*string, 0, n)
	)
	for i, c := range cs {
		if last[keys[i]] != i {
			continue
		}
		country, amount := optionals(c)
		emails = append(emails, keys[i])
		names = append(names, c.Name)
		dates = append(dates, c.SignupDate.Format(time.DateOnly))
		countries = append(countries, nullable(country))
		amounts = append(amounts, nullable(amount))
	}
	args := []any{emails, names, countries, dates, amounts, tenant}
	var byEmail map[string]int64
	err := errors.ErrUnsupported
	if p.upsertsDue.Load() <= 0 {
		byEmail, err = customerIDs(ctx, tx, insertChunkSQL, args)
		if errors.Is(err, batch.ErrConflict) && ctx.Err() == nil {
			if _, rerr := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT customers_chunk`); rerr != nil {
				return nil, rerr
			}
			p.upsertsDue.Store(insertFreshChunks)
		}
	} else {
		p.upsertsDue.Add(-1)
	}
	if err != nil {
		if byEmail, err = customerIDs(ctx, tx, upsertChunkSQL, args); err != nil {
			return nil, fmt.Errorf("upsert %d customers: %w", len(emails), err)
		}
	}
	ids := make([]int64, len(cs))
	for i, k := range keys {
		id, ok := byEmail[k]
		if !ok {
			return nil, fmt.Errorf("upsert returned no id for %s", k)
		}
		ids[i] = id
	}
	return ids, nil
}

// nullable turns an upsert argument (a string, or nil for NULL) into an
// array element.
func nullable(v any) *string {
	if s, ok := v.(string); ok {
		return &s
	}
	return nil
}

// insertFreshChunks is how many chunks are upserted at once after a
// chunk's plain INSERT met an existing customer (PostgreSQL) or mostly
// existing ones (SQLite).
const insertFreshChunks = 16

// The chunk statements over unnest'ed arrays: $1 emails, $2 names, $3
// countries, $4 dates, $5 amounts, $6 the tenant. insertChunkSQL fails at
// the first customer that exists; upsertChunkSQL updates it.
const (
	chunkRowsSQL = `INSERT INTO customers (tenant_id, email, name, country, signup_date, amount, updated_at)
		SELECT $6, e, n, c, d::date, a::numeric, now()
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(e, n, c, d, a)`
	insertChunkSQL = chunkRowsSQL + `
		RETURNING email, id`
	upsertChunkSQL = chunkRowsSQL + `
		ON CONFLICT (tenant_id, email) DO UPDATE SET name = excluded.name,
			country = COALESCE(excluded.country, customers.country),
			signup_date = excluded.signup_date,
			amount = COALESCE(excluded.amount, customers.amount),
			updated_at = excluded.updated_at
		RETURNING email, id`
)

// customerIDs runs a chunk statement and returns the customers' ids by
// email.
func customerIDs(ctx context.Context, tx batch.Tx, stmt string, args []any) (map[string]int64, error) {
	rs, err := tx.Query(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	byEmail := make(map[string]int64, 128)
	for rs.Next() {
		var (
			email string
			id    int64
		)
		if err := rs.Scan(&email, &id); err != nil {
			rs.Close()
			return nil, err
		}
		byEmail[email] = id
	}
	if err := rs.Err(); err != nil {
		rs.Close()
		return nil, err
	}
	if err := rs.Close(); err != nil {
		return nil, err
	}
	return byEmail, nil
}
