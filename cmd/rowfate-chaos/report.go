package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rowfate/rowfate/rows"
)

// report is what a run did and found.
type report struct {
	mu       sync.Mutex
	Seed     uint64            `json:"seed"`
	Versions map[string]string `json:"versions"`
	Started  time.Time         `json:"started"`
	// Rows and Batches are what was imported.
	Rows    int `json:"rows"`
	Batches int `json:"batches"`
	// Faults counts the faults injected, by kind; WorkerCrashes the
	// failpoints that fired.
	Faults            map[string]int `json:"faults"`
	WorkerCrashes     int            `json:"worker_crashes"`
	StaleAcksRejected int            `json:"stale_acks_rejected"`
	// WorkerLeasesLost are the workers' own stale leases refused (at a
	// renewal or a flush), from their logs.
	WorkerLeasesLost   int     `json:"worker_leases_lost"`
	ForgedAcksRejected int     `json:"forged_acks_rejected"`
	Cancelled          []int64 `json:"cancelled_batches"`
	// Outcomes are the rows by state at the end, over every batch.
	Outcomes rows.Counts `json:"outcomes"`
	// Downstream is what the downstream saw.
	Downstream downstreamStats `json:"downstream"`
	// Imports is what the imports went through.
	Imports importStats `json:"imports"`
	// Exec is what the orphan check looked at: programs seen alive after
	// their worker died (within the grace), and the orphans.
	ExecAliveAtDeath int `json:"exec_alive_at_worker_death"`
	ExecOrphans      int `json:"exec_orphans"`
	// Unknown is the rows left unknown, and UnknownBound the most the
	// faults injected explain (bound.go), with how it was reckoned.
	Unknown      int64 `json:"unknown"`
	UnknownBound int64 `json:"unknown_bound"`
	// UnknownExhausted is the unknown rows out of attempts with their
	// key claimed (not in Unknown: no fault bounds them, but each used
	// every attempt).
	UnknownExhausted int64    `json:"unknown_exhausted"`
	BoundTerms       []string `json:"unknown_bound_terms"`
	// Customers is the customers table's rows checked.
	Customers     int     `json:"customers_checked"`
	SettleSeconds float64 `json:"settle_seconds"`
	WallSeconds   float64 `json:"wall_seconds"`
	// Violations are counted in full by kind, with the first of each.
	Violations     map[string]*violationKind `json:"violations"`
	ViolationCount int                       `json:"violation_count"`
	ChecksRun      []string                  `json:"checks"`
	// SlowFaults are the faults that took longer than slowFault.
	SlowFaults []string `json:"slow_faults,omitempty"`
	// OpenState is what was open when the run did not settle; Kept the
	// folder a failed run's evidence is in.
	OpenState string `json:"open_state,omitempty"`
	Kept      string `json:"kept,omitempty"`
}

type downstreamStats struct {
	Requests    int `json:"requests"`
	KeysApplied int `json:"keys_applied"`
	Replays     int `json:"replays"`
	Failed503   int `json:"failed_503"`
	Hung        int `json:"hung"`
	Refused     int `json:"refused"`
}

type importStats struct {
	Tries     int `json:"tries"`
	Retries   int `json:"retries"`
	Reimports int `json:"reimports"`
	// Killed counts the imports whose process was killed before it
	// answered; the retries found what it left behind.
	Killed int `json:"killed"`
	// Inline counts the files imported inline: their rows worked in the
	// ingest's own transaction, under the same commit faults.
	Inline int `json:"inline"`
	// CommitFaults counts the ingests whose COMMIT the proxy cut, by how.
	CommitFaults map[string]int `json:"commit_faults"`
}

// violationKind is one kind of violation: how many, and the first few.
type violationKind struct {
	Count int      `json:"count"`
	First []string `json:"first"`
}

// keptPerKind is how many violations of a kind the report keeps.
const keptPerKind = 50

// violate counts a violation of a kind, keeping the first few.
func (r *report) violate(kind, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Violations == nil {
		r.Violations = map[string]*violationKind{}
	}
	v := r.Violations[kind]
	if v == nil {
		v = &violationKind{}
		r.Violations[kind] = v
	}
	v.Count++
	r.ViolationCount++
	if len(v.First) < keptPerKind {
		v.First = append(v.First, fmt.Sprintf(format, args...))
	}
}

func (r *report) print(w io.Writer, show int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(w, "chaos: seed %d, %d rows in %d batches, wall %.0f s (settled %.1f s after the faults): %d violations\n",
		r.Seed, r.Rows, r.Batches, r.WallSeconds, r.SettleSeconds, r.ViolationCount)
	var kinds []string
	for k := range r.Faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	total := 0
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.Faults[k]))
		total += r.Faults[k]
	}
	fmt.Fprintf(w, "  faults: %d (%s), failpoint crashes %d\n", total, strings.Join(parts, ", "), r.WorkerCrashes)
	fmt.Fprintf(w, "  stale acks rejected %d (replayed by the harness) + %d (workers' leases lost), forged acks rejected %d, batches cancelled %d\n",
		r.StaleAcksRejected, r.WorkerLeasesLost, r.ForgedAcksRejected, len(r.Cancelled))
	var states []string
	for _, s := range rows.States {
		if n := r.Outcomes[s]; n > 0 {
			states = append(states, fmt.Sprintf("%s %d", s, n))
		}
	}
	d := r.Downstream
	fmt.Fprintf(w, "  outcomes: %s\n", strings.Join(states, ", "))
	fmt.Fprintf(w, "  downstream: %d requests, %d keys applied, %d replays, %d answered 503, %d hung past the timeout, %d refused (key with another payload)\n",
		d.Requests, d.KeysApplied, d.Replays, d.Failed503, d.Hung, d.Refused)
	var cf []string
	for k, n := range r.Imports.CommitFaults {
		cf = append(cf, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(cf)
	fmt.Fprintf(w, "  imports: %d tries (%d retries), ingest commits cut: %s; %d killed; %d re-imports\n",
		r.Imports.Tries, r.Imports.Retries, orNone(strings.Join(cf, ", ")), r.Imports.Killed, r.Imports.Reimports)
	fmt.Fprintf(w, "  exec programs seen alive after their worker died (within %s): %d; orphans %d; customers checked %d\n",
		orphanGrace, r.ExecAliveAtDeath, r.ExecOrphans, r.Customers)
	fmt.Fprintf(w, "  unknown rows %d, bound %d = %s; and %d out of attempts with their key claimed\n", r.Unknown, r.UnknownBound, orNone(strings.Join(r.BoundTerms, " + ")), r.UnknownExhausted)
	if len(r.SlowFaults) > 0 {
		fmt.Fprintf(w, "  faults that took over %s: %s\n", slowFault, strings.Join(r.SlowFaults, ", "))
	}
	fmt.Fprintf(w, "  checks: %s\n", strings.Join(r.ChecksRun, "; "))
	fmt.Fprintf(w, "  violations: %d\n", r.ViolationCount)
	var vk []string
	for k := range r.Violations {
		vk = append(vk, k)
	}
	sort.Strings(vk)
	for _, k := range vk {
		v := r.Violations[k]
		fmt.Fprintf(w, "    %s: %d\n", k, v.Count)
		for i, s := range v.First {
			if i == show {
				fmt.Fprintf(w, "      … %d more (the report keeps %d)\n", v.Count-show, len(v.First))
				break
			}
			fmt.Fprintf(w, "      - %s\n", s)
		}
	}
	if r.Kept != "" {
		fmt.Fprintf(w, "  evidence kept in %s\n", r.Kept)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// writeReport writes the report, as text and JSON, into dir.
func (h *harness) writeReport(dir string) {
	var b bytes.Buffer
	h.rep.print(&b, keptPerKind)
	_ = os.WriteFile(filepath.Join(dir, "report.txt"), b.Bytes(), 0o644)
	h.rep.mu.Lock()
	j, _ := json.MarshalIndent(h.rep, "", "  ")
	h.rep.mu.Unlock()
	_ = os.WriteFile(filepath.Join(dir, "report.json"), append(j, '\n'), 0o644)
	if h.rep.OpenState != "" {
		_ = os.WriteFile(filepath.Join(dir, "open-state.txt"), []byte(h.rep.OpenState), 0o644)
	}
}
