package rows

import "testing"

func TestLocaleOf(t *testing.T) {
	for _, l := range []string{"de", "en", "fr", "ch"} {
		f, err := LocaleNumberFormat(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := LocaleOf(f); got != l {
			t.Errorf("LocaleOf(%s's format) = %q", l, got)
		}
	}
	for _, f := range []NumberFormat{{}, DecimalComma, {Decimal: ','}} {
		if got := LocaleOf(f); got != "" {
			t.Errorf("LocaleOf(%+v) = %q, want none", f, got)
		}
	}
}
