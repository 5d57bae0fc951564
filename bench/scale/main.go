// Command scale measures how far one PostgreSQL carries the engine (issue
// 14): a batch of ten million rows, a thousand batches of a hundred
// tenants, and one batch worked by one, two and four worker processes. It
// prints a report and, with -report, writes it as JSON; BENCHMARKS.md
// quotes it.
//
//	DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go run ./bench/scale -scenario big -rows 10000000
//	go run ./bench/scale -scenario tenants -tenants 100 -batches 1000
//	go run ./bench/scale -scenario workers -rows 500000 -procs 1,2,4 -runs 3
//
// Every scenario runs in a schema of its own, dropped at the end (-keep
// leaves it). The big and tenants scenarios work the rows in this process,
// through a store that times every claim and flush; the workers scenario
// runs batchctl worker processes, as a deployment would.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

type options struct {
	scenario string
	url      string
	rows     int
	tenants  int
	batches  int
	procs    []int
	runs     int
	workers  int
	keep     bool
	report   string
	tmp      string
	batchctl string
}

func main() {
	var o options
	var procs string
	flag.StringVar(&o.scenario, "scenario", "big", "big, tenants or workers")
	flag.StringVar(&o.url, "database", os.Getenv("DATABASE_URL"), "PostgreSQL URL (default $DATABASE_URL)")
	flag.IntVar(&o.rows, "rows", 0, "rows of the batch (big: 10,000,000; workers: 500,000)")
	flag.IntVar(&o.tenants, "tenants", 100, "tenants (tenants scenario)")
	flag.IntVar(&o.batches, "batches", 1000, "batches in all (tenants scenario)")
	flag.StringVar(&procs, "procs", "1,2,4", "worker processes (workers scenario)")
	flag.IntVar(&o.runs, "runs", 3, "runs of each process count (workers scenario)")
	flag.IntVar(&o.workers, "workers", 2, "concurrent workers in the process (big, tenants)")
	flag.BoolVar(&o.keep, "keep", false, "keep the scenario's schema")
	flag.StringVar(&o.report, "report", "", "write the report as JSON to this file")
	flag.Parse()
	for _, p := range strings.Split(procs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			fatalf("-procs %q: want numbers like 1,2,4", procs)
		}
		o.procs = append(o.procs, n)
	}
	if o.url == "" {
		fatalf("set DATABASE_URL or -database to a PostgreSQL database")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	tmp, err := os.MkdirTemp("", "rowfate-scale-")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(tmp)
	o.tmp = tmp
	if err := build(ctx, &o); err != nil {
		fatalf("%v", err)
	}
	var rep any
	switch o.scenario {
	case "big":
		o.rows = cmp.Or(o.rows, 10_000_000)
		rep, err = runBig(ctx, o)
	case "tenants":
		rep, err = runTenants(ctx, o)
	case "workers":
		o.rows = cmp.Or(o.rows, 500_000)
		rep, err = runWorkers(ctx, o)
	default:
		err = fmt.Errorf("-scenario %q: want big, tenants or workers", o.scenario)
	}
	if err != nil {
		fatalf("%s: %v", o.scenario, err)
	}
	if o.report != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(o.report, append(b, '\n'), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scale: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scale: %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// build compiles batchctl and gencustomers from this tree into o.tmp.
func build(ctx context.Context, o *options) error {
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	dir := strings.TrimSpace(string(root))
	for _, pkg := range []string{"cmd/batchctl", "bench/gencustomers"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(o.tmp, filepath.Base(pkg)), "./"+pkg)
		cmd.Dir, cmd.Stderr = dir, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", pkg, err)
		}
	}
	o.batchctl = filepath.Join(o.tmp, "batchctl")
	return nil
}

// generate writes n generated customers rows to a file in o.tmp.
func generate(ctx context.Context, o options, n int) (string, error) {
	path := filepath.Join(o.tmp, fmt.Sprintf("customers-%d.csv", n))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, filepath.Join(o.tmp, "gencustomers"), "-n", strconv.Itoa(n))
	cmd.Stdout, cmd.Stderr = f, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("gencustomers: %w", err)
	}
	return path, f.Close()
}

// timed runs batchctl with args under GNU time and returns its wall time,
// peak RSS, stdout and stderr. Exit 3 (rows flagged) is not an error.
func timed(ctx context.Context, o options, env []string, args ...string) (time.Duration, int64, string, string, error) {
	tf := filepath.Join(o.tmp, "time")
	cmd := exec.CommandContext(ctx, "/usr/bin/time", append([]string{"-f", "%e %M", "-o", tf, o.batchctl}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		err = nil
	}
	if err != nil {
		return 0, 0, stdout.String(), stderr.String(), fmt.Errorf("batchctl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	b, err := os.ReadFile(tf)
	if err != nil {
		return 0, 0, "", "", err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var secs float64
	var kb int64
	if _, err := fmt.Sscan(lines[len(lines)-1], &secs, &kb); err != nil {
		return 0, 0, "", "", fmt.Errorf("GNU time wrote %q: %w", b, err)
	}
	return time.Duration(secs * float64(time.Second)), kb << 10, stdout.String(), stderr.String(), nil
}

// batchID reads "batch N created" from an import's stderr.
func batchID(stderr string) (int64, error) {
	for _, line := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "batch "); ok {
			if n, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64); err == nil {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("no batch id in %q", stderr)
}

func median[T cmp.Ordered](xs []T) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func mib(b int64) float64 { return float64(b) / (1 << 20) }
