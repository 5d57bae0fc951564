package rows

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestNumberFormats(t *testing.T) {
	t.Parallel()
	de, _ := LocaleNumberFormat("de")
	fr, _ := LocaleNumberFormat("fr-FR")
	en, _ := LocaleNumberFormat("en_US")
	ch, _ := LocaleNumberFormat("de-CH")
	plain := NumberFormat{}
	for _, tc := range []struct {
		f    NumberFormat
		in   string
		want string // "" with hint: an error containing hint
		hint string
	}{
		// Each locale reads its own form, exactly.
		{de, "1.234,56", "1234.56", ""},
		{de, "0,5", "0.5", ""},
		{de, "12.500", "12500", ""},
		{de, "1.234.567", "1234567", ""},
		{DecimalComma, "1 234,56", "1234.56", ""},
		{DecimalComma, "1\u00a0234,56", "1234.56", ""},
		{fr, "1\u202f234,56", "1234.56", ""},
		{ch, "1'234.56", "1234.56", ""},
		{ch, "1’234.56", "1234.56", ""},
		{en, "1,234.56", "1234.56", ""},
		{en, "-1,234", "-1234", ""},
		{plain, "-1234.50", "-1234.50", ""},
		{plain, "42", "42", ""},
		// Thousands only where the locale has them, in groups of three.
		{de, "12.5", "", "decimal point, but the file's numbers were declared with a decimal comma"},
		{de, "1.23,4", "", "not a number"},
		{en, "12,5", "", "decimal comma"},
		{en, "1,2345", "", "not a number"},
		{fr, "1.234,5", "", "not a number"},
		{de, "1.234 567", "", "not a number"},
		// The plain format guesses nothing, and says which option reads it
		// (in words; TestNumberHints checks the options as data).
		{plain, "1,50", "", "with a decimal comma"},
		{plain, "1.234,56", "", "with a decimal comma"},
		{plain, "1,234.56", "", "the locale en"},
		{plain, "1'234.56", "", "the locale ch"},
		{plain, "1 234", "", "the locale fr"},
	} {
		got, err := tc.f.Normalize(tc.in)
		if tc.hint == "" {
			if err != nil || got != tc.want {
				t.Errorf("%s Normalize(%q) = %q, %v; want %q", tc.f.Describe(), tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("%s Normalize(%q) = %q, %v; want an error with %q", tc.f.Describe(), tc.in, got, err, tc.hint)
		}
	}
	if _, err := LocaleNumberFormat("xx"); err == nil || !strings.Contains(err.Error(), "ch, de, en, fr") {
		t.Errorf("unknown locale: %v", err)
	}
}

// TestNumberHints: a number another convention would read carries the
// options that read it as data, for each front end to name its own way,
// and its message names no front end's spelling of them.
func TestNumberHints(t *testing.T) {
	t.Parallel()
	plain := NumberFormat{Decimal: '.'}
	for in, want := range map[string]string{
		"1,50":     "[{decimal_comma []} {locale [de fr]}]",
		"1,234.56": "[{locale [en]} {decimal_comma []}]",
		"1'234.56": "[{locale [ch]}]",
		"1 234":    "[{locale [fr]}]",
		"abc":      "[]",
	} {
		_, err := plain.Normalize(in)
		if got := fmt.Sprint(HintsOf(err)); got != want {
			t.Errorf("hints of %q = %s, want %s", in, got, want)
		}
		if err != nil && strings.Contains(err.Error(), "--") {
			t.Errorf("%q: the message names a flag: %v", in, err)
		}
	}
}

func TestNumberClues(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]NumberClue{
		"12":        ClueNone,
		"12.5":      ClueDecimalPoint,
		"1,234.56":  ClueDecimalPoint,
		"1,234,567": ClueDecimalPoint,
		"0,5":       ClueDecimalComma,
		"1.234,56":  ClueDecimalComma,
		"1.234.567": ClueDecimalComma,
		"1 234,56":  ClueDecimalComma,
		"12.500":    ClueAmbiguous,
		"1,234":     ClueAmbiguous,
		"0.500":     ClueDecimalPoint,
		"1234.567":  ClueDecimalPoint,
		"abc":       ClueNone,
	} {
		if got := NumberClueOf(in); got != want {
			t.Errorf("NumberClueOf(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestDateClues(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]DateClue{
		"13/02/2025":          DateClueDayFirst,
		"31.12.2025":          DateClueDayFirst,
		"02/13/2025":          DateClueMonthFirst,
		"01/02/2025":          DateClueAmbiguous,
		"05/05/2025":          DateClueNone,
		"2025-01-02":          DateClueNone,
		"31-Dec-2025":         DateClueNone,
		"01/02/2025 10:00:00": DateClueAmbiguous,
	} {
		if got := DateClueOf(in); got != want {
			t.Errorf("DateClueOf(%q) = %d, want %d", in, got, want)
		}
	}
}

type dated struct {
	On  time.Time `col:"on"`
	DMY time.Time `col:"dmy" dateorder:"dmy"`
}

// TestDateOrders: a numeric date is read in the file's order; with none,
// only a value one order alone reads is read, and the kind's declared
// order applies where the file says nothing.
func TestDateOrders(t *testing.T) {
	t.Parallel()
	b := mustBinder(t, reflect.TypeFor[dated]())
	d := func(y, m, dd int) time.Time { return time.Date(y, time.Month(m), dd, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		order DateOrder
		col   string
		in    string
		want  time.Time
		err   string
	}{
		{DMY, "on", "01/02/2025", d(2025, 2, 1), ""},
		{MDY, "on", "01/02/2025", d(2025, 1, 2), ""},
		{DateOrderUnknown, "on", "01/02/2025", time.Time{}, "the date order dmy or mdy"},
		{DateOrderUnknown, "on", "13/02/2025", d(2025, 2, 13), ""},
		{DMY, "on", "02/13/2025", time.Time{}, "there is no month 13"},
		{MDY, "on", "31.12.2025", time.Time{}, "there is no month 31"},
		{DateOrderUnknown, "dmy", "01/02/2025", d(2025, 2, 1), ""}, // the kind's declared order
		{MDY, "dmy", "01/02/2025", d(2025, 1, 2), ""},              // the file's declaration wins
		{DateOrderUnknown, "on", "2025/02/01", d(2025, 2, 1), ""},
		{DateOrderUnknown, "on", "2025-12-31 00:00:00", d(2025, 12, 31), ""},
		{DateOrderUnknown, "on", "31-Dec-2025", d(2025, 12, 31), ""},
		{DateOrderUnknown, "on", "December 31, 2025", d(2025, 12, 31), ""},
		{DateOrderUnknown, "on", "2025-Dec-31", d(2025, 12, 31), ""},
		{DateOrderUnknown, "on", "31 Decembre 2025", time.Time{}, "not an English month name"},
	} {
		m, err := b.MapFile([]string{tc.col}, Conventions{DateOrder: tc.order})
		if err != nil {
			t.Fatal(err)
		}
		var got dated
		errs := m.Bind(2, []string{tc.in}, &got)
		v := got.On
		if tc.col == "dmy" {
			v = got.DMY
		}
		if tc.err == "" {
			if len(errs) != 0 || !v.Equal(tc.want) {
				t.Errorf("%s %q (%s) = %v, %v; want %v", tc.col, tc.in, tc.order, v, errs, tc.want)
			}
			continue
		}
		if len(errs) != 1 || errs[0].Code != CodeBadDate || !strings.Contains(errs[0].Message, tc.err) {
			t.Errorf("%s %q (%s) = %v, %v; want bad_date with %q", tc.col, tc.in, tc.order, v, errs, tc.err)
		} else if ambiguous := strings.Contains(tc.err, "date order"); ambiguous != (fmt.Sprint(errs[0].Hints) == "[{date_order [dmy mdy]}]") {
			t.Errorf("%s %q: hints %v", tc.col, tc.in, errs[0].Hints)
		}
	}
}

type presence struct {
	Email   string            `col:"email"`
	Country Optional[string]  `col:"country,upper"`
	Amount  Optional[Decimal] `col:"amount"`
	Count   Optional[int]     `col:"count"`
}

// TestOptionalPresence: a field the file does not give, by leaving its
// column out or its cell empty, is not set; a given one is, zero or not.
func TestOptionalPresence(t *testing.T) {
	t.Parallel()
	b := mustBinder(t, reflect.TypeFor[presence]())
	m := mustMap(t, b, "email", "amount", "country")
	var p presence
	if errs := m.Bind(2, []string{"a@example.com", "0", ""}, &p); len(errs) != 0 {
		t.Fatal(errs)
	}
	if !p.Amount.Set || !p.Amount.Value.IsZero() || p.Country.Set || p.Count.Set {
		t.Fatalf("bound %+v: want amount set to 0, country and count unset", p)
	}
	p = presence{}
	if errs := m.Bind(2, []string{"a@example.com", "", "de"}, &p); len(errs) != 0 || p.Amount.Set || p.Country != Some("DE") {
		t.Fatalf("bound %+v, %v: want amount unset, country DE (upper-cased)", p, errs)
	}
	if errs := m.Bind(2, []string{"a@example.com", "x", ""}, &p); len(errs) != 1 || p.Amount.Set {
		t.Fatalf("a bad amount: %+v, %v", p, errs)
	}
	cells, err := b.Format(presence{Email: "e", Amount: Some(NewDecimal(125, 1))})
	if err != nil || fmt.Sprint(cells) != "[e  12.5 ]" {
		t.Fatalf("Format = %q, %v", cells, err)
	}
}

// TestMapConventions: renames, unnamed columns, near-miss suggestions and
// the comma columns' ambiguity.
func TestMapConventions(t *testing.T) {
	t.Parallel()
	b := mustBinder(t, reflect.TypeFor[presence]())
	m, err := b.MapFile([]string{"email", "Amount (EUR)", "", "Countyr", "notes"}, Conventions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m.Unnamed) != "[2]" || fmt.Sprint(m.Unknown) != "[Amount (EUR) Countyr notes]" {
		t.Fatalf("unnamed %v, unknown %v", m.Unnamed, m.Unknown)
	}
	want := `["Amount (EUR)" looks like "amount": map it onto that column "Countyr" looks like "country": map it onto that column]`
	if got := fmt.Sprint(fmtSuggestions(m.Suggestions)); got != want {
		t.Fatalf("suggestions\n%s\nwant\n%s", got, want)
	}
	if got := fmt.Sprint(m.Suggestions[0].Hint()); got != "{map [Amount (EUR)=amount]}" {
		t.Fatalf("the suggestion's hint: %s", got)
	}
	m, err = b.MapFile([]string{"email", "Amount (EUR)"}, Conventions{Renames: []Rename{{From: "amount (eur)", To: "Amount"}}, CommaColumns: []string{"Amount (EUR)"}})
	if err != nil || len(m.Unknown) != 0 || m.ColumnName("Amount") != "Amount (EUR)" {
		t.Fatalf("rename: %+v, %v", m, err)
	}
	var p presence
	errs := m.Bind(3, []string{"a@example.com", "12.500"}, &p)
	if len(errs) != 1 || errs[0].Code != CodeNotANumber || !strings.Contains(errs[0].Message, "ambiguous") || errs[0].Column != "Amount (EUR)" {
		t.Fatalf("12.500 in a column with decimal commas: %v", errs)
	}
	if errs := m.Bind(3, []string{"a@example.com", "12.5"}, &p); len(errs) != 0 || p.Amount.Value.String() != "12.5" {
		t.Fatalf("12.5 reads one way only: %+v, %v", p, errs)
	}
	if _, err := b.MapFile([]string{"email"}, Conventions{Renames: []Rename{{From: "email", To: "phone"}}}); err == nil || !strings.Contains(err.Error(), `the kind has no column "phone"`) {
		t.Fatalf("rename to a column the kind lacks: %v", err)
	}
}

func fmtSuggestions(ss []Suggestion) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return out
}
