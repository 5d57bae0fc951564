package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/sqlite"
)

func openMigrated(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func rowsOf(n int, pause func(i int)) func(yield func(driver.IngestRow, error) bool) {
	return func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			pause(i)
			if !yield(driver.IngestRow{RowNo: int64(i + 2), ChunkNo: int64(i / 1000), State: rows.StateValid, Values: []string{fmt.Sprint(i)}}, nil) {
				return
			}
		}
	}
}

// TestIngestLetsOthersWrite: a long import does not hold the file's write
// lock while it reads: another process (another store on the file) writes
// meanwhile, and no claim sees the import's batch until it is accepted.
func TestIngestLetsOthersWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testdb.SQLitePath(t)
	importer, other := openMigrated(t, path), openMigrated(t, path)
	reading := make(chan struct{})
	resume := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := importer.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "t", Kind: "k", Header: []string{"a"},
			Rows: rowsOf(12_000, func(i int) {
				if i == 6_000 { // the importer reads slowly from here
					close(reading)
					<-resume
				}
			})})
		done <- err
	}()
	<-reading
	// Were the import holding the lock while it waits here, this write
	// would fail with SQLITE_BUSY after the busy timeout.
	small, err := other.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "t", Kind: "k", Header: []string{"a"}, Rows: rowsOf(3, func(int) {})})
	if err != nil {
		t.Fatalf("another writer while an import reads: %v", err)
	}
	if _, err := other.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", BatchID: small.ID + 1, LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("a claim saw the batch still being imported: %v", err)
	}
	bs, _ := other.BatchList(ctx, driver.BatchListParams{TenantID: "t"})
	var ingesting int
	for _, b := range bs {
		if b.Status == "ingesting" {
			ingesting++
		}
	}
	if ingesting != 1 {
		t.Fatalf("batches: %+v, want one ingesting", bs)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	bs, _ = other.BatchList(ctx, driver.BatchListParams{TenantID: "t"})
	for _, b := range bs {
		if b.Status != batchtype.StatusRunning || (b.Counts.Total() != 12_000 && b.Counts.Total() != 3) {
			t.Fatalf("after the import: %+v", b)
		}
	}
}

// TestIngestFailureRemovesParts: a file rejected after several parts were
// written leaves nothing; an ingest whose process died is removed by the
// next Migrate.
func TestIngestFailureRemovesParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openMigrated(t, testdb.SQLitePath(t))
	boom := errors.New("line 9000: bare quote")
	_, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "t", Kind: "k", Header: []string{"a"},
		Rows: func(yield func(driver.IngestRow, error) bool) {
			rowsOf(8_000, func(int) {})(yield)
			yield(driver.IngestRow{}, boom)
		}})
	if !errors.Is(err, boom) {
		t.Fatalf("ingest = %v", err)
	}
	var n int
	if err := s.DB().QueryRow(`SELECT (SELECT count(*) FROM batches) + (SELECT count(*) FROM batch_rows)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a rejected file left %d batches and rows, %v", n, err)
	}
	// A process that died mid-ingest left this behind.
	for _, stmt := range []string{
		`INSERT INTO batches (id, tenant_id, kind, status, created_at, ingest_expires_at) VALUES (77, 't', 'k', 'ingesting', 0, 1)`,
		`INSERT INTO batch_rows (batch_id, row_no, tenant_id, chunk_no, state, payload, updated_at) VALUES (77, 2, 't', 0, 'valid', '[]', 0)`,
	} {
		if _, err := s.DB().Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().QueryRow(`SELECT (SELECT count(*) FROM batches) + (SELECT count(*) FROM batch_rows)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the abandoned ingest was not removed: %d left, %v", n, err)
	}
}
