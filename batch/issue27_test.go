package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// TestIdempotencyKeyWithOtherOptions: a caller's idempotency key used
// again with the same file and other options (another date order) is
// refused, as with other content; with the same options it brings the
// batch back (issue 27, item 4).
func TestIdempotencyKeyWithOtherOptions(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		ctx := context.Background()
		file := "email,name,country,signup_date,amount\nk1@example.com,Ann,FR,01/02/2025,1\n"
		// imp imports the file under key and says whether it was the
		// batch of an earlier import.
		imp := func(key string, order rows.DateOrder) (reused bool, err error) {
			b, err := e.Import(ctx, batch.ImportParams{Kind: "customers", SourceName: "k.csv", Source: strings.NewReader(file), IdempotencyKey: key,
				Conventions: rows.Conventions{DateOrder: order}})
			return err == nil && b.Reused, err
		}
		if reused, err := imp("k-1", rows.DMY); err != nil || reused {
			t.Fatalf("first import: %v", err)
		}
		if reused, err := imp("k-1", rows.DMY); err != nil || !reused {
			t.Fatalf("the same key, file and options: %v, want the batch back", err)
		}
		if _, err := imp("k-1", rows.MDY); !errors.Is(err, batch.ErrKeyReused) {
			t.Fatalf("the same key and file with another date order: %v, want ErrKeyReused", err)
		}
		if _, err := imp("k-1", rows.DateOrderUnknown); !errors.Is(err, batch.ErrKeyReused) {
			t.Fatalf("the same key and file without the options: %v, want ErrKeyReused", err)
		}
		// A key first used without options.
		if reused, err := imp("k-2", rows.DateOrderUnknown); err != nil || reused {
			t.Fatalf("first import of k-2: %v", err)
		}
		if _, err := imp("k-2", rows.DMY); !errors.Is(err, batch.ErrKeyReused) {
			t.Fatalf("k-2 with a date order: %v, want ErrKeyReused", err)
		}
	})
}

// TestRerunWithCorrectedLocale: a batch imported without its locale, all
// invalid, is re-run with the locale, without a file and with one: every
// row succeeds, the batch keeps the new conventions (its workers read the
// rows with them) and its history the old and the new (issue 27, item 6).
func TestRerunWithCorrectedLocale(t *testing.T) {
	t.Parallel()
	de := rows.NumberFormat{Decimal: ',', Groups: []rune{'.'}}
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		ctx := context.Background()
		for _, withFile := range []bool{false, true} {
			b, err := importAndWorkParams(t, e, "../fixtures/real/locale_de.csv", batch.ImportParams{NewBatch: true})
			if err != nil || b.Counts[rows.StateInvalid] != 3 || b.Counts.Total() != 3 {
				t.Fatalf("import without the locale: %+v, %v; want 3 invalid rows", b, err)
			}
			if !slices.ContainsFunc(b.Warnings, settledByLocale) {
				t.Fatalf("import without the locale: no decimal comma warning in %+v", b.Warnings)
			}
			p := batch.RerunParams{BatchID: b.ID, Actor: "ann", Conventions: rows.Conventions{Number: de}}
			if withFile {
				f := openFixture(t, "../fixtures/real/locale_de.csv")
				p.Source, p.SourceName = f, "locale_de.csv"
			}
			res, err := e.Rerun(ctx, p)
			if err != nil || res.Valid != 3 || res.Invalid != 0 {
				t.Fatalf("file %v: re-run with the locale: %+v, %v", withFile, res, err)
			}
			if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{b.TenantID}, UntilDone: true}); err != nil {
				t.Fatal(err)
			}
			got, err := e.Batch(ctx, batch.BatchParams{TenantID: b.TenantID, ID: b.ID})
			if err != nil || got.Counts[rows.StateSucceeded] != 3 || got.Counts.Total() != 3 {
				t.Fatalf("file %v: after the re-run: %+v, %v; want every row succeeded", withFile, got, err)
			}
			if slices.ContainsFunc(got.Warnings, settledByLocale) {
				t.Errorf("file %v: the re-run with the locale keeps the warning it settled: %+v", withFile, got.Warnings)
			}
			if got.Conventions.Number.Decimal != ',' || len(got.Conventions.CommaColumns) != 0 {
				t.Errorf("file %v: the batch keeps %+v, want the German number format", withFile, got.Conventions)
			}
			for _, want := range []string{"de1@example.com:DE:1234.56:2022-01-02", "de2@example.com:DE:0.5:2022-01-02", "de3@example.com:DE:12500:2022-01-02"} {
				email, _, _ := strings.Cut(want, ":")
				if got := storedCustomer(t, bd, email); got != want {
					t.Errorf("file %v: stored %q, want %q", withFile, got, want)
				}
			}
			h, err := e.History(ctx, batch.HistoryParams{TenantID: b.TenantID, BatchID: b.ID})
			if err != nil || len(h) != 1 || h[0].Action != "rerun" {
				t.Fatalf("file %v: history %+v, %v", withFile, h, err)
			}
			var d struct {
				Conventions struct{ Old, New rows.Conventions }
			}
			if err := json.Unmarshal(h[0].Detail, &d); err != nil {
				t.Fatal(err)
			}
			if d.Conventions.Old.Number.Decimal == ',' || len(d.Conventions.Old.CommaColumns) != 1 || d.Conventions.New.Number.Decimal != ',' {
				t.Errorf("file %v: the history records %s, want the old conventions and the new", withFile, h[0].Detail)
			}
		}
	})
}

// TestLookAlikeColumnStopsTheImport: a column that looks like a column of
// the kind the file lacks ("Amount (EUR)" for amount) stops the import
// and the dry run before anything is written, naming both options that
// settle it; mapped, it is imported; ignored, the file imports without it
// and the amount stored before is left as it was (issue 27, item 1).
func TestLookAlikeColumnStopsTheImport(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		ctx := context.Background()
		if _, err := importAndWorkParams(t, e, "../fixtures/real/partial_full.csv", batch.ImportParams{}); err != nil {
			t.Fatal(err)
		}
		file := "email,name,country,signup_date,Amount (EUR)\nann@example.com,Ann,FR,2021-03-04,77.00\n"
		params := func(conv rows.Conventions) batch.ImportParams {
			return batch.ImportParams{Kind: "customers", SourceName: "eur.csv", Source: strings.NewReader(file), Conventions: conv}
		}
		check := func(what string, err error) {
			t.Helper()
			var fe *rows.FileError
			if !errors.As(err, &fe) || !errors.Is(err, rows.ErrBadHeader) ||
				!strings.Contains(err.Error(), `column "Amount (EUR)" looks like the kind's column "amount", which the file lacks`) {
				t.Fatalf("%s: %v, want a *rows.FileError about the look-alike column", what, err)
			}
			if got := fmt.Sprint(rows.HintsOf(err)); got != "[{map [Amount (EUR)=amount]} {ignore [Amount (EUR)]}]" {
				t.Errorf("%s: hints %s", what, got)
			}
		}
		_, err := e.Import(ctx, params(rows.Conventions{}))
		check("import", err)
		_, err = e.DryRun(ctx, params(rows.Conventions{}))
		check("dry run", err)
		if bs, err := e.Batches(ctx, batch.BatchesParams{}); err != nil || len(bs) != 1 {
			t.Fatalf("a refused file left batches: %d, %v", len(bs), err)
		}

		b, err := e.Import(ctx, params(rows.Conventions{Ignore: []string{"amount (eur)"}}))
		if err != nil || b.Counts[rows.StateValid] != 1 {
			t.Fatalf("import with the column ignored: %+v, %v", b, err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{b.TenantID}, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		if got := storedCustomer(t, bd, "ann@example.com"); got != "ann@example.com:FR:10.5:2021-03-04" {
			t.Errorf("ignored, the column changed the amount: %s", got)
		}
		b, err = e.Import(ctx, params(rows.Conventions{Renames: []rows.Rename{{From: "Amount (EUR)", To: "amount"}}}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{b.TenantID}, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		if got := storedCustomer(t, bd, "ann@example.com"); got != "ann@example.com:FR:77:2021-03-04" {
			t.Errorf("mapped, the amount is %s", got)
		}
		// A column to ignore must be one of the file's.
		_, err = e.Import(ctx, params(rows.Conventions{Ignore: []string{"Amount (USD)"}}))
		if !errors.Is(err, rows.ErrBadHeader) || !strings.Contains(err.Error(), `"Amount (USD)" is not one of the file's`) {
			t.Errorf("ignoring a column the file lacks: %v", err)
		}
	})
}

// settledByLocale reports whether w is a warning a locale settles.
func settledByLocale(w batchtype.Warning) bool {
	return slices.ContainsFunc(w.Hints, func(h rows.Hint) bool { return h.Option == rows.OptionLocale })
}

// TestRerunRefreshesWarnings: a column a re-run's mapping maps is no
// longer warned about as unknown (issue 27, frictions: the warnings after
// re-runs).
func TestRerunRefreshesWarnings(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		ctx := context.Background()
		src := "email,name,country,signup_date,Betrag,Fax\nw1@example.com,Ann,FR,2021-03-04,1.50,\n"
		b, err := e.Import(ctx, batch.ImportParams{Kind: "customers", SourceName: "w.csv", Source: strings.NewReader(src)})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Warnings) != 1 || b.Warnings[0].Message != `unknown columns ignored: "Betrag", "Fax"` {
			t.Fatalf("warnings at import: %+v", b.Warnings)
		}
		if _, err := e.Rerun(ctx, batch.RerunParams{BatchID: b.ID, Actor: "ann", Conventions: rows.Conventions{Renames: []rows.Rename{{From: "Betrag", To: "amount"}}}}); err != nil {
			t.Fatal(err)
		}
		got, err := e.Batch(ctx, batch.BatchParams{ID: b.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Warnings) != 1 || got.Warnings[0].Message != `unknown columns ignored: "Fax"` {
			t.Fatalf("warnings after a re-run that maps Betrag: %+v", got.Warnings)
		}
	})
}
