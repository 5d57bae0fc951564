package postgres_test

import (
	"bytes"
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// TestCopyEncodesEveryColumn: the rows an ingest writes with its own
// binary COPY read back as given, column by column: NULLs, JSON with
// quotes and non-ASCII text, a digest, a result, a retry's due time
// after the write's clock, and the clock itself (a wrong epoch would be
// years off).
func TestCopyEncodesEveryColumn(t *testing.T) {
	ctx := context.Background()
	s, pool := besideStore(t, 4)
	digest := bytes.Repeat([]byte{0xab, 0x00}, 16)
	in := []driver.IngestRow{
		{RowNo: 2, ChunkNo: 0, State: rows.StateValid, Values: []string{`a "quoted", value`, "Müller €", ""}, KeyDigest: digest},
		{RowNo: 3, ChunkNo: 0, State: rows.StateInvalid, Values: []string{"x"},
			Errors: []rows.FieldError{{Row: 3, Column: "email", Code: "email", Message: `must be "valid"`}}},
		{RowNo: 4, ChunkNo: 1, State: rows.StateRetrying, Values: []string{"y"}, Attempts: 1, RetryDelay: 90 * time.Second,
			Errors: []rows.FieldError{{Row: 4, Code: "processor_error", Message: "503"}}},
		{RowNo: 5, ChunkNo: 1, State: rows.StateSucceeded, Values: nil, ResultID: "crm-1", Attempts: 1},
	}
	before := time.Now()
	b, err := s.BatchIngest(ctx, driver.BatchIngestParams{TenantID: "t1", Kind: "k", Header: []string{"a", "b", "c"},
		Rows: func(yield func(driver.IngestRow, error) bool) {
			for _, r := range in {
				if !yield(r, nil) {
					return
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := pool.Query(ctx, `SELECT r.row_no, r.tenant_id, r.chunk_no, r.state, COALESCE(v.payload, r.payload)::text, r.errors::text,
			EXTRACT(EPOCH FROM r.next_attempt_at - r.updated_at), r.updated_at, r.key_digest, r.result_id, r.attempts
		FROM batch_rows r LEFT JOIN batch_values v ON v.batch_id = r.batch_id AND v.row_no = r.row_no
		WHERE r.batch_id = $1 ORDER BY r.row_no`, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	want := []struct {
		tenant, state, payload string
		chunk                  int64
		errors                 sql.NullString
		due                    sql.NullFloat64
		digest                 []byte
		result                 sql.NullString
		attempts               int
	}{
		{"t1", "valid", `["a \"quoted\", value", "Müller €", ""]`, 0, sql.NullString{}, sql.NullFloat64{Float64: 0, Valid: true}, digest, sql.NullString{}, 0},
		{"t1", "invalid", `["x"]`, 0, sql.NullString{String: `[{"row": 3, "code": "email", "column": "email", "message": "must be \"valid\""}]`, Valid: true}, sql.NullFloat64{}, nil, sql.NullString{}, 0},
		{"t1", "retrying", `["y"]`, 1, sql.NullString{String: `[{"row": 4, "code": "processor_error", "message": "503"}]`, Valid: true}, sql.NullFloat64{Float64: 90, Valid: true}, nil, sql.NullString{}, 1},
		{"t1", "succeeded", `[]`, 1, sql.NullString{}, sql.NullFloat64{}, nil, sql.NullString{String: "crm-1", Valid: true}, 1},
	}
	i := 0
	for rs.Next() {
		var (
			rowNo, chunk           int64
			tenant, state, payload string
			errs                   sql.NullString
			due                    sql.NullFloat64
			updated                time.Time
			dig                    []byte
			result                 sql.NullString
			attempts               int
		)
		if err := rs.Scan(&rowNo, &tenant, &chunk, &state, &payload, &errs, &due, &updated, &dig, &result, &attempts); err != nil {
			t.Fatal(err)
		}
		if i >= len(want) || rowNo != in[i].RowNo {
			t.Fatalf("row %d read back at %d", rowNo, i)
		}
		w := want[i]
		if tenant != w.tenant || chunk != w.chunk || state != w.state || payload != w.payload || errs != w.errors || due != w.due ||
			!bytes.Equal(dig, w.digest) || result != w.result || attempts != w.attempts {
			t.Errorf("row %d = %q %d %q %s %v %v %x %v %d, want %+v", rowNo, tenant, chunk, state, payload, errs, due, dig, result, attempts, w)
		}
		if d := updated.Sub(before); d < -time.Minute || d > time.Minute {
			t.Errorf("row %d: updated_at %v, %v from the test's clock", rowNo, updated, d)
		}
		i++
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(want) {
		t.Fatalf("%d rows read back, want %d", i, len(want))
	}
}
