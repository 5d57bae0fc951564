package rows

import (
	"reflect"
	"testing"
)

// TestLookAlikeColumns: which unknown header cells look like a column the
// file lacks — a near miss stops an import (issue 27, item 1) — and that a
// column the conventions ignore is none.
func TestLookAlikeColumns(t *testing.T) {
	t.Parallel()
	b := mustBinder(t, reflect.TypeFor[presence]())
	for _, tt := range []struct {
		header string
		want   string // the column it looks like; "" for none
		ignore []string
	}{
		{"Amount (EUR)", "amount", nil},
		{"amount eur", "amount", nil},
		{"Total amount", "amount", nil},
		{"Total amount due (EUR)", "amount", nil},
		{"Countyr", "country", nil},
		{"Amount (EUR)", "", []string{"amount (eur)"}},
		{"notes", "", nil},
		{"amount of the order paid", "", nil}, // more than three words
	} {
		m, err := b.MapFile([]string{"email", tt.header}, Conventions{Ignore: tt.ignore})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(m.Suggestions) == 1 {
			got = m.Suggestions[0].Column
		}
		if got != tt.want || len(m.Suggestions) > 1 {
			t.Errorf("%q (ignore %q): looks like %v, want %q", tt.header, tt.ignore, m.Suggestions, tt.want)
		}
	}
}
