package xlsxfile

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/rows"
)

type typedRow struct {
	Amount rows.Decimal `col:"amount"`
	Due    time.Time    `col:"due"`
}

// TestXLSXTypedCellsUnderLocale: a locale applies to text; a cell Excel
// stores as a number reads as that number under it, and one it stores as
// a date as that date (issue 27, item 7: with the locale de, typed
// numbers were refused for their decimal point). A text cell of six
// digits in a date column is a compact date, never a serial (item 2).
func TestXLSXTypedCellsUnderLocale(t *testing.T) {
	t.Parallel()
	de, _ := rows.LocaleNumberFormat("de")
	b := workbook(t, []string{"Sheet1"}, map[string][][]any{"Sheet1": {
		{"amount", "due"},
		{1234.5, time.Date(2025, 1, 7, 0, 0, 0, 0, time.UTC)}, // typed
		{"1.234,5", "2025-01-07"},                             // text, as the locale writes it
		{7, "070125"},
		{-0.25, 45664},
	}}, nil)
	for _, tc := range []struct {
		name   string
		number rows.NumberFormat
		values []string
	}{
		{"the default", rows.NumberFormat{}, []string{"1234.5|2025-01-07", "1.234,5|2025-01-07", "7|070125", "-0.25|45664"}},
		{"de", de, []string{"1234,5|2025-01-07", "1.234,5|2025-01-07", "7|070125", "-0,25|45664"}},
	} {
		opts := OptionsFrom(rows.ReadOptions{Number: tc.number, TmpDir: t.TempDir()})
		_, recs, err := readXLSX(t, bytes.NewReader(b), "typed.xlsx", opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, strings.Join(r.Values, "|"))
		}
		if strings.Join(got, " ") != strings.Join(tc.values, " ") {
			t.Errorf("%s: read %q, want %q", tc.name, got, tc.values)
		}
		if tc.name != "de" {
			continue
		}
		binder, err := rows.NewBinder(reflect.TypeFor[typedRow]())
		if err != nil {
			t.Fatal(err)
		}
		m, err := binder.MapFile([]string{"amount", "due"}, rows.Conventions{Number: de})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"1234.5", "1234.5", "7", "-0.25"}
		for i, r := range recs {
			var row typedRow
			errs := m.Bind(r.Row, r.Values, &row)
			if row.Amount.String() != want[i] || (len(errs) != 0) != (i == 2) {
				t.Errorf("row %d under de: %s, %v; want %s", r.Row, row.Amount, errs, want[i])
			}
			if i == 2 && (len(errs) != 1 || errs[0].Code != rows.CodeBadDate || len(errs[0].Hints) != 1 || errs[0].Hints[0].Option != rows.OptionDateFormat) {
				t.Errorf("a text cell 070125 in a date column: %v, want a bad_date with the date_format hint", errs)
			}
			if i < 2 && !row.Due.Equal(time.Date(2025, 1, 7, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("row %d: due %v", r.Row, row.Due)
			}
		}
	}
}
