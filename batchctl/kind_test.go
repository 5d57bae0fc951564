package batchctl

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/internal/testenv"
)

const schemas = "../fixtures/schemas/"

// TestKindCommands: a kind stored from a schema file is listed with its
// version, imported, reported, re-run, exported, versioned and removed.
func TestKindCommands(t *testing.T) {
	t.Parallel()
	s := setup(t)
	if r := s.run("kind", "add", schemas+"orders.schema.json"); r.code != exitError || !strings.Contains(r.stderr, "there is no table orders") || !strings.Contains(r.stderr, "--create-table") {
		t.Fatalf("add without a table: %s", r)
	}
	if r := s.run("kind", "add", schemas+"orders.schema.json", "--create-table"); r.code != exitOK || !strings.Contains(r.stdout, "kind orders stored: schema v1, table orders (per tenant), upsert on order_id, line_no") {
		t.Fatalf("add: %s", r)
	}
	if r := s.run("kind", "add", schemas+"orders.schema.json"); !strings.Contains(r.stdout, "unchanged: schema v1") {
		t.Errorf("the same schema again: %s", r)
	}
	if r := s.run("kinds"); !strings.Contains(r.stdout, "orders (import, schema v1)") || !strings.Contains(r.stdout, "orders (export)") || !strings.Contains(r.stdout, "customers (import)") {
		t.Errorf("kinds: %s", r)
	}

	r := s.run("import", "orders", schemas+"orders.csv")
	if r.code != exitRows || !strings.Contains(r.stdout, "succeeded  32") || !strings.Contains(r.stdout, "invalid   8") {
		t.Fatalf("import: %s", r)
	}
	report := filepath.Join(t.TempDir(), "errors.csv")
	if r := s.run("errors", "1", "-f", report); r.code != exitOK {
		t.Fatalf("errors: %s", r)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.NewReplacer("ORDER-1,", "ORD-99999,", "not-an-email", "ok@example.com").Replace(string(data))
	if err := os.WriteFile(report, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := s.run("import", "orders", report); r.code != exitRows || !strings.Contains(r.stderr, "re-running batch 1") || !strings.Contains(r.stdout, "succeeded  34") {
		t.Fatalf("the fixed report: %s", r)
	}

	// A new version; the first batch keeps the version it was validated with.
	v2 := filepath.Join(t.TempDir(), "orders.schema.json")
	orig, _ := os.ReadFile(schemas + "orders.schema.json")
	if err := os.WriteFile(v2, []byte(strings.Replace(string(orig), `"title": "Order lines"`, `"title": "Order lines, v2"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := s.run("kind", "add", v2); !strings.Contains(r.stdout, "stored: schema v2") {
		t.Fatalf("add v2: %s", r)
	}
	var st struct {
		KindVersion int64 `json:"kind_version"`
	}
	if r := s.run("status", "1", "-o", "json"); json.Unmarshal([]byte(r.stdout), &st) != nil || st.KindVersion != 1 {
		t.Errorf("batch 1's kind version: %s", r)
	}
	if r := s.run("kind", "show", "orders", "--version", "1"); r.code != exitOK || r.stdout != string(orig) {
		t.Errorf("show v1: %s", r)
	}
	if r := s.run("kind", "show", "orders"); !strings.Contains(r.stdout, "Order lines, v2") {
		t.Errorf("show: %s", r)
	}

	// Export the table as the kind's file.
	out := filepath.Join(t.TempDir(), "orders-out.csv")
	if r := s.run("export", "orders", "-f", out); r.code != exitOK {
		t.Fatalf("export: %s", r)
	}
	exported, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(strings.TrimPrefix(string(exported), "\ufeff"), "\r\n", "\n")), "\n")
	if len(lines) != 35 || lines[0] != "order_id,line_no,sku,quantity,unit_price,order_date,ship_date,customer_email" {
		t.Fatalf("export: %d lines, header %q", len(lines), lines[0])
	}

	if r := s.run("kind", "rm", "orders"); r.code != exitOK {
		t.Fatalf("rm: %s", r)
	}
	if r := s.run("import", "orders", schemas+"orders.csv"); r.code != exitUsage || !strings.Contains(r.stderr, `unknown kind "orders"`) {
		t.Errorf("import of a removed kind: %s", r)
	}
	if r := s.run("kind", "add", schemas+"orders.schema.json"); !strings.Contains(r.stdout, "stored: schema v3") {
		t.Errorf("add after rm: %s", r)
	}
}

// TestKindAddRefusals: a schema with mistakes is refused with their JSON
// paths; a table whose column type disagrees is refused naming it; a
// schema named as a built-in kind is refused.
func TestKindAddRefusals(t *testing.T) {
	t.Parallel()
	s := setup(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.schema.json")
	os.WriteFile(bad, []byte(`{"x-table":"t","fields":[{"name":"a","type":"money"},{"name":"b","constraints":{"pattern":"("}}],"primaryKey":"c"}`), 0o644)
	r := s.run("kind", "add", bad)
	if r.code != exitUsage {
		t.Fatalf("bad schema: %s", r)
	}
	for _, want := range []string{"$.fields[0].type", "$.fields[1].constraints.pattern", "$.primaryKey"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not name %s: %s", want, r.stderr)
		}
	}
	builtin := filepath.Join(dir, "customers.schema.json")
	os.WriteFile(builtin, []byte(`{"x-table":"customers","fields":[{"name":"email"}]}`), 0o644)
	if r := s.run("kind", "add", builtin); r.code != exitUsage || !strings.Contains(r.stderr, "built-in kind") {
		t.Errorf("a built-in name: %s", r)
	}
	// products' price column exists as an integer.
	if r := s.run("import", "customers", "../fixtures/customers.csv", "--no-work"); r.code != exitOK {
		t.Fatalf("create the database: %s", r)
	}
	sqlOn(t, s.database, `CREATE TABLE products (tenant_id TEXT NOT NULL, sku TEXT NOT NULL, name TEXT, category TEXT, price INTEGER, vat_rate TEXT, active INTEGER, stock INTEGER, PRIMARY KEY (tenant_id, sku))`)
	r = s.run("kind", "add", schemas+"products.schema.yaml")
	if r.code != exitError || !strings.Contains(r.stderr, "column price is INTEGER, which does not hold a number") {
		t.Errorf("a mismatched table: %s", r)
	}
	if r := s.run("kinds"); strings.Contains(r.stdout, "products (import") {
		t.Errorf("a refused kind was stored: %s", r.stdout)
	}
}

// TestImportSchemaFile: --schema imports with a kind that is not stored.
func TestImportSchemaFile(t *testing.T) {
	t.Parallel()
	s := setup(t)
	r := s.run("import", "--schema", schemas+"products.schema.yaml", schemas+"products.csv", "--create-table")
	if r.code != exitRows || !strings.Contains(r.stdout, "succeeded  20") || !strings.Contains(r.stdout, "invalid   5") {
		t.Fatalf("import --schema: %s", r)
	}
	if r := s.run("import", "--schema", schemas+"events.schema.json", schemas+"events.csv", "--dry-run"); r.code != exitRows || !strings.Contains(r.stdout, "valid 26, invalid 4") {
		t.Errorf("dry run --schema: %s", r)
	}
	if r := s.run("kinds"); strings.Contains(r.stdout, "products (import") {
		t.Errorf("--schema stored the kind: %s", r.stdout)
	}
	if r := s.run("import", "orders", "--schema", schemas+"products.schema.yaml", schemas+"products.csv"); r.code != exitUsage {
		t.Errorf("a kind that is not the schema's: %s", r)
	}
}

// TestSchemaInfer: a drafted schema imports its file with no invalid rows
// but the ones that are really invalid (those the hand-written schema or
// the Go kind refuses).
func TestSchemaInfer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file  string
		flags []string
		// really are the rows a hand-written schema or Go kind refuses.
		really []int64
	}{
		{"../fixtures/customers.csv", nil, []int64{10, 20, 30, 40, 50, 90, 120, 140, 160, 200, 250, 270, 280, 290, 300}},
		{schemas + "orders.csv", nil, []int64{7, 11, 16, 20, 24, 29, 33, 38}},
		{schemas + "products.csv", []string{"--decimal-comma"}, []int64{5, 10, 14, 19, 23}},
		{schemas + "events.csv", nil, []int64{6, 12, 17, 22}},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			t.Parallel()
			s := setup(t)
			draft := filepath.Join(t.TempDir(), "draft.schema.json")
			r := s.run(append([]string{"schema", "infer", tc.file, "--table", "drafted", "-f", draft}, tc.flags...)...)
			if r.code != exitOK || !strings.Contains(r.stderr, "the draft reads") {
				t.Fatalf("infer: %s", r)
			}
			r = s.run(append([]string{"import", "--schema", draft, tc.file, "--create-table", "-o", "json"}, tc.flags...)...)
			if r.code != exitOK && r.code != exitRows {
				t.Fatalf("import with the draft: %s", r)
			}
			rr := s.run("rows", "1", "--state", "invalid", "-o", "json", "--limit", "1000")
			var page []struct {
				RowNo int64 `json:"row_no"`
			}
			if err := json.Unmarshal([]byte(rr.stdout), &page); err != nil {
				t.Fatalf("rows: %v: %s", err, rr)
			}
			for _, row := range page {
				if !slices.Contains(tc.really, row.RowNo) {
					d, _ := os.ReadFile(draft)
					t.Errorf("the draft refuses row %d, which is valid:\n%s\n%s", row.RowNo, rr.stdout, d)
				}
			}
		})
	}
}

// TestWorkerLearnsNewKind: a worker process started before a kind was
// stored works that kind's batches without a restart.
func TestWorkerLearnsNewKind(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a worker process")
	}
	bin := buildBatchctl(t)
	s := setup(t)
	if r := s.run("migrate"); r.code != exitOK {
		t.Fatalf("migrate: %s", r)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := exec.CommandContext(ctx, bin, "worker", "--worker-token", "dev", "--database", s.database)
	var log lockedBuffer
	w.Stderr = &log
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = w.Wait() }()
	time.Sleep(500 * time.Millisecond) // the worker is up, without the kind
	if r := s.run("kind", "add", schemas+"events.schema.json", "--create-table"); r.code != exitOK {
		t.Fatalf("add: %s", r)
	}
	if r := s.run("import", "events", schemas+"events.csv", "--no-work"); r.code != exitOK {
		t.Fatalf("import: %s", r)
	}
	var r result
	finished := func() bool {
		r = s.run("status", "1", "-o", "json")
		var b struct {
			Status string           `json:"status"`
			Counts map[string]int64 `json:"counts"`
		}
		if json.Unmarshal([]byte(r.stdout), &b) != nil || b.Status != "finished" {
			return false
		}
		if b.Counts["succeeded"] != 26 {
			t.Fatalf("finished with %v", b.Counts)
		}
		return true
	}
	testenv.Until(t, finished, func() string {
		return fmt.Sprintf("the running worker to work the new kind's batch: %s\nworker log:\n%s", r, log.String())
	})
}
