package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// result collects a contender's runs.
type result struct {
	c          *contender
	runs       []outcome
	errs       []string
	skipReason string
}

// row is one line of the results table, formatted.
type row struct {
	contender, store, input, rows, loaded, wall, rate, rss, ratio, floorRatio, notes string
}

// median of a non-empty slice: the middle value, or the mean of the two
// middle ones.
func median[T int64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// summarize turns the results into table rows: the median wall time
// (scaled to the whole input for a contender that ran on its first rows),
// rows/s, the median peak RSS and the ratios of the wall time to psql
// \copy's and to the floor's of the contender's store.
func summarize(e *env, selected []*contender, results map[string]*result) []row {
	var copyWall time.Duration
	if r := results["copy"]; r != nil && len(r.runs) > 0 {
		copyWall = median(walls(r.runs))
	}
	floorWall := map[string]time.Duration{} // store -> its floor's median
	for _, c := range selected {
		if r := results[c.name]; c.floor && len(r.runs) > 0 {
			floorWall[c.store] = median(walls(r.runs))
		}
	}
	var out []row
	for _, c := range selected {
		r := results[c.name]
		full := e.rawRows
		if c.input == inputValid {
			full = e.validRows
		}
		x := row{contender: c.label + " [" + c.name + "]", store: c.store, input: c.input, rows: thousands(int64(full))}
		var notes []string
		if r.skipReason != "" {
			notes = append(notes, "SKIPPED: "+r.skipReason)
		}
		if len(r.errs) > 0 {
			notes = append(notes, "FAILED "+strings.Join(r.errs, "; "))
		}
		if len(r.runs) > 0 {
			ran := full
			if l := c.limit(e.cfg); l > 0 && l < full {
				ran = l
			}
			wall := median(walls(r.runs))
			scaled := time.Duration(float64(wall) * float64(full) / float64(ran))
			x.wall = fmt.Sprintf("%.2f s", scaled.Seconds())
			x.rate = thousands(int64(float64(ran) / wall.Seconds()))
			x.rss = fmt.Sprintf("%.0f MiB", float64(median(rssOf(r.runs)))/1024)
			loaded := r.runs[len(r.runs)-1].loaded
			x.loaded = thousands(loaded)
			if ran != full {
				x.wall += " (scaled)"
				x.loaded += " of " + thousands(int64(ran))
				notes = append(notes, fmt.Sprintf("SCALED: ran on the first %s rows (%.2f s), time ×%.1f", thousands(int64(ran)), wall.Seconds(), float64(full)/float64(ran)))
			}
			if copyWall > 0 {
				x.ratio = fmt.Sprintf("%.1f×", scaled.Seconds()/copyWall.Seconds())
			}
			if f := floorWall[c.store]; f > 0 {
				x.floorRatio = fmt.Sprintf("%.1f×", scaled.Seconds()/f.Seconds())
			}
			if o := r.runs[len(r.runs)-1].outcomes; o > 0 {
				x.loaded += " + " + thousands(o) + " outcome rows"
			}
			if len(r.runs) < e.cfg.rounds && len(r.errs) > 0 {
				notes = append(notes, fmt.Sprintf("median of %d runs", len(r.runs)))
			}
		}
		if c.name == "river" || c.name == "naive" {
			notes = append(notes, "child process")
		}
		if strings.HasPrefix(c.name, "pgloader") || c.name == "copy" || (strings.HasPrefix(c.name, "floor-") && c.store == storePostgres) {
			notes = append(notes, "client RSS only")
		}
		if c.name == "floor-pg-parallel" {
			notes = append(notes, "RSS: larger psql")
		}
		if c.base {
			notes = append(notes, "-batchctl-base binary")
		}
		if strings.HasPrefix(c.name, "rowfate-pg-2w") {
			notes = append(notes, "RSS: largest process")
		}
		x.notes = strings.Join(notes, "; ")
		out = append(out, x)
	}
	return out
}

func walls(runs []outcome) []time.Duration {
	var out []time.Duration
	for _, o := range runs {
		out = append(out, o.wall)
	}
	return out
}

func rssOf(runs []outcome) []int64 {
	var out []int64
	for _, o := range runs {
		out = append(out, o.rssKiB)
	}
	return out
}

// thousands formats n with commas: 1,000,000.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

var header = row{"contender", "store", "input", "rows", "loaded", "median wall", "rows/s", "median peak RSS", "vs psql \\copy", "vs its store's floor", "notes"}

func (r row) cells() []string {
	return []string{r.contender, r.store, r.input, r.rows, r.loaded, r.wall, r.rate, r.rss, r.ratio, r.floorRatio, r.notes}
}

// printText prints the table aligned for a terminal.
func printText(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range append([]row{header}, rows...) {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	tw.Flush()
}

// markdown renders the machine facts, the inputs and the table as
// Markdown for BENCHMARKS.md.
func markdown(facts []string, e *env, rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Loading %s customer rows: rowfate and the alternatives\n\n", thousands(int64(e.rawRows)))
	for _, f := range facts {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	fmt.Fprintf(&b, "- %s\n", inputsFact(e))
	fmt.Fprintf(&b, "- rounds: %d, interleaved (the median is shown); each run starts from an empty schema (SQLite: a new file)\n\n", e.cfg.rounds)
	b.WriteString("| " + strings.Join(header.cells(), " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(header.cells())) + "\n")
	for _, r := range rows {
		cells := r.cells()
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\nPeak RSS is the client process's (psql, pgloader, batchctl, or the naive/River child); the PostgreSQL server's memory is not counted. " +
		"\"vs psql \\copy\" is the wall time divided by psql \\copy's; \"vs its store's floor\" divides it by the floor's of the same store " +
		"(PostgreSQL: floor-pg, the valid rows and one outcome row per input row with psql \\copy in one transaction; SQLite: sqlite3-import, the same with the sqlite3 shell's .import). Scaled rows ran on the first rows of the file and their time is multiplied up; " +
		"their rows/s is the measured one.\n")
	return b.String()
}

// inputsFact says how many rows the valid-rows filter kept and how many
// rowfate found valid.
func inputsFact(e *env) string {
	s := fmt.Sprintf("input: %s generated rows (bench/gencustomers); the valid-rows filter kept %s", thousands(int64(e.rawRows)), thousands(int64(e.validRows)))
	if e.rowfateValid >= 0 {
		s += fmt.Sprintf("; rowfate found %s valid (succeeded) and %s invalid", thousands(e.rowfateValid), thousands(e.rowfateInvalid))
	}
	return s
}

// machineFacts describes the machine and the versions measured.
func machineFacts(ctx context.Context, e *env) []string {
	facts := []string{
		fmt.Sprintf("machine: %d CPUs (%s), %s memory, load average %s at start", runtime.NumCPU(), cpuModel(), memTotal(), loadAvg()),
		"Go: " + firstLine(output(ctx, "go", "version")),
	}
	var pg string
	if err := e.admin.QueryRow(ctx, "SELECT version()").Scan(&pg); err != nil {
		pg = "unknown: " + err.Error()
	}
	if i := strings.Index(pg, " on "); i > 0 {
		pg = pg[:i]
	}
	facts = append(facts, "PostgreSQL server: "+pg+" (same machine), client "+firstLine(output(ctx, "psql", "--version")))
	pgl := "not installed"
	if _, err := exec.LookPath("pgloader"); err == nil {
		pgl = strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(output(ctx, "pgloader", "--version")), "\n", ", ")), " ")
	}
	facts = append(facts, "pgloader: "+pgl)
	river := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" {
				river = d.Version
			}
		}
	}
	facts = append(facts, "River: "+river+" (riverpgxv5)")
	switch {
	case e.cfg.batchctlPath != "":
		// A prebuilt binary: its own build information, not the work
		// tree's HEAD, which may be another commit.
		facts = append(facts, "rowfate: "+e.cfg.batchctlPath+", "+binaryRevision(e.cfg.batchctlPath)+fileTime(e.cfg.batchctlPath))
	default:
		if rev := strings.TrimSpace(output(ctx, "git", "-C", e.cfg.repo, "rev-parse", "--short", "HEAD")); rev != "" {
			facts = append(facts, "rowfate: batchctl built from "+rev+" (plus any uncommitted changes in the work tree)")
		}
	}
	if e.cfg.batchctlBase != "" {
		facts = append(facts, "rowfate base (the @base contenders): "+e.cfg.batchctlBase+", "+binaryRevision(e.cfg.batchctlBase)+fileTime(e.cfg.batchctlBase))
	}
	return facts
}

// binaryRevision says which commit a Go binary was built from, as its
// build information records it.
func binaryRevision(path string) string {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return "revision unknown: " + err.Error()
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "built without VCS information"
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if modified == "true" {
		rev += " with uncommitted changes"
	}
	return "built from " + rev
}

// fileTime is ", written TIME" for a file, so that a binary without build
// information can still be told from another; "" if it cannot be read.
func fileTime(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return ", written " + fi.ModTime().UTC().Format("2006-01-02 15:04 UTC")
}

// output is a command's standard output, or "" if it failed.
func output(ctx context.Context, name string, args ...string) string {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// procField returns the value of the first line of a /proc file that
// starts with key.
func procField(file, key string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, key) {
			if _, v, ok := strings.Cut(l, ":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return "?"
}

func cpuModel() string { return procField("/proc/cpuinfo", "model name") }

func memTotal() string {
	var kb int64
	fmt.Sscanf(procField("/proc/meminfo", "MemTotal"), "%d", &kb)
	return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
