package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/where"
)

// runWhere runs the conformance tests of a row filter's Where.
func runWhere(t *testing.T, newStore NewStoreFunc) {
	t.Run("RowFilterWhere", func(t *testing.T) { t.Parallel(); testRowFilterWhere(t, newStore(t)) })
	t.Run("RowFilterWhereBulk", func(t *testing.T) { t.Parallel(); testBulkWhere(t, newStore(t)) })
	t.Run("RowFilterWherePurged", func(t *testing.T) { t.Parallel(); testWherePurged(t, newStore(t)) })
}

// whereRows are the rows of ingestWhere, by row number: country, name
// and note; rows 4 and 7 are short, with no note.
var whereRows = map[int64][]string{
	2: {"DE", "ann", "x"},
	3: {"FR", "bob", "y"},
	4: {"DE", "cy"},
	5: {"Germany", "dan", "z"},
	6: {"DE", "eve", ""},
	7: {"IT", "fay"},
	8: {"de", "gus", "it's"},
}

// ingestWhere writes a batch of whereRows (header Country, name, note),
// rows 3, 4 and 5 invalid: 3 and 4 with bad_date on note, 5 required on
// name.
func ingestWhere(t *testing.T, s driver.Store) *batchtype.Batch {
	t.Helper()
	errs := map[int64]rows.FieldError{
		3: {Row: 3, Column: "note", Code: "bad_date", Message: "not a date"},
		4: {Row: 4, Column: "note", Code: "bad_date", Message: "not a date"},
		5: {Row: 5, Column: "name", Code: "required", Message: "is required"},
	}
	seq := func(yield func(driver.IngestRow, error) bool) {
		for no := int64(2); no <= 8; no++ {
			r := driver.IngestRow{RowNo: no, ChunkNo: (no - 2) / 3, State: rows.StateValid, Values: whereRows[no]}
			if e, bad := errs[no]; bad {
				r.State, r.Errors = rows.StateInvalid, []rows.FieldError{e}
			}
			if !yield(r, nil) {
				return
			}
		}
	}
	b, err := s.BatchIngest(context.Background(), driver.BatchIngestParams{TenantID: tenant, Kind: "k", SourceName: "w.csv",
		Header: []string{"Country", "name", "note"}, Rows: seq})
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	return b
}

// testRowFilterWhere: a Where keeps the rows whose cells it holds for,
// compared as written, its columns named in any case; a short row's
// missing cell is null; it combines with states and codes and pages by
// keyset; a column the header lacks and an expression that cannot be
// read are ErrInvalidRequest with the *where.Error.
func testRowFilterWhere(t *testing.T, s driver.Store) {
	b := ingestWhere(t, s)
	inv := []rows.State{rows.StateInvalid}
	for _, c := range []struct {
		f     driver.RowFilter
		limit int
		want  []int64
	}{
		{driver.RowFilter{Where: "country = DE"}, 100, []int64{2, 4, 6}},
		{driver.RowFilter{Where: "COUNTRY = DE"}, 1, []int64{2, 4, 6}},
		{driver.RowFilter{Where: "country != DE"}, 100, []int64{3, 5, 7, 8}},
		{driver.RowFilter{Where: "country in (FR, IT)"}, 100, []int64{3, 7}},
		{driver.RowFilter{Where: "country not in (DE, de)"}, 100, []int64{3, 5, 7}},
		{driver.RowFilter{Where: "note is null"}, 100, []int64{4, 7}},
		{driver.RowFilter{Where: "note is not null and note != ''"}, 100, []int64{2, 3, 5, 8}},
		{driver.RowFilter{Where: "note = ''"}, 100, []int64{6}},
		{driver.RowFilter{Where: "note = 'it''s' or name = eve"}, 100, []int64{6, 8}},
		{driver.RowFilter{Where: "country = DE or name = bob"}, 100, []int64{2, 3, 4, 6}},
		{driver.RowFilter{States: inv, Where: "country = DE or name = bob"}, 100, []int64{3, 4}},
		{driver.RowFilter{States: inv, Code: "bad_date", Where: "country = DE"}, 100, []int64{4}},
		{driver.RowFilter{Code: "required", Column: "name", Where: "not (country = DE)"}, 100, []int64{5}},
		{driver.RowFilter{Code: "bad_date", Where: "note is null"}, 100, []int64{4}},
		{driver.RowFilter{Where: "country = Deutschland"}, 100, nil},
	} {
		if got := listed(t, s, b.ID, c.f, c.limit); !slices.Equal(got, c.want) {
			t.Fatalf("%+v lists %v, want %v", c.f, got, c.want)
		}
	}
	for _, c := range []struct{ where, msg string }{
		{"city = Berlin", "unknown column \"city\" (columns: Country, name or note)"},
		{"country = ", "at the end"},
		{"country = DE and", "at the end"},
	} {
		_, err := s.RowsList(context.Background(), driver.RowsListParams{TenantID: tenant, BatchID: b.ID, Filter: driver.RowFilter{Where: c.where}})
		var we *where.Error
		if !errors.Is(err, driver.ErrInvalidRequest) || !errors.As(err, &we) || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("where %q: %v; want ErrInvalidRequest and a *where.Error with %q", c.where, err, c.msg)
		}
		_, err = s.RowsBulk(context.Background(), driver.RowsBulkParams{TenantID: tenant, BatchID: b.ID, Action: driver.BulkSkip, Message: "m",
			Filter: driver.RowFilter{Where: c.where}})
		if !errors.Is(err, driver.ErrInvalidRequest) || !errors.As(err, &we) {
			t.Fatalf("bulk skip where %q: %v; want ErrInvalidRequest and a *where.Error", c.where, err)
		}
	}
	if page, err := s.RowsList(context.Background(), driver.RowsListParams{TenantID: "t2", BatchID: b.ID, Filter: driver.RowFilter{Where: "country = DE"}}); len(page) != 0 || !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another tenant's rows with a where: %+v, %v; want ErrNotFound", page, err)
	}
}

// testBulkWhere: a skip and a retry with a Where change exactly the rows
// it holds for among those the rest of the filter selects, and a preview
// counts them; an edit of the rows a Where lists (a bulk set's) changes
// those alone.
func testBulkWhere(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingestWhere(t, s)
	skip := driver.RowsBulkParams{TenantID: tenant, BatchID: b.ID, Action: driver.BulkSkip, Message: "skipped by ann: no Germans",
		Filter: driver.RowFilter{States: []rows.State{rows.StateInvalid}, Where: "country in (DE, Germany)"}, Actor: "ann"}
	pre := skip
	pre.Preview = true
	if n, err := s.RowsBulk(ctx, pre); err != nil || n != 2 {
		t.Fatalf("preview of a skip with a where: %d, %v; want 2", n, err)
	}
	if n, err := s.RowsBulk(ctx, skip); err != nil || n != 2 {
		t.Fatalf("skip with a where: %d, %v; want 2", n, err)
	}
	wantCounts(t, CheckInvariant(t, s, tenant, b.ID), rows.Counts{rows.StateSkipped: 2, rows.StateInvalid: 1, rows.StateValid: 4})
	for no, r := range rowsOf(t, s, b.ID) {
		if (r.State == rows.StateSkipped) != (no == 4 || no == 5) {
			t.Fatalf("row %d is %s after a skip of the invalid rows of DE or Germany", no, r.State)
		}
	}
	wantBulkHistory(t, s, b.ID, 1, "skip", 2)

	// A set: the engine lists the rows and edits them.
	page, err := s.RowsList(ctx, driver.RowsListParams{TenantID: tenant, BatchID: b.ID, Filter: driver.RowFilter{States: []rows.State{rows.StateValid}, Where: "country = de"}})
	if err != nil || len(page) != 1 || page[0].RowNo != 8 {
		t.Fatalf("valid rows of de: %+v, %v; want row 8", page, err)
	}
	edit := driver.RowsEditParams{TenantID: tenant, BatchID: b.ID, Actor: "ann", Rows: []driver.RowEdit{
		{RowNo: 8, From: rows.StateValid, State: rows.StateValid, Values: []string{"DE", "gus", "it's"}}}}
	if _, err := s.RowsEdit(ctx, edit); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, s, b.ID, driver.RowFilter{States: []rows.State{rows.StateValid}, Where: "country = DE"}, 100); !slices.Equal(got, []int64{2, 6, 8}) {
		t.Fatalf("valid rows of DE after the set: %v, want [2 6 8]", got)
	}

	// Retry: rows 2, 6 and 8 fail, 7 succeeds; the retry of DE's
	// failed rows with a note retries 2 and 8.
	finishWith(t, s, b.ID, func(row int64) rows.State {
		if row == 2 || row == 6 || row == 8 {
			return rows.StateFailed
		}
		return rows.StateSucceeded
	})
	retry := driver.RowsBulkParams{TenantID: tenant, BatchID: b.ID, Action: driver.BulkRetry, Actor: "bob",
		Filter: driver.RowFilter{States: []rows.State{rows.StateFailed}, Where: "country = DE and note != ''"}}
	if n, err := s.RowsBulk(ctx, retry); err != nil || n != 2 {
		t.Fatalf("retry with a where: %d, %v; want 2", n, err)
	}
	all := rowsOf(t, s, b.ID)
	for no, want := range map[int64]rows.State{2: rows.StateValid, 8: rows.StateValid, 6: rows.StateFailed, 7: rows.StateSucceeded} {
		if all[no].State != want {
			t.Fatalf("row %d is %s after the retry, want %s", no, all[no].State, want)
		}
	}
}

// testWherePurged: once a batch's values are purged, a Where has no cells
// to compare and is refused with ErrValuesPurged; a filter without one
// still lists the rows.
func testWherePurged(t *testing.T, s driver.Store) {
	ctx := context.Background()
	b := ingestWhere(t, s)
	finishWith(t, s, b.ID, func(int64) rows.State { return rows.StateFailed })
	purge(t, retentionOf(t, s), driver.ValuesPurgeParams{TenantID: tenant, BatchID: b.ID, Actor: "ops"})
	f := driver.RowFilter{States: []rows.State{rows.StateFailed}, Where: "country = DE"}
	if _, err := s.RowsList(ctx, driver.RowsListParams{TenantID: tenant, BatchID: b.ID, Filter: f}); !errors.Is(err, batchtype.ErrValuesPurged) {
		t.Fatalf("list with a where of a purged batch: %v, want ErrValuesPurged", err)
	}
	for _, a := range []driver.BulkAction{driver.BulkSkip, driver.BulkRetry} {
		for _, preview := range []bool{true, false} {
			_, err := s.RowsBulk(ctx, driver.RowsBulkParams{TenantID: tenant, BatchID: b.ID, Action: a, Message: "m", Filter: f, Preview: preview})
			if !errors.Is(err, batchtype.ErrValuesPurged) {
				t.Fatalf("%s (preview %v) with a where of a purged batch: %v, want ErrValuesPurged", a, preview, err)
			}
		}
	}
	if got := listed(t, s, b.ID, driver.RowFilter{States: []rows.State{rows.StateFailed}}, 100); len(got) != 4 {
		t.Fatalf("failed rows of the purged batch: %v", got)
	}
}
