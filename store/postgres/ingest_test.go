package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/postgres"
)

// besideStore is a migrated store on a fresh schema with a scratch table
// that a WorkFunc writes its effects to, and a pool of maxConns.
func besideStore(t *testing.T, maxConns int32) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	cfg := testdb.PostgresSchema(t)
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := postgres.New(pool, &postgres.Config{Schema: testdb.SchemaOf(cfg)})
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE applied (row_no bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return s, pool
}

// numbered yields n valid rows in chunks of 1,000, then err if not nil;
// at is called before each row.
func numbered(n int, at func(i int), err error) func(yield func(driver.IngestRow, error) bool) {
	return func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			at(i)
			if !yield(driver.IngestRow{RowNo: int64(i + 2), ChunkNo: int64(i / 1000), State: rows.StateValid, Values: []string{fmt.Sprint(i)}}, nil) {
				return
			}
		}
		if err != nil {
			yield(driver.IngestRow{}, err)
		}
	}
}

// writeEffects is a WorkFunc that writes each row's effect in the
// ingest's transaction and marks it succeeded.
func writeEffects(ctx context.Context, tx driver.Tx, _ int64, rs []driver.IngestRow) error {
	for i := range rs {
		if _, err := tx.Exec(ctx, `INSERT INTO applied (row_no) VALUES ($1)`, rs[i].RowNo); err != nil {
			return err
		}
		rs[i].State, rs[i].ResultID = rows.StateSucceeded, fmt.Sprint(rs[i].RowNo)
	}
	return nil
}

// left counts batches, rows and effects.
func left(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var b, r, e int
	if err := pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM batches), (SELECT count(*) FROM batch_rows), (SELECT count(*) FROM applied)`).
		Scan(&b, &r, &e); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d batches, %d rows, %d effects", b, r, e)
}

// TestIngestBeside: on PostgreSQL an ingest commits its batch row first,
// so that others see it ingesting while its rows are worked; the rows
// worked inline are written by a second session, and a batch is only
// ever kept whole, with its effects, or not at all.
func TestIngestBeside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("seen while worked", func(t *testing.T) {
		t.Parallel()
		s, pool := besideStore(t, 4)
		reached, resume := make(chan struct{}), make(chan struct{})
		var shown bool
		done := make(chan error, 1)
		go func() {
			b, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "t", Kind: "k", Header: []string{"a"},
				ShownFunc: func() { shown = true },
				Rows: numbered(9_000, func(i int) {
					if i == 6_000 {
						close(reached)
						<-resume
					}
				}, nil),
				WorkFunc: writeEffects})
			if err == nil && (b.Status != batchtype.StatusFinished || b.Counts[rows.StateSucceeded] != 9_000) {
				err = fmt.Errorf("batch %+v", b)
			}
			done <- err
		}()
		<-reached
		// The first groups are worked, their rows written by the second
		// session but not committed: others see the batch, ingesting,
		// and neither its rows nor their effects.
		bs, err := s.BatchList(ctx, driver.BatchListParams{TenantID: "t"})
		if err != nil || len(bs) != 1 || bs[0].Status != batchtype.StatusIngesting || !shown {
			t.Fatalf("while worked: %+v, %v (shown %t)", bs, err, shown)
		}
		if got := left(t, pool); got != "1 batches, 0 rows, 0 effects" {
			t.Fatalf("while worked: %s", got)
		}
		close(resume)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := left(t, pool); got != "1 batches, 9000 rows, 9000 effects" {
			t.Fatalf("after: %s", got)
		}
	})

	t.Run("failures leave nothing", func(t *testing.T) {
		t.Parallel()
		s, pool := besideStore(t, 4)
		boom := errors.New("line 7000: bare quote")
		for name, p := range map[string]driver.BatchIngestParams{
			// Cut off while worked: the second session rolls back.
			"file": {Rows: numbered(6_000, func(int) {}, boom)},
			// Refused once every row is written: the second session
			// committed, and the batch is removed.
			"accept": {Rows: numbered(6_000, func(int) {}, nil), AcceptFunc: func(int64) error { return boom }},
			// The effect fails: its transaction rolls back.
			"work": {Rows: numbered(6_000, func(int) {}, nil), WorkFunc: func(ctx context.Context, tx driver.Tx, id int64, rs []driver.IngestRow) error {
				if rs[0].RowNo > 4_000 {
					return boom
				}
				return writeEffects(ctx, tx, id, rs)
			}},
		} {
			p.TenantID, p.Kind, p.Header = "t", "k", []string{"a"}
			if p.WorkFunc == nil {
				p.WorkFunc = writeEffects
			}
			if _, err := s.BatchIngest(ctx, p); !errors.Is(err, boom) {
				t.Fatalf("%s: ingest = %v", name, err)
			}
			if got := left(t, pool); got != "0 batches, 0 rows, 0 effects" {
				t.Fatalf("%s: a failed ingest left %s", name, got)
			}
		}
	})

	t.Run("one session on a small pool", func(t *testing.T) {
		t.Parallel()
		s, pool := besideStore(t, 2)
		if _, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "t", Kind: "k", Header: []string{"a"},
			Rows: numbered(5_000, func(int) {}, nil), WorkFunc: writeEffects}); err != nil {
			t.Fatal(err)
		}
		if got := left(t, pool); got != "1 batches, 5000 rows, 5000 effects" {
			t.Fatalf("%s", got)
		}
	})

	t.Run("many at once on a small pool", func(t *testing.T) {
		t.Parallel()
		// Three connections: one ingest may write beside, the others
		// write their rows themselves. Were each to take a second
		// session, the three working sessions would hold the pool and
		// wait, for good, on writers that cannot get a connection.
		s, pool := besideStore(t, 3)
		errs := make(chan error, 4)
		for i := range 4 {
			go func() {
				_, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "t", Kind: "k", Header: []string{"a"},
					Rows: numbered(5_000, func(int) {}, nil), WorkFunc: func(ctx context.Context, tx driver.Tx, id int64, rs []driver.IngestRow) error {
						for j := range rs {
							if _, err := tx.Exec(ctx, `INSERT INTO applied (row_no) VALUES ($1)`, int64(i)*100_000+rs[j].RowNo); err != nil {
								return err
							}
							rs[j].State = rows.StateSucceeded
						}
						return nil
					}})
				errs <- err
			}()
		}
		for range 4 {
			select {
			case err := <-errs:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("ingests on a small pool did not end: the pool is deadlocked")
			}
		}
		if got := left(t, pool); got != "4 batches, 20000 rows, 20000 effects" {
			t.Fatalf("%s", got)
		}
	})

	t.Run("abandoned", func(t *testing.T) {
		t.Parallel()
		s, pool := besideStore(t, 4)
		// A process that died after its rows' session committed, before
		// the one with the effects did; one whose batch was cancelled
		// while it read; and a finished batch, which stays.
		for _, stmt := range []string{
			`INSERT INTO batches (id, tenant_id, kind, status, ingest_expires_at) OVERRIDING SYSTEM VALUE
				VALUES (77, 't', 'k', 'ingesting', now() - interval '1 second'),
				       (78, 't', 'k', 'cancelled', now() - interval '1 second'),
				       (79, 't', 'k', 'finished', NULL)`,
			`INSERT INTO batch_rows (batch_id, row_no, tenant_id, chunk_no, state, payload)
				VALUES (77, 2, 't', 0, 'succeeded', '[]'), (78, 2, 't', 0, 'valid', '[]'), (79, 2, 't', 0, 'succeeded', '[]')`,
		} {
			if _, err := pool.Exec(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		rs, _ := pool.Query(ctx, `SELECT DISTINCT batch_id FROM batch_rows UNION SELECT id FROM batches ORDER BY 1`)
		for rs.Next() {
			var id int64
			_ = rs.Scan(&id)
			ids = append(ids, id)
		}
		if rs.Close(); rs.Err() != nil || fmt.Sprint(ids) != "[79]" {
			t.Fatalf("after Migrate: batches and rows of %v, %v; want only 79's", ids, rs.Err())
		}
	})
}
