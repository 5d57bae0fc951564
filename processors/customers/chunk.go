package customers

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rowfate/rowfate/batch"
)

var _ batch.ChunkProcessor[Customer] = (*Processor)(nil)

// ProcessChunk upserts a chunk's customers in one transaction: one commit
// (one WAL flush) per chunk instead of one per row, which is where the time
// of the row-at-a-time path goes. If any row fails, the transaction is
// rolled back and the chunk is done row by row, so that one bad row costs
// only itself.
func (p *Processor) ProcessChunk(ctx context.Context, cs []Customer) ([]batch.Result, error) {
	ids, err := p.upsertAll(ctx, cs)
	if err == nil {
		out := make([]batch.Result, len(cs))
		for i, id := range ids {
			out[i].ID = strconv.FormatInt(id, 10)
		}
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	out := make([]batch.Result, len(cs))
	for i, c := range cs {
		out[i].ID, out[i].Err = p.Process(ctx, c)
	}
	return out, nil
}

func (p *Processor) upsertAll(ctx context.Context, cs []Customer) ([]int64, error) {
	if p.d == Postgres {
		return p.upsertAllPostgres(ctx, cs)
	}
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	stmt, err := tx.PrepareContext(ctx, upsertSQL)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	ids := make([]int64, len(cs))
	for i, c := range cs {
		if err := stmt.QueryRowContext(ctx, upsertArgs(c)...).Scan(&ids[i]); err != nil {
			return nil, fmt.Errorf("upsert customer %s: %w", c.Email, err)
		}
	}
	return ids, tx.Commit()
}

// upsertAllPostgres upserts a chunk with one statement over unnest'ed
// arrays: one round trip instead of one per row. PostgreSQL refuses to
// update the same row twice in one INSERT ... ON CONFLICT, so repeated
// emails are folded first, the last row winning as it would row by row;
// every row with that email gets the one customer id.
func (p *Processor) upsertAllPostgres(ctx context.Context, cs []Customer) ([]int64, error) {
	last := make(map[string]int, len(cs))
	keys := make([]string, len(cs))
	for i, c := range cs {
		keys[i] = strings.ToLower(c.Email)
		last[keys[i]] = i
	}
	var (
		emails, names, dates []string
		countries, amounts   []*string // NULL: not in the file, keep the stored value
	)
	for i, c := range cs {
		if last[keys[i]] != i {
			continue
		}
		args := upsertArgs(c)
		emails = append(emails, keys[i])
		names = append(names, args[1].(string))
		dates = append(dates, args[3].(string))
		countries = append(countries, nullable(args[2]))
		amounts = append(amounts, nullable(args[4]))
	}
	rs, err := p.db.QueryContext(ctx, `INSERT INTO customers (email, name, country, signup_date, amount, updated_at)
		SELECT e, n, c, d::date, a::numeric, now()
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(e, n, c, d, a)
		ON CONFLICT (email) DO UPDATE SET name = excluded.name,
			country = COALESCE(excluded.country, customers.country),
			signup_date = excluded.signup_date,
			amount = COALESCE(excluded.amount, customers.amount),
			updated_at = excluded.updated_at
		RETURNING email, id`, emails, names, countries, dates, amounts)
	if err != nil {
		return nil, fmt.Errorf("upsert %d customers: %w", len(emails), err)
	}
	defer rs.Close()
	byEmail := make(map[string]int64, len(emails))
	for rs.Next() {
		var (
			email string
			id    int64
		)
		if err := rs.Scan(&email, &id); err != nil {
			return nil, err
		}
		byEmail[email] = id
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("upsert %d customers: %w", len(emails), err)
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
