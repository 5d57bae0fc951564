package rows

import (
	"fmt"
	"testing"
)

func TestErrorTally(t *testing.T) {
	t.Parallel()
	var tally ErrorTally
	if tally.Counts() != nil || tally.Total() != 0 {
		t.Fatal("a new tally is not empty")
	}
	tally.Add([]FieldError{{Column: "email", Code: "email"}, {Column: "amount", Code: "gte"}})
	tally.Add([]FieldError{{Column: "email", Code: "email"}})
	tally.Add([]FieldError{{Code: CodeRaggedRow}, {Column: "amount", Code: CodeNotANumber}})
	tally.Add(nil)
	got := fmt.Sprint(tally.Counts())
	want := "[{email email 2} { ragged_row 1} {amount gte 1} {amount not_a_number 1}]"
	if got != want || tally.Total() != 5 {
		t.Fatalf("counts = %s (total %d), want %s (total 5)", got, tally.Total(), want)
	}
}
