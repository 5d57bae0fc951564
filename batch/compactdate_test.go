package batch_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

type datedRow struct {
	Ref string    `col:"ref" validate:"required"`
	Due time.Time `col:"due"`
}

// TestCompactDateImport: a compact date in a date column is never stored
// as an Excel serial (issue 27, item 2: 070125 was stored as 2091-12-28);
// undeclared it is a bad_date naming the forms, and a declared format is
// kept with the batch, so the worker binds the row the same way.
func TestCompactDateImport(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		reg := batch.NewRegistry()
		proc := batch.ProcessFunc[datedRow](func(_ context.Context, r datedRow) (string, error) {
			return r.Due.Format("2006-01-02"), nil // the date the worker bound
		})
		if err := batch.Register(reg, batch.Kind[datedRow]{Name: "dated", Processor: proc}); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, bd.store, reg, 0)
		const file = "ref,due\na,070125\nb,2025-02-03\nc,20250131\n"
		imp := func(o batch.FileOptions) map[string]struct {
			id   string
			errs []rows.FieldError
		} {
			t.Helper()
			p := batch.ImportParams{Kind: "dated", SourceName: "d.csv", Source: strings.NewReader(file), NewBatch: true}
			if err := o.Apply(&p); err != nil {
				t.Fatal(err)
			}
			b, err := e.Import(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); err != nil {
				t.Fatal(err)
			}
			got, err := bd.store.BatchGet(ctx, driver.BatchGetParams{TenantID: "default", ID: b.ID})
			if err != nil || string(got.Conventions.DateFormat) != strings.ToLower(o.DateFormat) {
				t.Fatalf("stored conventions %+v, %v; want the date format %q", got.Conventions, err, o.DateFormat)
			}
			list, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID})
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]struct {
				id   string
				errs []rows.FieldError
			}{}
			for _, r := range list {
				out[r.Values[0]] = struct {
					id   string
					errs []rows.FieldError
				}{r.ResultID, r.Errors}
			}
			return out
		}

		got := imp(batch.FileOptions{})
		if a := got["a"]; a.id != "" || len(a.errs) != 1 || a.errs[0].Code != rows.CodeBadDate ||
			len(a.errs[0].Hints) != 1 || a.errs[0].Hints[0].Option != rows.OptionDateFormat {
			t.Errorf("undeclared 070125: stored %+v, want a bad_date with the date_format hint", a)
		}
		if c := got["c"]; c.id != "" || len(c.errs) != 1 || c.errs[0].Code != rows.CodeBadDate {
			t.Errorf("undeclared 20250131: stored %+v, want a bad_date", c)
		}
		if b := got["b"]; b.id != "2025-02-03" {
			t.Errorf("2025-02-03: stored %+v", b)
		}

		got = imp(batch.FileOptions{DateFormat: "DDMMYY"})
		if a := got["a"]; a.id != "2025-01-07" || len(a.errs) != 0 {
			t.Errorf("ddmmyy 070125: stored %+v, want 2025-01-07", a)
		}
		if c := got["c"]; c.id != "" || len(c.errs) != 1 || c.errs[0].Code != rows.CodeBadDate {
			t.Errorf("ddmmyy 20250131: stored %+v, want a bad_date (8 digits are not ddmmyy)", c)
		}
		got = imp(batch.FileOptions{DateFormat: "serial"})
		if a := got["a"]; a.id != "2091-12-28" {
			t.Errorf("serial 070125: stored %+v, want 2091-12-28 as declared", a)
		}
	})
}

func TestFileOptionsDateFormat(t *testing.T) {
	t.Parallel()
	var p batch.ImportParams
	err := batch.FileOptions{DateFormat: "dd-mm-yy"}.Apply(&p)
	var oe *batch.OptionError
	if !errors.As(err, &oe) || oe.Option != "date_format" {
		t.Fatalf("Apply: %v, want an OptionError of date_format", err)
	}
	if err := (batch.FileOptions{DateFormat: "%d.%m.%Y"}).Apply(&p); err != nil || p.Conventions.DateFormat != "%d.%m.%Y" {
		t.Fatalf("Apply: %v, %+v", err, p.Conventions)
	}
}
