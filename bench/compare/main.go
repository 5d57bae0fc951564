// Command compare benchmarks rowfate against the other ways of loading a
// customers file into PostgreSQL: psql \copy (the physical limit), the
// floor of each store (the valid rows plus one outcome row per input row,
// with psql \copy or the sqlite3 shell's .import), pgloader, a naive
// one-INSERT-per-row loop, River (one job per row), and rowfate itself on
// PostgreSQL (one process, and ingest plus two worker processes) and on
// SQLite, optionally also with an older batchctl (-batchctl-base). Run it
// from bench/compare (make bench-compare does):
//
//	DATABASE_URL=postgres://... go run . -rows 1000000 -rounds 3 -md /tmp/compare.md
//
// It generates the file with bench/gencustomers, builds batchctl from the
// repository, runs the contenders interleaved round by round, each from an
// empty PostgreSQL schema (or a fresh SQLite file), and prints the median
// wall time and peak RSS of each, with its ratios to psql \copy and to
// its store's floor, as a text table and as Markdown. See
// README.md for what each contender measures.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config holds the command-line flags.
type config struct {
	rows         int
	rounds       int
	only         []string
	skip         []string
	keep         bool
	mdFile       string
	repo         string
	dbURL        string
	pgloaderRaw  int
	naiveRows    int
	riverRows    int
	riverWorkers int
	riverConns   int
	timeout      time.Duration
	batchctlPath string
	batchctlBase string // a second batchctl, measured as the <name>@base contenders
	listOnly     bool
	tmpParent    string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := runChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "compare child:", err)
			os.Exit(1)
		}
		return
	}
	var cfg config
	var only, skip string
	flag.IntVar(&cfg.rows, "rows", 1000000, "data rows in the generated customers file (about 2% invalid)")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds; each round runs every contender once, in turn")
	flag.StringVar(&only, "only", "", "comma-separated contenders to run (default all; see -list)")
	flag.StringVar(&skip, "skip", "", "comma-separated contenders not to run")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (files, logs, SQLite databases)")
	flag.StringVar(&cfg.mdFile, "md", "", "write the Markdown table to this file (default: print it)")
	flag.StringVar(&cfg.repo, "repo", "../..", "the rowfate repository (to build batchctl and run bench/gencustomers)")
	flag.StringVar(&cfg.dbURL, "database", os.Getenv("DATABASE_URL"), "PostgreSQL URL (default $DATABASE_URL)")
	flag.IntVar(&cfg.pgloaderRaw, "pgloader-raw-rows", 100000, "run pgloader on the raw file's first N rows and scale the time (0: all rows)")
	flag.IntVar(&cfg.naiveRows, "naive-rows", 100000, "run the naive loop on the valid file's first N rows and scale the time (0: all rows)")
	flag.IntVar(&cfg.riverRows, "river-rows", 0, "run River on the valid file's first N rows and scale the time (0: all rows)")
	flag.IntVar(&cfg.riverWorkers, "river-workers", 100, "River MaxWorkers")
	flag.IntVar(&cfg.riverConns, "river-conns", 40, "River's pgx pool size (PostgreSQL allows 100 connections by default)")
	flag.DurationVar(&cfg.timeout, "timeout", 2*time.Hour, "give up on one run of one contender after this long")
	flag.StringVar(&cfg.batchctlPath, "batchctl", "", "measure this batchctl binary instead of building one from -repo")
	flag.StringVar(&cfg.batchctlBase, "batchctl-base", "", "also measure this prebuilt batchctl: every rowfate contender runs with it too, as <name>@base, in the same rounds")
	flag.BoolVar(&cfg.listOnly, "list", false, "list the contenders and exit")
	flag.StringVar(&cfg.tmpParent, "tmp", "", "parent of the temporary directory (default $TMPDIR)")
	flag.Parse()
	cfg.only, cfg.skip = splitList(only), splitList(skip)

	if cfg.listOnly {
		for _, c := range contenders(&cfg) {
			fmt.Printf("%-26s %s\n", c.name, c.label)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// run prepares the inputs, runs the selected contenders for every round
// and prints the results.
func run(ctx context.Context, cfg *config) error {
	if cfg.dbURL == "" {
		return fmt.Errorf("set DATABASE_URL (or -database) to a PostgreSQL database")
	}
	if cfg.rows < 1 || cfg.rounds < 1 {
		return fmt.Errorf("-rows and -rounds must be 1 or more")
	}
	all := contenders(cfg)
	var selected []*contender
	for _, c := range all {
		if (len(cfg.only) == 0 || slices.Contains(cfg.only, c.name)) && !slices.Contains(cfg.skip, c.name) {
			selected = append(selected, c)
		}
	}
	for _, n := range append(slices.Clone(cfg.only), cfg.skip...) {
		if !slices.ContainsFunc(all, func(c *contender) bool { return c.name == n }) {
			return fmt.Errorf("unknown contender %q (see -list)", n)
		}
	}
	if len(selected) == 0 {
		return fmt.Errorf("no contender selected")
	}
	if _, err := exec.LookPath(gnuTime); err != nil {
		return fmt.Errorf("%s (GNU time) measures the peak RSS: apt-get install -y time", gnuTime)
	}
	repo, err := filepath.Abs(cfg.repo)
	if err != nil {
		return err
	}
	cfg.repo = repo
	tmp, err := os.MkdirTemp(cfg.tmpParent, "bench-compare-")
	if err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintln(os.Stderr, "keeping temporary files in", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	e, err := newEnv(ctx, cfg, tmp)
	if err != nil {
		return err
	}
	defer e.close()

	facts := machineFacts(ctx, e)
	for _, f := range facts {
		fmt.Println(f)
	}
	fmt.Println()

	if err := e.prepare(ctx, selected); err != nil {
		return err
	}
	results := make(map[string]*result)
	for _, c := range selected {
		results[c.name] = &result{c: c}
	}
	for round := 1; round <= cfg.rounds; round++ {
		for _, c := range selected {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r := results[c.name]
			if r.skipReason != "" {
				continue
			}
			if reason := c.unavailable(e); reason != "" {
				r.skipReason = reason
				fmt.Fprintf(os.Stderr, "round %d  %-26s skipped: %s\n", round, c.name, reason)
				continue
			}
			o, err := e.runOnce(ctx, c, round)
			if err != nil {
				r.errs = append(r.errs, fmt.Sprintf("round %d: %v", round, err))
				fmt.Fprintf(os.Stderr, "round %d  %-26s FAILED: %v\n", round, c.name, err)
				continue
			}
			r.runs = append(r.runs, o)
			var outcomes string
			if o.outcomes > 0 {
				outcomes = fmt.Sprintf(", outcome rows %d", o.outcomes)
			}
			fmt.Fprintf(os.Stderr, "round %d  %-26s %8.2f s  %7.1f MiB  loaded %d%s\n", round, c.name, o.wall.Seconds(), float64(o.rssKiB)/1024, o.loaded, outcomes)
		}
	}

	rows := summarize(e, selected, results)
	fmt.Println()
	printText(os.Stdout, rows)
	md := markdown(facts, e, rows)
	if cfg.mdFile != "" {
		if err := os.WriteFile(cfg.mdFile, []byte(md), 0o644); err != nil {
			return err
		}
		fmt.Println("\nMarkdown written to", cfg.mdFile)
	} else {
		fmt.Println()
		io.WriteString(os.Stdout, md)
	}
	return nil
}
