package batch_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/xlsxfile"
	"github.com/rowfate/rowfate/store/storetest"
)

// xlsxFixture is the customers workbook of fixtures/xlsx: 37 data rows
// under a merged title and the header (row 2), five of them invalid.
const xlsxFixture = "../fixtures/xlsx/customers.xlsx"

// customersEngine wires the customers kind on a bundle.
func customersEngine(t *testing.T, bd *bundle) *batch.Engine {
	t.Helper()
	return newEngine(t, bd.store, customersRegistry(t, bd), 0)
}

// importAndWork imports a file as customers and works it to the end.
func importAndWork(t *testing.T, e *batch.Engine, bd *bundle, name string, src []byte) *batchtype.Batch {
	t.Helper()
	ctx := context.Background()
	b, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: name, Source: bytes.NewReader(src)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
	storetest.CheckInvariant(t, bd.store, "default", b.ID)
	b, err = bd.store.BatchGet(ctx, driver.BatchGetParams{TenantID: "default", ID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// customerTable reads the customers table in email order, one line each.
func customerTable(t *testing.T, bd *bundle) []string {
	t.Helper()
	rs, err := bd.db.QueryContext(context.Background(),
		`SELECT email, name, country, CAST(signup_date AS TEXT), amount FROM customers ORDER BY email`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var email, name, country, date string
		var amount float64
		if err := rs.Scan(&email, &name, &country, &date, &amount); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s|%s|%s|%s|%v", email, name, country, date, amount))
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportXLSXCustomers(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(xlsxFixture)
	if err != nil {
		t.Fatal(err)
	}
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		b := importAndWork(t, e, bd, "customers.xlsx", src)
		if b.Counts[rows.StateSucceeded] != 32 || b.Counts[rows.StateInvalid] != 5 || b.Counts.Total() != 37 || b.SkippedEmpty != 3 {
			t.Fatalf("counts %v, skipped %d", b.Counts, b.SkippedEmpty)
		}
		sum := sha256.Sum256(src)
		if b.SourceDigest != hex.EncodeToString(sum[:]) {
			t.Errorf("digest %s is not the file's", b.SourceDigest)
		}
		if strings.Join(b.Header, "|") != "email|name|country|signup_date|amount" {
			t.Errorf("header %q", b.Header)
		}
		invalid, err := bd.store.RowsList(context.Background(), driver.RowsListParams{TenantID: "default", BatchID: b.ID, State: rows.StateInvalid})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]string{}
		for _, r := range invalid {
			var cs []string
			for _, fe := range r.Errors {
				cs = append(cs, fe.Column+"/"+string(fe.Code))
			}
			got[r.RowNo] = strings.Join(cs, " ")
		}
		want := map[int64]string{10: "email/email", 12: "amount/cell_error", 14: "signup_date/bad_date", 16: "amount/gte", 40: "/ragged_row"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("invalid rows %v, want %v", got, want)
		}
		table := customerTable(t, bd)
		if len(table) != 32 {
			t.Fatalf("%d customers", len(table))
		}
		for _, want := range []string{
			"customer21@example.com|Customer 21|DE|2017-02-16|20",
			"customer23@example.com|=1+2|PT|2017-05-01|230.25",
			"customer25@example.com|Customer 25|PL|2020-01-03|250.25",
			"customer29@example.com|Customer 29|FR|2017-12-09|1500",
		} {
			if !strings.Contains(strings.Join(table, "\n"), want) {
				t.Errorf("no customer %s", want)
			}
		}
	})
}

// TestExportRoundTrip exports the customers imported from the workbook,
// as XLSX and as CSV, and imports each export into an empty database: the
// customers come out the same.
func TestExportRoundTrip(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(xlsxFixture)
	if err != nil {
		t.Fatal(err)
	}
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		importAndWork(t, e, bd, "customers.xlsx", src)
		want := customerTable(t, bd)

		for _, name := range []string{"out.xlsx", "out.csv"} {
			var file bytes.Buffer
			b, err := batch.Export(ctx, e, customers.ExportKind(bd.db, bd.dialect), batch.ExportParams{DestName: name, Dest: &file, Write: rows.WriteOptions{TmpDir: t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			if b.Status != batchtype.StatusFinished || b.Counts[rows.StateSucceeded] != 32 || b.Counts.Total() != 32 || b.SourceName != name {
				t.Fatalf("%s: export batch %+v", name, b)
			}
			sum := sha256.Sum256(file.Bytes())
			if b.SourceDigest != hex.EncodeToString(sum[:]) {
				t.Errorf("%s: digest is not the file's", name)
			}
			stored := storetest.CheckInvariant(t, bd.store, "default", b.ID)
			if stored[rows.StateSucceeded] != 32 {
				t.Errorf("%s: stored %v", name, stored)
			}
			if strings.HasSuffix(name, ".xlsx") != bytes.HasPrefix(file.Bytes(), []byte("PK")) {
				t.Errorf("%s: the file starts with %q", name, file.Bytes()[:4])
			}

			// The CSV holds the formula-like name neutralised.
			if strings.HasSuffix(name, ".csv") && !strings.Contains(file.String(), "customer23@example.com,'=1+2,PT,2017-05-01,230.25") {
				t.Errorf("csv export:\n%s", file.String())
			}

			fresh := engines[0].setup(t) // SQLite
			e2 := customersEngine(t, fresh)
			b2 := importAndWork(t, e2, fresh, name, file.Bytes())
			if b2.Counts[rows.StateSucceeded] != 32 || b2.Counts.Total() != 32 {
				t.Fatalf("%s: re-import counts %v", name, b2.Counts)
			}
			got := customerTable(t, fresh)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: round trip differs:\n got %q\nwant %q", name, got, want)
			}
			// The export's stored rows are the re-import's rows.
			exp, _ := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID, Limit: 1000})
			imp, _ := fresh.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b2.ID, Limit: 1000})
			if len(exp) != 32 || len(imp) != 32 {
				t.Fatalf("%d and %d rows", len(exp), len(imp))
			}
			for i := range exp {
				// An XLSX number keeps no trailing zeros: 20.00 reads as 20.
				if a, b := exp[i].Values[4], imp[i].Values[4]; a != b {
					da, err1 := rows.ParseDecimal(a)
					db, err2 := rows.ParseDecimal(b)
					if err1 == nil && err2 == nil && da.Cmp(db) == 0 {
						imp[i].Values[4] = a
					}
				}
				if exp[i].RowNo != imp[i].RowNo || strings.Join(exp[i].Values, "|") != strings.Join(imp[i].Values, "|") {
					t.Errorf("%s: row %d exported %q, imported as row %d %q", name, exp[i].RowNo, exp[i].Values, imp[i].RowNo, imp[i].Values)
				}
			}
		}
	})
}

// exportRow is a row type for TestExportOutcomes.
type exportRow struct {
	ID     int64   `col:"id"`
	Note   string  `col:"note"`
	Phone  string  `col:"phone,raw"`
	Amount float64 `col:"amount"`
	OK     *bool   `col:"ok"`
}

// TestExportOutcomes checks every row's outcome: written, or failed with
// why, and that a broken source aborts the export and leaves no batch.
func TestExportOutcomes(t *testing.T) {
	t.Parallel()
	yes := true
	source := []struct {
		row exportRow
		err error
	}{
		{row: exportRow{ID: 1, Note: "=cmd|' /C calc'!A0", Phone: "+44 20 7946 0000", Amount: -1.5, OK: &yes}},
		{err: batch.Permanent(errors.New("customer 2 is locked"))},
		{row: exportRow{ID: 3, Amount: math.NaN()}},
		{err: &rows.FieldError{Column: "note", Code: "redacted", Message: "is redacted"}},
		{row: exportRow{ID: 5, Note: "bell\a"}}, // no XLSX cell holds it; CSV does
		{row: exportRow{ID: 6, Note: strings.Repeat("x", 40_000)}},
		{row: exportRow{ID: 1234567890123456789, Note: "@sum"}},
	}
	kind := batch.ExportKind[exportRow]{
		Name: "things",
		RowsFunc: func(ctx context.Context) iter.Seq2[exportRow, error] {
			return func(yield func(exportRow, error) bool) {
				for _, s := range source {
					if !yield(s.row, s.err) {
						return
					}
				}
			}
		},
	}
	bd := engines[0].setup(t)
	e := newEngine(t, bd.store, batch.NewRegistry(), 0)
	ctx := context.Background()

	tests := []struct {
		format  batch.Format
		failed  map[int64]string // row -> column/code
		written int64
		file    []string // substrings of the file (CSV)
	}{
		{batch.FormatXLSX, map[int64]string{3: "/export_error", 4: "amount/not_a_number", 5: "note/redacted", 6: "note/bad_character", 7: "note/cell_too_long"}, 2, nil},
		{batch.FormatCSV, map[int64]string{3: "/export_error", 4: "amount/not_a_number", 5: "note/redacted"}, 4, []string{
			"id,note,phone,amount,ok\r\n",
			`1,'=cmd|' /C calc'!A0,+44 20 7946 0000,-1.5,true` + "\r\n",
			"1234567890123456789,'@sum,,0,\r\n",
		}},
	}
	for _, tt := range tests {
		var file bytes.Buffer
		b, err := batch.Export(ctx, e, kind, batch.ExportParams{DestName: "things." + string(tt.format), Dest: &file, Write: rows.WriteOptions{TmpDir: t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		if b.Counts[rows.StateSucceeded] != tt.written || b.Counts[rows.StateFailed] != int64(len(tt.failed)) || b.Status != batchtype.StatusFinished {
			t.Errorf("%s: counts %v, status %s", tt.format, b.Counts, b.Status)
		}
		failed, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID, State: rows.StateFailed})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]string{}
		for _, r := range failed {
			if len(r.Errors) != 1 || r.Errors[0].Row != r.RowNo {
				t.Errorf("%s: row %d errors %+v", tt.format, r.RowNo, r.Errors)
				continue
			}
			got[r.RowNo] = r.Errors[0].Column + "/" + string(r.Errors[0].Code)
			// A row the format refused keeps its cells.
			if r.RowNo == 6 && (len(r.Values) != 5 || r.Values[1] != "bell\a") {
				t.Errorf("%s: row 6 values %q", tt.format, r.Values)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.failed) {
			t.Errorf("%s: failed rows %v, want %v", tt.format, got, tt.failed)
		}
		for _, s := range tt.file {
			if !strings.Contains(file.String(), s) {
				t.Errorf("%s: the file lacks %q:\n%s", tt.format, s, file.String())
			}
		}
		if tt.format == batch.FormatXLSX {
			xr, err := xlsxfile.NewReader(bytes.NewReader(file.Bytes()), "things.xlsx", &xlsxfile.Options{TmpDir: t.TempDir(), KeepFormulaQuote: true})
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for {
				rec, err := xr.Next()
				if err != nil {
					break
				}
				lines = append(lines, strings.Join(rec.Values, "|"))
			}
			xr.Close()
			// A workbook's text cells carry no apostrophe: it never
			// evaluates them (CSV keeps SafeCell's, above).
			want := []string{`1|=cmd|' /C calc'!A0|+44 20 7946 0000|-1.5|true`, "1234567890123456789|@sum||0|"}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") || xr.Sheet() != "things" {
				t.Errorf("xlsx rows %q in sheet %q, want %q", lines, xr.Sheet(), want)
			}
		}
	}

	// A source that breaks is the export's error: no batch.
	before, err := bd.store.BatchList(ctx, driver.BatchListParams{TenantID: "default"})
	if err != nil {
		t.Fatal(err)
	}
	broken := kind
	broken.RowsFunc = func(ctx context.Context) iter.Seq2[exportRow, error] {
		return func(yield func(exportRow, error) bool) {
			if yield(exportRow{ID: 1}, nil) {
				yield(exportRow{}, errors.New("connection reset"))
			}
		}
	}
	_, err = batch.Export(ctx, e, broken, batch.ExportParams{DestName: "x.csv", Dest: &bytes.Buffer{}, Write: rows.WriteOptions{TmpDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("want the source's error, got %v", err)
	}
	after, err := bd.store.BatchList(ctx, driver.BatchListParams{TenantID: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("a failed export left a batch: %d batches, were %d", len(after), len(before))
	}
}
