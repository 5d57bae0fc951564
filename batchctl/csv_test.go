package batchctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const bom = "\ufeff"

func TestPreview(t *testing.T) {
	t.Parallel()
	c := setup(t)
	path := writeFile(t, "semi.csv", []byte("E-Mail;Name;notes;amount\na@example.com;Ann;hi;1,50\n\nb@example.com;Bob\n"))

	r := c.run("preview", path, "--kind", "customers")
	want := "file       " + path + " (csv)\n" +
		"encoding   utf-8 (detected)\n" +
		"delimiter  ; (sniffed)\n" +
		`header     "E-Mail" | "Name" | "notes" | "amount"` + "\n" +
		`row 2      "a@example.com" | "Ann" | "hi" | "1,50"` + "\n" +
		`row 4      "b@example.com" | "Bob"` + "\n" +
		"           ! row 4: row has 2 cells, the header has 4\n" +
		"kind customers\n" +
		`  matched  "E-Mail" -> email` + "\n" +
		`  matched  "Name" -> name` + "\n" +
		`  matched  "amount" -> amount` + "\n" +
		`  unknown  "notes" (ignored)` + "\n" +
		"  missing  country (optional)\n" +
		"  missing  signup_date (required: the file would be rejected)\n"
	// Exit 4, as the import would give: a script can check a file first.
	if r.code != exitRejected || r.stdout != want || r.stderr != "" {
		t.Fatalf("want exit 4 and stdout\n%s\ngot %s", want, r)
	}
	// Preview reads the file only: no database.
	if _, err := os.Stat(c.database); !os.IsNotExist(err) {
		t.Errorf("preview created the database (stat: %v)", err)
	}

	var got struct {
		Encoding  string `json:"encoding"`
		Delimiter string `json:"delimiter"`
		Rows      []struct {
			Row    int64    `json:"row"`
			Values []string `json:"values"`
		} `json:"rows"`
		Kind struct {
			Missing []struct {
				Column   string `json:"column"`
				Required bool   `json:"required"`
			} `json:"missing"`
		} `json:"kind"`
	}
	c.runJSON(exitRejected, &got, "preview", path, "--kind", "customers", "--rows", "1", "-o", "json", "--delimiter", ",")
	if got.Delimiter != "," || len(got.Rows) != 1 || len(got.Rows[0].Values) != 2 || len(got.Kind.Missing) != 5 {
		t.Errorf("preview with --delimiter , as JSON: %+v", got)
	}

	latin := writeFile(t, "latin.csv", []byte("name\nM\xfcller\n"))
	r = c.run("preview", latin)
	if r.code != exitOK || !strings.Contains(r.stdout, "encoding   windows-1252 (detected)\n") || !strings.Contains(r.stdout, `"Müller"`) {
		t.Errorf("preview of a Windows-1252 file: %s", r)
	}
	r = c.run("preview", latin, "--encoding", "utf-8")
	if r.code != exitOK || !strings.Contains(r.stdout, "encoding   utf-8 (as given)\n") || !strings.Contains(r.stdout, "bad_encoding") && !strings.Contains(r.stdout, "not valid UTF-8") {
		t.Errorf("preview of a Windows-1252 file as UTF-8: %s", r)
	}

	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"preview"}, "batchctl preview: preview needs <file>, got 0 arguments\n"},
		{[]string{"preview", path, "--kind", "suppliers"}, "batchctl preview: unknown kind \"suppliers\"; known kinds: customers\n"},
		{[]string{"preview", path, "--encoding", "ebcdic"}, "batchctl preview: --encoding: unknown encoding \"ebcdic\""},
		{[]string{"preview", path, "--delimiter", "ab"}, "batchctl preview: --delimiter: bad delimiter \"ab\""},
	} {
		r := c.run(tc.args...)
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, tc.stderr) {
			t.Errorf("%v: want exit %d and stderr %q, got %s", tc.args, exitUsage, tc.stderr, r)
		}
	}
	// Classic Mac line ends are read: with no LF in the file, a bare CR
	// ends a line without doubt.
	r = c.run("preview", writeFile(t, "cr.csv", []byte("email,name,signup_date\ra@b.co,Ada,2020-01-01\r")))
	if r.code != exitOK || !strings.Contains(r.stdout, "a@b.co") {
		t.Errorf("preview of a bare-CR file: %s", r)
	}
}

func TestImportDryRun(t *testing.T) {
	t.Parallel()
	c := setup(t)
	r := c.run("import", "customers", fixture, "--dry-run")
	if r.code != exitRows || r.stderr != "" {
		t.Fatalf("dry run: %s", r)
	}
	for _, want := range []string{
		"dry run  " + fixture + "  (customers): nothing was written\n",
		"  encoding utf-8, delimiter ,\n",
		"  valid 285, invalid 15, total 300\n",
		"first errors:\n  row 10, column email: must be a valid email\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, r)
		}
	}
	if _, err := os.Stat(c.database); !os.IsNotExist(err) {
		t.Errorf("a dry run created the database (stat: %v)", err)
	}

	ok := writeFile(t, "ok.tsv", []byte("email\tname\tsignup_date\textra\na@example.com\tAnn\t2020-01-02\tx\n"))
	var res struct {
		Counts   map[string]int64 `json:"counts"`
		Warnings []struct {
			Message string `json:"message"`
		} `json:"warnings"`
	}
	c.runJSON(exitOK, &res, "import", "customers", ok, "--dry-run", "-o", "json")
	if res.Counts["valid"] != 1 || len(res.Warnings) != 1 || res.Warnings[0].Message != `unknown columns ignored: "extra"` {
		t.Errorf("dry run as JSON: %+v", res)
	}

	// The warning also reaches a real import, with its summary on stdout
	// (and in status).
	r = c.run("import", "customers", ok)
	if r.code != exitOK || !strings.Contains(r.stdout, "\nwarning: "+`unknown columns ignored: "extra"`+"\n") || r.withoutProgress() != created(1, ok) {
		t.Errorf("import with an unknown column: %s", r)
	}
	if r := c.run("status", "1"); !strings.Contains(r.stdout, "\nwarning: "+`unknown columns ignored: "extra"`+"\n") {
		t.Errorf("status of an import with an unknown column: %s", r)
	}
}

func TestErrorsReportAndReimport(t *testing.T) {
	t.Parallel()
	c := setup(t)
	if r := c.run("import", "customers", fixture); r.code != exitRows {
		t.Fatalf("import: %s", r)
	}

	// Without -o the report goes to stdout.
	r := c.run("errors", "1")
	title := "rowfate error report of batch 1 (customers): fix the rows below and import this file again to re-run the batch\r\n"
	if r.code != exitOK || !strings.HasPrefix(r.stdout, bom+title+"email,name,country,signup_date,amount,row,error\r\n") || r.stderr != "" {
		t.Fatalf("errors 1: %s", r)
	}
	if !strings.Contains(r.stdout, "carol(at)example.com,Alan Hopper,US,2011-10-25,'-1,250,email: must be a valid email; amount: must be ≥ 0\r\n") {
		t.Errorf("row 250 missing or wrong in:\n%s", r.stdout)
	}
	if n := strings.Count(r.stdout, "\r\n"); n != 17 {
		t.Errorf("report has %d lines, want a title, a header and 15 rows", n)
	}

	out := filepath.Join(t.TempDir(), "errors.csv")
	r = c.run("errors", "1", "-f", out)
	if r.code != exitOK || r.stdout != "" || !strings.HasPrefix(r.stderr, "wrote 15 rows to "+out) {
		t.Fatalf("errors 1 -o %s: %s", out, r)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, []byte(c.run("errors", "1").stdout)) {
		t.Error("the file differs from the report on stdout")
	}
	only := c.run("errors", "1", "--state", "succeeded")
	if only.code != exitOK || strings.Count(only.stdout, "\r\n") != 287 {
		t.Errorf("errors --state succeeded: %d lines", strings.Count(only.stdout, "\r\n"))
	}

	// Importing the report as it is re-runs batch 1 with it: its rows
	// replace the ones they came from (matched by the row column), the
	// apostrophe of '-1 is removed again (so amount fails gte, not
	// not_a_number), and row 300 still repeats row 2's email, which
	// succeeded: it stays invalid.
	r = c.run("import", "customers", out)
	if r.code != exitRows || !strings.Contains(r.stdout, "    succeeded  285\n") || !strings.Contains(r.stdout, "      invalid   15\n") {
		t.Fatalf("import of the report: %s", r)
	}
	if !strings.Contains(r.stderr, out+" is the error report of batch 1: re-running batch 1 with it") ||
		!strings.Contains(r.stderr, "batch 1 re-run with "+out+" (rows matched by row): 15 rows parsed again, 0 added (0 valid, 15 invalid)") {
		t.Errorf("import of the report: %s", r)
	}
	var rs []jsonRow
	c.runJSON(exitOK, &rs, "rows", "1", "--state", "invalid", "-o", "json")
	for _, row := range rs {
		switch row.Values[0] {
		case "carol(at)example.com":
			if row.Values[4] != "-1" || len(row.Errors) != 2 || row.Errors[1].Code != "gte" {
				t.Errorf("row of carol: %+v", row)
			}
		case "donald.liskov0@example.com":
			if row.Errors[0].Code != "duplicate_key" {
				t.Errorf("row 300: %+v", row)
			}
		}
	}
	if r := c.run("batches"); strings.Contains(r.stdout, "batch 2") || !strings.Contains(r.stdout, "batch 1") {
		t.Errorf("a re-run made a new batch: %s", r)
	}
	// --new-batch imports it as a batch of its own.
	if r := c.run("import", "customers", out, "--new-batch"); r.code != exitRows || !strings.Contains(r.stderr, "batch 2 created") {
		t.Fatalf("import --new-batch: %s", r)
	}
	if r := c.run("history", "1"); r.code != exitOK || !strings.Contains(r.stdout, " rerun ") || !strings.Contains(r.stdout, "15 parsed again") {
		t.Errorf("history: %s", r)
	}

	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"errors"}, exitUsage, "batchctl errors: need exactly one <batch> id, got 0 arguments\n"},
		{[]string{"errors", "1", "--state", "nope"}, exitUsage, "batchctl errors: unknown state \"nope\"\n"},
		{[]string{"errors", "9"}, exitError, "batchctl errors: error report of batch 9: get batch 9: not found\n"},
		{[]string{"errors", "1", "-f", filepath.Join(t.TempDir(), "missing", "x.csv")}, exitError, "batchctl errors: create "},
	} {
		r := c.run(tc.args...)
		if r.code != tc.code || !strings.HasPrefix(r.stderr, tc.stderr) {
			t.Errorf("%v: want exit %d and stderr %q, got %s", tc.args, tc.code, tc.stderr, r)
		}
	}
}

func TestTemplate(t *testing.T) {
	t.Parallel()
	c := setup(t)
	r := c.run("template", "customers")
	want := bom + "email,name,country,signup_date,amount\r\nada@example.com,Ada Lovelace,GB,2024-01-31,1250.50,← example row: not imported\r\n"
	if r.code != exitOK || r.stdout != want || r.stderr != "" {
		t.Fatalf("want exit 0 and stdout %q, got %s", want, r)
	}
	if _, err := os.Stat(c.database); !os.IsNotExist(err) {
		t.Errorf("template created the database (stat: %v)", err)
	}
	// The template is a file the kind imports as it is, and its example
	// row is never imported as data.
	out := filepath.Join(t.TempDir(), "customers.csv")
	if r := c.run("template", "customers", "-f", out); r.code != exitOK {
		t.Fatalf("template -o: %s", r)
	}
	r = c.run("import", "customers", out)
	if r.code != exitOK || !strings.Contains(r.stdout, "    total  0\n") || !strings.Contains(r.stdout, "warning: row 2 is the template's example row and was not imported") {
		t.Errorf("import of the template: %s", r)
	}
	// Filled in, it imports the user's rows only.
	filled, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	filled = append(filled, "bea@example.com,Bea Smith,DE,2024-02-01,10\r\ncid@example.com,Cid Jones,,2024-02-02,\r\n"...)
	if err := os.WriteFile(out, filled, 0o644); err != nil {
		t.Fatal(err)
	}
	r = c.run("import", "customers", out)
	if r.code != exitOK || !strings.Contains(r.stdout, "succeeded  2\n") || !strings.Contains(r.stdout, "    total  2\n") {
		t.Errorf("import of a filled-in template: %s", r)
	}
	var rs []jsonRow
	c.runJSON(exitOK, &rs, "rows", "2", "-o", "json")
	if len(rs) != 2 || rs[0].RowNo != 3 || rs[0].Values[0] != "bea@example.com" {
		t.Errorf("rows of the filled-in template: %+v", rs)
	}
	if r := c.run("template", "suppliers"); r.code != exitUsage {
		t.Errorf("template of an unknown kind: %s", r)
	}
}

// TestReviewCommands: row set validates again and protects the row, row
// skip needs a reason, rerun without a file keeps both, history tells.
func TestReviewCommands(t *testing.T) {
	t.Parallel()
	c := setup(t)
	in := writeFile(t, "m.csv", []byte("email,name,country,signup_date,amount\na@example.com,Ann,FR,2020-01-02,1\nb@example.com,,FR,2020-01-02,2\nc@example.com,Cy,FR,2020-01-02,-3\n"))
	if r := c.run("import", "customers", in); r.code != exitRows {
		t.Fatalf("import: %s", r)
	}
	if r := c.run("row", "set", "1", "2", "name=Zed"); r.code != exitError || !strings.Contains(r.stderr, "row 2 of batch 1 is succeeded: row cannot be changed") {
		t.Errorf("set of a succeeded row: %s", r)
	}
	r := c.run("row", "set", "1", "3", "name=Bea", "email=A@example.com", "--actor", "ann")
	if r.code != exitRows || !strings.Contains(r.stdout, "row 3  invalid") || !strings.Contains(r.stdout, "same email as row 2") {
		t.Errorf("set to a taken email: %s", r)
	}
	if r := c.run("row", "set", "1", "3", "email=b@example.com", "--actor", "ann"); r.code != exitOK || !strings.Contains(r.stdout, "row 3  valid") {
		t.Errorf("set: %s", r)
	}
	if r := c.run("row", "skip", "1", "4"); r.code != exitUsage || !strings.Contains(r.stderr, "--reason") {
		t.Errorf("skip without a reason: %s", r)
	}
	if r := c.run("row", "skip", "1", "4", "--reason", "test row", "--actor", "bob"); r.code != exitOK {
		t.Errorf("skip: %s", r)
	}
	if r := c.run("row", "set", "1", "x", "a=b"); r.code != exitUsage {
		t.Errorf("bad row number: %s", r)
	}
	r = c.run("rerun", "1")
	if r.code != exitOK || !strings.Contains(r.stderr, "0 rows parsed again") || !strings.Contains(r.stdout, "succeeded  2\n") {
		t.Errorf("rerun: %s", r)
	}
	r = c.run("history", "1")
	for _, want := range []string{"ann", "edit", `email: "A@example.com" -> "b@example.com" (invalid -> valid)`, "bob", "skip", `"test row" (was invalid)`, "rerun"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("history lacks %q: %s", want, r)
		}
	}
	if r := c.run("history", "9"); r.code != exitError {
		t.Errorf("history of an unknown batch: %s", r)
	}
}

// TestRecalcCommand: batchctl recalc works a tier recalculation over the
// filtered customers, refuses a filter it cannot parse as a usage error,
// and refuses an import kind.
func TestRecalcCommand(t *testing.T) {
	t.Parallel()
	c := setup(t)
	in := writeFile(t, "t.csv", []byte("email,name,country,signup_date,amount\na@example.com,Ann,DE,2020-01-02,5\nb@example.com,Bo,DE,2020-01-02,500\nc@example.com,Cy,FR,2020-01-02,5000\n"))
	if r := c.run("import", "customers", in); r.code != exitOK {
		t.Fatalf("import: %s", r)
	}
	r := c.run("recalc", "customers-tier", "--where", "country=DE")
	if r.code != exitOK || !strings.Contains(r.stdout, "succeeded  2\n") {
		t.Fatalf("recalc: %s", r)
	}
	if r := c.run("recalc", "customers-tier", "--where", "name=Ann"); r.code != exitUsage || !strings.Contains(r.stderr, "country, tier or amount") {
		t.Errorf("recalc with a bad filter: %s", r)
	}
	if r := c.run("recalc", "customers"); r.code != exitUsage || !strings.Contains(r.stderr, "customers-tier") {
		t.Errorf("recalc of an import kind: %s", r)
	}
	if r := c.run("rerun", "2"); r.code != exitOK {
		t.Errorf("rerun of a finished recalculation: %s", r)
	}
}
