package batch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
)

// fixtureOutcome is what importing one file of fixtures/csv as customers
// must give.
type fixtureOutcome struct {
	valid, invalid int64
	// codes are the error codes of each invalid row, space-separated.
	codes map[int64]string
	// values are cells of stored rows that decoding must get right:
	// row -> column index -> value.
	values map[int64]map[int]string
	warn   string // substring of the one warning; "" for none
	// rejected is a substring of the *rows.FileError; line its line.
	rejected string
	line     int64
}

var fixtureOutcomes = map[string]fixtureOutcome{
	"utf8_bom.csv":        {valid: 3, values: map[int64]map[int]string{2: {0: "zoe@example.com", 1: "Zoë Straße"}}},
	"utf16le_bom.csv":     {valid: 3, values: map[int64]map[int]string{2: {0: "zoe@example.com", 1: "Zoë Straße"}, 4: {4: "99.99"}}},
	"utf16be_bom.csv":     {valid: 3, values: map[int64]map[int]string{3: {1: "José Núñez"}}},
	"windows1252.csv":     {valid: 4, values: map[int64]map[int]string{3: {1: "José Núñez"}, 5: {1: "Café €uro"}}},
	"semicolon.csv":       {valid: 3},
	"tab.csv":             {valid: 3},
	"pipe.csv":            {valid: 3},
	"crlf.csv":            {valid: 3},
	"quoted_newlines.csv": {valid: 2, warn: `unknown columns ignored: "note"`, values: map[int64]map[int]string{2: {1: "Ann\nSmith"}, 3: {5: `say "hi"`}}},
	"ragged.csv":          {valid: 2, invalid: 2, codes: map[int64]string{3: "ragged_row required", 4: "ragged_row"}},
	"nul.csv":             {valid: 2, invalid: 1, codes: map[int64]string{3: "nul_byte"}, values: map[int64]map[int]string{3: {1: "B\uFFFDb"}}},
	"bad_utf8.csv":        {valid: 1, invalid: 1, codes: map[int64]string{3: "nul_byte bad_encoding"}},
	"bare_cr.csv":         {valid: 3, values: map[int64]map[int]string{4: {0: "lea@example.com"}}},
	"huge_cell.csv":       {valid: 2, invalid: 1, codes: map[int64]string{3: "cell_too_long"}},
	"unbalanced_quote.csv": {valid: 2, invalid: 1, codes: map[int64]string{3: "unreadable_line"},
		values: map[int64]map[int]string{3: {0: `b@example.com,"Bob,FR,2020-01-02,2`}, 4: {1: "Cid"}}},
	"duplicate_headers.csv": {rejected: `columns 1 and 3 are both named "Email"`, line: 1},
	"missing_columns.csv":   {rejected: `missing required columns: "name", "signup_date"`, line: 1},
	"unknown_columns.csv":   {valid: 1, warn: `unknown columns ignored: "notes", "row", "error"`},
	"header_only.csv":       {},
	"empty.csv":             {rejected: "no header row"},
	"excel_dates.csv":       {valid: 2, invalid: 1, codes: map[int64]string{3: "bad_date"}},
	"duplicate_keys.csv":    {valid: 2, invalid: 1, codes: map[int64]string{4: "duplicate_key"}},
	"formula_quotes.csv":    {valid: 2, values: map[int64]map[int]string{2: {1: "=Ann", 4: "-0"}, 3: {1: "'Bob", 4: "+2"}}},
	// Excel's sep= line names the delimiter and is row 1.
	"sep_line.csv": {valid: 3, values: map[int64]map[int]string{3: {0: "zoe@example.com", 1: "Zoë Straße"}, 5: {4: "99.99"}}},
	// Title and note lines above the header: the header is the first row
	// with the kind's required columns.
	"title_rows.csv":  {valid: 3, values: map[int64]map[int]string{5: {0: "zoe@example.com"}}},
	"header_row3.csv": {valid: 3, values: map[int64]map[int]string{4: {0: "zoe@example.com"}}},
}

// TestImportFixturesCorpus imports every file of fixtures/csv as customers
// on both stores and checks its outcome: counts, codes, decoded values,
// warnings, or the rejection (and that a rejected file leaves no batch).
func TestImportFixturesCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../fixtures/csv/*.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(fixtureOutcomes) {
		t.Errorf("fixtures/csv has %d files, the table %d", len(files), len(fixtureOutcomes))
	}
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		reg := batch.NewRegistry()
		if err := batch.Register(reg, customers.Kind(bd.db, bd.dialect)); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, bd.store, reg, 0)
		for _, path := range files {
			name := filepath.Base(path)
			w, ok := fixtureOutcomes[name]
			if !ok {
				t.Errorf("no expected outcome for %s", name)
				continue
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: name, Source: f})
			f.Close()
			if w.rejected != "" {
				var fe *rows.FileError
				if !errors.As(err, &fe) || fe.Line != w.line || !strings.Contains(err.Error(), w.rejected) {
					t.Errorf("%s: err = %v, want a *rows.FileError at line %d containing %q", name, err, w.line, w.rejected)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if b.Counts[rows.StateValid] != w.valid || b.Counts[rows.StateInvalid] != w.invalid {
				t.Errorf("%s: counts %v, want %d valid, %d invalid", name, b.Counts, w.valid, w.invalid)
			}
			if got := strings.Join(messages(b.Warnings), "; "); (w.warn == "") != (got == "") || !strings.Contains(got, w.warn) {
				t.Errorf("%s: warnings %q, want %q", name, got, w.warn)
			}
			stored, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: "default", BatchID: b.ID})
			if err != nil {
				t.Fatal(err)
			}
			byRow := map[int64]batchtype.Row{}
			for _, r := range stored {
				byRow[r.RowNo] = r
			}
			for row, want := range w.codes {
				var got []string
				for _, fe := range byRow[row].Errors {
					got = append(got, string(fe.Code))
				}
				if strings.Join(got, " ") != want {
					t.Errorf("%s: row %d codes %q, want %q (%v)", name, row, got, want, byRow[row].Errors)
				}
			}
			for row, cells := range w.values {
				for i, want := range cells {
					if v := byRow[row].Values; i >= len(v) || v[i] != want {
						t.Errorf("%s: row %d cell %d = %q, want %q", name, row, i, fmt.Sprint(v), want)
					}
				}
			}
		}
		bs, err := bd.store.BatchList(ctx, driver.BatchListParams{TenantID: "default", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var rejected int
		for _, w := range fixtureOutcomes {
			if w.rejected != "" {
				rejected++
			}
		}
		if want := len(fixtureOutcomes) - rejected; len(bs) != want {
			names := []string{}
			for _, b := range bs {
				names = append(names, b.SourceName)
			}
			slices.Sort(names)
			t.Errorf("%d batches (%v), want %d: a rejected file left a batch", len(bs), names, want)
		}
	})
}
