package rows_test

import (
	"encoding/json"
	"testing"

	"github.com/rowfate/rowfate/rows"
)

// TestOptionalJSON: a set value is written as itself, an unset one as null,
// or left out under omitzero (a webhook body does not mention what the
// file did not); both read back as they were.
func TestOptionalJSON(t *testing.T) {
	type body struct {
		Country rows.Optional[string]       `json:"country,omitzero"`
		Amount  rows.Optional[rows.Decimal] `json:"amount"`
	}
	for _, c := range []struct {
		in   body
		want string
	}{
		{body{}, `{"amount":null}`},
		{body{Country: rows.Some("FR"), Amount: rows.Some(rows.NewDecimal(150, 2))}, `{"country":"FR","amount":"1.50"}`},
		{body{Country: rows.Some("")}, `{"country":"","amount":null}`},
	} {
		b, err := json.Marshal(c.in)
		if err != nil || string(b) != c.want {
			t.Errorf("marshal %+v: want %s, got %s (%v)", c.in, c.want, b, err)
			continue
		}
		var back body
		if err := json.Unmarshal(b, &back); err != nil || back.Country != c.in.Country || back.Amount.Set != c.in.Amount.Set {
			t.Errorf("unmarshal %s: got %+v (%v)", b, back, err)
		}
	}
}
