package storesql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
)

var _ driver.RetentionStore = (*Store)(nil)

// retentionStatements are the statements of the retention policies and
// of purges, expanded once for the dialect.
type retentionStatements struct {
	set, list, remove                  string
	byAge, byPolicy, purgeState, clear string
	mark                               string
}

// purgedPayload is what a purged row's payload holds: the JSON null, as
// small as a jsonb gets, so that the update fits the row's page (HOT on
// PostgreSQL) and the column stays NOT NULL.
const purgedPayload = "null"

// ended is the condition on a batch b that may lose its values: it ended
// and still has them.
const ended = `b.values_purged_at IS NULL AND b.finished_at IS NOT NULL AND b.status IN ('finished', 'cancelled')
	AND ($1 = '' OR b.tenant_id = $1)`

func newRetentionStatements(d *Dialect) retentionStatements {
	cols := `b.id, b.tenant_id, b.kind, b.finished_at`
	// A kind's own policy, else its tenant's policy for every kind.
	days := `COALESCE(
		(SELECT p.values_days FROM {t}retention_policies p WHERE p.tenant_id = b.tenant_id AND p.kind = b.kind),
		(SELECT p.values_days FROM {t}retention_policies p WHERE p.tenant_id = b.tenant_id AND p.kind = ''))`
	return retentionStatements{
		set: d.Expand(`INSERT INTO {t}retention_policies (tenant_id, kind, values_days, created_at, updated_at)
			VALUES ($1, $2, $3, {now}, {now})
			ON CONFLICT (tenant_id, kind) DO UPDATE SET values_days = excluded.values_days, updated_at = excluded.updated_at
			RETURNING created_at, updated_at`),
		list: d.Expand(`SELECT kind, values_days, created_at, updated_at FROM {t}retention_policies
			WHERE tenant_id = $1 ORDER BY kind`),
		remove: d.Expand(`DELETE FROM {t}retention_policies WHERE tenant_id = $1 AND kind = $2`),
		byAge: d.Expand(`SELECT ` + cols + ` FROM {t}batches b WHERE ` + ended + `
			AND b.finished_at < {now} - CAST($2 AS bigint) * {ms} ORDER BY b.id LIMIT $3`),
		byPolicy: d.Expand(`SELECT ` + cols + ` FROM {t}batches b WHERE ` + ended + `
			AND b.finished_at < {now} - CAST(` + days + ` AS bigint) * 86400000 * {ms} ORDER BY b.id LIMIT $2`),
		// The batch row, under the lock a purge holds to its commit: a
		// re-run or a retry that would reopen the batch waits for it, and
		// then sees the values gone.
		purgeState: d.Expand(`SELECT status, kind, finished_at, values_purged_at, values_purged_by FROM {t}batches
			WHERE id = $1 AND tenant_id = $2{for_update}`),
		// updated_at is the time of the row's outcome, which a purge
		// does not change.
		clear: d.Expand(`UPDATE {t}batch_rows SET payload = '` + purgedPayload + `' WHERE batch_id = $1 AND tenant_id = $2`),
		mark: d.Expand(`UPDATE {t}batches SET values_purged_at = {now}, values_purged_by = $3 WHERE id = $1 AND tenant_id = $2
			RETURNING values_purged_at`),
	}
}

// RetentionSet creates or replaces a tenant's policy for a kind.
func (s *Store) RetentionSet(ctx context.Context, p driver.RetentionSetParams) (*batchtype.RetentionPolicy, error) {
	if p.ValuesDays < 1 {
		return nil, fmt.Errorf("retention of %q: values days must be at least 1, not %d", p.Kind, p.ValuesDays)
	}
	var created, updated Time
	if err := s.drv.DB().QueryRow(ctx, s.rt.set, p.TenantID, p.Kind, p.ValuesDays).Scan(&created, &updated); err != nil {
		return nil, fmt.Errorf("set retention of %q: %w", p.Kind, err)
	}
	return &batchtype.RetentionPolicy{TenantID: p.TenantID, Kind: p.Kind, ValuesDays: p.ValuesDays,
		CreatedAt: created.Time, UpdatedAt: updated.Time}, nil
}

// RetentionList lists a tenant's policies by kind.
func (s *Store) RetentionList(ctx context.Context, tenantID string) ([]batchtype.RetentionPolicy, error) {
	rs, err := s.drv.DB().Query(ctx, s.rt.list, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list retention: %w", err)
	}
	defer rs.Close()
	out := []batchtype.RetentionPolicy{}
	for rs.Next() {
		var (
			r                batchtype.RetentionPolicy
			created, updated Time
		)
		if err := rs.Scan(&r.Kind, &r.ValuesDays, &created, &updated); err != nil {
			return nil, fmt.Errorf("list retention: %w", err)
		}
		r.TenantID, r.CreatedAt, r.UpdatedAt = tenantID, created.Time, updated.Time
		out = append(out, r)
	}
	return out, rs.Close()
}

// RetentionRemove removes a tenant's policy for a kind.
func (s *Store) RetentionRemove(ctx context.Context, tenantID, kind string) error {
	n, err := s.drv.DB().Exec(ctx, s.rt.remove, tenantID, kind)
	if err != nil {
		return fmt.Errorf("remove retention of %q: %w", kind, err)
	}
	if n == 0 {
		return fmt.Errorf("retention of %q: %w", kind, driver.ErrNotFound)
	}
	return nil
}

// ValuesPurge drops the values of a named batch, or of the ended batches
// past an age or their policy, a batch per transaction.
func (s *Store) ValuesPurge(ctx context.Context, p driver.ValuesPurgeParams) ([]batchtype.Purge, error) {
	p.By = cmp.Or(p.By, batchtype.PurgedByCommand)
	p.Actor = cmp.Or(p.Actor, p.By)
	if p.BatchID != 0 {
		if p.TenantID == "" {
			return nil, fmt.Errorf("purge batch %d: no tenant", p.BatchID)
		}
		pg, err := s.purgeBatch(ctx, p, p.TenantID, p.BatchID, true)
		if err != nil {
			return nil, err
		}
		return []batchtype.Purge{*pg}, nil
	}
	cands, err := s.purgeCandidates(ctx, p)
	if err != nil {
		return nil, err
	}
	out := []batchtype.Purge{}
	for _, c := range cands {
		pg, err := s.purgeBatch(ctx, p, c.TenantID, c.BatchID, false)
		if err != nil {
			return out, err
		}
		if pg != nil {
			out = append(out, *pg)
		}
	}
	return out, nil
}

// purgeCandidates lists the ended batches past the age or their policy.
func (s *Store) purgeCandidates(ctx context.Context, p driver.ValuesPurgeParams) ([]batchtype.Purge, error) {
	limit := cmp.Or(p.Limit, 100)
	var out []batchtype.Purge
	seen := map[int64]bool{}
	add := func(stmt string, args ...any) error {
		rs, err := s.drv.DB().Query(ctx, stmt, args...)
		if err != nil {
			return fmt.Errorf("find batches to purge: %w", err)
		}
		defer rs.Close()
		for rs.Next() {
			var (
				c   batchtype.Purge
				end Time
			)
			if err := rs.Scan(&c.BatchID, &c.TenantID, &c.Kind, &end); err != nil {
				return fmt.Errorf("find batches to purge: %w", err)
			}
			c.EndedAt = end.Time
			if !seen[c.BatchID] && len(out) < limit {
				seen[c.BatchID] = true
				out = append(out, c)
			}
		}
		return rs.Close()
	}
	if p.OlderThan > 0 {
		if err := add(s.rt.byAge, p.TenantID, p.OlderThan.Milliseconds(), limit); err != nil {
			return nil, err
		}
	}
	if p.Policy {
		if err := add(s.rt.byPolicy, p.TenantID, limit); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// purgeBatch drops one batch's values in a transaction: its chunks are
// locked first (a retry's and a re-run's order), then its row, whose
// status is checked under the lock. A running batch is ErrBatchRunning
// when named, and skipped (nil) when it was a candidate that a re-run
// reopened meanwhile.
func (s *Store) purgeBatch(ctx context.Context, p driver.ValuesPurgeParams, tenant string, id int64, named bool) (*batchtype.Purge, error) {
	var out *batchtype.Purge
	err := s.drv.InTx(ctx, func(q Querier) error {
		out = nil
		if err := s.lockChunksOf(ctx, q, tenant, id); err != nil {
			return err
		}
		var (
			status, kind, by string
			end, purged      Time
		)
		err := q.QueryRow(ctx, s.rt.purgeState, id, tenant).Scan(&status, &kind, &end, &purged, &by)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("purge batch %d: %w", id, driver.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("purge batch %d: %w", id, err)
		}
		pg := &batchtype.Purge{BatchID: id, TenantID: tenant, Kind: kind, By: p.By, EndedAt: end.Time}
		switch {
		case purged.Valid:
			pg.Already, pg.At, pg.By = true, purged.Time, by
			out = pg
			return nil
		case status != string(batchtype.StatusFinished) && status != string(batchtype.StatusCancelled):
			if named {
				return fmt.Errorf("purge batch %d: it is %s; its values are purged once it has finished or been cancelled: %w", id, status, driver.ErrBatchRunning)
			}
			return nil
		}
		// The batch's totals, not a count of its rows: a scan of a
		// 1,000,000-row batch costs 0.2 s.
		dests, counts := CountDests()
		if err := q.QueryRow(ctx, s.q.sumChunks, id).Scan(dests...); err != nil {
			return fmt.Errorf("count rows of batch %d: %w", id, err)
		}
		pg.Rows = counts().Total()
		out = pg
		if p.DryRun {
			return nil
		}
		return s.clearValues(ctx, q, p, pg)
	})
	return out, err
}

// clearValues drops the rows' values, marks the batch and records the
// purge in its history. A batch whose values are apart (Dialect.
// ValuesApart) loses them with a TRUNCATE of its partition, a few
// milliseconds whatever its size (docs/RETENTION.md); one ingested before
// keeps the UPDATE of batch_rows, 1.5 s per million rows.
func (s *Store) clearValues(ctx context.Context, q Querier, p driver.ValuesPurgeParams, pg *batchtype.Purge) error {
	apart, err := s.valuesApart(ctx, q, pg.BatchID)
	if err != nil {
		return err
	}
	if apart {
		// Its rows' batch_rows payload is the JSON null already: once
		// the partition is empty they read back purged.
		if err := s.drv.ValuesTruncate(ctx, q, pg.BatchID, pg.TenantID); err != nil {
			return fmt.Errorf("purge values of batch %d: %w", pg.BatchID, err)
		}
	} else if _, err := q.Exec(ctx, s.rt.clear, pg.BatchID, pg.TenantID); err != nil {
		return fmt.Errorf("purge values of batch %d: %w", pg.BatchID, err)
	}
	var at Time
	if err := q.QueryRow(ctx, s.rt.mark, pg.BatchID, pg.TenantID, p.By).Scan(&at); err != nil {
		return fmt.Errorf("mark batch %d purged: %w", pg.BatchID, err)
	}
	pg.At = at.Time
	detail := map[string]any{"by": p.By, "rows": pg.Rows}
	if p.OlderThan > 0 {
		detail["older_than"] = p.OlderThan.String()
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, s.r.historyInsert, pg.TenantID, pg.BatchID, nil, "purge", p.Actor, string(b)); err != nil {
		return fmt.Errorf("record history: %w", err)
	}
	return nil
}

// checkValuesKept fails with a *batchtype.ValuesPurgedError when the
// batch's values were purged: a change that needs them (a retry, a
// re-run, an edit) calls it after it locked the batch's chunks, the lock
// a purge takes first, so the two are serialised.
func (s *Store) checkValuesKept(ctx context.Context, q Querier, tenant string, id int64, what string) error {
	var (
		status, kind, by string
		end, purged      Time
	)
	err := q.QueryRow(ctx, s.rt.purgeState, id, tenant).Scan(&status, &kind, &end, &purged, &by)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("batch %d: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("batch %d: %w", id, err)
	}
	if purged.Valid {
		return &batchtype.ValuesPurgedError{BatchID: id, At: purged.Time, By: by, What: what}
	}
	return nil
}
