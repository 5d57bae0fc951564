package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// file is one generated input file and what imports of it returned.
type file struct {
	No      int
	Path    string
	Tenant  string
	Kind    string
	Rows    int
	Invalid int
	// Inline: the file's imports work its rows in their own transaction
	// (batchctl import without --no-work), under the same faults.
	Inline bool
	// Digest is the SHA-256 of its bytes, as the batch keeps it.
	Digest string
	// Emails are its rows' emails, in order.
	Emails []string
	// First is the batch its first import made; Copies the batches
	// --new-batch imports of it made on purpose; Returned every batch an
	// import without --new-batch returned (retries, re-imports), each of
	// which must be First.
	First    int64
	Copies   []int64
	Returned []int64
}

// importTries bounds the tries of one import once the faults are over;
// while they run, an import is tried until one answers (a storm of
// restarts and resets cut one import eleven times in two minutes).
const importTries = 12

// importAll imports the batches, spread over the first 80% of the run, so
// that batches are running while the faults come. Imports go through the
// proxy, as the workers' connections do, and some have their ingest's
// COMMIT dropped or its answer lost, or their connection reset midway:
// the import fails or not, and the harness imports the same file again
// until one answers, which must be the batch the file made, never a
// second one. Some files are imported again later (the same batch must
// come back), and some customers files a second time with --new-batch
// (a second batch, on purpose: their customers are upserted twice).
func (h *harness) importAll(ctx context.Context, tmp string) error {
	// A customers-exec row starts a process (this binary, which makes the
	// HTTP call): some ten times what a row of the other kinds costs. Its
	// batches get a fifth of the rows of the others, so that the run's
	// work fits the settle bound on two cores; the total stays -rows.
	execs := h.o.batches / 3
	weight := 5*(h.o.batches-execs) + execs
	big := max((h.o.rows*5+weight-1)/weight, 1)
	gap := h.o.duration * 8 / 10 / time.Duration(h.o.batches)
	start := time.Now()
	lastCustomers := map[string]*file{}
	for i := 0; i < h.o.batches; i++ {
		tenant := tenants[i%len(tenants)]
		// Two in three batches have an external effect.
		kind := []string{"customers", "customers-webhook", "customers-exec"}[i%3]
		per := big
		if kind == "customers-exec" {
			per = max(big/5, 1)
		}
		// Every other customers file is imported inline; by its number,
		// not a draw, so that a seed's draws stay what they were.
		inline := kind == "customers" && (i/3)%2 == 1
		f := &file{No: i, Path: filepath.Join(tmp, fmt.Sprintf("batch-%d.csv", i)), Tenant: tenant, Kind: kind, Rows: per, Inline: inline}
		var prev *file
		if kind == "customers" {
			prev = lastCustomers[tenant]
			lastCustomers[tenant] = f
		}
		if err := writeCustomers(f, prev); err != nil {
			return err
		}
		fault := h.drawImportFault()
		t0 := time.Now()
		id, err := h.importFile(ctx, f, fault)
		if err != nil {
			return err
		}
		f.First = id
		h.mu.Lock()
		h.files = append(h.files, f)
		h.mu.Unlock()
		h.addBatch(f, id, t0)
		if inline {
			h.mu.Lock()
			h.rep.Imports.Inline++
			h.mu.Unlock()
		}
		h.logf("imported batch %d (%s, %s, %d rows, inline %v; %s)", id, kind, tenant, per, inline, fault)
		if kind == "customers" && h.importRng.IntN(3) == 0 {
			t0 := time.Now()
			if id, err := h.importCopy(ctx, f); err != nil {
				h.rep.violate("import_failed", "a --new-batch import of %s (tenant %s) failed %d times: %v", filepath.Base(f.Path), tenant, importTries, err)
			} else {
				f.Copies = append(f.Copies, id)
				h.addBatch(f, id, t0)
				h.logf("imported %s again as batch %d (--new-batch)", filepath.Base(f.Path), id)
			}
		}
		if i >= 2 && h.importRng.IntN(4) == 0 {
			h.reimport(ctx, h.files[h.importRng.IntN(i)])
		}
		// Batch i+1 is due at its place in the schedule, whatever this
		// import took (imports retried through faults take long); once the
		// faults are over, the rest come at once.
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(time.Duration(i+1) * gap))):
		}
	}
	return nil
}

// importFault is what the harness does to an import's first try.
type importFault struct {
	commit commitFault
	// resetAfter, when above 0, resets the import's connections that
	// long after it starts.
	resetAfter time.Duration
	// killAfter, when above 0, kills the import's process (SIGKILL)
	// that long after its batch appears, ingesting: while it writes its
	// rows, or between the commit of its rows and the commit of their
	// effects. Nothing removes what it left but its lease running out.
	killAfter time.Duration
}

func (f importFault) String() string {
	switch {
	case f.commit != commitPass:
		return f.commit.String()
	case f.resetAfter > 0:
		return fmt.Sprintf("connection reset after %s", f.resetAfter)
	case f.killAfter > 0:
		return fmt.Sprintf("process killed after %s", f.killAfter)
	}
	return "no import fault"
}

// drawImportFault draws the fault of an import: a quarter lose their
// COMMIT's answer, a quarter have it dropped, a sixth are reset at a
// random moment, a twelfth killed at one, the rest go through (but for
// the run's faults).
func (h *harness) drawImportFault() importFault {
	switch n := h.importRng.IntN(12); {
	case n == 11:
		return importFault{killAfter: time.Duration(1+h.importRng.IntN(400)) * time.Millisecond}
	case n < 3:
		return importFault{commit: commitLoseAnswer}
	case n < 6:
		return importFault{commit: commitDrop}
	case n < 8:
		return importFault{resetAfter: time.Duration(50+h.importRng.IntN(1500)) * time.Millisecond}
	}
	return importFault{}
}

// importFile imports f through the proxy, the first try under fault, and
// tries again until an import answers; every answer is recorded.
func (h *harness) importFile(ctx context.Context, f *file, fault importFault) (int64, error) {
	var err error
	calm := 0 // tries since the faults ended
	for try := 0; calm < importTries; try++ {
		if ctx.Err() != nil {
			calm++
		}
		if try == 0 {
			h.iprox.armCommit(fault.commit)
			if fault.resetAfter > 0 {
				t := time.AfterFunc(fault.resetAfter, h.iprox.reset)
				defer t.Stop()
			}
		}
		// -sabotage import-new-batch: a retry that skips the dedupe.
		newBatch := try > 0 && h.o.sabotage["import-new-batch"]
		var id int64
		var kill time.Duration
		if try == 0 {
			kill = fault.killAfter
		}
		id, err = h.importOnce(ctx, f, newBatch, kill)
		if try == 0 && kill > 0 && err != nil {
			h.mu.Lock()
			h.rep.Imports.Killed++
			h.mu.Unlock()
		}
		if try == 0 {
			for c, n := range h.iprox.commitHits() {
				h.mu.Lock()
				h.rep.Imports.CommitFaults[c.String()] += n
				h.mu.Unlock()
			}
		}
		h.mu.Lock()
		h.rep.Imports.Tries++
		if try > 0 {
			h.rep.Imports.Retries++
		}
		h.mu.Unlock()
		if err == nil {
			f.Returned = append(f.Returned, id)
			return id, nil
		}
		h.logf("import of %s, try %d: %v", filepath.Base(f.Path), try+1, firstLine(err.Error()))
		time.Sleep(time.Second)
	}
	return 0, fmt.Errorf("import of %s failed %d times after the faults ended: %w", f.Path, importTries, err)
}

// importOnce runs one `batchctl import` of f through the import proxy,
// without --once (every import is keyed by its file now) and without
// --new-batch unless asked; kill, when above 0, kills its process that
// long after its batch appears, ingesting (or when it has not answered
// in a minute).
func (h *harness) importOnce(ctx context.Context, f *file, newBatch bool, kill time.Duration) (int64, error) {
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", h.iprox.port())
	args := append([]string{"import", f.Kind, f.Path}, f.workArgs()...)
	args = append(args, "--tenant", f.Tenant, "-o", "json")
	if newBatch {
		args = append(args, "--new-batch")
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	if kill > 0 {
		// exec.CommandContext kills the process (SIGKILL) on cancel.
		go h.killWhenIngesting(ictx, cancel, f, kill)
	}
	out, err := h.cliAt(ictx, url, args...)
	if err != nil {
		return 0, err
	}
	return batchID(out)
}

// killWhenIngesting calls kill after delay once a batch of f is seen
// ingesting, or after a minute.
func (h *harness) killWhenIngesting(ctx context.Context, kill context.CancelFunc, f *file, delay time.Duration) {
	give := time.After(time.Minute)
	for {
		var n int
		_ = h.pool.QueryRow(ctx, `SELECT count(*) FROM rowfate.batches WHERE tenant_id = $1 AND kind = $2 AND source_digest = $3 AND status = 'ingesting'`,
			f.Tenant, f.Kind, f.Digest).Scan(&n)
		if n > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-give:
			kill()
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(delay):
		kill()
	}
}

// workArgs is how an import of f leaves its rows: to the workers
// (--no-work), or worked while they are stored (inline).
func (f *file) workArgs() []string {
	if f.Inline {
		return nil
	}
	return []string{"--no-work"}
}

// batchID reads the id of the batch an import printed.
func batchID(out string) (int64, error) {
	var b struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.ID == 0 {
		return 0, fmt.Errorf("no batch in the import's output: %v: %q", err, out)
	}
	return b.ID, nil
}

// importCopy imports f again as a new batch, straight to the database
// (the harness's own step: --new-batch cannot be retried blindly). After
// a failure it counts f's batches to tell whether the import went
// through, as a careful user would.
func (h *harness) importCopy(ctx context.Context, f *file) (int64, error) {
	// Imports go on after the faults' context ends (their schedule is
	// absolute): each try has a bound of its own.
	ctx = context.WithoutCancel(ctx)
	before, err := h.batchesOf(ctx, f)
	if err != nil {
		return 0, err
	}
	for try := 0; try < importTries; try++ {
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		args := append([]string{"import", f.Kind, f.Path}, f.workArgs()...)
		out, ierr := h.cli(ictx, append(args, "--new-batch", "--tenant", f.Tenant, "-o", "json")...)
		cancel()
		if ierr == nil {
			return batchID(out)
		}
		err = ierr
		time.Sleep(time.Second)
		if now, cerr := h.batchesOf(ctx, f); cerr == nil && len(now) > len(before) {
			return now[len(now)-1], nil
		}
	}
	return 0, err
}

// reimport imports an earlier file again, through the proxy and its
// faults: it must return the file's first batch.
func (h *harness) reimport(ctx context.Context, f *file) {
	newBatch := h.o.sabotage["import-new-batch"]
	var (
		id  int64
		err error
	)
	for try := 0; try < importTries; try++ {
		if id, err = h.importOnce(ctx, f, newBatch, 0); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	h.mu.Lock()
	h.rep.Imports.Reimports++
	h.mu.Unlock()
	if err != nil {
		h.rep.violate("import_failed", "importing %s again failed %d times: %v", filepath.Base(f.Path), importTries, firstLine(err.Error()))
		return
	}
	f.Returned = append(f.Returned, id)
	h.logf("imported %s again: batch %d (its first import made batch %d)", filepath.Base(f.Path), id, f.First)
}

// batchesOf lists the batches of f's tenant and kind with f's content.
func (h *harness) batchesOf(ctx context.Context, f *file) ([]int64, error) {
	var ids []int64
	var err error
	for try := 0; try < 30; try++ {
		err = h.pool.QueryRow(ctx, `SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM rowfate.batches
			WHERE tenant_id = $1 AND kind = $2 AND source_digest = $3`, f.Tenant, f.Kind, f.Digest).Scan(&ids)
		if err == nil || ctx.Err() != nil {
			return ids, err
		}
		time.Sleep(time.Second) // the database is restarting
	}
	return ids, err
}

// addBatch records a batch of f the harness expects to settle, whose
// import started at created.
func (h *harness) addBatch(f *file, id int64, created time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.batches {
		if b.ID == id {
			return // a sabotaged dedupe, or the engine's: the check counts it
		}
	}
	h.batches = append(h.batches, &imported{ID: id, Tenant: f.Tenant, Kind: f.Kind, Rows: f.Rows, Invalid: f.Invalid, File: f, Created: created})
	h.rep.Rows += f.Rows
}

// checkImports: every file made one batch, plus the --new-batch copies
// the harness asked for, and every import of it without --new-batch
// returned its first batch.
func (h *harness) checkImports(ctx context.Context) error {
	for _, f := range h.files {
		ids, err := h.batchesOf(ctx, f)
		if err != nil {
			return err
		}
		if want := 1 + len(f.Copies); len(ids) != want {
			h.rep.violate("import_batches", "%s (tenant %s, %s) has %d batches %v, want %d (its first import made %d, --new-batch %v): an import made a batch twice",
				filepath.Base(f.Path), f.Tenant, f.Kind, len(ids), ids, want, f.First, f.Copies)
		}
		for _, id := range f.Returned {
			if id != f.First {
				h.rep.violate("import_other_batch", "an import of %s returned batch %d, its first import made batch %d", filepath.Base(f.Path), id, f.First)
			}
		}
	}
	return nil
}

// writeCustomers writes f's file: f.Rows rows, one in 100 invalid, emails
// unique to the file. A customers file (prev: the tenant's previous one)
// also updates a tenth of prev's customers, with other values and, for
// half of those, no country nor amount (which the kind leaves as they
// were): the customers table must end with the values of the latest
// succeeded row of each.
func writeCustomers(f *file, prev *file) error {
	var b strings.Builder
	b.WriteString("email,name,country,signup_date,amount\n")
	f.Invalid, f.Emails = 0, make([]string, f.Rows)
	for i := 0; i < f.Rows; i++ {
		email := fmt.Sprintf("b%d.c%d@example.com", f.No, i)
		name, country, date, amount := fmt.Sprintf("Customer %d", i), "PT", "2021-03-04", fmt.Sprintf("%d.%02d", i%900, i%100)
		switch {
		case i%100 == 99:
			email = "not-an-email"
			f.Invalid++
		case prev != nil && i%10 == 5 && i < len(prev.Emails) && prev.Emails[i] != "not-an-email":
			email = prev.Emails[i]
			name, country, date, amount = fmt.Sprintf("Customer %d of file %d", i, f.No), "ES", "2022-05-06", fmt.Sprintf("%d.%02d", (i*7)%900, f.No%100)
			if i%20 == 15 {
				country, amount = "", ""
			}
		}
		f.Emails[i] = email
		fmt.Fprintf(&b, "%s,%s,%s,%s,%s\n", email, name, country, date, amount)
	}
	sum := sha256.Sum256([]byte(b.String()))
	f.Digest = hex.EncodeToString(sum[:])
	if err := os.WriteFile(f.Path, []byte(b.String()), 0o644); err != nil {
		return errors.Join(fmt.Errorf("write %s", f.Path), err)
	}
	return nil
}
