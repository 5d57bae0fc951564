package batchctl

import (
	"strings"
	"testing"
)

// TestDateFormatFlag: a compact date is refused with the flag that reads
// it, --date-format reads it (issue 27, item 2), a format Rowfate does not
// know is a usage error, and re-run takes the flag too.
func TestDateFormatFlag(t *testing.T) {
	t.Parallel()
	c := setup(t)
	path := writeFile(t, "compact.csv", []byte("email,name,country,signup_date,amount\nc1@example.com,Ann,DE,070125,1\n"))
	r := c.run("import", "customers", path)
	if r.code != exitRows || !strings.Contains(r.stdout, "  signup_date  bad_date  1\n") {
		t.Fatalf("a compact date undeclared: %s", r)
	}
	id := strings.Fields(r.stdout)[1]
	r = c.run("rows", id, "--state", "invalid")
	if r.code != exitOK || !strings.Contains(r.stdout, "(--date-format ddmmyy|yymmdd|mmddyy)") {
		t.Errorf("rows of a compact date: want the flag that reads it: %s", r)
	}
	r = c.run("import", "customers", path, "--date-format", "ddmmyy")
	if r.code != exitOK || !strings.Contains(r.stdout, "succeeded  1\n") {
		t.Errorf("--date-format ddmmyy: %s", r)
	}
	r = c.run("import", "customers", path, "--date-format", "dd/mm/yy", "--new-batch")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--date-format") {
		t.Errorf("--date-format dd/mm/yy: want a usage error naming the flag: %s", r)
	}
	r = c.run("rerun", id, "--date-format", "yymmdd")
	if r.code == exitUsage {
		t.Errorf("rerun --date-format: %s", r)
	}
	r = run(t, "import", "--help")
	if !strings.Contains(r.stdout, "--date-format") || !strings.Contains(r.stdout, "69-99 is 19yy") {
		t.Errorf("import --help: want --date-format and its two-digit years: %s", r)
	}
}
