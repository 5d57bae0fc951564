package batchctl

import (
	"strings"
	"testing"
)

// TestBulkRowCommands: row skip, set, replace and retry without a row act
// on every row their filter selects, through the engine; --dry-run counts
// and changes nothing; -o json says the same; an empty filter, a row with
// a filter and a bad state are usage errors; the history says what each
// did to how many rows. On both stores.
func TestBulkRowCommands(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, c *session) {
		in := writeFile(t, "m.csv", []byte("email,name,country,signup_date,amount\na@example.com,Ann,FR,2020-01-02,1\n"+
			"b@example.com,Bo,FR,2020-13-02,2\nc@example.com,Cy,FR,2020-13-03,3\nd@example.com,,FR,2020-01-02,4\n"))
		if r := c.run("import", "customers", in, "--no-work"); r.code != exitOK {
			t.Fatalf("import: %s", r)
		}
		r := c.run("rows", "1", "--state", "invalid,failed", "--code", "bad_date", "--column", "signup_date", "--limit", "1")
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "row 3  invalid") || strings.Contains(r.stdout, "row 4") ||
			!strings.Contains(r.stdout, "more rows follow (use --limit/--after): batchctl rows 1 --state invalid,failed --code bad_date --column signup_date --after 3 --limit 1") {
			t.Errorf("rows by state, code and column: %s", r)
		}
		if r := c.run("rows", "1", "--code", "required"); r.code != exitOK || !strings.HasPrefix(r.stdout, "row 5  invalid") || strings.Count(r.stdout, "row ") != 1 {
			t.Errorf("rows by code: %s", r)
		}
		if r := c.run("row", "skip", "1", "--reason", "x"); r.code != exitUsage || !strings.Contains(r.stderr, "filter is empty") {
			t.Errorf("skip of no filter: %s", r)
		}
		if r := c.run("row", "skip", "1", "3", "--reason", "x", "--code", "bad_date"); r.code != exitUsage || !strings.Contains(r.stderr, "not both") {
			t.Errorf("skip of a row and a filter: %s", r)
		}
		if r := c.run("row", "skip", "1", "--reason", "x", "--state", "invalid,nope"); r.code != exitUsage || !strings.Contains(r.stderr, `unknown state "nope"`) {
			t.Errorf("skip of a bad state: %s", r)
		}
		if r := c.run("row", "skip", "1", "--reason", "dates lost", "--code", "bad_date", "--dry-run"); r.code != exitOK || r.stdout != "would skip 2 rows of batch 1\n" {
			t.Errorf("dry run: %s", r)
		}
		var res bulkJSON
		c.runJSON(exitOK, &res, "row", "skip", "1", "--reason", "dates lost", "--code", "bad_date", "--dry-run", "-o", "json")
		if res != (bulkJSON{Action: "skip", Preview: true, Matched: 2}) {
			t.Errorf("dry run -o json: %+v", res)
		}
		r = c.run("row", "set", "1", "signup_date=2020-02-02", "--state", "invalid", "--column", "signup_date", "--actor", "ann")
		if r.code != exitOK || r.stdout != "set signup_date=2020-02-02 in 2 rows of batch 1: 2 valid, 0 invalid\n" {
			t.Errorf("set: %s", r)
		}
		r = c.run("row", "replace", "1", "--in", "email", "--find", "d@", "--replace", "dd@", "--state", "invalid")
		if r.code != exitRows || !strings.Contains(r.stdout, "1 row of batch 1: 0 valid, 1 invalid") {
			t.Errorf("replace that leaves the row invalid: %s", r)
		}
		if r := c.run("row", "skip", "1", "--reason", "no name", "--column", "name", "--actor", "bob"); r.code != exitOK || r.stdout != "skipped 1 row of batch 1\n" {
			t.Errorf("skip: %s", r)
		}
		if r := c.run("row", "retry", "1", "--dry-run"); r.code != exitOK || r.stdout != "would retry 0 rows of batch 1\n" {
			t.Errorf("retry of no failed row: %s", r)
		}
		c.runJSON(exitOK, &res, "row", "skip", "1", "--reason", "x", "--code", "bad_date", "-o", "json")
		if res != (bulkJSON{Action: "skip"}) {
			t.Errorf("skip of rows fixed meanwhile: %+v", res)
		}
		r = c.run("history", "1")
		for _, want := range []string{"ann", `2 rows (state invalid, column signup_date): signup_date=2020-02-02, 2 valid, 0 invalid`,
			`1 row (state invalid): "d@" -> "dd@" in email, 0 valid, 1 invalid`, "bob", `1 row (column name): "no name"`} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("history lacks %q: %s", want, r)
			}
		}
		r = c.run("status", "1")
		if !strings.Contains(r.stdout, "skipped") || !strings.Contains(r.stdout, "valid") {
			t.Errorf("status: %s", r)
		}
	})
}
