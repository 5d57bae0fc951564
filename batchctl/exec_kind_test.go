//go:build unix

package batchctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecKind: with $ROWFATE_EXEC_COMMAND set, customers-exec runs the
// program once per valid row, with the row as JSON on stdin and its effect
// key in the environment, and records the id the program prints; a
// program that exits 65 (EX_DATAERR) fails its row, with its message.
func TestExecKind(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	prog := filepath.Join(dir, "ship.sh")
	script := `#!/bin/sh
read -r row
case "$row" in
*'"email":"refuse@example.com"'*) echo "this customer is refused downstream" >&2; exit 65 ;;
esac
echo "$ROWFATE_EFFECT_KEY $row" >> ` + log + `
echo "shipped-$ROWFATE_ROW"
`
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ROWFATE_EXEC_COMMAND", prog)
	t.Setenv("ROWFATE_EXEC_STATE_DIR", t.TempDir())
	file := writeFile(t, "exec.csv", []byte("email,name,country,signup_date,amount\n"+
		"a@example.com,Ann,FR,2021-03-04,1.50\n"+
		"refuse@example.com,Ref,FR,2021-03-04,2\n"+
		"not-an-email,Bad,FR,2021-03-04,3\n"))
	c := setup(t)
	if r := c.run("kinds"); !strings.Contains(r.stdout, "customers-exec") {
		t.Fatalf("kinds does not list customers-exec:\n%s", r)
	}
	if r := c.run("import", "customers-exec", file); r.code != exitRows {
		t.Fatalf("import customers-exec: want exit 3, got %s", r)
	}
	var rs []struct {
		RowNo    int    `json:"row_no"`
		State    string `json:"state"`
		ResultID string `json:"result_id"`
		Errors   []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	c.runJSON(exitOK, &rs, "rows", "1", "-o", "json")
	got := map[int]string{}
	for _, r := range rs {
		got[r.RowNo] = r.State + " " + r.ResultID
		if r.State == "failed" && (len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, "refused downstream")) {
			t.Errorf("row %d failed without the program's message: %+v", r.RowNo, r.Errors)
		}
	}
	want := map[int]string{2: "succeeded shipped-2", 3: "failed ", 4: "invalid "}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("row %d: want %q, got %q", n, w, got[n])
		}
	}
	runs, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(runs)), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one run of the program for the one row that succeeded, got %q", runs)
	}
	key, row, _ := strings.Cut(lines[0], " ")
	var body map[string]any
	if err := json.Unmarshal([]byte(row), &body); err != nil || body["email"] != "a@example.com" || !strings.HasPrefix(key, "default/customers-exec/") {
		t.Errorf("the program got key %q and stdin %q (%v)", key, row, err)
	}
}
