package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// The naive loop and River run in a child process (this program, run as
// "compare child naive|river ..."), so that their peak RSS is their own and
// not the harness's.

// upsertSQL upserts one customer the way rowfate's customers processor
// does, into the contenders' target table.
const upsertSQL = `INSERT INTO customers (email, name, country, signup_date, amount, updated_at)
	VALUES ($1, $2, NULLIF($3, ''), $4::text::date, NULLIF($5, '')::numeric, now())
	ON CONFLICT (tenant_id, email) DO UPDATE SET name = excluded.name,
		country = COALESCE(excluded.country, customers.country),
		signup_date = excluded.signup_date,
		amount = COALESCE(excluded.amount, customers.amount),
		updated_at = excluded.updated_at`

// childResult is what a child prints as its last line of output.
type childResult struct {
	Seconds float64 `json:"seconds"`
	Rows    int64   `json:"rows"`
}

// runChild runs a child contender: args are its name and flags.
func runChild(args []string) error {
	if len(args) == 0 {
		return errors.New("child: naive or river?")
	}
	fs := flag.NewFlagSet("child "+args[0], flag.ContinueOnError)
	file := fs.String("file", "", "CSV file (email, name, country, signup_date, amount)")
	db := fs.String("database", "", "PostgreSQL URL with the search_path of the target table")
	schema := fs.String("schema", "", "River's schema")
	workers := fs.Int("workers", 100, "River MaxWorkers")
	conns := fs.Int("conns", 40, "River's pool size")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ctx := context.Background()
	var res childResult
	var err error
	switch args[0] {
	case "naive":
		res, err = naiveLoop(ctx, *db, *file)
	case "river":
		res, err = riverLoad(ctx, *db, *schema, *file, *workers, *conns)
	default:
		err = fmt.Errorf("unknown child %q", args[0])
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// eachRow calls fn with every data row of the CSV file.
func eachRow(file string, fn func(rec []string) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.ReuseRecord = true
	if _, err := r.Read(); err != nil { // header
		return err
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(rec) != 5 {
			return fmt.Errorf("row with %d fields", len(rec))
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// naiveLoop upserts every row with its own autocommitted statement on one
// connection: what a first version of an import usually looks like.
func naiveLoop(ctx context.Context, db, file string) (childResult, error) {
	start := time.Now()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return childResult{}, err
	}
	defer conn.Close(ctx)
	var n int64
	err = eachRow(file, func(rec []string) error {
		if _, err := conn.Exec(ctx, upsertSQL, rec[0], rec[1], rec[2], rec[3], rec[4]); err != nil {
			return fmt.Errorf("row %d: %w", n+1, err)
		}
		n++
		return nil
	})
	return childResult{Seconds: time.Since(start).Seconds(), Rows: n}, err
}

// customerArgs is one row as a River job.
type customerArgs struct {
	Email      string `json:"email"`
	Name       string `json:"name"`
	Country    string `json:"country"`
	SignupDate string `json:"signup_date"`
	Amount     string `json:"amount"`
}

// Kind is the River job kind.
func (customerArgs) Kind() string { return "customer_upsert" }

// customerWorker upserts a job's row and counts the rows done.
type customerWorker struct {
	river.WorkerDefaults[customerArgs]
	pool *pgxpool.Pool
	done *atomic.Int64
}

// Work upserts the row.
func (w *customerWorker) Work(ctx context.Context, job *river.Job[customerArgs]) error {
	a := job.Args
	if _, err := w.pool.Exec(ctx, upsertSQL, a.Email, a.Name, a.Country, a.SignupDate, a.Amount); err != nil {
		return err
	}
	w.done.Add(1)
	return nil
}

// riverLoad migrates River's tables into schema, starts a client with
// the given workers, then (clock starting) inserts one job per row with
// InsertManyFast in batches while the workers run, and waits until every
// job's row is upserted and the client has stopped (which flushes the
// jobs' completion).
func riverLoad(ctx context.Context, db, schema, file string, workers, conns int) (childResult, error) {
	cfg, err := pgxpool.ParseConfig(db)
	if err != nil {
		return childResult{}, err
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return childResult{}, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		return childResult{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return childResult{}, fmt.Errorf("rivermigrate: %w", err)
	}
	var done atomic.Int64
	ws := river.NewWorkers()
	river.AddWorker(ws, &customerWorker{pool: pool, done: &done})
	client, err := river.NewClient(driver, &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:       ws,
		FetchCooldown: time.Millisecond,
		Schema:        schema,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return childResult{}, err
	}
	if err := client.Start(ctx); err != nil {
		return childResult{}, err
	}

	start := time.Now()
	const batchSize = 5000
	batch := make([]river.InsertManyParams, 0, batchSize)
	var inserted int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := client.InsertManyFast(ctx, batch)
		inserted += int64(n)
		batch = batch[:0]
		return err
	}
	err = eachRow(file, func(rec []string) error {
		batch = append(batch, river.InsertManyParams{Args: customerArgs{rec[0], rec[1], rec[2], rec[3], rec[4]}})
		if len(batch) == batchSize {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		client.StopAndCancel(ctx)
		return childResult{}, fmt.Errorf("insert jobs: %w", err)
	}
	// Wait for the workers; a job that keeps failing would be retried
	// with backoff for long, so give up when nothing moves for a minute.
	last, lastChange := done.Load(), time.Now()
	for n := last; n < inserted; n = done.Load() {
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > time.Minute {
			client.StopAndCancel(ctx)
			return childResult{}, fmt.Errorf("%d of %d jobs done, none for a minute", n, inserted)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := client.Stop(ctx); err != nil {
		return childResult{}, err
	}
	return childResult{Seconds: time.Since(start).Seconds(), Rows: done.Load()}, nil
}
