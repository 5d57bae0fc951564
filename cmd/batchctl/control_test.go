package main

import (
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// sqlOn runs a statement on a test's SQLite database, to put rows in the
// states the commands under test act on.
func sqlOn(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

func TestCancelPauseRetryReconcile(t *testing.T) {
	t.Parallel()
	c := setup(t)
	if r := c.run("import", "customers", fixture, "--no-work"); r.code != exitRows {
		t.Fatalf("import: %s", r)
	}
	// Pause: a worker claims nothing.
	if r := c.run("pause", "1"); r.code != exitOK {
		t.Fatalf("pause: %s", r)
	}
	r := c.run("worker", "--until-done", "--worker-token", "dev", "-o", "json")
	var stats map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &stats); err != nil || stats["rows"] != float64(0) {
		t.Fatalf("worker on a paused batch: %s", r)
	}
	if !strings.Contains(r.stderr, "WARNING: the development worker token") {
		t.Errorf("the dev token gave no warning: %s", r)
	}
	if r := c.run("resume", "1"); r.code != exitOK {
		t.Fatalf("resume: %s", r)
	}
	if r := c.run("pause", "--kind", "customers"); r.code != exitOK || r.stdout != "paused kind customers of tenant default\n" {
		t.Fatalf("pause --kind: %s", r)
	}
	if r := c.run("resume", "--kind", "customers"); r.code != exitOK {
		t.Fatalf("resume --kind: %s", r)
	}
	if r := c.run("pause"); r.code != exitUsage {
		t.Fatalf("pause without a target: %s", r)
	}
	if r := c.run("worker", "--until-done", "--worker-token", "dev"); r.code != exitOK || !strings.Contains(r.stdout, "worked 285 rows") {
		t.Fatalf("worker after resume: %s", r)
	}
	// Retry and reconcile rows put in failed and unknown states.
	sqlOn(t, c.database, `UPDATE batch_rows SET state = 'failed', errors = '[{"code":"processor_error","message":"boom"}]' WHERE batch_id = 1 AND row_no IN (2, 3)`)
	sqlOn(t, c.database, `UPDATE batch_rows SET state = 'unknown' WHERE batch_id = 1 AND row_no IN (4, 5)`)
	sqlOn(t, c.database, `UPDATE batch_chunks SET n_failed = 2, n_unknown = 2, n_succeeded = n_succeeded - 4 WHERE batch_id = 1 AND chunk_no = 0`)
	sqlOn(t, c.database, `UPDATE batch_count_groups SET n_failed = 2, n_unknown = 2, n_succeeded = n_succeeded - 4 WHERE batch_id = 1 AND group_no = 0`)
	r = c.run("retry", "1")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "2 rows of batch 1 are due again; work them with: batchctl worker --batch 1 --until-done --database ") {
		t.Fatalf("retry: %s", r)
	}
	if r := c.run("reconcile", "1", "--row", "4", "--as", "succeeded", "--id", "checked-by-hand"); r.code != exitOK || r.stdout != "row 4 of batch 1 is succeeded\n" {
		t.Fatalf("reconcile --as succeeded: %s", r)
	}
	if r := c.run("reconcile", "1", "--row", "5", "--as", "retry"); r.code != exitOK {
		t.Fatalf("reconcile --as retry: %s", r)
	}
	if r := c.run("reconcile", "1", "--row", "6", "--as", "failed"); r.code != exitError || !strings.Contains(r.stderr, "is succeeded, not unknown") {
		t.Fatalf("reconcile of a row that is not unknown: %s", r)
	}
	if r := c.run("worker", "--batch", "1", "--until-done", "--worker-token", "dev"); r.code != exitOK || !strings.Contains(r.stdout, "worked 3 rows") {
		t.Fatalf("worker after retry: %s", r)
	}
	var b jsonBatch
	c.runJSON(exitRows, &b, "status", "1", "-o", "json")
	if b.Counts["succeeded"] != 285 || b.Counts["invalid"] != 15 || len(b.Counts) != 2 {
		t.Fatalf("after retry and reconcile: %+v", b.Counts)
	}
	// Cancel: the open rows of a second batch are cancelled, for good.
	c.run("import", "customers", fixture, "--no-work")
	r = c.run("cancel", "2")
	if r.code != exitOK || !strings.Contains(r.stdout, "batch 2  cancelled") || !strings.Contains(r.stdout, "cancelled  285") {
		t.Fatalf("cancel: %s", r)
	}
	if r := c.run("cancel", "2"); r.code != exitOK {
		t.Fatalf("second cancel: %s", r)
	}
	if r := c.run("retry", "2"); r.code != exitError || !strings.Contains(r.stderr, "cancelled") {
		t.Fatalf("retry of a cancelled batch: %s", r)
	}
}

// TestWorkerCredentials: a worker refuses to start without a credential,
// and one made for a tenant works that tenant's rows only.
func TestWorkerCredentials(t *testing.T) {
	t.Parallel()
	c := setup(t)
	c.run("import", "customers", fixture, "--no-work", "--tenant", "acme")
	c.run("import", "customers", fixture, "--no-work", "--tenant", "globex")
	if r := c.run("worker", "--until-done"); r.code != exitUsage || !strings.Contains(r.stderr, "a worker needs a credential") {
		t.Fatalf("worker without a credential: %s", r)
	}
	if r := c.run("worker", "--until-done", "--worker-token", "rfw_forged"); r.code != exitError || !strings.Contains(r.stderr, "not valid") || strings.Contains(r.stderr, "rfw_forged") {
		t.Fatalf("worker with a forged token: %s", r)
	}
	r := c.run("worker-token", "create", "acme-worker", "--tenant", "acme")
	token := strings.TrimSpace(r.stdout)
	if r.code != exitOK || !strings.HasPrefix(token, "rfw_") {
		t.Fatalf("worker-token create: %s", r)
	}
	if r := c.run("worker-token", "create", "acme-worker"); r.code != exitError {
		t.Fatalf("a second credential with the same name: %s", r)
	}
	if r := c.run("worker", "--until-done", "--worker-token", token, "--tenant", "globex"); r.code != exitError || !strings.Contains(r.stderr, `may not work tenant "globex"`) {
		t.Fatalf("a worker asking for another tenant: %s", r)
	}
	if r := c.run("worker", "--until-done", "--worker-token", token); r.code != exitOK || !strings.Contains(r.stdout, "worked 285 rows") {
		t.Fatalf("the acme worker: %s", r)
	}
	var acme, globex jsonBatch
	c.runJSON(exitRows, &acme, "status", "1", "-o", "json", "--tenant", "acme")
	c.runJSON(exitOK, &globex, "status", "2", "-o", "json", "--tenant", "globex")
	if acme.Counts["succeeded"] != 285 || globex.Counts["valid"] != 285 || globex.Status != "running" {
		t.Fatalf("acme %+v, globex %+v: the acme worker crossed into globex", acme.Counts, globex.Counts)
	}
}
