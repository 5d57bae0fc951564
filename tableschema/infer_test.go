package tableschema_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows/csvfile"
	"github.com/rowfate/rowfate/tableschema"
)

// TestInferSkipsUnreadableLines: a line that cannot be read as CSV is no
// evidence of a column's type; it is left out and counted in a note.
func TestInferSkipsUnreadableLines(t *testing.T) {
	t.Parallel()
	in := "id,amount\n1,10\n2,\"20\"x\n3,30\n"
	r, err := csvfile.NewReader(strings.NewReader(in), "t.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := tableschema.Infer(r, tableschema.InferOptions{Table: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Schema.Fields[1].Type; got != tableschema.TypeInteger {
		t.Errorf("amount drafted as %s, want integer", got)
	}
	if !slices.ContainsFunc(d.Notes, func(n string) bool {
		return strings.Contains(n, "1 lines could not be read as CSV and were left out (the first is row 3)")
	}) {
		t.Errorf("notes %q lack the unreadable line", d.Notes)
	}
}
