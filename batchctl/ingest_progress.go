package batchctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/progress"
)

// ingestView shows an import while it reads its file, before a row is
// stored: the batch's id as soon as the batch exists (so that another
// terminal can watch or cancel it), then the rows read and the invalid
// ones so far. On a terminal it is a bar redrawn at each call of the
// engine (ImportParams.ProgressInterval bounds them); elsewhere a plain
// line at most every --progress-interval; with -o jsonl a "created" line
// and the batch's ingest_progress events, as its log keeps them, on
// stdout. The engine calls it from one goroutine.
type ingestView struct {
	w          io.Writer
	kind, path string
	every      time.Duration
	width      func() int // nil: not a terminal
	jsonl      *json.Encoder
	now        func() time.Time

	id      int64 // the batch's, once it exists and was announced
	drawn   bool  // the terminal's line holds a bar
	printed time.Time
	line    string // the last line printed
	// after is the last event printed on stdout (-o jsonl): the stream of
	// the batch's work goes on after it.
	after int64
}

// importShown imports with the read's progress shown (ingestView): it
// returns the batch and whether its id was printed, and sets o.after to
// the last event printed.
func (c *cli) importShown(ctx context.Context, app *app, p batch.ImportParams, kind, path string, o *importOptions) (*batchtype.Batch, bool, error) {
	view := c.newIngestView(kind, path, o.interval)
	p.ProgressFunc, p.ProgressInterval = view.show, view.progressInterval()
	if o.interval > 0 {
		p.EventInterval = o.interval
	}
	b, err := app.engine.Import(ctx, p)
	announced := view.stop()
	o.after = view.after
	return b, announced, err
}

// newIngestView returns the view of an import of path as kind.
func (c *cli) newIngestView(kind, path string, interval time.Duration) *ingestView {
	v := &ingestView{w: c.stderr, kind: kind, path: path, every: interval, now: time.Now}
	v.printed = v.now()
	switch {
	case c.global.output == "jsonl":
		v.jsonl = json.NewEncoder(c.stdout)
	case terminal(c.stderr) != nil:
		v.width = terminalWidth(terminal(c.stderr))
	}
	return v
}

// progressInterval is how often the engine tells the view: a few times
// a second for a terminal's bar, every --progress-interval otherwise.
func (v *ingestView) progressInterval() time.Duration {
	if v.width != nil || v.every <= 0 {
		return 250 * time.Millisecond
	}
	return v.every
}

// createdJSON is the first line of an import's -o jsonl stream, printed
// as soon as its batch exists.
type createdJSON struct {
	Type    string `json:"type"`
	BatchID int64  `json:"batch_id"`
	Kind    string `json:"kind"`
	Source  string `json:"source"`
}

// show is the engine's ImportParams.ProgressFunc.
func (v *ingestView) show(p batch.IngestProgress) {
	if p.BatchID != 0 && v.id == 0 {
		v.id = v.announce(p.BatchID)
	}
	switch {
	case v.jsonl != nil:
		if p.Event != nil {
			_ = v.jsonl.Encode(toMessageJSON(progress.Message{Type: progress.MessageEvent, Event: p.Event, Cursor: p.Event.Seq}))
			v.after = p.Event.Seq
		}
	case v.width != nil:
		fmt.Fprint(v.w, "\r\x1b[K"+ingestBarLine(p.BatchID, v.path, p.Progress, v.width()))
		v.drawn = true
	case v.every > 0 && p.BatchID != 0 && p.Progress.RowsRead > 0 && v.now().Sub(v.printed) >= v.every:
		// The first pass (no batch yet) has no line: a log's first line
		// is the batch's id. A line that says nothing new is left out.
		if line := ingestLine(p.BatchID, p.Progress); line != v.line {
			fmt.Fprintln(v.w, line)
			v.printed, v.line = v.now(), line
		}
	}
}

// announce prints that the batch exists, and returns its id.
func (v *ingestView) announce(id int64) int64 {
	v.erase()
	fmt.Fprintf(v.w, "batch %d created (%s, %s)\n", id, v.kind, v.path)
	v.printed = v.now() // a read shorter than the interval prints no line
	if v.jsonl != nil {
		_ = v.jsonl.Encode(createdJSON{Type: "created", BatchID: id, Kind: v.kind, Source: v.path})
	}
	return id
}

// erase clears the bar's line.
func (v *ingestView) erase() {
	if v.drawn {
		fmt.Fprint(v.w, "\r\x1b[K")
		v.drawn = false
	}
}

// stop ends the view once the import returned: the bar gives way to
// what follows (the work's bar, the summary). It returns whether the
// batch's id was printed.
func (v *ingestView) stop() bool {
	v.erase()
	return v.id != 0
}

// ingestLine is the plain line of an ingest's progress, as a log shows
// it:
//
//	batch 12: 54000 rows read (26.0% of the file), 12 invalid so far
func ingestLine(id int64, p batchtype.IngestProgress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch %d: %d rows read", id, p.RowsRead)
	if p.Size > 0 {
		fmt.Fprintf(&b, " (%s of the file)", percent(p.BytesRead, p.Size))
	}
	fmt.Fprintf(&b, ", %d invalid so far", p.Invalid)
	return b.String()
}

// ingestBarLine is the bar of an ingest, in the style of the work's bar
// (barLine), at most width-1 columns; the first pass, before the batch
// exists, names the file:
//
//	batch 12  reading  54000 rows  [=======>----------------------]  26.0%  invalid 12
//	big.csv  checking  54000 rows  [=======>----------------------]  26.0%
func ingestBarLine(id int64, path string, p batchtype.IngestProgress, width int) string {
	var b strings.Builder
	if id == 0 {
		fmt.Fprintf(&b, "%s  checking  %d rows", path, p.RowsRead)
	} else {
		fmt.Fprintf(&b, "batch %d  reading  %d rows", id, p.RowsRead)
	}
	if p.Size > 0 {
		fmt.Fprintf(&b, "  [%s]  %s", bar(p.BytesRead, p.Size, false), percent(p.BytesRead, p.Size))
	}
	if id != 0 {
		fmt.Fprintf(&b, "  invalid %d", p.Invalid)
	}
	line := []rune(b.String())
	if max := width - 1; max > 0 && len(line) > max {
		line = line[:max]
	}
	return string(line)
}
