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

// TestBulkRowWhere: rows and the bulk row commands take --where, a
// condition on the rows' cells over the file's columns, alone or with the
// other filter flags; the next page's command keeps it; a where naming no
// column of the file, or that cannot be read, is a usage error; the
// history says the where. On both stores.
func TestBulkRowWhere(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, c *session) {
		// Germany is not a country code: rows 2 and 3 are invalid for it.
		in := writeFile(t, "w.csv", []byte("email,name,country,signup_date,amount\na@example.com,Ann,Germany,2020-01-02,1\n"+
			"b@example.com,Bo,Germany,2020-13-02,2\nc@example.com,Cy,FR,2020-13-03,3\nd@example.com,Di,DE,2020-01-02,4\n"+
			"e@example.com,Ed,IT,2020-13-04,5\n"))
		if r := c.run("import", "customers", in, "--no-work"); r.code != exitOK {
			t.Fatalf("import: %s", r)
		}
		r := c.run("rows", "1", "--where", "country = Germany")
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "row 2  invalid") || !strings.Contains(r.stdout, "row 3  invalid") || strings.Count(r.stdout, "row ") != 2 {
			t.Errorf("rows where country = Germany: %s", r)
		}
		r = c.run("rows", "1", "--where", "country = Germany", "--limit", "1")
		if r.code != exitOK || !strings.Contains(r.stdout, "more rows follow (use --limit/--after): batchctl rows 1 --where 'country = Germany' --after 2 --limit 1") {
			t.Errorf("rows where, a page: %s", r)
		}
		if r := c.run("rows", "1", "--where", "city = Paris"); r.code != exitUsage || !strings.Contains(r.stderr, `unknown column "city" (columns: email, name, country, signup_date or amount)`) {
			t.Errorf("rows where of an unknown column: %s", r)
		}
		if r := c.run("row", "skip", "1", "--reason", "x", "--where", "country ="); r.code != exitUsage || !strings.Contains(r.stderr, "at the end") {
			t.Errorf("skip where of an unreadable where: %s", r)
		}
		if r := c.run("row", "skip", "1", "3", "--reason", "x", "--where", "country = FR"); r.code != exitUsage || !strings.Contains(r.stderr, "not both") {
			t.Errorf("skip of a row and a where: %s", r)
		}
		if r := c.run("row", "set", "1", "country=DE", "--where", "country = Germany", "--dry-run"); r.code != exitOK || r.stdout != "would set country=DE in 2 rows of batch 1\n" {
			t.Errorf("set where, dry run: %s", r)
		}
		r = c.run("row", "set", "1", "country=DE", "--where", "country = Germany", "--actor", "ann")
		if r.code != exitRows || r.stdout != "set country=DE in 2 rows of batch 1: 1 valid, 1 invalid\n" {
			t.Errorf("set where: %s", r)
		}
		if r := c.run("rows", "1", "--where", "country = DE", "-o", "json"); r.code != exitOK || strings.Count(r.stdout, `"row_no"`) != 3 {
			t.Errorf("rows where country = DE after the set: %s", r)
		}
		if r := c.run("row", "replace", "1", "--in", "email", "--find", "@", "--replace", "@x.", "--where", "name = Ann", "--dry-run"); r.code != exitOK ||
			r.stdout != "would replace \"@\" with \"@x.\" in email of 1 row of batch 1\n" {
			t.Errorf("replace where, dry run: %s", r)
		}
		if r := c.run("row", "retry", "1", "--where", "country = DE", "--dry-run"); r.code != exitOK || r.stdout != "would retry 0 rows of batch 1\n" {
			t.Errorf("retry where, dry run: %s", r)
		}
		r = c.run("row", "skip", "1", "--reason", "not ours", "--state", "invalid", "--where", "country in (FR, IT)", "--actor", "bob")
		if r.code != exitOK || r.stdout != "skipped 2 rows of batch 1\n" {
			t.Errorf("skip where: %s", r)
		}
		r = c.run("rows", "1", "--state", "invalid")
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "row 3  invalid") || strings.Count(r.stdout, "row ") != 1 {
			t.Errorf("invalid rows after the skip: %s", r)
		}
		r = c.run("history", "1")
		for _, want := range []string{`2 rows (where country = Germany): country=DE, 1 valid, 1 invalid`, `2 rows (state invalid, where country in (FR, IT)): "not ours"`} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("history lacks %q: %s", want, r)
			}
		}
	})
}
