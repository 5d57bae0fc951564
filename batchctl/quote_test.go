package batchctl

import "testing"

// TestImportQuoteAndEscape: --quote and --escape read a file quoted with
// apostrophes or escaping its quotes with a backslash; a bad one is a
// usage error.
func TestImportQuoteAndEscape(t *testing.T) {
	t.Parallel()
	c := setup(t)
	var res struct {
		Counts map[string]int64 `json:"counts"`
	}
	single := writeFile(t, "single.csv", []byte("email,name,signup_date\na@example.com,'Lee, Ann',2020-01-02\nb@example.com,'O''Brien, Pat',2020-01-02\n"))
	c.runJSON(exitOK, &res, "import", "customers", single, "--dry-run", "--quote", "'", "-o", "json")
	if res.Counts["valid"] != 2 || res.Counts["invalid"] != 0 {
		t.Errorf("--quote \"'\": %+v", res)
	}
	escaped := writeFile(t, "escaped.csv", []byte("email,name,signup_date\na@example.com,\"Ann \\\"Nan\\\", Lee\",2020-01-02\n"))
	c.runJSON(exitOK, &res, "import", "customers", escaped, "--dry-run", "--escape", `\`, "-o", "json")
	if res.Counts["valid"] != 1 || res.Counts["invalid"] != 0 {
		t.Errorf("--escape \\: %+v", res)
	}
	if r := c.run("import", "customers", single, "--dry-run", "--quote", "x"); r.code != exitUsage {
		t.Errorf("--quote x: %s", r)
	}
}
