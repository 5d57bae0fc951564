package batchctl

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMaxFailed: import --max-failed pauses a batch whose rows fail past
// the bound before its other chunks run, exits 3 saying so and how to go
// on; resume is refused while the failures pass the bound; limit and
// resume --max-failed change it on the running batch; a schema kind's
// x-max-failed is its default. (It sets the process's environment for the
// webhook kind, so it does not run in parallel.)
func TestMaxFailed(t *testing.T) {
	var calls int
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		http.Error(w, `{"error":"this CRM refuses every customer"}`, http.StatusUnprocessableEntity)
	}))
	defer down.Close()
	t.Setenv("ROWFATE_WEBHOOK_URL", down.URL+"/customers")

	var src strings.Builder
	src.WriteString("email,name,country,signup_date,amount\n")
	for i := range 2100 { // three chunks of the kind's 1000 rows
		fmt.Fprintf(&src, "c%d@example.com,C %d,DE,2024-01-02,1.00\n", i, i)
	}
	file := writeFile(t, "crm.csv", []byte(src.String()))
	s := setup(t)
	r := s.run("import", "customers-webhook", file, "--max-failed", "5%", "--workers", "1")
	if r.code != exitRows || !strings.Contains(r.stdout, "batch 1  paused") ||
		!strings.Contains(r.stdout, "max-failed 5%: 1000 of 2100 rows failed so far") ||
		!strings.Contains(r.stdout, "to go on, resume it with a higher bound, or none: batchctl resume 1 --max-failed none") {
		t.Fatalf("import past its bound: want exit 3, paused after one chunk, got %s", r)
	}
	if calls != 1000 {
		t.Errorf("the downstream got %d calls, want the first chunk's 1000", calls)
	}
	var b struct {
		Paused    bool   `json:"paused"`
		MaxFailed string `json:"max_failed"`
	}
	s.runJSON(exitRows, &b, "status", "1", "-o", "json")
	if !b.Paused || b.MaxFailed != "5%" {
		t.Errorf("status -o json: %+v", b)
	}
	// watch ends at the pause, as status would: nothing happens until a
	// person acts.
	r = s.run("watch", "1", "-o", "jsonl")
	if r.code != exitRows {
		t.Errorf("watch of a batch paused by its bound: %s", r)
	}
	if !strings.Contains(r.stdout, `"reason":"1000 of 2100 rows failed, more than its max-failed 5%"`) {
		t.Errorf("the paused event with its reason: %s", r)
	}

	r = s.run("resume", "1")
	if r.code != 1 || !strings.Contains(r.stderr, "1000 of 2100 rows failed, more than its max-failed 5%") ||
		!strings.Contains(r.stderr, "resume it with a higher bound, or none: batchctl resume 1 --max-failed none") {
		t.Fatalf("resume past the bound: %s", r)
	}
	if r := s.run("limit", "1", "--max-failed", "1500"); r.code != exitOK || !strings.Contains(r.stdout, "paused") ||
		!strings.Contains(r.stdout, "max-failed 1500: 1000 of 2100 rows failed so far") {
		t.Fatalf("limit: %s", r)
	}
	if r := s.run("limit", "1", "--max-failed", "lots"); r.code != exitUsage || !strings.Contains(r.stderr, `"lots"`) {
		t.Fatalf("limit with a bad bound: %s", r)
	}
	if r := s.run("resume", "1", "--max-failed", "none"); r.code != exitOK || strings.Contains(r.stdout, "max-failed") {
		t.Fatalf("resume --max-failed none: %s", r)
	}
	if r := s.run("worker", "--batch", "1", "--until-done"); r.code != exitOK {
		t.Fatalf("worker: %s", r)
	}
	if r := s.run("status", "1"); r.code != exitRows || !strings.Contains(r.stdout, "failed  2100") {
		t.Fatalf("status after the rest ran: %s", r)
	}

	// A schema kind's x-max-failed is its imports' default.
	dir := t.TempDir()
	schema := filepath.Join(dir, "things.schema.json")
	if err := os.WriteFile(schema, []byte(`{"name": "things", "x-table": "things", "primaryKey": "id", "x-max-failed": "10%", "x-max-invalid": 1,
		"fields": [{"name": "id", "type": "integer"}, {"name": "qty", "type": "integer"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := s.run("kind", "add", schema, "--create-table"); r.code != exitOK {
		t.Fatalf("kind add: %s", r)
	}
	things := writeFile(t, "things.csv", []byte("id,qty\n1,2\n2,x\n3,4\n"))
	if r := s.run("import", "things", things, "-o", "json"); r.code != exitRows || !strings.Contains(r.stdout, `"max_failed": "10%"`) {
		t.Fatalf("import of a schema kind with x-max-failed: %s", r)
	}
	worse := writeFile(t, "worse.csv", []byte("id,qty\n4,a\n5,b\n6,4\n"))
	if r := s.run("import", "things", worse); r.code != exitRejected || !strings.Contains(r.stderr, "2 of 3 rows are invalid, more than the 1 allowed") {
		t.Fatalf("import past the schema's x-max-invalid: %s", r)
	}
}
