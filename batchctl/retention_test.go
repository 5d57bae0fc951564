package batchctl

import (
	"strings"
	"testing"
)

// TestRetentionAndPurge: a policy is set and listed; purge --dry-run
// names the batch and changes nothing; purge drops the values, which rows
// and status then say; errors and rerun refuse the batch, naming it and
// the date; a second purge changes nothing.
func TestRetentionAndPurge(t *testing.T) {
	t.Parallel()
	c := setup(t)
	if r := c.run("import", "customers", fixture); r.code != exitRows {
		t.Fatalf("import: %s", r)
	}
	if r := c.run("retention", "set", "--kind", "customers", "--values-days", "30"); r.code != exitOK || !strings.Contains(r.stdout, "30 days") {
		t.Fatalf("retention set: %s", r)
	}
	var policies []struct {
		Kind       string `json:"kind"`
		ValuesDays int    `json:"values_days"`
	}
	c.runJSON(exitOK, &policies, "retention", "list", "-o", "json")
	if len(policies) != 1 || policies[0].Kind != "customers" || policies[0].ValuesDays != 30 {
		t.Fatalf("retention list: %+v", policies)
	}
	if r := c.run("retention", "set", "--values-days", "0"); r.code != exitUsage {
		t.Fatalf("retention set --values-days 0: %s", r)
	}
	if r := c.run("purge"); r.code != exitUsage {
		t.Fatalf("purge without a selection: %s", r)
	}
	// Nothing is 30 days past its end yet.
	if r := c.run("purge", "--policy"); r.code != exitOK || !strings.Contains(r.stdout, "no batch to purge") {
		t.Fatalf("purge --policy: %s", r)
	}
	r := c.run("purge", "--batch", "1", "--dry-run")
	if r.code != exitOK || !strings.Contains(r.stdout, "would be purged") || !strings.Contains(r.stdout, "300 rows") {
		t.Fatalf("purge --dry-run: %s", r)
	}
	if r := c.run("rows", "1", "--limit", "1"); strings.Contains(r.stdout, "purged") {
		t.Fatalf("a dry run purged: %s", r)
	}
	if r := c.run("purge", "--batch", "1"); r.code != exitOK || !strings.Contains(r.stdout, "purged") || !strings.Contains(r.stdout, "by command") {
		t.Fatalf("purge: %s", r)
	}
	if r := c.run("rows", "1", "--state", "invalid", "--limit", "2"); r.code != exitOK || !strings.Contains(r.stdout, "(values purged") || !strings.Contains(r.stdout, "invalid") {
		t.Fatalf("rows of a purged batch: %s", r)
	}
	var rowsJSON []struct {
		Values       []string `json:"values"`
		ValuesPurged bool     `json:"values_purged"`
		State        string   `json:"state"`
	}
	c.runJSON(exitOK, &rowsJSON, "rows", "1", "--limit", "3", "-o", "json")
	if len(rowsJSON) != 3 || rowsJSON[0].Values != nil || !rowsJSON[0].ValuesPurged || rowsJSON[0].State == "" {
		t.Fatalf("rows -o json of a purged batch: %+v", rowsJSON)
	}
	if r := c.run("status", "1"); !strings.Contains(r.stdout, "values purged") {
		t.Fatalf("status of a purged batch: %s", r)
	}
	for _, args := range [][]string{{"errors", "1"}, {"rerun", "1"}} {
		r := c.run(args...)
		if r.code == exitOK || !strings.Contains(r.stderr, "batch 1") || !strings.Contains(r.stderr, "purged on") || !strings.Contains(r.stderr, "by command") {
			t.Fatalf("%v of a purged batch: %s", args, r)
		}
	}
	if r := c.run("purge", "--batch", "1"); r.code != exitOK || !strings.Contains(r.stdout, "already purged") {
		t.Fatalf("second purge: %s", r)
	}
	if r := c.run("history", "1"); !strings.Contains(r.stdout, "purge") {
		t.Fatalf("history of a purged batch: %s", r)
	}
}
