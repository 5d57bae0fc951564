package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// MigrateValuesOverRows checks a store that moves new batches' values to
// a table of their own (PostgreSQL's migration 0014) on a database whose
// batches were ingested before: undo must take the database back to the
// step before, each batch's values in batch_rows, as that schema kept
// them. Those batches read back with their values, an edit of one of
// their rows and a re-run that replaces one and adds one read back, and
// they purge; a batch ingested after the
// migration does too. It returns the ids of the batches ingested before,
// whose values must not have moved.
func MigrateValuesOverRows(t *testing.T, s driver.Store, undo func(t *testing.T)) []int64 {
	t.Helper()
	ctx := context.Background()
	done := finished(t, s, tenant, 25)
	open := ingest(t, s, tenant, 5, 10)
	before := rowsOf(t, s, done.ID)
	undo(t)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate over batches with their values in batch_rows: %v", err)
	}
	for no, r := range rowsOf(t, s, done.ID) {
		if r.ValuesPurged || len(r.Values) != 2 || r.Values[0] != before[no].Values[0] || r.State != before[no].State {
			t.Fatalf("row %d after the migration = %+v, was %+v", no, r, before[no])
		}
	}
	if err := s.RowReview(ctx, driver.RowReviewParams{TenantID: tenant, BatchID: open.ID, RowNo: 3, From: rows.StateValid,
		State: rows.StateValid, Values: []string{"edited", "y"}, Actor: "ann", Action: "edit"}); err != nil {
		t.Fatalf("edit of a row ingested before the migration: %v", err)
	}
	if r := rowsOf(t, s, open.ID)[3]; r.ValuesPurged || len(r.Values) != 2 || r.Values[0] != "edited" {
		t.Fatalf("edited row = %+v", r)
	}
	if _, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: tenant, BatchID: open.ID, Actor: "ann",
		Replace: []driver.RerunRow{{RowNo: 4, State: rows.StateValid, Values: []string{"rerun", "y"}}},
		Add:     []driver.IngestRow{{RowNo: 7, ChunkNo: 1, State: rows.StateValid, Values: []string{"added", "y"}}}}); err != nil {
		t.Fatalf("re-run of a batch ingested before the migration: %v", err)
	}
	reran := rowsOf(t, s, open.ID)
	if r4, r7 := reran[4], reran[7]; len(r4.Values) != 2 || r4.Values[0] != "rerun" || len(r7.Values) != 2 || r7.Values[0] != "added" {
		t.Fatalf("rows after the re-run: %+v, %+v", r4, r7)
	}
	// A where reads the cells of batch_rows' payload too.
	where := driver.RowFilter{Where: "a in (edited, rerun, added)"}
	if got := listed(t, s, open.ID, where, 2); !slices.Equal(got, []int64{3, 4, 7}) {
		t.Fatalf("rows where %s: %v, want [3 4 7]", where.Where, got)
	}
	if n, err := s.RowsBulk(ctx, driver.RowsBulkParams{TenantID: tenant, BatchID: open.ID, Action: driver.BulkSkip, Message: "m", Filter: where}); err != nil || n != 3 {
		t.Fatalf("skip where %s: %d, %v; want 3", where.Where, n, err)
	}
	rs := retentionOf(t, s)
	after := finished(t, s, tenant, 25)
	for _, b := range []int64{done.ID, after.ID} {
		if out := purge(t, rs, driver.ValuesPurgeParams{TenantID: tenant, BatchID: b}); len(out) != 1 || out[0].Rows != 25 {
			t.Fatalf("purge of batch %d = %+v", b, out)
		}
		for no, r := range rowsOf(t, s, b) {
			if !r.ValuesPurged || r.Values != nil || (b == done.ID && r.State != before[no].State) {
				t.Fatalf("row %d of batch %d after its purge = %+v", no, b, r)
			}
		}
	}
	if r := rowsOf(t, s, open.ID)[3]; r.ValuesPurged || r.Values[0] != "edited" {
		t.Fatalf("a batch not purged lost its values: %+v", r)
	}
	return []int64{done.ID, open.ID}
}
