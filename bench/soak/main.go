// Command soak runs batchctl serve for a long while under a moderate, mixed
// load through its API — imports, exports, re-runs, retries, cancels,
// status and row reads — and samples the service process: resident
// memory, goroutines, open files and PostgreSQL connections. A leak shows
// as a last stretch above the first; the report compares them (issue 14).
//
//	DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go run ./bench/soak -duration 30m -report soak.json
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

type report struct {
	Duration   string         `json:"duration"`
	Seed       uint64         `json:"seed"`
	Ops        map[string]int `json:"ops"`
	Refused    map[string]int `json:"refused_4xx"`
	Errors     map[string]int `json:"errors"`
	RowsQueued int            `json:"rows_queued"`
	Samples    []sample       `json:"samples"`
	Windows    []window       `json:"windows"`
}

type sample struct {
	Seconds    float64 `json:"t"`
	RSSMiB     float64 `json:"rss_mib"`
	Goroutines int     `json:"goroutines"`
	FDs        int     `json:"fds"`
	Conns      int     `json:"pg_conns"`
	HeapMiB    float64 `json:"heap_mib"`
}

// window is the medians and maxima of a stretch of samples.
type window struct {
	Name          string  `json:"name"`
	RSSMedianMiB  float64 `json:"rss_median_mib"`
	RSSMaxMiB     float64 `json:"rss_max_mib"`
	HeapMedianMiB float64 `json:"heap_median_mib"`
	Goroutines    int     `json:"goroutines_median"`
	GoroutinesMax int     `json:"goroutines_max"`
	FDs           int     `json:"fds_median"`
	FDsMax        int     `json:"fds_max"`
	Conns         int     `json:"pg_conns_median"`
	ConnsMax      int     `json:"pg_conns_max"`
}

func main() {
	dur := flag.Duration("duration", 30*time.Minute, "how long the load runs")
	every := flag.Duration("every", 2*time.Second, "time between operations")
	seed := flag.Uint64("seed", 1, "seed of the operation mix")
	out := flag.String("report", "", "write the report as JSON to this file")
	dbURL := flag.String("database", os.Getenv("DATABASE_URL"), "PostgreSQL URL (default $DATABASE_URL)")
	flag.Parse()
	if *dbURL == "" {
		fatalf("set DATABASE_URL or -database")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := run(ctx, *dbURL, *dur, *every, *seed)
	if err != nil {
		fatalf("%v", err)
	}
	if *out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak: %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, base string, dur, every time.Duration, seed uint64) (*report, error) {
	tmp, err := os.MkdirTemp("", "rowfate-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "batchctl")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/batchctl").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build batchctl (run from the module root): %v: %s", err, out)
	}
	schema := fmt.Sprintf("soak_%d", os.Getpid())
	admin, err := pgxpool.New(ctx, withParam(base, "application_name", "soak-probe"))
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, err
	}
	defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	db := withParam(withParam(base, "search_path", schema), "application_name", "soak-serve")

	if out, err := exec.CommandContext(ctx, bin, "migrate", "--database", db).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("migrate: %v: %s", err, out)
	}
	tok, err := exec.CommandContext(ctx, bin, "token", "create", "--name", "soak", "--tenant", "soak", "--role", "admin", "--database", db).Output()
	if err != nil {
		return nil, fmt.Errorf("token create: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(tok)), "\n")
	token := strings.TrimSpace(lines[len(lines)-1]) // printed last
	// serve's workers need a worker credential of their own.
	wtok, err := exec.CommandContext(ctx, bin, "worker-token", "create", "soak", "--tenant", "soak", "--database", db).Output()
	if err != nil {
		return nil, fmt.Errorf("worker-token create: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	serve := exec.CommandContext(ctx, bin, "serve", "--addr", addr, "--database", db, "--workers", "2",
		"--files", filepath.Join(tmp, "files"), "--tenant", "soak", "--worker-token", strings.TrimSpace(string(wtok)))
	logFile, err := os.Create(filepath.Join(tmp, "serve.log"))
	if err != nil {
		return nil, err
	}
	serve.Stdout, serve.Stderr = logFile, logFile
	if err := serve.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = serve.Process.Signal(os.Interrupt)
		_ = serve.Wait()
	}()
	c := &client{base: "http://" + addr, token: token, http: &http.Client{Timeout: 2 * time.Minute}}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	logf("serve (pid %d) ready on %s; load for %s", serve.Process.Pid, addr, dur)

	rep := &report{Duration: dur.String(), Seed: seed, Ops: map[string]int{}, Refused: map[string]int{}, Errors: map[string]int{}}
	r := rand.New(rand.NewPCG(seed, 7))
	start := time.Now()
	probe := func() {
		s := sample{Seconds: time.Since(start).Seconds()}
		s.RSSMiB, s.FDs = procFacts(serve.Process.Pid)
		s.Goroutines, s.HeapMiB = c.goMetrics(ctx)
		_ = admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'soak-serve'`).Scan(&s.Conns)
		rep.Samples = append(rep.Samples, s)
	}
	probe()
	tick := time.NewTicker(every)
	defer tick.Stop()
	next := start.Add(15 * time.Second)
	var batches []int64
	for time.Since(start) < dur {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		op, code, err := c.step(ctx, r, &batches, rep)
		rep.Ops[op]++
		switch {
		case err != nil || code >= 500:
			rep.Errors[op]++
			logf("%s: %d %v", op, code, err)
		case code >= 400:
			rep.Refused[fmt.Sprintf("%s %d", op, code)]++
		}
		if time.Now().After(next) {
			probe()
			next = next.Add(15 * time.Second)
			if len(rep.Samples)%20 == 0 {
				s := rep.Samples[len(rep.Samples)-1]
				logf("%.0f s: RSS %.1f MiB, heap %.1f MiB, %d goroutines, %d fds, %d connections; %d batches",
					s.Seconds, s.RSSMiB, s.HeapMiB, s.Goroutines, s.FDs, s.Conns, len(batches))
			}
		}
	}
	probe()
	// The first sixth after a minute of warm-up (caches, pools, the
	// customers table's first pages) against the last sixth.
	var warm []sample
	for _, s := range rep.Samples {
		if s.Seconds >= 60 || dur < 5*time.Minute {
			warm = append(warm, s)
		}
	}
	n := len(warm)
	part := max(1, n/6)
	rep.Windows = []window{summarize("first", warm[:part]), summarize("last", warm[n-part:])}
	for _, w := range rep.Windows {
		logf("%s %d samples: RSS median %.1f MiB (max %.1f), heap %.1f MiB, goroutines %d (max %d), fds %d (max %d), connections %d (max %d)",
			w.Name, part, w.RSSMedianMiB, w.RSSMaxMiB, w.HeapMedianMiB, w.Goroutines, w.GoroutinesMax, w.FDs, w.FDsMax, w.Conns, w.ConnsMax)
	}
	logf("ops %v; refused %v; errors %v; rows queued %d", rep.Ops, rep.Refused, rep.Errors, rep.RowsQueued)
	return rep, nil
}

func summarize(name string, s []sample) window {
	med := func(f func(sample) float64) (float64, float64) {
		xs := make([]float64, len(s))
		for i := range s {
			xs[i] = f(s[i])
		}
		slices.Sort(xs)
		return xs[len(xs)/2], xs[len(xs)-1]
	}
	w := window{Name: name}
	w.RSSMedianMiB, w.RSSMaxMiB = med(func(x sample) float64 { return x.RSSMiB })
	w.HeapMedianMiB, _ = med(func(x sample) float64 { return x.HeapMiB })
	g, gm := med(func(x sample) float64 { return float64(x.Goroutines) })
	f, fm := med(func(x sample) float64 { return float64(x.FDs) })
	cn, cm := med(func(x sample) float64 { return float64(x.Conns) })
	w.Goroutines, w.GoroutinesMax, w.FDs, w.FDsMax, w.Conns, w.ConnsMax = int(g), int(gm), int(f), int(fm), int(cn), int(cm)
	return w
}

// step does one operation of the mix and returns its name and HTTP status.
func (c *client) step(ctx context.Context, r *rand.Rand, batches *[]int64, rep *report) (string, int, error) {
	pick := func() int64 { return (*batches)[r.IntN(len(*batches))] }
	x := r.IntN(100)
	switch {
	case len(*batches) == 0 || x < 35:
		n := 500 + r.IntN(8000)
		code, body, err := c.upload(ctx, "/v1/batches", r, n)
		if err == nil && code == 201 {
			var b struct {
				ID int64 `json:"id"`
			}
			if json.Unmarshal(body, &b) == nil && b.ID > 0 {
				*batches = append(*batches, b.ID)
				rep.RowsQueued += n
			}
		}
		return "import", code, err
	case x < 55:
		code, _, err := c.do(ctx, "GET", fmt.Sprintf("/v1/batches/%d", pick()), nil, "")
		return "get", code, err
	case x < 65:
		code, _, err := c.do(ctx, "GET", fmt.Sprintf("/v1/batches/%d/rows?state=invalid&limit=50", pick()), nil, "")
		return "rows", code, err
	case x < 72:
		code, _, err := c.do(ctx, "POST", "/v1/exports", strings.NewReader(`{"kind":"customers","format":"csv"}`), "application/json")
		return "export", code, err
	case x < 80:
		code, _, err := c.do(ctx, "POST", fmt.Sprintf("/v1/batches/%d/rerun", pick()), strings.NewReader(`{}`), "application/json")
		return "rerun", code, err
	case x < 87:
		code, _, err := c.do(ctx, "POST", fmt.Sprintf("/v1/batches/%d/retry", pick()), strings.NewReader(`{}`), "application/json")
		return "retry", code, err
	case x < 94:
		code, _, err := c.do(ctx, "GET", fmt.Sprintf("/v1/batches/%d/report", pick()), nil, "")
		return "report", code, err
	default:
		// Cancel the newest batch: the likeliest to be running.
		code, _, err := c.do(ctx, "POST", fmt.Sprintf("/v1/batches/%d/cancel", (*batches)[len(*batches)-1]), strings.NewReader(`{}`), "application/json")
		return "cancel", code, err
	}
}

type client struct {
	base, token string
	http        *http.Client
}

func (c *client) do(ctx context.Context, method, path string, body io.Reader, ctype string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// upload posts a generated customers file of n rows, about 1 in 40
// invalid, as a multipart upload.
func (c *client) upload(ctx context.Context, path string, r *rand.Rand, n int) (int, []byte, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("kind", "customers")
	fw, err := mw.CreateFormFile("file", "soak.csv")
	if err != nil {
		return 0, nil, err
	}
	w := bufio.NewWriter(fw)
	w.WriteString("email,name,country,signup_date,amount\n")
	tag := r.Uint64()
	for i := range n {
		email := fmt.Sprintf("c%d.%x@soak.example.com", i, tag)
		if r.IntN(40) == 0 {
			email = "not-an-email"
		}
		fmt.Fprintf(w, "%s,Customer %d,DE,2024-02-%02d,%d.25\n", email, i, i%28+1, r.IntN(5000))
	}
	w.Flush()
	mw.Close()
	return c.do(ctx, "POST", path, &buf, mw.FormDataContentType())
}

func (c *client) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if code, _, err := c.do(ctx, "GET", "/readyz", nil, ""); err == nil && code == 200 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("serve not ready after 30 s")
}

// goMetrics reads go_goroutines and go_memstats_heap_inuse_bytes from
// /metrics.
func (c *client) goMetrics(ctx context.Context) (int, float64) {
	_, b, err := c.do(ctx, "GET", "/metrics", nil, "")
	if err != nil {
		return 0, 0
	}
	var g int
	var heap float64
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			g = int(f)
		}
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			heap = f / (1 << 20)
		}
	}
	return g, heap
}

// procFacts is a process's resident memory (MiB) and open files.
func procFacts(pid int) (float64, int) {
	var rss float64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				rss = kb / 1024
			}
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return rss, len(fds)
}

func withParam(raw, key, value string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
