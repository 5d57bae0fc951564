package validate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/validate"
)

type optionalRow struct {
	Email   string                      `col:"email" validate:"required"`
	Country rows.Optional[string]       `col:"country,upper" validate:"omitempty,iso3166_1_alpha2"`
	Amount  rows.Optional[rows.Decimal] `col:"amount" validate:"omitempty,gte=0"`
	Code    rows.Optional[string]       `col:"code" validate:"required,len=3"`
}

// TestOptionalFields: declarative checks see an Optional's value when the
// file gave one, and nothing when it did not.
func TestOptionalFields(t *testing.T) {
	t.Parallel()
	p, err := validate.New[optionalRow]()
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Binder().Map([]string{"email", "country", "amount", "code"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		values []string
		want   string // codes
	}{
		{[]string{"a@x", "", "", "abc"}, ""},
		{[]string{"a@x", "de", "12.50", "abc"}, ""},
		{[]string{"a@x", "xx", "-1", "abc"}, "iso3166_1_alpha2 gte"},
		{[]string{"a@x", "", "0", ""}, "required"},
		{[]string{"a@x", "", "", "abcd"}, "len"},
	} {
		row, errs := p.Run(context.Background(), m, rows.Record{Row: 2, Values: tc.values})
		var codes []string
		for _, e := range errs {
			codes = append(codes, string(e.Code))
		}
		if got := fmt.Sprint(append([]string{}, codes...)); got != fmt.Sprint(strings.Fields(tc.want)) {
			t.Errorf("%q: codes %v, want %q (errors %v, row %+v)", tc.values, codes, tc.want, errs, row)
		}
	}
	_, errs := p.Run(context.Background(), m, rows.Record{Row: 2, Values: []string{"a@x", "XX", "", "abc"}})
	if len(errs) != 1 || errs[0].Message != `"XX" is not a country code: write the two-letter ISO 3166-1 code, such as DE or US` {
		t.Errorf("country message: %v", errs)
	}
}
