package batchctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/sqlite"
)

// jsonLine is a line of a -o jsonl stream: a progress.Message, or the
// batch that ends the stream. Declared here so that renaming a json tag
// breaks these tests.
type jsonLine struct {
	Type   string `json:"type"`
	Replay bool   `json:"replay"`
	Cursor int64  `json:"cursor"`
	Event  *struct {
		BatchID int64            `json:"batch_id"`
		Seq     int64            `json:"seq"`
		Type    string           `json:"type"`
		Status  string           `json:"status"`
		Counts  map[string]int64 `json:"counts"`
		Total   int64            `json:"total"`
		Done    int64            `json:"done"`
		Final   bool             `json:"final"`
	} `json:"event"`
	Batch *jsonBatch `json:"batch"`
}

// progressLines matches the plain progress lines on stderr: the work's,
// and the ingest's while the file is read.
var progressLines = regexp.MustCompile(`(?m)^batch \d+: (\d+/\d+ rows done|\d+ rows read).*\n`)

// withoutProgress is stderr without the progress lines an import prints
// when it takes a while.
func (r result) withoutProgress() string { return progressLines.ReplaceAllString(r.stderr, "") }

// created is the line an import prints on stderr once its batch exists.
func created(id int64, path string) string {
	return fmt.Sprintf("batch %d created (customers, %s)\n", id, path)
}

// customersFile writes a customers CSV of n rows; the last has a bad
// email, so that the batch ends with exit 3.
func customersFile(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("email,name,country,signup_date,amount\n")
	for i := range n - 1 {
		fmt.Fprintf(&b, "w%d@example.com,Customer %d,FR,2021-03-04,%d.50\n", i, i, i%500)
	}
	b.WriteString("not-an-email,Last,FR,2021-03-04,1\n")
	return writeFile(t, "watch.csv", []byte(b.String()))
}

// running is a batchctl Run in progress.
type running struct {
	stdout, stderr *lockedBuffer
	done           chan int
	cancel         context.CancelFunc
}

// start runs batchctl with args and --database in a goroutine.
func (c *session) start(args ...string) *running {
	ctx, cancel := context.WithCancel(c.t.Context())
	r := &running{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan int, 1), cancel: cancel}
	go func() {
		r.done <- Run(ctx, builtins, append(args, "--database", c.database), strings.NewReader(""), r.stdout, r.stderr)
	}()
	return r
}

// wait returns the run's result. It fails the test only when the run is
// stuck (testenv.Patience), not when it is merely slow.
func (r *running) wait(t *testing.T) result {
	t.Helper()
	timer := time.NewTimer(testenv.Patience(t))
	defer timer.Stop()
	select {
	case code := <-r.done:
		return result{code: code, stdout: r.stdout.String(), stderr: r.stderr.String()}
	case <-timer.C:
		r.cancel()
		t.Fatalf("still running after %v\nstdout:\n%s\nstderr:\n%s", testenv.Patience(t), r.stdout.String(), r.stderr.String())
		return result{}
	}
}

// waitFor waits until the run's stream (stdout or stderr) matches re.
func (r *running) waitFor(t *testing.T, stream *lockedBuffer, re *regexp.Regexp) {
	t.Helper()
	exited := func() bool {
		select {
		case code := <-r.done:
			t.Fatalf("exited %d before %s\nstdout:\n%s\nstderr:\n%s", code, re, r.stdout.String(), r.stderr.String())
		default:
		}
		return false
	}
	testenv.Until(t, func() bool { return re.MatchString(stream.String()) || exited() }, func() string {
		return fmt.Sprintf("%s\nstdout:\n%s\nstderr:\n%s", re, r.stdout.String(), r.stderr.String())
	})
}

// checkStream parses a -o jsonl stream: every line is JSON, the events'
// seqs strictly increase, the last event is final and the stream ends
// with the batch. It returns the events' lines and the batch.
func checkStream(t *testing.T, stdout string) ([]jsonLine, *jsonBatch) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	var (
		events []jsonLine
		last   *jsonBatch
	)
	for i, l := range lines {
		var m jsonLine
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, stdout)
		}
		switch {
		case m.Type == "created" && i == 0:
			// An import's first line: its batch exists.
		case m.Type == "batch" && m.Batch != nil && i == len(lines)-1:
			last = m.Batch
		case m.Type == "event" && m.Event != nil:
			if n := len(events); n > 0 && m.Event.Seq <= events[n-1].Event.Seq {
				t.Fatalf("line %d: seq %d after %d\n%s", i+1, m.Event.Seq, events[n-1].Event.Seq, stdout)
			}
			if m.Cursor != m.Event.Seq {
				t.Errorf("line %d: cursor %d, seq %d", i+1, m.Cursor, m.Event.Seq)
			}
			events = append(events, m)
		default:
			t.Fatalf("line %d: unexpected %s\n%s", i+1, l, stdout)
		}
	}
	if len(events) == 0 || !events[len(events)-1].Event.Final {
		t.Fatalf("the last event is not final:\n%s", stdout)
	}
	for _, m := range events[:len(events)-1] {
		if m.Event.Final {
			t.Errorf("final event %d before the last", m.Event.Seq)
		}
	}
	if last == nil {
		t.Fatalf("the stream does not end with the batch:\n%s", stdout)
	}
	return events, last
}

func TestWatchFollowsAWorkerSQLite(t *testing.T) {
	t.Parallel()
	testWatchFollowsAWorker(t, setup(t))
}

func TestWatchFollowsAWorkerPostgres(t *testing.T) {
	t.Parallel()
	testWatchFollowsAWorker(t, postgresSession(t))
}

// postgresSession returns a session on a fresh PostgreSQL schema, which is
// also the search_path (the built-in kinds' tables go there).
func postgresSession(t *testing.T) *session {
	t.Helper()
	cfg := testdb.PostgresSchema(t) // fails under ROWFATE_REQUIRE_POSTGRES=1 without DATABASE_URL
	u, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatalf("parse DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", cfg.ConnConfig.RuntimeParams["search_path"])
	u.RawQuery = q.Encode()
	return &session{t: t, database: u.String()}
}

// testWatchFollowsAWorker: `watch -o jsonl` follows a batch a separate
// worker works (another store, as another process would have), live, to
// the final event, and exits with the batch's code.
func testWatchFollowsAWorker(t *testing.T, c *session) {
	const n = 1200 // two chunks
	path := customersFile(t, n)
	if r := c.run("import", "customers", path, "--no-work"); r.code != exitOK || r.withoutProgress() != created(1, path) {
		t.Fatalf("import --no-work: %s", r)
	}
	w := c.start("watch", "1", "-o", "jsonl")
	// The replay of the started event says the watch is subscribed.
	w.waitFor(t, w.stdout, regexp.MustCompile(`"type":"started"`))
	wk := c.start("worker", "--until-done", "--worker-token", c.workerToken("watched"), "--batch", "1")
	r := w.wait(t)
	if r.code != exitRows || r.stderr != "" {
		t.Fatalf("watch: want exit 3, got %s", r)
	}
	events, b := checkStream(t, r.stdout)
	if first := events[0]; first.Event.Seq != 1 || first.Event.Type != "started" || !first.Replay {
		t.Errorf("first event: %+v", first.Event)
	}
	live := 0
	for _, m := range events {
		if !m.Replay {
			live++
		}
	}
	if live == 0 {
		t.Errorf("no live event: the run was not followed\n%s", r.stdout)
	}
	final := events[len(events)-1].Event
	if final.Type != "finished" || final.Done != n || final.Counts["succeeded"] != n-1 || final.Counts["invalid"] != 1 {
		t.Errorf("final event: %+v", final)
	}
	if b.Status != "finished" || b.Counts["succeeded"] != n-1 || b.Counts["invalid"] != 1 {
		t.Errorf("batch: %+v", b)
	}
	if r := wk.wait(t); r.code != exitOK {
		t.Errorf("worker: %s", r)
	}
}

// TestWatchFinishedBatch: a finished batch is printed at once, as status
// prints it, with status's exit code; -o jsonl replays its events.
func TestWatchFinishedBatch(t *testing.T) {
	t.Parallel()
	c := setup(t)
	c.run("import", "customers", fixture)
	status := c.run("status", "1")
	if r := c.run("watch", "1"); r.code != exitRows || r.stdout != status.stdout || r.stderr != "" {
		t.Errorf("watch of a finished batch: want exit 3 and\n%s\ngot %s", status.stdout, r)
	}
	status = c.run("status", "1", "-o", "json")
	if r := c.run("watch", "1", "-o", "json"); r.code != exitRows || r.stdout != status.stdout || r.stderr != "" {
		t.Errorf("watch -o json of a finished batch: want exit 3 and\n%s\ngot %s", status.stdout, r)
	}

	r := c.run("watch", "1", "-o", "jsonl")
	if r.code != exitRows || r.stderr != "" {
		t.Fatalf("watch -o jsonl: %s", r)
	}
	events, b := checkStream(t, r.stdout)
	for _, m := range events {
		if !m.Replay {
			t.Errorf("event %d of a finished batch is not a replay", m.Event.Seq)
		}
	}
	if events[0].Event.Seq != 1 || b.ID != 1 || b.Counts["invalid"] != 15 {
		t.Errorf("events from %d, batch %+v", events[0].Event.Seq, b)
	}

	// From the last cursor, only the batch is left.
	head := events[len(events)-1].Cursor
	r = c.run("watch", "1", "-o", "jsonl", "--cursor", fmt.Sprint(head))
	if r.code != exitRows || strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, `{"type":"batch","batch":{"id":1,`) {
		t.Errorf("watch --cursor %d: %s", head, r)
	}
	r = c.run("watch", "1", "--cursor", fmt.Sprint(head+1))
	if r.code != exitUsage || !strings.Contains(r.stderr, fmt.Sprintf("--cursor %d: ", head+1)) {
		t.Errorf("a cursor ahead of the log: %s", r)
	}
}

// TestWatchNotFound: another tenant's batch, or none, is not found, as
// status says it (exit 1), naming the batch and the tenant.
func TestWatchNotFound(t *testing.T) {
	t.Parallel()
	c := setup(t)
	c.run("import", "customers", fixture, "--no-work")
	for _, args := range [][]string{{"watch", "1", "--tenant", "other"}, {"watch", "1", "--tenant", "other", "-o", "jsonl"}} {
		r := c.run(args...)
		if want := "batchctl watch: batch 1 of tenant \"other\": not found\n"; r.code != exitError || r.stderr != want || r.stdout != "" {
			t.Errorf("%v: want exit 1 and %q, got %s", args, want, r)
		}
	}
	if r := c.run("watch", "9"); r.code != exitError || r.stderr != "batchctl watch: batch 9 of tenant \"default\": not found\n" {
		t.Errorf("watch 9: %s", r)
	}
}

// TestImportJSONL: import -o jsonl prints the batch's events as it is
// worked, from its start to its final event, then the batch.
func TestImportJSONL(t *testing.T) {
	t.Parallel()
	c := setup(t)
	r := c.run("import", "customers", fixture, "-o", "jsonl")
	if r.code != exitRows || r.stderr != created(1, fixture) {
		t.Fatalf("import -o jsonl: want exit 3 and only %q on stderr, got %s", created(1, fixture), r)
	}
	events, b := checkStream(t, r.stdout)
	if !strings.HasPrefix(r.stdout, `{"type":"created","batch_id":1,"kind":"customers",`) {
		t.Errorf("the stream does not start with the batch's creation:\n%s", r.stdout)
	}
	for len(events) > 0 && events[0].Event.Type == "ingest_progress" { // a slow read
		events = events[1:]
	}
	if first := events[0].Event; first.Type != "started" || first.Total != 300 {
		t.Errorf("first event: %+v", first)
	}
	if final := events[len(events)-1].Event; final.Counts["succeeded"] != 285 || final.Status != "finished" {
		t.Errorf("final event: %+v", final)
	}
	if b.Status != "finished" || b.Counts["invalid"] != 15 || b.Counts["succeeded"] != 285 {
		t.Errorf("batch: %+v", b)
	}

	// For a file imported before there is only the batch; without work, its
	// creation, then the batch.
	r = c.run("import", "customers", fixture, "-o", "jsonl")
	if r.code != exitRows || strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, `{"type":"batch","batch":{"id":1,`) {
		t.Errorf("import -o jsonl of a file imported before: %s", r)
	}
	r = c.run("import", "customers", fixture, "-o", "jsonl", "--no-work", "--new-batch")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, `{"type":"created","batch_id":2,`) || !strings.Contains(r.stdout, "\n"+`{"type":"batch","batch":{"id":2,`) {
		t.Errorf("import --no-work -o jsonl: %s", r)
	}
}

// TestWatchPlainLines: on a non-terminal, watch prints a progress line at
// most every --progress-interval and a last one at the end, then the
// summary.
func TestWatchPlainLines(t *testing.T) {
	t.Parallel()
	c := setup(t)
	path := customersFile(t, 1200)
	c.run("import", "customers", path, "--no-work")
	w := c.start("watch", "1", "--progress-interval", "50ms")
	w.waitFor(t, w.stderr, regexp.MustCompile(`(?m)^batch 1: 1/1200 rows done \(0\.0%\); valid 1199, invalid 1\n`))
	c.start("worker", "--until-done", "--worker-token", "dev", "--batch", "1")
	r := w.wait(t)
	if r.code != exitRows {
		t.Fatalf("watch: %s", r)
	}
	if status := c.run("status", "1"); r.stdout != status.stdout {
		t.Errorf("watch's summary is not status's:\n%s\nwant\n%s", r.stdout, status.stdout)
	}
	if rest := r.withoutProgress(); rest != "" {
		t.Errorf("stderr has more than progress lines: %q", rest)
	}
	if want := "batch 1: 1200/1200 rows done (100.0%); invalid 1, succeeded 1199\n"; !strings.HasSuffix(r.stderr, want) {
		t.Errorf("the last line is not\n%sin\n%s", want, r.stderr)
	}
}

// TestImportPlainLines: an import says its batch's id at once, then, on a
// non-terminal, prints progress lines while it works.
func TestImportPlainLines(t *testing.T) {
	t.Parallel()
	c := setup(t)
	path := customersFile(t, 1200)
	r := c.run("import", "customers", path, "--progress-interval", "1ns")
	if r.code != exitRows || !strings.HasPrefix(r.stderr, created(1, path)+"batch 1: ") || r.withoutProgress() != created(1, path) {
		t.Fatalf("import: want the batch created, then progress lines, got %s", r)
	}
	if want := "batch 1: 1200/1200 rows done (100.0%); invalid 1, succeeded 1199\n"; !strings.HasSuffix(r.stderr, want) {
		t.Errorf("the last line is not\n%sin\n%s", want, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "batch 1  finished  "+path) {
		t.Errorf("summary: %s", r)
	}
	// --progress-interval 0: the id, no lines.
	r = c.run("import", "customers", fixture, "--progress-interval", "0")
	if r.code != exitRows || r.stderr != created(2, fixture) {
		t.Errorf("import --progress-interval 0: %s", r)
	}
}

// TestWatchInterrupted: Ctrl-C ends a watch with exit 130 and the command
// that resumes it.
func TestWatchInterrupted(t *testing.T) {
	t.Parallel()
	c := setup(t)
	c.run("import", "customers", fixture, "--no-work")
	w := c.start("watch", "1", "--progress-interval", "10ms")
	w.waitFor(t, w.stderr, regexp.MustCompile(`(?m)^batch 1: 15/300 rows done`))
	w.cancel()
	r := w.wait(t)
	want := "batchctl watch: interrupted; batch 1 goes on; resume with `batchctl watch 1 --cursor 1 --database " + c.database + "`\n"
	if r.code != exitInterrupted || !strings.HasSuffix(r.stderr, want) || r.stdout != "" {
		t.Errorf("want exit 130 and\n%sgot %s", want, r)
	}
}

// TestJSONLOnlyForStreams: -o jsonl is refused by the commands that do
// not stream, with the ones that do.
func TestJSONLOnlyForStreams(t *testing.T) {
	t.Parallel()
	hint := func(cmd string) string { return "run `batchctl " + cmd + " --help` for usage\n" }
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"batches", "-o", "jsonl"}, "batchctl batches: -o jsonl streams a batch's events: only batchctl watch and batchctl import take it; use -o json\n" + hint("batches")},
		{[]string{"status", "1", "-o", "jsonl"}, "batchctl status: -o jsonl streams a batch's events: only batchctl watch and batchctl import take it; use -o json\n" + hint("status")},
		{[]string{"watch", "1", "-o", "yaml"}, "batchctl watch: -o must be text, json or jsonl, not \"yaml\"\n" + hint("watch")},
		{[]string{"watch", "1", "--cursor", "-1"}, "batchctl watch: --cursor must be 0 or more, not -1\n" + hint("watch")},
		{[]string{"import", "customers", fixture, "--dry-run", "-o", "jsonl"}, "batchctl import: a dry run has no events to stream: use -o json\n" + hint("import")},
	} {
		c := setup(t)
		r := c.run(tc.args...)
		if r.code != exitUsage || r.stdout != "" || r.stderr != tc.stderr {
			t.Errorf("%v: want exit 2 and\n%sgot %s", tc.args, tc.stderr, r)
		}
	}
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	eta := 45.2
	for _, tc := range []struct {
		ev   batchtype.Event
		want string
	}{
		{batchtype.Event{Status: batchtype.StatusRunning, Total: 200000, Done: 15000, RowsPerSecond: 4100.4, ETASeconds: &eta,
			Counts: rows.Counts{rows.StateValid: 185000, rows.StateSucceeded: 14990, rows.StateFailed: 10}},
			"batch 12: 15000/200000 rows done (7.5%), 4100 rows/s, ETA 46s; valid 185000, succeeded 14990, failed 10"},
		{batchtype.Event{Status: batchtype.StatusRunning, Total: 1000, Done: 999, RowsPerSecond: 2.25, Paused: true, Counts: rows.Counts{rows.StateSucceeded: 999, rows.StateValid: 1}},
			"batch 12: 999/1000 rows done (99.9%), 2.2 rows/s, paused; valid 1, succeeded 999"},
		{batchtype.Event{Status: batchtype.StatusRunning, Total: 100000, Done: 99999, Counts: rows.Counts{rows.StateSucceeded: 99999, rows.StateValid: 1}},
			"batch 12: 99999/100000 rows done (99.9%); valid 1, succeeded 99999"},
		{batchtype.Event{Status: batchtype.StatusCancelled, Total: 10, Done: 10, Final: true, RowsPerSecond: 3, ETASeconds: &eta, Counts: rows.Counts{rows.StateCancelled: 10}},
			"batch 12: 10/10 rows done (100.0%), cancelled; cancelled 10"},
		{batchtype.Event{Status: batchtype.StatusFinished, Final: true}, "batch 12: 0/0 rows done"},
	} {
		if got := progressLine(12, &tc.ev); got != tc.want {
			t.Errorf("progressLine:\n got %s\nwant %s", got, tc.want)
		}
	}
	for secs, want := range map[float64]string{0: "0s", 0.2: "1s", 59: "59s", 60: "1m00s", 200: "3m20s", 3599.5: "1h00m", 7500: "2h05m", -3: "0s"} {
		if got := shortDuration(secs); got != want {
			t.Errorf("shortDuration(%v) = %s, want %s", secs, got, want)
		}
	}
}

// TestLineDisplay: a line at most every interval, only when the state
// changed, and a last one at the final event when any was printed.
func TestLineDisplay(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	d := &lineDisplay{w: &out, id: 3, every: 2 * time.Second, now: func() time.Time { return now }, last: now}
	ev := func(done int64, final bool) *batchtype.Event {
		return &batchtype.Event{Total: 10, Done: done, Final: final, Counts: rows.Counts{rows.StateSucceeded: done, rows.StateValid: 10 - done}}
	}
	d.show(ev(1, false)) // too early
	now = now.Add(time.Second)
	d.tick()
	now = now.Add(time.Second)
	d.tick() // 2s: the pending state
	d.show(ev(2, false))
	now = now.Add(3 * time.Second)
	d.tick() // changed: printed
	now = now.Add(3 * time.Second)
	d.tick() // unchanged: not printed
	d.show(ev(10, true))
	want := "batch 3: 1/10 rows done (10.0%); valid 9, succeeded 1\n" +
		"batch 3: 2/10 rows done (20.0%); valid 8, succeeded 2\n" +
		"batch 3: 10/10 rows done (100.0%); succeeded 10\n"
	if out.String() != want {
		t.Errorf("lines:\n%s\nwant\n%s", out.String(), want)
	}

	// A run shorter than the interval prints nothing.
	out.Reset()
	d = &lineDisplay{w: &out, id: 3, every: 2 * time.Second, now: func() time.Time { return now }, last: now}
	d.show(ev(1, false))
	d.show(ev(10, true))
	if out.Len() != 0 {
		t.Errorf("a short run printed %q", out.String())
	}
}

// TestBarDisplay: the bar shows the batch, done of total, the rate, the
// ETA and the counts, redrawn in place; a note goes above it; the line is
// cut to the terminal's width; a settled batch gets a full bar.
func TestBarDisplay(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	d := newBarDisplay(&out, 7, func() int { return 160 })
	eta := 90.0
	d.show(&batchtype.Event{Total: 4000, Done: 1000, RowsPerSecond: 500, ETASeconds: &eta, Counts: rows.Counts{rows.StateSucceeded: 990, rows.StateFailed: 10, rows.StateValid: 3000}})
	d.note("a note")
	d.show(&batchtype.Event{Total: 4000, Done: 4000, Final: true, Counts: rows.Counts{rows.StateSucceeded: 3990, rows.StateFailed: 10}})
	d.stop(true)
	const (
		erase = "\r\x1b[K"
		first = "batch 7  1000/4000  [=======>----------------------]  500 rows/s  ETA 1m30s  valid 3000  succeeded 990  failed 10"
		last  = "batch 7  4000/4000  [==============================]  succeeded 3990  failed 10"
	)
	if want := erase + first + erase + "a note\n" + erase + first + erase + last + "\n"; out.String() != want {
		t.Errorf("bar output\n%q\nwant\n%q", out.String(), want)
	}
	// A narrow terminal: the line is cut before its last column.
	if got := barLine(7, &batchtype.Event{Total: 4000, Done: 1000}, 20); got != "batch 7  1000/4000 " {
		t.Errorf("barLine at 20 columns = %q", got)
	}
	// Done may pass total for a moment (a retry reopens rows): the bar is
	// never full before the batch settles.
	if got := bar(5000, 4000, false); got != strings.Repeat("=", barWidth-1)+">" {
		t.Errorf("bar(5000, 4000) = %q", got)
	}
}

// trimEvents applies the event retention to a session's SQLite file, as
// batchctl serve does: by age (every event is made an hour old first, so
// that all go), or keeping only the last event of a finished batch.
func trimEvents(t *testing.T, c *session, byAge bool) {
	t.Helper()
	p := driver.EventsTrimParams{FinishedKeepLast: true}
	if byAge {
		sqlOn(t, c.database, `UPDATE batch_events SET created_at = created_at - 3600000`)
		p = driver.EventsTrimParams{OlderThan: time.Minute}
	}
	s, err := sqlite.Open(c.database)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.EventsTrim(context.Background(), p); err != nil || n == 0 {
		t.Fatalf("trim events: %d, %v", n, err)
	}
}

// TestWatchTrimmedBatch: a settled batch whose events were trimmed is
// followed from the oldest event kept, or from nothing when none is, and
// the watch ends with the batch and its exit code, as status gives them,
// instead of waiting for a final event that will never come.
func TestWatchTrimmedBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		byAge  bool
		cancel bool
	}{
		{name: "finished, every event trimmed by age", byAge: true},
		{name: "finished, all but the last trimmed", byAge: false},
		{name: "cancelled, every event trimmed by age", byAge: true, cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := setup(t)
			if tc.cancel {
				c.run("import", "customers", fixture, "--no-work")
				if r := c.run("cancel", "1"); r.code != exitOK {
					t.Fatalf("cancel: %s", r)
				}
			} else {
				c.run("import", "customers", fixture)
			}
			trimEvents(t, c, tc.byAge)
			status := c.run("status", "1", "-o", "json")

			w := c.start("watch", "1", "-o", "jsonl")
			r := w.wait(t)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			var first, last jsonLine
			if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
				t.Fatalf("watch -o jsonl: %v\n%s", err, r)
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
				t.Fatalf("watch -o jsonl: %v\n%s", err, r)
			}
			if r.code != status.code || first.Type != "cursor_expired" || last.Type != "batch" || last.Batch == nil || last.Batch.Status != map[bool]string{false: "finished", true: "cancelled"}[tc.cancel] {
				t.Fatalf("watch -o jsonl: want exit %d, cursor_expired first and the batch last, got %s", status.code, r)
			}
			if !tc.byAge {
				var final jsonLine
				if err := json.Unmarshal([]byte(lines[len(lines)-2]), &final); err != nil || final.Event == nil || !final.Event.Final {
					t.Errorf("the kept final event is not streamed before the batch: %s", r)
				}
			}
			for _, args := range [][]string{{"watch", "1"}, {"watch", "1", "-o", "json"}, {"watch", "1", "-o", "jsonl", "--cursor", "1"}} {
				w := c.start(args...)
				if r := w.wait(t); r.code != status.code {
					t.Errorf("%v: want exit %d, got %s", args, status.code, r)
				}
			}
		})
	}
}

// overlapWriter records how many writes were under way at once.
type overlapWriter struct {
	in, most atomic.Int32
	text     lockedBuffer
}

func (w *overlapWriter) Write(p []byte) (int, error) {
	n := w.in.Add(1)
	defer w.in.Add(-1)
	for {
		m := w.most.Load()
		if n <= m || w.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(time.Millisecond) // widen the window another writer could enter
	return w.text.Write(p)
}

// TestStderrOneWriterAtATime: the log, the progress lines and the workers
// share stderr, and no two of them write at once (a caller's buffer raced
// under -race in TestSchemaInfer: the log of a worker beside a progress
// line).
func TestStderrOneWriterAtATime(t *testing.T) {
	t.Parallel()
	s := setup(t)
	w := &overlapWriter{}
	args := []string{"import", "customers", customersFile(t, 20000), "-v", "--progress-interval", "1ns", "--workers", "4", "--database", s.database}
	if code := Run(t.Context(), builtins, args, strings.NewReader(""), io.Discard, w); code != exitRows {
		t.Fatalf("import: exit %d, want %d\n%s", code, exitRows, w.text.String())
	}
	if n := w.most.Load(); n > 1 {
		t.Errorf("%d writes to stderr were under way at once", n)
	}
}
