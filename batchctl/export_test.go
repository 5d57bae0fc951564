package batchctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// xlsxFixture is fixtures/xlsx/customers.xlsx seen from the package folder.
const xlsxFixture = "../fixtures/xlsx/customers.xlsx"

func TestImportXLSX(t *testing.T) {
	t.Parallel()
	c := setup(t)
	r := c.run("import", "customers", xlsxFixture)
	want := "batch 1  finished  " + xlsxFixture + "  (customers, tenant default)\n" +
		"               invalid   5\n" +
		"             succeeded  32\n" +
		"                 total  37\n" +
		"    empty rows skipped   3\n" +
		"errors by column and code:\n" +
		"  (row)        ragged_row  1\n" +
		"  amount       cell_error  1\n" +
		"  amount       gte         1\n" +
		"  email        email       1\n" +
		"  signup_date  bad_date    1\n" +
		"list the invalid rows: batchctl rows 1 --state invalid --database " + c.database + "\n"
	if r.code != exitRows || r.stdout != want || r.withoutProgress() != created(1, xlsxFixture) {
		t.Fatalf("want exit %d and stdout\n%s\ngot %s", exitRows, want, r)
	}
	var rs []jsonRow
	c.runJSON(exitOK, &rs, "rows", "1", "--state", "invalid", "-o", "json")
	var got []string
	for _, row := range rs {
		got = append(got, row.Errors[0].Column+"/"+row.Errors[0].Code)
	}
	if strings.Join(got, " ") != "email/email amount/cell_error signup_date/bad_date amount/gte /ragged_row" {
		t.Errorf("invalid rows: %v", got)
	}
}

func TestImportXLSXSheetFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		// The hidden Notes sheet has no customers columns.
		{[]string{"--sheet", "Notes"}, exitRejected, `line 1: bad header: missing required columns: "email", "name", "signup_date"`},
		{[]string{"--sheet", "Nope"}, exitRejected, `the workbook has no sheet "Nope"; its sheets are "Notes", "Customers"`},
		// Row 1 is the title: as a header it names no column.
		{[]string{"--header-row", "1"}, exitRejected, "line 1: bad header: missing required columns"},
		{[]string{"--sheet", "2", "--header-row", "2"}, exitRows, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			c := setup(t)
			r := c.run(append([]string{"import", "customers", xlsxFixture}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("want exit %d and %q on stderr, got %s", tc.code, tc.stderr, r)
			}
		})
	}
}

func TestImportXLSXRejected(t *testing.T) {
	t.Parallel()
	for name, reason := range map[string]string{
		"zip_bomb.xlsx":    "a zip bomb?",
		"doctype.xlsx":     "declares a DOCTYPE",
		"xls_renamed.xlsx": "legacy .xls workbook",
		"truncated.xlsx":   "damaged or truncated?",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := setup(t)
			c.run("migrate")
			path := filepath.Join("../fixtures/xlsx", name)
			r := c.run("import", "customers", path)
			if r.code != exitRejected || !strings.Contains(r.stderr, "batchctl import: "+path+": ") ||
				!strings.Contains(r.stderr, reason) || !strings.HasSuffix(r.stderr, "the file was rejected; nothing was written\n") {
				t.Fatalf("want exit %d and %q, got %s", exitRejected, reason, r)
			}
			if bs := c.batches(); len(bs) != 0 {
				t.Errorf("a rejected file left batches: %+v", bs)
			}
		})
	}
}

func TestExport(t *testing.T) {
	t.Parallel()
	c := setup(t)
	c.run("import", "customers", xlsxFixture)
	dir := t.TempDir()

	for _, name := range []string{"out.xlsx", "out.csv"} {
		out := filepath.Join(dir, name)
		r := c.run("export", "customers", "-f", out)
		if r.code != exitOK || !strings.Contains(r.stdout, "finished  "+out+"  (customers, tenant default)") ||
			!strings.Contains(r.stdout, "succeeded  32\n") || r.stderr != "" {
			t.Fatalf("export %s: %s", name, r)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(b, []byte("PK")) != strings.HasSuffix(name, ".xlsx") {
			t.Errorf("%s starts with %q", name, b[:4])
		}
		// The export imports back into an empty database as the same 32
		// customers.
		c2 := setup(t)
		r = c2.run("import", "customers", out)
		if r.code != exitOK || !strings.Contains(r.stdout, "succeeded  32\n") {
			t.Errorf("import %s: %s", name, r)
		}
	}

	// Without -o the file goes to standard output, the summary to stderr.
	r := c.run("export", "customers")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "\ufeffemail,name,country,signup_date,amount\r\n") ||
		strings.Count(r.stdout, "\r\n") != 33 || !strings.Contains(r.stderr, "succeeded  32") {
		t.Errorf("export to stdout: %s", r)
	}
	r = c.run("export", "customers", "--format", "xlsx")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "PK") {
		t.Errorf("xlsx to stdout: exit %d, %q", r.code, r.stdout[:min(len(r.stdout), 8)])
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"export"}, exitUsage, "export needs <kind>"},
		{[]string{"export", "orders"}, exitUsage, `unknown export kind "orders"; known kinds: customers`},
		{[]string{"export", "customers", "--format", "ods"}, exitUsage, "--format must be csv or xlsx"},
		{[]string{"export", "customers", "-o", "out.csv"}, exitUsage, "name a file with -f/--file"},
		{[]string{"export", "customers", "-f", filepath.Join(dir, "no", "such", "x.csv")}, exitError, "no such folder"},
	} {
		r := c.run(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%v: want exit %d and %q, got %s", tc.args, tc.code, tc.msg, r)
		}
	}
}
