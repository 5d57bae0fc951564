package batchctl

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
)

// gatedRow is a row of the gated kind.
type gatedRow struct {
	Ref    string `col:"ref" validate:"required"`
	Amount int64  `col:"amount" validate:"gte=0"`
}

// gate holds an import's second pass (the one that stores the rows) at
// the row whose ref is "gate", until it is opened: the batch exists and
// part of the file is read, and the import cannot finish.
type gate struct {
	reached, open chan struct{}
	once          sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{reached: make(chan struct{}), open: make(chan struct{})}
	t.Cleanup(g.release)
	return g
}

func (g *gate) release() {
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// register adds the kind gated, whose key function (run as each row is
// checked, in the second pass only) waits at the gate.
func (g *gate) register(ctx context.Context, reg *batch.Registry, db Database) error {
	return batch.Register(reg, batch.Kind[gatedRow]{
		Name:      "gated",
		Processor: batch.ProcessFunc[gatedRow](func(context.Context, gatedRow) (string, error) { return "ok", nil }),
		KeyFunc: func(r gatedRow) string {
			if r.Ref == "gate" {
				g.once.Do(func() { close(g.reached) })
				<-g.open
			}
			return r.Ref
		},
	})
}

// start runs batchctl with the gated kind.
func (g *gate) start(c *session, args ...string) *running {
	ctx, cancel := context.WithCancel(c.t.Context())
	r := &running{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan int, 1), cancel: cancel}
	go func() {
		r.done <- Run(ctx, g.register, append(args, "--database", c.database), strings.NewReader(""), r.stdout, r.stderr)
	}()
	return r
}

// gatedFile writes a file of n rows, the gate at row gateAt; every 10th
// row before it is invalid (a negative amount). It returns the path and
// the invalid rows before the gate.
func gatedFile(t *testing.T, n, gateAt int) (string, int) {
	var b strings.Builder
	b.WriteString("ref,amount\n")
	bad := 0
	for i := 1; i <= n; i++ {
		switch {
		case i == gateAt:
			b.WriteString("gate,1\n")
		case i%10 == 0:
			fmt.Fprintf(&b, "r%d,-1\n", i)
			if i < gateAt {
				bad++
			}
		default:
			fmt.Fprintf(&b, "r%d,%d\n", i, i)
		}
	}
	return writeFile(t, "gated.csv", []byte(b.String())), bad
}

// ingestMessage is an ingest_progress event as -o jsonl prints it.
type ingestMessage struct {
	Type  string `json:"type"`
	Event *struct {
		BatchID int64  `json:"batch_id"`
		Seq     int64  `json:"seq"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Ingest  *struct {
			RowsRead  int64 `json:"rows_read"`
			Invalid   int64 `json:"invalid"`
			BytesRead int64 `json:"bytes_read"`
			Size      int64 `json:"size"`
		} `json:"ingest"`
	} `json:"event"`
}

// ingestEvents returns the ingest_progress events of a -o jsonl stream,
// failing on a line that is not JSON.
func ingestEvents(t *testing.T, stdout string) []ingestMessage {
	t.Helper()
	var out []ingestMessage
	for i, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if l == "" {
			continue
		}
		var m ingestMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, stdout)
		}
		if m.Type == "event" && m.Event != nil && m.Event.Type == "ingest_progress" {
			out = append(out, m)
		}
	}
	return out
}

// TestImportSaysItsBatchWhileReading: an import prints its batch's id as
// soon as the batch exists, while its file is still read, and shows how
// far the read has got (rows read, invalid rows) on stderr, in -o jsonl
// and in the batch's events, which a watch in another process follows.
func TestImportSaysItsBatchWhileReading(t *testing.T) {
	t.Parallel()
	// SQLite commits the batch row first and writes the file in parts:
	// other processes see it ingesting. On PostgreSQL the whole ingest is
	// one transaction: TestOneTransactionIngest.
	c := setup(t)
	{
		const rowsN, gateAt = 6000, 4000
		path, bad := gatedFile(t, rowsN, gateAt)

		t.Run("jsonl", func(t *testing.T) {
			g := newGate(t)
			imp := g.start(c, "import", "gated", path, "--no-work", "-o", "jsonl", "--progress-interval", "50ms")
			<-g.reached
			// The import is held at the gate: what it printed, it printed
			// before its ingest finished.
			imp.waitFor(t, imp.stderr, regexp.MustCompile(`^batch 1 created \(gated, `+regexp.QuoteMeta(path)+`\)\n`))
			imp.waitFor(t, imp.stdout, regexp.MustCompile(`^\{"type":"created","batch_id":1,"kind":"gated","source":`))
			// An event with every row before the gate read comes, as the
			// counts stand still at the gate.
			want := regexp.MustCompile(fmt.Sprintf(`"type":"ingest_progress","status":"ingesting".*"ingest":\{"rows_read":%d,"invalid":%d,`, gateAt-1, bad))
			imp.waitFor(t, imp.stdout, want)

			// Another process sees the batch ingesting, and its events.
			w := c.start("watch", "1", "-o", "jsonl")
			w.waitFor(t, w.stdout, want)
			if r := c.run("status", "1", "-o", "json"); !strings.Contains(r.stdout, `"status": "ingesting"`) && !strings.Contains(r.stdout, `"status":"ingesting"`) {
				t.Errorf("status while ingesting: %s", r)
			}
			select {
			case code := <-imp.done:
				t.Fatalf("the import ended (%d) at the gate", code)
			default:
			}

			g.release()
			r := imp.wait(t)
			if r.code != exitOK {
				t.Fatalf("import --no-work: %s", r)
			}
			w.cancel()
			w.wait(t)
			evs := ingestEvents(t, r.stdout)
			if len(evs) == 0 {
				t.Fatalf("no ingest_progress event:\n%s", r.stdout)
			}
			// Each event says more was read than the one before (none is
			// written while nothing moves), so there are far fewer events
			// than rows.
			for i := 1; i < len(evs); i++ {
				if evs[i].Event.Ingest.RowsRead <= evs[i-1].Event.Ingest.RowsRead {
					t.Errorf("event %d: %d rows read after %d", evs[i].Event.Seq, evs[i].Event.Ingest.RowsRead, evs[i-1].Event.Ingest.RowsRead)
				}
			}
			if len(evs) > rowsN/20 {
				t.Errorf("%d ingest_progress events for %d rows", len(evs), rowsN)
			}
			last := evs[len(evs)-1].Event.Ingest
			if last.Size <= 0 || last.BytesRead > last.Size || last.BytesRead <= 0 {
				t.Errorf("bytes read %d of %d", last.BytesRead, last.Size)
			}
			// The stream goes on with the batch's start, once.
			if n := strings.Count(r.stdout, `"type":"started"`); n != 0 {
				t.Errorf("--no-work: %d started events printed", n)
			}
			if !strings.Contains(r.stdout, `{"type":"batch","batch":{"id":1,`) {
				t.Errorf("no batch at the end:\n%s", r.stdout)
			}
		})

		t.Run("text", func(t *testing.T) {
			g := newGate(t)
			imp := g.start(c, "import", "gated", path, "--new-batch", "--progress-interval", "50ms")
			<-g.reached
			imp.waitFor(t, imp.stderr, regexp.MustCompile(fmt.Sprintf(
				`^batch 2 created \(gated, %s\)\n(batch 2: \d+ rows read \(\d+\.\d%% of the file\), \d+ invalid so far\n)*batch 2: %d rows read \(\d+\.\d%% of the file\), %d invalid so far\n`,
				regexp.QuoteMeta(path), gateAt-1, bad)))
			g.release()
			r := imp.wait(t)
			if r.code != exitRows || r.withoutProgress() != "batch 2 created (gated, "+path+")\n" {
				t.Fatalf("import: %s", r)
			}
			if !strings.HasPrefix(r.stdout, "batch 2  finished  "+path) {
				t.Errorf("summary: %s", r)
			}
		})

		// A batch cancelled while its file is read is not kept: the
		// import stops and says so.
		t.Run("cancel", func(t *testing.T) {
			g := newGate(t)
			imp := g.start(c, "import", "gated", path, "--new-batch", "--progress-interval", "50ms")
			<-g.reached
			imp.waitFor(t, imp.stderr, regexp.MustCompile(`^batch 3 created`))
			if r := c.run("cancel", "3"); r.code != exitOK {
				t.Errorf("cancel while ingesting: %s", r)
			}
			g.release()
			r := imp.wait(t)
			if r.code == exitOK || r.code == exitRows || !strings.Contains(r.stderr, "batch 3 was cancelled while its file was read") {
				t.Fatalf("import of a batch cancelled while ingesting: %s", r)
			}
			if r := c.run("status", "3"); r.code != exitError {
				t.Errorf("status of the batch cancelled while ingesting: %s", r)
			}
		})
	}
}

// TestIngestLines: the plain line and the bar of an ingest.
func TestIngestLines(t *testing.T) {
	t.Parallel()
	p := batchtype.IngestProgress{RowsRead: 54000, Invalid: 12, BytesRead: 260, Size: 1000}
	for _, tc := range []struct{ got, want string }{
		{ingestLine(12, p), "batch 12: 54000 rows read (26.0% of the file), 12 invalid so far"},
		{ingestLine(12, batchtype.IngestProgress{RowsRead: 5}), "batch 12: 5 rows read, 0 invalid so far"},
		{ingestBarLine(12, "big.csv", p, 200), "batch 12  reading  54000 rows  [=======>----------------------]  26.0%  invalid 12"},
		{ingestBarLine(0, "big.csv", p, 200), "big.csv  checking  54000 rows  [=======>----------------------]  26.0%"},
		{ingestBarLine(12, "big.csv", p, 21), "batch 12  reading  5"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
}

// TestImportOfAFileBeingImported: the same file imported with the same
// options while another import still reads it. Others see the ingesting
// batch (both stores commit its row first); the second import waits for
// the first's outcome, imports nothing, and answers the first's batch
// once it is accepted (a batch still ingesting may yet be removed: its
// import may fail, or its importer die).
func TestImportOfAFileBeingImported(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, c *session) {
		path, _ := gatedFile(t, 3000, 2000)
		g := newGate(t)
		first := g.start(c, "import", "gated", path, "--no-work")
		<-g.reached
		second := g.start(c, "import", "gated", path, "--no-work")
		select {
		case code := <-second.done:
			t.Fatalf("the second import returned (%d) while the first still read the file: %s", code, second.stderr)
		case <-time.After(300 * time.Millisecond):
		}
		g.release()
		want := "was already imported as batch 1 with the same options: nothing was imported again"
		if r := second.wait(t); r.code != exitOK || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "waiting for its outcome") {
			t.Fatalf("an import of a file being imported: %s", r)
		}
		if r := first.wait(t); r.code != exitOK || !strings.Contains(r.stdout, "valid  2701") {
			t.Fatalf("the first import: %s", r)
		}
	})
}

// TestInlineIngestSeen: on PostgreSQL an import that works its rows as it
// reads them (the default) prints its batch's id and its progress lines
// while the file is read, and other processes see its batch ingesting,
// without rows until the import commits them with their effects.
func TestInlineIngestSeen(t *testing.T) {
	t.Parallel()
	c := pgSession(t)
	const rowsN, gateAt = 6000, 4000
	path, bad := gatedFile(t, rowsN, gateAt)
	g := newGate(t)
	imp := g.start(c, "import", "gated", path, "--progress-interval", "50ms")
	<-g.reached
	imp.waitFor(t, imp.stderr, regexp.MustCompile(fmt.Sprintf(
		`^batch 1 created \(gated, %s\)\n(batch 1: \d+ rows read \(\d+\.\d%% of the file\), \d+ invalid so far\n)*batch 1: %d rows read \(\d+\.\d%% of the file\), %d invalid so far\n`,
		regexp.QuoteMeta(path), gateAt-1, bad)))
	if r := c.run("status", "1"); r.code != exitOK || !strings.HasPrefix(r.stdout, "batch 1  ingesting  "+path) || !strings.Contains(r.stdout, "total  0") {
		t.Errorf("status of a batch whose inline ingest runs: %s", r)
	}
	g.release()
	if r := imp.wait(t); r.code != exitRows || !strings.HasPrefix(r.stdout, "batch 1  finished  "+path) {
		t.Fatalf("import: %s", r)
	}
}
