package batchctl

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
	if r := c.run("import", "customers", fixture, "--no-work"); r.code != exitOK {
		t.Fatalf("import: %s", r)
	}
	// Pause: a worker claims nothing.
	if r := c.run("pause", "1"); r.code != exitOK {
		t.Fatalf("pause: %s", r)
	}
	if r := c.run("status", "1"); r.code != exitOK || !strings.HasPrefix(r.stdout, "batch 1  paused  ") {
		t.Fatalf("status of a paused batch: %s", r)
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
	// A retry works the rows itself, as a re-run does, and is history.
	r = c.run("retry", "1", "--actor", "ann")
	if r.code != exitRows || !strings.Contains(r.stderr, "2 rows of batch 1 are due again") || !strings.Contains(r.stdout, "succeeded  283") || !strings.Contains(r.stdout, "unknown    2") {
		t.Fatalf("retry: %s", r)
	}
	if r := c.run("history", "1"); r.code != exitOK || !strings.Contains(r.stdout, "retry") || !strings.Contains(r.stdout, "ann") {
		t.Errorf("history after a retry: %s", r)
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
	// The retry worked its two rows; the row reconciled as retry is left.
	if r := c.run("worker", "--batch", "1", "--until-done", "--worker-token", "dev"); r.code != exitOK || !strings.Contains(r.stdout, "worked 1 rows") {
		t.Fatalf("worker after retry: %s", r)
	}
	var b jsonBatch
	c.runJSON(exitRows, &b, "status", "1", "-o", "json")
	if b.Counts["succeeded"] != 285 || b.Counts["invalid"] != 15 || len(b.Counts) != 2 {
		t.Fatalf("after retry and reconcile: %+v", b.Counts)
	}
	// Cancel: the open rows of a second batch are cancelled, for good.
	c.run("import", "customers", fixture, "--no-work", "--new-batch")
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
	// On a local SQLite file a worker needs no credential: it works the
	// tenant of --tenant.
	if r := c.run("worker", "--until-done", "--tenant", "nobody"); r.code != exitOK || !strings.Contains(r.stdout, "worked 0 rows") {
		t.Fatalf("worker without a credential on SQLite: %s", r)
	}
	// On PostgreSQL, a shared database, it needs one.
	if r := pgSession(t).run("worker", "--until-done"); r.code != exitUsage || !strings.Contains(r.stderr, "a worker needs a credential") {
		t.Fatalf("worker without a credential on PostgreSQL: %s", r)
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

// markUnknown puts rows of batch 1 in the state a lost answer leaves them
// in, counts included.
func markUnknown(t *testing.T, c *session, rowNos string, n int) {
	t.Helper()
	sqlOn(t, c.database, `UPDATE batch_rows SET state = 'unknown', result_id = NULL WHERE batch_id = 1 AND row_no IN (`+rowNos+`)`)
	for _, table := range []string{"batch_chunks WHERE batch_id = 1 AND chunk_no = 0", "batch_count_groups WHERE batch_id = 1 AND group_no = 0"} {
		table, where, _ := strings.Cut(table, " WHERE ")
		sqlOn(t, c.database, fmt.Sprintf(`UPDATE %s SET n_unknown = n_unknown + %d, n_succeeded = n_succeeded - %d WHERE %s`, table, n, n, where))
	}
}

// TestReconcileAll: `reconcile N --all --as failed|succeeded --reason`
// settles every unknown row of a batch at once, with the reason kept with
// each failed row; a kind that cannot reconcile by itself says how.
func TestReconcileAll(t *testing.T) {
	t.Parallel()
	c := setup(t)
	if r := c.run("import", "customers", fixture, "--no-work"); r.code != exitOK {
		t.Fatalf("import: %s", r)
	}
	if r := c.run("worker", "--until-done", "--worker-token", "dev"); r.code != exitOK {
		t.Fatalf("worker: %s", r)
	}
	markUnknown(t, c, "2, 3, 4", 3)

	r := c.run("reconcile", "1")
	if r.code != exitError || !strings.Contains(r.stderr, "batchctl reconcile 1 --all --as failed --reason") {
		t.Errorf("reconcile of a kind without reconciliation: want a hint to settle by hand, got %s", r)
	}
	for _, args := range [][]string{
		{"--all"},
		{"--all", "--as", "failed"},
		{"--all", "--as", "retry", "--reason", "x"},
		{"--all", "--row", "2", "--as", "failed", "--reason", "x"},
	} {
		if r := c.run(append([]string{"reconcile", "1"}, args...)...); r.code != exitUsage {
			t.Errorf("reconcile 1 %s: want a usage error, got %s", strings.Join(args, " "), r)
		}
	}

	r = c.run("reconcile", "1", "--all", "--as", "failed", "--reason", "not in the CRM")
	if r.code != exitOK || r.stdout != "settled 3 unknown rows of batch 1 as failed\n" {
		t.Fatalf("reconcile --all --as failed: %s", r)
	}
	var failed []struct {
		RowNo  int64 `json:"row_no"`
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	c.runJSON(exitOK, &failed, "rows", "1", "--state", "failed", "-o", "json")
	if len(failed) != 3 {
		t.Fatalf("failed rows after reconcile --all: %+v", failed)
	}
	for _, row := range failed {
		if len(row.Errors) != 1 || row.Errors[0].Code != "reconciled" || row.Errors[0].Message != "not in the CRM" {
			t.Errorf("row %d: errors %+v; want the reason", row.RowNo, row.Errors)
		}
	}

	markUnknown(t, c, "5, 6", 2)
	var out struct {
		BatchID int64  `json:"batch_id"`
		State   string `json:"state"`
		Settled int64  `json:"settled"`
	}
	c.runJSON(exitOK, &out, "reconcile", "1", "--all", "--as", "succeeded", "--id", "checked", "--reason", "found by hand", "-o", "json")
	if out.BatchID != 1 || out.State != "succeeded" || out.Settled != 2 {
		t.Errorf("reconcile --all --as succeeded: %+v", out)
	}
	var b jsonBatch
	c.runJSON(exitRows, &b, "status", "1", "-o", "json")
	if b.Counts["failed"] != 3 || b.Counts["unknown"] != 0 || b.Counts["succeeded"] != 282 {
		t.Errorf("after reconcile --all: %+v", b.Counts)
	}
	// Each settled row is in the batch's history, with who and why.
	r = c.run("history", "1")
	if r.code != exitOK || strings.Count(r.stdout, " settle ") != 5 || strings.Count(r.stdout, `unknown -> failed: "not in the CRM"`) != 3 ||
		strings.Count(r.stdout, `unknown -> succeeded (checked): "found by hand"`) != 2 {
		t.Errorf("history after reconcile --all: %s", r)
	}
	if r := c.run("reconcile", "1", "--all", "--as", "failed", "--reason", "again"); r.code != exitOK || r.stdout != "settled 0 unknown rows of batch 1 as failed\n" {
		t.Errorf("reconcile --all with nothing unknown: %s", r)
	}
	if r := c.run("reconcile", "99", "--all", "--as", "failed", "--reason", "x"); r.code == exitOK {
		t.Errorf("reconcile --all of a batch that does not exist: %s", r)
	}
}

// statusCRM is a downstream that honours Idempotency-Key and says on
// /status what became of a key: its id, or 404 {"applied":false}.
type statusCRM struct {
	mu  sync.Mutex
	ids map[string]string
}

func (d *statusCRM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.ids[key]
	if r.URL.Path == "/status" && !ok {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"applied":false}`)
		return
	}
	if !ok {
		id = fmt.Sprintf("crm-%d", len(d.ids)+1)
		d.ids[key] = id
	}
	fmt.Fprintf(w, `{"id":%q}`, id)
}

// TestReconcileWebhook: with $ROWFATE_WEBHOOK_STATUS_URL, `reconcile N`
// asks the downstream about customers-webhook's unknown rows: those it
// applied succeed with their ids, those it never saw fail. (It sets the
// process's environment, so it does not run in parallel.)
func TestReconcileWebhook(t *testing.T) {
	down := &statusCRM{ids: map[string]string{}}
	srv := httptest.NewServer(down)
	defer srv.Close()
	t.Setenv("ROWFATE_WEBHOOK_URL", srv.URL+"/customers")
	t.Setenv("ROWFATE_WEBHOOK_STATUS_URL", srv.URL+"/status")
	c := setup(t)
	if r := c.run("import", "customers-webhook", fixture, "--no-work"); r.code != exitOK {
		t.Fatalf("import: %s", r)
	}
	if r := c.run("worker", "--until-done", "--worker-token", "dev"); r.code != exitOK {
		t.Fatalf("worker: %s", r)
	}
	var before []jsonRow
	c.runJSON(exitOK, &before, "rows", "1", "--state", "succeeded", "-o", "json")
	want := map[int64]string{}
	for _, r := range before {
		want[r.RowNo] = r.ResultID
	}
	markUnknown(t, c, "2, 3, 4", 3)
	// Row 4's request never reached the downstream.
	down.mu.Lock()
	for key, id := range down.ids {
		if id == want[4] {
			delete(down.ids, key)
		}
	}
	down.mu.Unlock()

	r := c.run("reconcile", "1")
	if r.code != exitOK || r.stdout != "reconciled: 2 succeeded, 1 failed, 0 still unknown\n" {
		t.Fatalf("reconcile: %s", r)
	}
	var after []jsonRow
	c.runJSON(exitOK, &after, "rows", "1", "-o", "json")
	for _, row := range after {
		switch row.RowNo {
		case 2, 3:
			if row.State != "succeeded" || row.ResultID != want[row.RowNo] {
				t.Errorf("row %d: %s %q; want succeeded %q", row.RowNo, row.State, row.ResultID, want[row.RowNo])
			}
		case 4:
			if row.State != "failed" {
				t.Errorf("row 4: %s; want failed", row.State)
			}
		}
	}
}
