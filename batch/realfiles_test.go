package batch_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
)

// realOutcome is what importing one file of fixtures/real as customers
// must give: with the declared conventions, the counts after the work,
// codes of invalid rows, substrings of the warnings (and of an error
// message), the stored customers, or the rejection.
type realOutcome struct {
	conv   rows.Conventions
	strict bool
	// records is how many data records the reader yields.
	records int
	valid   int64 // rows valid at ingest, all of which succeed
	invalid int64
	codes   map[int64]string
	// message is a substring of the first error of each listed row.
	message map[int64]string
	// hints are the first error's hints, as stored and read back.
	hints map[int64]string
	warns []string
	// stored are customers rows as `email:country:amount:signup_date`
	// the file must leave behind.
	stored   []string
	rejected string
}

var de, _ = rows.LocaleNumberFormat("de")

var realOutcomes = map[string]realOutcome{
	"partial_full.csv":            {records: 3, valid: 3},
	"partial_missing_columns.csv": {records: 3, valid: 3},
	"partial_empty_cells.csv":     {records: 3, valid: 3},
	// A look-alike of a column the file lacks stops the import (issue 27,
	// item 1): imported, the amount would be dropped and the row succeed.
	"amount_eur.csv": {records: 1, rejected: `column "Amount (EUR)" looks like the kind's column "amount", which the file lacks: map it onto that column, or ignore it`,
		stored: []string{"dan@example.com:FR:NULL:2022-01-02"}},
	"locale_de.csv": {records: 3, conv: rows.Conventions{Number: de}, valid: 3,
		stored: []string{"de1@example.com:DE:1234.56:2022-01-02", "de2@example.com:DE:0.5:2022-01-02", "de3@example.com:DE:12500:2022-01-02"}},
	"locale_fr.csv": {records: 3, conv: rows.Conventions{Number: rows.DecimalComma}, valid: 3,
		stored: []string{"fr1@example.com:FR:1234.56:2022-01-02", "fr2@example.com:FR:1000.5:2022-01-02", "fr3@example.com:FR:0.75:2022-01-02"}},
	"locale_ch.csv": {records: 2, conv: rows.Conventions{Number: rows.NumberFormat{Decimal: '.', Groups: []rune{'\'', '’'}}}, valid: 2,
		stored: []string{"ch1@example.com:CH:1234.56:2022-01-02", "ch2@example.com:CH:1000:2022-01-02"}},
	"locale_en.csv": {records: 2, conv: rows.Conventions{Number: rows.NumberFormat{Decimal: '.', Groups: []rune{','}}}, valid: 2,
		stored: []string{"en1@example.com:GB:1234.56:2022-01-02", "en2@example.com:GB:12000:2022-01-02"}},
	"comma_column.csv": {records: 3, valid: 1, invalid: 2,
		codes:   map[int64]string{2: "not_a_number", 3: "not_a_number"},
		message: map[int64]string{2: "with a decimal comma", 3: "ambiguous"},
		hints:   map[int64]string{2: "[{decimal_comma []} {locale [de fr]}]", 3: "[{decimal_comma []} {locale [de fr]}]"},
		warns:   []string{`column "amount" has 1 values written with a decimal comma`},
		stored:  []string{"c3@example.com:FR:12.5:2022-01-02"}},
	"dates_dmy.csv": {records: 2, valid: 2,
		stored: []string{"d1@example.com:FR:1:2025-02-01", "d2@example.com:FR:1:2025-02-13"}},
	"dates_mdy.csv": {records: 2, valid: 2,
		stored: []string{"m1@example.com:US:1:2025-01-02", "m2@example.com:US:1:2025-02-13"}},
	// Never guessed: the ambiguous dates are invalid and say which
	// option settles them; 05/05 reads the same either way.
	"dates_ambiguous.csv": {records: 3, valid: 1, invalid: 2,
		codes:   map[int64]string{2: "bad_date", 3: "bad_date"},
		message: map[int64]string{2: "the date order dmy or mdy"},
		hints:   map[int64]string{2: "[{date_order [dmy mdy]}]"},
		stored:  []string{"a3@example.com:US:1:2025-05-05"}},
	"dates_mixed.csv": {records: 3, valid: 2, invalid: 1,
		codes: map[int64]string{4: "bad_date"},
		warns: []string{"dates are written both day first (row 2) and month first (row 3)"}},
	"dates_forms.csv": {records: 5, valid: 5,
		stored: []string{"f1@example.com:DE:1:2025-12-31", "f2@example.com:DE:1:2025-12-30", "f3@example.com:DE:1:2025-12-29", "f4@example.com:DE:1:2025-12-28", "f5@example.com:DE:1:2025-12-27"}},
	"compact_date.csv": {records: 2, valid: 1, invalid: 1,
		codes: map[int64]string{2: "bad_date"}, message: map[int64]string{2: "compact date whose form the file does not declare"},
		stored: []string{"s2@example.com:DE:1:2025-01-01"}},
	"country_case.csv": {records: 3, valid: 2, invalid: 1,
		codes: map[int64]string{4: "iso3166_1_alpha2"}, message: map[int64]string{4: `"XX" is not a country code`},
		stored: []string{"k1@example.com:DE:1:2022-01-02", "k2@example.com:US:1:2022-01-02"}},
	"empty_trailing_columns.csv": {records: 2, valid: 2, warns: []string{"2 empty columns without a name were ignored"}},
	"unnamed_with_values.csv":    {records: 2, rejected: "column 6 has no name, but row 3 has a value in it"},
	"template_filled.csv": {records: 4, valid: 3, warns: []string{"row 2 is the template's example row and was not imported"},
		stored: []string{"ada@example.com:GB:1250.5:2024-01-31", "new1@example.com:FR:5:2024-02-01", "new2@example.com:NULL:NULL:2024-02-02"}},
	"ragged_long.csv": {records: 2, valid: 1, invalid: 1, codes: map[int64]string{3: "ragged_row"}},
}

// TestRealFiles reads and imports every file of fixtures/real as customers
// on both stores and checks its outcome.
func TestRealFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../fixtures/real/*.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(realOutcomes) {
		t.Errorf("fixtures/real has %d files, the table %d", len(files), len(realOutcomes))
	}
	// Reader level: the records as a reader gives them.
	for _, path := range files {
		name := filepath.Base(path)
		w := realOutcomes[name]
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := batch.OpenReader(bufio.NewReader(bytes.NewReader(data)), batch.ImportParams{SourceName: name})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		n := 0
		for {
			if _, err := r.Next(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("%s: %v", name, err)
				}
				break
			}
			n++
		}
		r.Close()
		if n != w.records {
			t.Errorf("%s: the reader gives %d records, want %d", name, n, w.records)
		}
	}
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		for _, path := range files {
			name := filepath.Base(path)
			w := realOutcomes[name]
			if strings.HasPrefix(name, "partial_") {
				continue // TestNeverChangeWhatTheFileDoesNotMention
			}
			b, err := importAndWorkParams(t, e, path, batch.ImportParams{Conventions: w.conv, Strict: w.strict})
			if w.rejected != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), w.rejected) {
					t.Errorf("%s: err = %v, want a *rows.FileError containing %q", name, err, w.rejected)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if b.Counts[rows.StateSucceeded] != w.valid || b.Counts[rows.StateInvalid] != w.invalid || b.Counts.Total() != w.valid+w.invalid {
				t.Errorf("%s: counts %v, want %d succeeded, %d invalid", name, b.Counts, w.valid, w.invalid)
			}
			got := strings.Join(messages(b.Warnings), "\n")
			for _, want := range w.warns {
				if !strings.Contains(got, want) {
					t.Errorf("%s: warnings\n%s\nwant %q", name, got, want)
				}
			}
			if len(w.warns) == 0 && got != "" {
				t.Errorf("%s: unexpected warnings %q", name, got)
			}
			checkWarningHints(t, name, b.Warnings)
			checkRows(t, bd, name, b.ID, w.codes, w.message)
			checkHints(t, bd, name, b.ID, w.hints)
			for _, want := range w.stored {
				email, _, _ := strings.Cut(want, ":")
				if got := storedCustomer(t, bd, email); got != want {
					t.Errorf("%s: stored %q, want %q", name, got, want)
				}
			}
		}
	})
}

// importAndWorkParams imports a file with p and works its rows to the end.
func importAndWorkParams(t *testing.T, e *batch.Engine, path string, p batch.ImportParams) (*batchtype.Batch, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p.Kind, p.SourceName, p.Source = customers.Name, filepath.Base(path), f
	b, err := e.Import(context.Background(), p)
	if err != nil {
		return nil, err
	}
	if _, err := e.Work(context.Background(), batch.WorkParams{BatchID: b.ID, TenantIDs: []string{b.TenantID}, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
	got, err := e.Batch(context.Background(), batch.BatchParams{TenantID: b.TenantID, ID: b.ID})
	if got != nil {
		got.Reused = b.Reused
	}
	return got, err
}

func checkRows(t *testing.T, bd *bundle, name string, id int64, codes map[int64]string, messages map[int64]string) {
	t.Helper()
	stored, err := bd.store.RowsList(context.Background(), driver.RowsListParams{TenantID: batch.DefaultTenant, BatchID: id, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	byRow := map[int64]batchtype.Row{}
	for _, r := range stored {
		byRow[r.RowNo] = r
	}
	for row, want := range codes {
		var got []string
		for _, fe := range byRow[row].Errors {
			got = append(got, string(fe.Code))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: row %d codes %q, want %q (%v)", name, row, got, want, byRow[row].Errors)
		}
	}
	for row, want := range messages {
		if errs := byRow[row].Errors; len(errs) == 0 || !strings.Contains(errs[0].Message, want) {
			t.Errorf("%s: row %d errors %v, want a message with %q", name, row, errs, want)
		}
	}
}

// checkHints checks the hints of each listed row's first error as the
// store gives them back, and that no stored message names a CLI flag:
// messages reach the API and the admin page, which have none.
// messages are the warnings' messages; a message never names a flag of
// one front end (the hints carry the options).
func messages(ws []batchtype.Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Message
	}
	return out
}

// warningHints are the hints a warning whose message has the key carries.
var warningHints = map[string]string{
	"both day first": "[{date_order [dmy mdy]}]",
	"decimal comma":  "[{decimal_comma []} {locale [de fr]}]",
}

// checkWarningHints checks that the warnings a file option settles carry
// that option, and that no message names a flag.
func checkWarningHints(t *testing.T, name string, ws []batchtype.Warning) {
	t.Helper()
	for _, w := range ws {
		if strings.Contains(w.Message, "--") {
			t.Errorf("%s: the warning names a flag: %s", name, w.Message)
		}
		want := "[]"
		for key, hints := range warningHints {
			if strings.Contains(w.Message, key) {
				want = hints
			}
		}
		if got := fmt.Sprint(w.Hints); got != want {
			t.Errorf("%s: warning %q has hints %s, want %s", name, w.Message, got, want)
		}
	}
}

func checkHints(t *testing.T, bd *bundle, name string, id int64, hints map[int64]string) {
	t.Helper()
	stored, err := bd.store.RowsList(context.Background(), driver.RowsListParams{TenantID: batch.DefaultTenant, BatchID: id, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range stored {
		for _, fe := range r.Errors {
			if strings.Contains(fe.Message, "--") {
				t.Errorf("%s: row %d: the message names a flag: %s", name, r.RowNo, fe.Message)
			}
		}
		if want, ok := hints[r.RowNo]; ok && (len(r.Errors) == 0 || fmt.Sprint(r.Errors[0].Hints) != want) {
			t.Errorf("%s: row %d errors %+v, want hints %s", name, r.RowNo, r.Errors, want)
		}
	}
}

// storedCustomer reads a customer as email:country:amount:signup_date,
// NULL for a NULL.
func storedCustomer(t *testing.T, bd *bundle, email string) string {
	t.Helper()
	var country, amount, date *string
	err := bd.db.QueryRowContext(context.Background(), `SELECT country, CAST(amount AS TEXT), CAST(signup_date AS TEXT) FROM customers WHERE email = $1`, email).Scan(&country, &amount, &date)
	if err != nil {
		return email + ": " + err.Error()
	}
	s := func(p *string) string {
		if p == nil {
			return "NULL"
		}
		if !strings.Contains(*p, ".") {
			return *p
		}
		return strings.TrimRight(strings.TrimRight(*p, "0"), ".")
	}
	return email + ":" + s(country) + ":" + s(amount) + ":" + *date
}

// TestNeverChangeWhatTheFileDoesNotMention: a file without the optional
// columns, or with their cells empty, imported over existing customers,
// changes their names and nothing else.
func TestNeverChangeWhatTheFileDoesNotMention(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		want := []string{"ann@example.com:FR:10.5:2021-03-04", "bob@example.com:DE:0:2021-03-05", "cid@example.com:US:99.99:2021-03-06"}
		for _, file := range []string{"partial_full.csv", "partial_missing_columns.csv", "partial_empty_cells.csv"} {
			b, err := importAndWorkParams(t, e, "../fixtures/real/"+file, batch.ImportParams{})
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if b.Counts[rows.StateSucceeded] != 3 {
				t.Fatalf("%s: counts %v", file, b.Counts)
			}
			for _, w := range want {
				email, _, _ := strings.Cut(w, ":")
				if got := storedCustomer(t, bd, email); got != w {
					t.Errorf("after %s: %s, want %s (country, amount and date unchanged)", file, got, w)
				}
			}
		}
		var name string
		if err := bd.db.QueryRowContext(context.Background(), `SELECT name FROM customers WHERE email = 'cid@example.com'`).Scan(&name); err != nil || name != "Cid Empty" {
			t.Errorf("the name the file did give = %q, %v", name, err)
		}
	})
}

// TestMapAndStrict: --map maps a renamed column; --strict rejects the
// file instead of ignoring the column.
func TestMapAndStrict(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		path := "../fixtures/real/amount_eur.csv"
		_, err := importAndWorkParams(t, e, path, batch.ImportParams{Strict: true})
		var fe *rows.FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), `strict import: unknown columns "Amount (EUR)"; missing optional columns "amount"; "Amount (EUR)" looks like "amount"`) {
			t.Fatalf("strict import: %v", err)
		}
		b, err := importAndWorkParams(t, e, path, batch.ImportParams{Strict: true, Conventions: rows.Conventions{Renames: []rows.Rename{{From: "Amount (EUR)", To: "amount"}}}})
		if err != nil || b.Counts[rows.StateSucceeded] != 1 || len(b.Warnings) != 0 {
			t.Fatalf("mapped import: %+v, %v", b, err)
		}
		if got := storedCustomer(t, bd, "dan@example.com"); got != "dan@example.com:FR:12.5:2022-01-02" {
			t.Errorf("stored %s", got)
		}
		if len(b.Conventions.Renames) != 1 {
			t.Errorf("the rename is not kept with the batch: %+v", b.Conventions)
		}
	})
}

// TestImportTwice: the same file, kind and options again bring the first
// batch back (for customers-webhook, every customer was POSTed twice
// under new keys); NewBatch imports it again with a warning that names
// the first; other options make another batch; a key with other content
// is refused.
func TestImportTwice(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		path := "../fixtures/real/dates_forms.csv"
		first, err := importAndWorkParams(t, e, path, batch.ImportParams{})
		if err != nil || first.Reused {
			t.Fatalf("first import: %+v, %v", first, err)
		}
		// The same file, kind and options again: the batch it made, not a
		// second run of its rows (and of their effects).
		again, err := importAndWorkParams(t, e, path, batch.ImportParams{})
		if err != nil || !again.Reused || again.ID != first.ID {
			t.Fatalf("second import: %+v, %v; want batch %d back", again, err, first.ID)
		}
		once, err := importAndWorkParams(t, e, path, batch.ImportParams{Once: true})
		if err != nil || !once.Reused || once.ID != first.ID {
			t.Fatalf("import with Once: %+v, %v; want batch %d back", once, err, first.ID)
		}
		// Asked for: a new batch, with a warning that says what it repeats.
		fresh, err := importAndWorkParams(t, e, path, batch.ImportParams{NewBatch: true})
		if err != nil || fresh.Reused || fresh.ID == first.ID || !strings.Contains(strings.Join(messages(fresh.Warnings), "\n"), "already imported as batch") {
			t.Fatalf("import with NewBatch: %+v, %v", fresh, err)
		}
		// Other options make other rows: another batch.
		other, err := importAndWorkParams(t, e, path, batch.ImportParams{Read: rows.ReadOptions{Delimiter: ','}})
		if err != nil || other.Reused || other.ID == first.ID || other.ID == fresh.ID {
			t.Fatalf("import with other options: %+v, %v", other, err)
		}
		f, _ := os.Open("../fixtures/real/dates_dmy.csv")
		defer f.Close()
		if _, err := e.Import(context.Background(), batch.ImportParams{Kind: customers.Name, SourceName: "y.csv", Source: f, IdempotencyKey: "once:customers:" + first.SourceDigest}); !errors.Is(err, batch.ErrKeyReused) {
			t.Fatalf("a key with other content: %v, want ErrKeyReused", err)
		}
	})
}

// TestErrorReportKeepsCellsPastTheHeader: a row longer than the header
// keeps its extra cells in the error report.
func TestErrorReportKeepsCellsPastTheHeader(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		b, err := importAndWorkParams(t, e, "../fixtures/real/ragged_long.csv", batch.ImportParams{})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := e.ErrorReport(context.Background(), batch.ErrorReportParams{BatchID: b.ID}, &out); err != nil {
			t.Fatal(err)
		}
		want := rows.ReportTitle(b.ID, "customers") + "\r\nemail,name,country,signup_date,amount,extra 1,extra 2,row,error\r\n" +
			"r2@example.com,Bob,FR,2022-01-02,2,extra one,extra two,3,row has 7 cells, the header has 5\r\n"
		if got := strings.TrimPrefix(out.String(), "\ufeff"); !strings.HasPrefix(strings.ReplaceAll(got, `"`, ""), want) {
			t.Errorf("report\n%s\nwant\n%s", got, want)
		}
	})
}

// TestRealWorkbooks imports the workbooks of Excel's habits on both
// stores: a first sheet that is not the data, a title row that is not
// merged, formulas never calculated, and no sheet with the kind's columns.
func TestRealWorkbooks(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		for name, w := range map[string]struct {
			succeeded, invalid int64
			codes              map[int64]string
			rejected           string
		}{
			"sheets_info_first.xlsx":    {succeeded: 3},
			"title_not_merged.xlsx":     {succeeded: 3},
			"formula_uncalculated.xlsx": {succeeded: 3, invalid: 2, codes: map[int64]string{3: "formula_not_calculated", 4: "formula_not_calculated"}},
			"no_matching_sheet.xlsx":    {rejected: `no sheet has a header with the columns email, name, signup_date in its first 20 rows (sheets tried: "Orders", "Notes")`},
		} {
			b, err := importAndWorkParams(t, e, "../fixtures/xlsx/"+name, batch.ImportParams{Read: rows.ReadOptions{TmpDir: t.TempDir()}})
			if w.rejected != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), w.rejected) {
					t.Errorf("%s: %v, want a file error with %q", name, err, w.rejected)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if b.Counts[rows.StateSucceeded] != w.succeeded || b.Counts[rows.StateInvalid] != w.invalid {
				t.Errorf("%s: counts %v", name, b.Counts)
			}
			checkRows(t, bd, name, b.ID, w.codes, nil)
		}
	})
}
