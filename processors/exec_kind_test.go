//go:build unix

package processors_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/processors"
)

// TestExecEffectOncePerRowAndReconcile: customers-exec runs its program
// once per customer however often the customers are imported, with an
// effect key of the tenant's that names the row, and reconciles unknown
// rows with the reconcile program: an id is a success, exit 79 a failure.
func TestExecEffectOncePerRowAndReconcile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	ship := filepath.Join(dir, "ship.sh")
	check := filepath.Join(dir, "check.sh")
	// The downstream: a ledger of the keys shipped, one line each. (The
	// programs get no environment of the test's: the path is written in.)
	for path, body := range map[string]string{
		ship: `read -r row
echo "$ROWFATE_EFFECT_KEY" >> "$LEDGER"
echo "ship-$(wc -l < "$LEDGER" | tr -d ' ')"
`,
		check: `read -r row
n=$(grep -n -x -F "$ROWFATE_EFFECT_KEY" "$LEDGER" | cut -d: -f1)
[ -n "$n" ] || exit 79
echo "ship-$n"
`,
	} {
		body = "LEDGER='" + ledger + "'\n" + body
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, processors.Config{
		ExecCommand:          []string{"/bin/sh", ship},
		ExecReconcileCommand: []string{"/bin/sh", check},
		ExecStateDir:         t.TempDir(),
	})
	first := e.importAndWork(t, processors.ExecKind, "acme", customersFile)
	want := e.outcomes(t, "acme", first.ID)
	again := e.importAndWork(t, processors.ExecKind, "acme", customersFile)
	if got := e.outcomes(t, "acme", again.ID); again.ID == first.ID || got[2] != want[2] || got[3] != want[3] || !strings.HasPrefix(got[2], "succeeded ship-") {
		t.Errorf("the same customers again: %v; want the first batch's %v", got, want)
	}
	keys := readLines(t, ledger)
	if len(keys) != 2 || keys[0] == keys[1] {
		t.Fatalf("the program ran for keys %q; want once for each of the two customers", keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "acme/"+processors.ExecKind+"/") {
			t.Errorf("effect key %q: want the tenant's, naming the kind", k)
		}
	}

	// Row 2's answer was lost; row 3's program never got to ship.
	markUnknown(t, e.store, again.ID, 2, 3)
	if err := os.WriteFile(ledger, []byte(keys[0]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := e.eng.Reconcile(context.Background(), "acme", again.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.outcomes(t, "acme", again.ID); st.Succeeded != 1 || st.Failed != 1 || got[2] != want[2] || got[3] != "failed " {
		t.Errorf("reconcile: %+v, rows %v; want row 2 %q and row 3 failed", st, got, want[2])
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}
