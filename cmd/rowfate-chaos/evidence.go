package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// openState describes what is open: the batches not settled, their
// chunks with open rows or a lease (owner, token, expiry against the
// database's clock), and the effect keys still claimed.
func (h *harness) openState(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "open state at %s\n\n", time.Now().Format(time.RFC3339Nano))
	query := func(title, sql string, args ...any) {
		fmt.Fprintf(&b, "== %s\n", title)
		rs, err := h.pool.Query(ctx, sql, args...)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n\n", err)
			return
		}
		n := 0
		for rs.Next() {
			var line string
			if err := rs.Scan(&line); err != nil {
				fmt.Fprintf(&b, "(%v)\n", err)
				break
			}
			b.WriteString(line + "\n")
			n++
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
		fmt.Fprintf(&b, "(%d)\n\n", n)
	}
	query("the database's clock", `SELECT clock_timestamp()::text`)
	query("batches not settled (running, or with rows under a lease)", `SELECT (to_jsonb(b) - 'header' - 'options')::text FROM rowfate.batches b
		WHERE b.status = 'running' OR EXISTS (SELECT 1 FROM rowfate.batch_chunks c WHERE c.batch_id = b.id AND c.n_processing > 0)
		ORDER BY b.id`)
	query("their chunks with open rows or a lease", `SELECT to_jsonb(c)::text FROM rowfate.batch_chunks c
		JOIN rowfate.batches b ON b.id = c.batch_id
		WHERE (b.status = 'running' OR c.n_processing > 0)
		  AND (c.n_valid + c.n_processing + c.n_retrying > 0 OR c.lease_expires_at > clock_timestamp() - interval '1 minute')
		ORDER BY c.batch_id, c.chunk_no`)
	query("leases held now", `SELECT format('batch %s chunk %s: owner %s, token %s, expires %s (%s from now)', batch_id, chunk_no,
		lease_owner, lease_token, lease_expires_at, lease_expires_at - clock_timestamp())
		FROM rowfate.batch_chunks WHERE lease_expires_at > clock_timestamp() ORDER BY batch_id, chunk_no`)
	query("effect keys claimed, by batch", `SELECT format('batch %s: %s keys %s', batch_id, count(*), state) FROM rowfate.effects
		WHERE state <> 'done' GROUP BY batch_id, state ORDER BY batch_id`)
	query("paused batches and kinds", `SELECT format('batch %s paused', id) FROM rowfate.batches WHERE paused
		UNION ALL SELECT to_jsonb(p)::text FROM rowfate.pauses p`)
	return b.String()
}

// keptTables are the tables a failed run dumps.
var keptTables = []string{"batches", "batch_chunks", "batch_count_groups", "effects", "batch_rows", "batch_events", "workers", "pauses"}

// keepEvidence writes into the run's folder what a failed run leaves to
// look at: the open state, the key tables (CSV), the downstream's log
// (JSON lines), the last 200 lines of each worker's log (the whole logs
// are there too) and PostgreSQL's log. err is the run's error, if it
// ended on one.
func (h *harness) keepEvidence(ctx context.Context, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	dir := h.dir
	if err != nil {
		_ = os.WriteFile(filepath.Join(dir, "error.txt"), []byte(err.Error()+"\n"), 0o644)
	}
	if h.pool != nil {
		state := h.openState(ctx)
		if h.rep.OpenState == "" {
			h.rep.OpenState = state
		} else {
			h.rep.OpenState += "\n\n== again, after the checks\n\n" + state
		}
		db := filepath.Join(dir, "db")
		_ = os.MkdirAll(db, 0o755)
		tables := append([]string(nil), keptTables...)
		for _, t := range tables {
			h.copyTable(ctx, "rowfate."+t, filepath.Join(db, t+".csv"))
		}
		h.copyTable(ctx, h.customersTable(ctx), filepath.Join(db, "customers.csv"))
	}
	if h.down != nil {
		if f, err := os.Create(filepath.Join(dir, "downstream.jsonl")); err == nil {
			w := bufio.NewWriter(f)
			reqs, _ := h.down.log()
			enc := json.NewEncoder(w)
			for _, q := range reqs {
				_ = enc.Encode(q)
			}
			w.Flush()
			f.Close()
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "workers", "*.log"))
	var tails bytes.Buffer
	for _, l := range logs {
		fmt.Fprintf(&tails, "==== %s (last 200 lines)\n", filepath.Base(l))
		tails.WriteString(lastLines(l, 200))
		tails.WriteString("\n")
	}
	_ = os.WriteFile(filepath.Join(dir, "workers-tail.txt"), tails.Bytes(), 0o644)
	if h.pg != nil {
		if b, err := os.ReadFile(h.pg.log()); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "postgres.log"), b, 0o644)
		}
	}
}

// copyTable writes a table as CSV with a header.
func (h *harness) copyTable(ctx context.Context, table, path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	conn, err := h.pool.Acquire(ctx)
	if err != nil {
		fmt.Fprintf(f, "# %v\n", err)
		return
	}
	defer conn.Release()
	if _, err := conn.Conn().PgConn().CopyTo(ctx, f, "COPY "+table+" TO STDOUT WITH (FORMAT csv, HEADER)"); err != nil {
		fmt.Fprintf(f, "# %v\n", err)
	}
}

// lastLines returns a file's last n lines.
func lastLines(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	const window = 256 << 10
	if st, err := f.Stat(); err == nil && st.Size() > window {
		_, _ = f.Seek(st.Size()-window, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lateReplay (-sabotage late-replay) sends an applied request of a
// succeeded row again after the run settled, as a worker that slept
// through its lease would: the sent-after-settled check must see it.
func (h *harness) lateReplay() {
	reqs, _ := h.down.log()
	for _, q := range reqs {
		if !q.applied() {
			continue
		}
		body, _ := json.Marshal(map[string]string{"email": q.Email})
		req, _ := http.NewRequest(http.MethodPost, h.down.url(), bytes.NewReader(body))
		req.Header.Set("Idempotency-Key", q.Key)
		req.Header.Set("X-Rowfate-Tenant", q.Tenant)
		req.Header.Set("X-Rowfate-Batch", fmt.Sprint(q.Batch))
		req.Header.Set("X-Rowfate-Row", fmt.Sprint(q.Row))
		req.Header.Set("X-Rowfate-Attempt", "late")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		h.logf("sabotage: sent key %s again (batch %d row %d)", q.Key, q.Batch, q.Row)
		return
	}
}

// noteSlow writes what the database's sessions are doing and waiting on
// when a fault takes long (slow-*.txt in the run's folder, and a summary
// on stderr): a fault stuck behind a lock is a finding to look at.
func (h *harness) noteSlow(ctx context.Context, name string, start time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	rs, err := h.pool.Query(ctx, `SELECT format('pid %s %s: %s, waiting %s/%s, blocked by %s, in transaction %s, query %s: %s',
			pid, application_name, state, wait_event_type, wait_event, pg_blocking_pids(pid),
			clock_timestamp() - xact_start, clock_timestamp() - query_start, left(regexp_replace(query, '\s+', ' ', 'g'), 300))
		FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() ORDER BY xact_start NULLS LAST`)
	var b strings.Builder
	fmt.Fprintf(&b, "fault %s started %s, still running at %s; the database's sessions:\n", name, start.Format("15:04:05.000"), time.Now().Format("15:04:05.000"))
	if err != nil {
		fmt.Fprintf(&b, "(%v)\n", err)
	} else {
		for rs.Next() {
			var line string
			if rs.Scan(&line) == nil {
				b.WriteString(line + "\n")
			}
		}
		rs.Close()
	}
	path := filepath.Join(h.dir, fmt.Sprintf("slow-%s-%s.txt", name, start.Format("150405.000")))
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
	h.logf("%s", b.String())
	h.rep.mu.Lock()
	h.rep.SlowFaults = append(h.rep.SlowFaults, fmt.Sprintf("%s at %s (%s)", name, start.Format("15:04:05"), filepath.Base(path)))
	h.rep.mu.Unlock()
}
