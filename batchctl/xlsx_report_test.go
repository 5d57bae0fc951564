package batchctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
)

// TestErrorReportXLSXLoop is the user's loop with a workbook: import, get
// the problem rows as .xlsx (bad cells marked), fix them, import the
// workbook again.
func TestErrorReportXLSXLoop(t *testing.T) {
	t.Parallel()
	c := setup(t)
	if r := c.run("import", "customers", fixture); r.code != exitRows {
		t.Fatalf("import: %s", r)
	}
	out := filepath.Join(t.TempDir(), "errors.xlsx")
	r := c.run("errors", "1", "-f", out)
	if r.code != exitOK || !strings.Contains(r.stderr, "wrote 15 rows to "+out+"; fix them and run: batchctl import customers "+out) {
		t.Fatalf("errors: %s", r)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("report file: %v, %v", st, err)
	}

	f, err := excelize.OpenFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sheet := f.GetSheetList()[0]
	all, err := f.GetRows(sheet)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 16 || strings.Join(all[0], ",") != "email,name,country,signup_date,amount,row,error" {
		t.Fatalf("report has %d rows, header %q", len(all), all[0])
	}
	// Row 10 of the fixture is the first problem row: its email cell (A2)
	// carries the message as a comment.
	if all[1][5] != "10" || all[1][6] != "email: must be a valid email" {
		t.Fatalf("first report row = %q", all[1])
	}
	comments, err := f.GetComments(sheet)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, cm := range comments {
		text := cm.Text
		for _, p := range cm.Paragraph {
			text += p.Text
		}
		if cm.Cell == "A2" && strings.Contains(text, "must be a valid email") {
			found = true
		}
	}
	if !found {
		t.Errorf("no comment on A2 among %d comments", len(comments))
	}

	// Fix every row the easy way: replace each cell an error names.
	fixes := map[int]map[string]string{} // report row -> column -> value
	for i, row := range all[1:] {
		fixes[i+2] = map[string]string{"A": "fixed" + row[5] + "@example.com", "B": "Fixed Name", "C": "FR", "D": "2020-02-02", "E": "1.00"}
	}
	for r, cols := range fixes {
		for col, v := range cols {
			if err := f.SetCellStr(sheet, col+itoa(r), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The workbook names its batch (its subject): importing it re-runs
	// batch 1, whose 285 completed rows stay as they were.
	r = c.run("import", "customers", out)
	if r.code != exitOK || !strings.Contains(r.stderr, "is the error report of batch 1: re-running batch 1") {
		t.Fatalf("re-import of the fixed workbook: %s", r)
	}
	var b jsonBatch
	c.runJSON(exitOK, &b, "status", "1", "-o", "json")
	if b.Counts["succeeded"] != 300 || len(b.Counts) != 1 {
		t.Fatalf("re-import counts = %v", b.Counts)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestTemplateXLSX(t *testing.T) {
	t.Parallel()
	c := setup(t)
	out := filepath.Join(t.TempDir(), "template.xlsx")
	if r := run(t, "template", "customers", "-f", out); r.code != exitOK {
		t.Fatalf("template: %s", r)
	}
	f, err := excelize.OpenFile(out)
	if err != nil {
		t.Fatal(err)
	}
	all, err := f.GetRows(f.GetSheetList()[0])
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || strings.Join(all[0], ",") != "email,name,country,signup_date,amount" {
		t.Fatalf("template rows = %q", all)
	}
	// The template's example row is a valid customer.
	if r := c.run("import", "customers", out); r.code != exitOK {
		t.Fatalf("import of the template: %s", r)
	}
}

func TestPreviewXLSX(t *testing.T) {
	t.Parallel()
	var res struct {
		Format    string   `json:"format"`
		Sheets    []string `json:"sheets"`
		Sheet     string   `json:"sheet"`
		HeaderRow int64    `json:"header_row"`
		Header    []string `json:"header"`
	}
	r := run(t, "preview", "../fixtures/xlsx/customers.xlsx", "-o", "json")
	if r.code != exitOK {
		t.Fatalf("preview: %s", r)
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Format != "xlsx" || len(res.Sheets) == 0 || res.Sheet == "" || res.HeaderRow < 1 || len(res.Header) < 5 {
		t.Fatalf("preview = %+v", res)
	}
	r = run(t, "import", "customers", "../fixtures/xlsx/customers.xlsx", "--dry-run")
	if !strings.Contains(r.stdout, "sheet \""+res.Sheet+"\" of ") || !strings.Contains(r.stdout, "nothing was written") {
		t.Fatalf("dry run: %s", r)
	}
}
