package batchctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
)

// clientHeaders is a file as clients send them: capitals, spaces,
// umlauts, another script, a leading digit, SQL keywords, a column named
// as the engine's own (id, tenant_id), a header twice and a header left
// empty, and yes/no words for a boolean.
const clientHeaders = "Ref,Amount,Order Date,Bestellnummer,Währung,Сумма,1st Name,Select,Order,id,tenant_id,Amount,,Note,Paid\n" +
	"A1,12.50,2025-01-03,B-1,EUR,5,Ann,x,o1,9,t,1,e1,,Yes\n" +
	"A2,7,2025-01-04,B-2,EUR,6,Bob,y,o2,8,t,2,e2,n,no\n" +
	"A3,3,2025-01-05,B-3,USD,7,Cy,z,o3,7,t,3,e3,,yes\n" +
	"A4,9,2025-01-06,B-4,EUR,8,Di,w,o4,6,t,4,e4,n,No\n"

// TestClientHeadersDraftImports: every header a client sends yields a
// draft that kind add stores and import reads, every row stored, and no
// row dropped for matching the draft's examples (issue 25, findings 1
// and 2).
func TestClientHeadersDraftImports(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		file := writeFile(t, "orders.csv", []byte(clientHeaders))
		draft := filepath.Join(t.TempDir(), "orders.schema.json")
		r := s.run("schema", "infer", file, "-f", draft)
		if r.code != exitOK {
			t.Fatalf("infer: %s", r)
		}
		for _, said := range []string{`"Amount" twice`, "column 13"} {
			if !strings.Contains(r.stderr, said) {
				t.Errorf("infer does not say %q:\n%s", said, r)
			}
		}
		if r := s.run("kind", "add", draft, "--create-table"); r.code != exitOK {
			d, _ := os.ReadFile(draft)
			t.Fatalf("kind add: %s\n%s", r, d)
		}
		r = s.run("import", "orders", file)
		if r.code != exitOK || !strings.Contains(r.stdout, "succeeded  4") || strings.Contains(r.stdout+r.stderr, "example") {
			t.Fatalf("import: %s", r)
		}
		var out strings.Builder
		if r := s.run("export", "orders", "-f", "-"); r.code != exitOK {
			t.Fatalf("export: %s", r)
		} else {
			out.WriteString(r.stdout)
		}
		for _, cell := range []string{"A1", "A4", "Ann", "Di", "o4", "e3"} {
			if !strings.Contains(out.String(), cell) {
				t.Errorf("the table lacks %q:\n%s", cell, out.String())
			}
		}
	})
}

// TestExampleNeverDropsARow: a field's example documents its column; a
// data row equal to the examples is imported like any other (issue 25,
// finding 2: an example of EUR dropped every EUR row).
func TestExampleNeverDropsARow(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		schema := writeFile(t, "pay.schema.json", []byte(`{"x-table": "pay", "primaryKey": "ref",
			"fields": [{"name": "ref", "example": "P-1"}, {"name": "currency", "example": "EUR"}]}`))
		if r := s.run("kind", "add", schema, "--create-table"); r.code != exitOK {
			t.Fatalf("kind add: %s", r)
		}
		file := writeFile(t, "pay.csv", []byte("ref,currency\nP-1,EUR\nP-2,EUR\nP-3,USD\n"))
		if r := s.run("import", "pay", file); r.code != exitOK || !strings.Contains(r.stdout, "succeeded  3") || strings.Contains(r.stdout+r.stderr, "example") {
			t.Fatalf("import: %s", r)
		}
	})
}

// TestSharedTableIntegerKey: a table every tenant shares (x-tenant: false)
// keyed by an integer, created by kind add, takes its rows (issue 25,
// finding 5: SQLite's rowid key has no index to list, and the created
// table was refused).
func TestSharedTableIntegerKey(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		schema := writeFile(t, "codes.schema.json", []byte(`{"x-table": "codes", "x-tenant": false, "primaryKey": "id",
			"fields": [{"name": "id", "type": "integer"}, {"name": "label"}]}`))
		if r := s.run("kind", "add", schema, "--create-table"); r.code != exitOK {
			t.Fatalf("kind add: %s", r)
		}
		file := writeFile(t, "codes.csv", []byte("id,label\n1,one\n2,two\n"))
		if r := s.run("import", "codes", file); r.code != exitOK || !strings.Contains(r.stdout, "succeeded  2") {
			t.Fatalf("import: %s", r)
		}
		if r := s.run("import", "--schema", schema, file, "--tenant", "other", "--new-batch"); r.code != exitOK || !strings.Contains(r.stdout, "succeeded  2") {
			t.Fatalf("import --schema: %s", r)
		}
	})
}

// TestOneOffSchemaBatch: a batch imported with --schema keeps its schema,
// so that its error report, its re-runs, its retries and the re-import of
// its report work although no kind of that name is stored (issue 25,
// finding 7).
func TestOneOffSchemaBatch(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		r := s.run("import", "--schema", schemas+"products.schema.yaml", schemas+"products.csv", "--create-table")
		if r.code != exitRows || !strings.Contains(r.stdout, "invalid   5") {
			t.Fatalf("import --schema: %s", r)
		}
		report := filepath.Join(t.TempDir(), "errors.csv")
		r = s.run("errors", "1", "-f", report)
		if r.code != exitOK || !strings.Contains(r.stderr, "batchctl rerun 1 "+report) {
			t.Fatalf("errors: %s", r)
		}
		if r := s.run("rerun", "1", report); r.code != exitRows || !strings.Contains(r.stdout, "invalid   5") {
			t.Errorf("rerun with the report: %s", r)
		}
		if r := s.run("import", "products", report); r.code != exitRows || !strings.Contains(r.stderr, "re-running batch 1") {
			t.Errorf("import of the report: %s", r)
		}
		if r := s.run("retry", "1"); r.code != exitRows || !strings.Contains(r.stderr, "0 rows of batch 1 are due again") {
			t.Errorf("retry: %s", r)
		}
		if r := s.run("rerun", "1"); r.code != exitRows || !strings.Contains(r.stdout, "invalid   5") {
			t.Errorf("rerun: %s", r)
		}
		// --schema is a Table Schema file; the PostgreSQL schema is
		// --pg-schema, and the old spelling says so instead of guessing.
		r = s.run("rerun", "1", report, "--schema", schemas+"products.schema.yaml")
		if r.code != exitUsage || !strings.Contains(r.stderr, "--pg-schema") {
			t.Errorf("rerun --schema: %s", r)
		}
		if r := s.run("import", "--schema", "sales", schemas+"products.csv"); r.code != exitUsage || !strings.Contains(r.stderr, "--pg-schema sales") {
			t.Errorf("import --schema sales: %s", r)
		}
	})
}

// TestKindAddAddsColumns: a new version of a stored kind with new fields
// says which columns its table needs, and adds them with --add-columns,
// nullable, the stored rows kept (issue 25, finding 8).
func TestKindAddAddsColumns(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		v1 := writeFile(t, "pay.schema.json", []byte(`{"x-table": "pay", "primaryKey": "ref",
			"fields": [{"name": "ref"}, {"name": "currency"}]}`))
		if r := s.run("kind", "add", v1, "--create-table"); r.code != exitOK {
			t.Fatalf("kind add v1: %s", r)
		}
		if r := s.run("import", "pay", writeFile(t, "pay.csv", []byte("ref,currency\nP-1,EUR\n"))); r.code != exitOK {
			t.Fatalf("import v1: %s", r)
		}
		v2 := writeFile(t, "pay.schema.json", []byte(`{"x-table": "pay", "primaryKey": "ref",
			"fields": [{"name": "ref"}, {"name": "currency"}, {"name": "note"}, {"name": "qty", "type": "integer", "constraints": {"required": true}}]}`))
		r := s.run("kind", "add", v2)
		if r.code != exitError || !strings.Contains(r.stderr, `ADD COLUMN "note"`) || !strings.Contains(r.stderr, `ADD COLUMN "qty"`) || !strings.Contains(r.stderr, "--add-columns") {
			t.Fatalf("kind add v2: %s", r)
		}
		if r := s.run("kind", "add", v2, "--add-columns"); r.code != exitOK || !strings.Contains(r.stdout, "schema v2") {
			t.Fatalf("kind add v2 --add-columns: %s", r)
		}
		if r := s.run("import", "pay", writeFile(t, "pay2.csv", []byte("ref,note,qty\nP-2,hi,3\n"))); r.code != exitOK {
			t.Fatalf("import v2: %s", r)
		}
		r = s.run("export", "pay", "-f", "-")
		if r.code != exitOK || !strings.Contains(r.stdout, "P-1,EUR,,") || !strings.Contains(r.stdout, "P-2,,hi,3") {
			t.Errorf("export: %s", r)
		}
	})
}

// TestSchemaKindTemplate: the XLSX template of a schema kind offers an
// enum field's values as a dropdown and says each column's constraints in
// its header cell's note, as a Go kind's does; its example row is left
// out when the template is imported as it is, and a filled-in row is
// imported (issue 25, finding 9).
func TestSchemaKindTemplate(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		schema := writeFile(t, "tickets.schema.json", []byte(`{"x-table": "tickets", "primaryKey": "ref",
			"fields": [{"name": "ref", "example": "T-1", "constraints": {"pattern": "T-[0-9]+"}},
				{"name": "prio", "type": "integer", "example": "2", "constraints": {"enum": [1, 2, 3]}},
				{"name": "qty", "type": "integer", "title": "Quantity", "constraints": {"minimum": 1, "maximum": 99}},
				{"name": "due", "type": "date"}]}`))
		if r := s.run("kind", "add", schema, "--create-table"); r.code != exitOK {
			t.Fatalf("kind add: %s", r)
		}
		out := filepath.Join(t.TempDir(), "tickets.xlsx")
		if r := s.run("template", "tickets", "-f", out); r.code != exitOK {
			t.Fatalf("template: %s", r)
		}
		f, err := excelize.OpenFile(out)
		if err != nil {
			t.Fatal(err)
		}
		sheet := f.GetSheetList()[0]
		dvs, err := f.GetDataValidations(sheet)
		if err != nil {
			t.Fatal(err)
		}
		if len(dvs) != 1 || !strings.HasPrefix(dvs[0].Sqref, "B2:") || !strings.Contains(dvs[0].Formula1, "1,2,3") {
			t.Errorf("dropdowns: %+v", dvs)
		}
		comments, err := f.GetComments(sheet)
		if err != nil {
			t.Fatal(err)
		}
		notes := map[string]string{}
		for _, cm := range comments {
			for _, p := range cm.Paragraph {
				notes[cm.Cell] += p.Text
			}
		}
		for cell, want := range map[string]string{"A1": "Matches the pattern T-[0-9]+", "B1": "One of: 1, 2, 3", "C1": "Quantity. A whole number. From 1 to 99.", "D1": "A date, YYYY-MM-DD."} {
			if !strings.Contains(notes[cell], want) {
				t.Errorf("note of %s: %q, want %q in it", cell, notes[cell], want)
			}
		}
		if err := f.SetSheetRow(sheet, "A3", &[]any{"T-7", 3, 5, "2025-01-02"}); err != nil {
			t.Fatal(err)
		}
		if err := f.Save(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		r := s.run("import", "tickets", out)
		if r.code != exitOK || !strings.Contains(r.stdout, "succeeded  1") || !strings.Contains(r.stdout, "row 2 is the template's example row") {
			t.Errorf("import of the filled-in template: %s", r)
		}
	})
}

// TestKeylessInsert: a schema without a primary key inserts every row
// (it used to answer each row with no result id, which the engine
// retried until the rows were dead).
func TestKeylessInsert(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		schema := writeFile(t, "logs.schema.json", []byte(`{"x-table": "logs", "fields": [{"name": "msg"}, {"name": "n", "type": "integer"}]}`))
		file := writeFile(t, "logs.csv", []byte("msg,n\nhello,1\nhello,1\nworld,2\n"))
		if r := s.run("kind", "add", schema, "--create-table"); r.code != exitOK {
			t.Fatalf("kind add: %s", r)
		}
		if r := s.run("import", "logs", file); r.code != exitOK || !strings.Contains(r.stdout, "succeeded  3") {
			t.Fatalf("import: %s", r)
		}
		if r := s.run("export", "logs", "-f", "-"); r.code != exitOK || strings.Count(r.stdout, "hello,1") != 2 || !strings.Contains(r.stdout, "world,2") {
			t.Errorf("export: %s", r)
		}
	})
}
