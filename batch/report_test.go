package batch_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/csvfile"
)

// TestErrorReportRoundTrip is the loop users live in: import, take the
// error report, fix it in a spreadsheet (here: in code, saved back through
// the same CSV writer a spreadsheet would be), import it again.
func TestErrorReportRoundTrip(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		f := openFixture(t, "../fixtures/customers.csv")
		b1, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "customers.csv", Source: f})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b1.ID, UntilDone: true}); err != nil {
			t.Fatal(err)
		}

		var report bytes.Buffer
		n, err := e.ErrorReport(ctx, batch.ErrorReportParams{BatchID: b1.ID}, &report)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(report.Bytes(), []byte("\xEF\xBB\xBF")) {
			t.Fatalf("report does not start with a UTF-8 BOM: %q", report.Bytes()[:8])
		}
		recs := reportRecords(t, report.Bytes(), b1.ID)
		wantHeader := []string{"email", "name", "country", "signup_date", "amount", "row", "error"}
		if !slices.Equal(recs[0], wantHeader) {
			t.Fatalf("report header %q, want %q", recs[0], wantHeader)
		}
		if n != 15 || len(recs) != 16 {
			t.Fatalf("report has %d rows (n=%d), want the 15 invalid rows", len(recs)-1, n)
		}
		byRow := map[string][]string{}
		var order []string
		for _, r := range recs[1:] {
			byRow[r[5]] = r
			order = append(order, r[5])
		}
		if want := []string{"10", "20", "30", "40", "50", "90", "120", "140", "160", "200", "250", "270", "280", "290", "300"}; !slices.Equal(order, want) {
			t.Errorf("report rows %v, want %v", order, want)
		}
		if got := byRow["250"]; got[6] != "email: must be a valid email; amount: must be ≥ 0" || got[4] != "'-1" {
			t.Errorf("row 250 = %q: want the joined errors and the amount guarded as '-1", got)
		}
		if got := byRow["300"][6]; got != "email: same email as row 2" {
			t.Errorf("row 300 error %q", got)
		}

		// Fix every row but 160 (amount "12,50"), and give row 290 a name
		// that needs SafeCell's apostrophe in the saved file.
		var fixed bytes.Buffer
		cw, err := csvfile.NewWriter(&fixed, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := cw.Write([]string{rows.ReportTitle(b1.ID, customers.Name)}); err != nil {
			t.Fatal(err)
		}
		if err := cw.Write(recs[0]); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs[1:] {
			r = slices.Clone(r)
			for i := range r {
				r[i] = strings.TrimPrefix(r[i], "'") // as a spreadsheet shows them
			}
			if r[5] != "160" {
				r[0] = fmt.Sprintf("fixed%s@example.com", r[5])
				r[1], r[2], r[3], r[4] = "Fixed Name", "FR", "2020-01-02", "1.50"
			}
			if r[5] == "290" {
				r[1] = "=not a formula"
			}
			if err := cw.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := cw.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(fixed.Bytes(), []byte(`'=not a formula`)) {
			t.Fatalf("the saved file does not guard the formula: %s", fixed.Bytes())
		}

		// The report names its batch: importing it is refused as a new
		// batch unless asked for (TestRerunFromErrorReport re-runs one).
		_, err = e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "errors.csv", Source: bytes.NewReader(fixed.Bytes())})
		var re *batch.ReportError
		if !errors.As(err, &re) || re.BatchID != b1.ID {
			t.Fatalf("importing the fixed report: %v, want a ReportError naming batch %d", err, b1.ID)
		}
		b2, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "errors.csv", Source: bytes.NewReader(fixed.Bytes()), NewBatch: true})
		if err != nil {
			t.Fatalf("importing the fixed report: %v", err)
		}
		if b2.Counts[rows.StateValid] != 14 || b2.Counts[rows.StateInvalid] != 1 {
			t.Errorf("fixed report counts %v, want 14 valid and 1 invalid", b2.Counts)
		}
		// The fixture's one amount with a decimal comma is still there.
		if w := strings.Join(messages(b2.Warnings), ";"); w != `column "amount" has 1 values written with a decimal comma: they are invalid; import with a decimal comma (or a locale that writes one) to read them;unknown columns ignored: "row", "error";`+
			fmt.Sprintf("this file is the error report of batch %d, imported as a new batch (rows that batch completed may run again)", b1.ID) {
			t.Errorf("warnings %q", w)
		}
		// The decimal-comma warning carries the options that settle it.
		if got := fmt.Sprint(b2.Warnings[0].Hints); got != "[{decimal_comma []} {locale [de fr]}]" {
			t.Errorf("warning's hints %s", got)
		}
		stored, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b2.ID})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range stored {
			if r.Values[5] == "290" {
				names = append(names, r.Values[1])
			}
		}
		if !slices.Equal(names, []string{"=not a formula"}) {
			t.Errorf("row 290's name read back as %q, want the apostrophe removed", names)
		}

		// The report of the second batch has the same columns, not a
		// second row and error pair; its row is the row in errors.csv
		// (11: the title is row 1, the header row 2).
		report.Reset()
		if n, err := e.ErrorReport(ctx, batch.ErrorReportParams{BatchID: b2.ID}, &report); err != nil || n != 1 {
			t.Fatalf("second report: %d rows, %v", n, err)
		}
		recs = reportRecords(t, report.Bytes(), b2.ID)
		if !slices.Equal(recs[0], wantHeader) || recs[1][0] != "dennis.wirth158@example.com" || recs[1][5] != "11" {
			t.Errorf("second report %q", recs)
		}

		// Another tenant sees no such batch.
		if _, err := e.ErrorReport(ctx, batch.ErrorReportParams{TenantID: "other", BatchID: b1.ID}, &report); err == nil {
			t.Error("another tenant got the report")
		}
	})
}

// reportRecords parses a CSV error report: its title row names the batch,
// the records follow.
func reportRecords(t *testing.T, report []byte, batchID int64) [][]string {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(report, []byte("\xEF\xBB\xBF"))))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := rows.ParseReportTitle(recs[0][0]); !ok || id != batchID || len(recs[0]) != 1 {
		t.Fatalf("report title %q, want one naming batch %d", recs[0], batchID)
	}
	return recs[1:]
}

func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		f := openFixture(t, "../fixtures/customers.csv")
		res, err := e.DryRun(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "customers.csv", Source: f})
		if err != nil {
			t.Fatal(err)
		}
		if res.Counts[rows.StateValid] != 285 || res.Counts[rows.StateInvalid] != 15 || res.Encoding != "utf-8" || res.Delimiter != "," {
			t.Errorf("dry run %+v", res)
		}
		if len(res.Errors) == 0 || res.Errors[0].Row != 10 || res.Errors[0].Code != "email" {
			t.Errorf("first errors %+v", res.Errors)
		}
		bs, err := bd.store.BatchList(ctx, driver.BatchListParams{TenantID: "default"})
		if err != nil || len(bs) != 0 {
			t.Errorf("a dry run left %d batches (%v)", len(bs), err)
		}
		_, err = e.DryRun(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "x.csv", Source: strings.NewReader("name\nAnn\n")})
		if err == nil || !strings.Contains(err.Error(), "missing required columns") {
			t.Errorf("dry run of a file without email: %v", err)
		}
	})
}
