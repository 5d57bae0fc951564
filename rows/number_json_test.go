package rows

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestNumberFormatJSON: the separators are written as strings (the API and
// the CLI printed {"decimal":44,"groups":[46]}), and a batch stored with
// the character codes still reads.
func TestNumberFormatJSON(t *testing.T) {
	t.Parallel()
	f := NumberFormat{Decimal: ',', Groups: []rune{'.', nbsp}}
	b, err := json.Marshal(Conventions{Number: f})
	if err != nil || string(b) != "{\"number\":{\"decimal\":\",\",\"groups\":[\".\",\"\u00a0\"]}}" {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	for _, in := range []string{string(b), `{"number":{"decimal":44,"groups":[46,160]}}`} {
		var c Conventions
		if err := json.Unmarshal([]byte(in), &c); err != nil || c.Number.Decimal != ',' || !slices.Equal(c.Number.Groups, f.Groups) {
			t.Errorf("unmarshal %s: %+v, %v", in, c.Number, err)
		}
	}
	var c Conventions
	if err := json.Unmarshal([]byte(`{"number":{"decimal":",,"}}`), &c); err == nil {
		t.Errorf("a two-character separator read as %+v", c.Number)
	}
	if b, _ := json.Marshal(Conventions{}); string(b) != `{}` {
		t.Errorf("zero conventions: %s", b)
	}
}
