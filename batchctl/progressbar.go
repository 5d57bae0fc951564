package batchctl

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// display shows a followed batch's progress on stderr: a live bar on a
// terminal (barDisplay), plain lines now and then anywhere else
// (lineDisplay), nothing for machine output (nopDisplay). Its methods are
// called from one goroutine.
type display interface {
	// show takes the batch's state after an event.
	show(ev *batchtype.Event)
	// note prints a message without tearing the display.
	note(format string, args ...any)
	// tick lets a display that prints on a schedule print; it is called
	// a few times a second.
	tick()
	// stop ends the display for good: complete when the batch settled,
	// left as it stands otherwise (interrupted, an error).
	stop(settled bool)
}

// defaultProgressInterval is how often a plain progress line is printed at
// most when stderr is not a terminal.
const defaultProgressInterval = 2 * time.Second

// newDisplay returns the display for this run's output format and stderr:
// none for -o jsonl (stdout carries the events, and is likely the same
// terminal), a bar on a terminal, plain lines every interval otherwise (no
// lines when interval is 0).
func (c *cli) newDisplay(id int64, interval time.Duration) display {
	switch {
	case c.global.output == "jsonl":
		return nopDisplay{}
	case terminal(c.stderr) != nil:
		return newBarDisplay(c.stderr, id, terminalWidth(terminal(c.stderr)))
	case interval <= 0:
		return nopDisplay{w: c.stderr}
	}
	return &lineDisplay{w: c.stderr, id: id, every: interval, now: time.Now, last: time.Now()}
}

// terminal returns the terminal under w when it can redraw a line, else
// nil: a dumb terminal (TERM=dumb, as in editors' shells) gets plain
// lines.
func terminal(w io.Writer) *os.File {
	if l, ok := w.(*lockedWriter); ok {
		w = l.w
	}
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return f
}

// nopDisplay shows no progress; notes still reach w, when there is one.
type nopDisplay struct{ w io.Writer }

func (nopDisplay) show(*batchtype.Event) {}
func (d nopDisplay) note(format string, args ...any) {
	if d.w != nil {
		fmt.Fprintf(d.w, format+"\n", args...)
	}
}
func (nopDisplay) tick()     {}
func (nopDisplay) stop(bool) {}

// lineDisplay prints a progress line at most every interval, and only
// when something changed, so that a log keeps a readable trace of a long
// run. A run shorter than the interval prints no line at all; one that
// printed a line prints a last one when the batch settles.
type lineDisplay struct {
	w     io.Writer
	id    int64
	every time.Duration
	now   func() time.Time

	ev       *batchtype.Event // the newest state; nil before the first event
	last     time.Time        // when the last line was printed, or the start
	printed  string           // the last line printed
	anything bool             // a line was printed
}

func (d *lineDisplay) show(ev *batchtype.Event) {
	d.ev = ev
	if ev.Final {
		if d.anything {
			d.print()
		}
		return
	}
	d.tick()
}

func (d *lineDisplay) tick() {
	if d.ev != nil && d.now().Sub(d.last) >= d.every {
		d.print()
	}
}

func (d *lineDisplay) print() {
	d.last = d.now()
	line := progressLine(d.id, d.ev)
	if line == d.printed {
		return
	}
	fmt.Fprintln(d.w, line)
	d.printed, d.anything = line, true
}

func (d *lineDisplay) note(format string, args ...any) { fmt.Fprintf(d.w, format+"\n", args...) }
func (d *lineDisplay) stop(bool)                       {}

// progressLine is the plain line of a batch's state, as a log shows it:
//
//	batch 12: 15000/200000 rows done (7.5%), 4100 rows/s, ETA 45s; succeeded 14990, failed 10
func progressLine(id int64, ev *batchtype.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch %d: %d/%d rows done", id, ev.Done, ev.Total)
	if ev.Total > 0 {
		fmt.Fprintf(&b, " (%s)", percent(ev.Done, ev.Total))
	}
	if !ev.Final && ev.RowsPerSecond > 0 {
		fmt.Fprintf(&b, ", %s", rowRate(ev.RowsPerSecond))
	}
	if eta := etaText(ev); eta != "" {
		fmt.Fprintf(&b, ", ETA %s", eta)
	}
	if s := stateText(ev); s != "" {
		fmt.Fprintf(&b, ", %s", s)
	}
	if s := countsText(ev.Counts, ", "); s != "" {
		fmt.Fprintf(&b, "; %s", s)
	}
	return b.String()
}

// stateText says what is unusual about a batch's status: paused,
// cancelled.
func stateText(ev *batchtype.Event) string {
	switch {
	case ev.Status == batchtype.StatusCancelled:
		return "cancelled"
	case ev.Paused:
		return "paused"
	}
	return ""
}

// percent is done of total with one decimal, never 100% before the end.
func percent(done, total int64) string {
	p := float64(done) * 100 / float64(total)
	if done < total {
		p = math.Min(p, 99.9)
	}
	return fmt.Sprintf("%.1f%%", math.Floor(p*10)/10)
}

// rowRate is a rate of rows: whole numbers, one decimal below 10.
func rowRate(perSecond float64) string {
	if perSecond < 10 {
		return fmt.Sprintf("%.1f rows/s", perSecond)
	}
	return fmt.Sprintf("%.0f rows/s", perSecond)
}

// etaText is the event's estimate of the time left, "" when it has none.
func etaText(ev *batchtype.Event) string {
	if ev.ETASeconds == nil || ev.Final {
		return ""
	}
	return shortDuration(*ev.ETASeconds)
}

// shortDuration writes seconds the way a person reads a countdown: 45s,
// 3m20s, 2h05m.
func shortDuration(seconds float64) string {
	s := int64(math.Ceil(math.Max(seconds, 0)))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}

// countsText lists the states that have rows, in the states' order.
func countsText(counts rows.Counts, sep string) string {
	var parts []string
	for _, s := range rows.States {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n))
		}
	}
	return strings.Join(parts, sep)
}

// barDisplay redraws one line in place on a terminal, at each event (the
// broadcaster bounds their rate):
//
//	batch 12  15000/200000  [===>--------------------------]  4100 rows/s  ETA 45s  valid 185000  succeeded 14990  failed 10
//
// The line is cut to the terminal's width, so that it never wraps (a
// wrapped line cannot be redrawn with a carriage return).
type barDisplay struct {
	w     io.Writer
	id    int64
	width func() int // the terminal's columns

	ev    *batchtype.Event // the newest state; nil before the first event
	drawn bool             // the line holds a bar
}

// barWidth is the bar's own width, between its brackets.
const barWidth = 30

// newBarDisplay draws on w, a terminal width() columns wide.
func newBarDisplay(w io.Writer, id int64, width func() int) *barDisplay {
	return &barDisplay{w: w, id: id, width: width}
}

// terminalWidth returns the columns of the terminal f, 80 when it reports
// none (a fresh pseudo-terminal, a serial console).
func terminalWidth(f *os.File) func() int {
	return func() int {
		w, _, err := term.GetSize(int(f.Fd()))
		if err != nil || w <= 0 {
			return 80
		}
		return w
	}
}

// barLine is the bar's line for ev, at most width-1 columns (the last
// column is left free: some terminals wrap when it is written).
func barLine(id int64, ev *batchtype.Event, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch %d  ", id)
	if ev == nil {
		b.WriteString("waiting for events")
	} else {
		fmt.Fprintf(&b, "%d/%d  [%s]", ev.Done, ev.Total, bar(ev.Done, ev.Total, ev.Final && !ev.Paused))
		var parts []string
		if !ev.Final && ev.RowsPerSecond > 0 {
			parts = append(parts, rowRate(ev.RowsPerSecond))
		}
		if eta := etaText(ev); eta != "" {
			parts = append(parts, "ETA "+eta)
		}
		if s := stateText(ev); s != "" {
			parts = append(parts, s)
		}
		if s := countsText(ev.Counts, "  "); s != "" {
			parts = append(parts, s)
		}
		if len(parts) > 0 {
			b.WriteString("  " + strings.Join(parts, "  "))
		}
	}
	line := []rune(b.String())
	if max := width - 1; max > 0 && len(line) > max {
		line = line[:max]
	}
	return string(line)
}

// bar is done of total as barWidth characters: "=" done, ">" the head,
// "-" the rest; full only when the batch settled.
func bar(done, total int64, final bool) string {
	n := 0
	if total > 0 {
		n = int(min(done, total) * barWidth / total)
	}
	if final {
		n = barWidth
	} else {
		n = min(n, barWidth-1)
	}
	if n == barWidth {
		return strings.Repeat("=", barWidth)
	}
	return strings.Repeat("=", n) + ">" + strings.Repeat("-", barWidth-n-1)
}

func (d *barDisplay) draw() {
	// Carriage return, then erase to the end of the line.
	fmt.Fprint(d.w, "\r\x1b[K"+barLine(d.id, d.ev, d.width()))
	d.drawn = true
}

func (d *barDisplay) show(ev *batchtype.Event) {
	d.ev = ev
	d.draw()
}

// note erases the bar, prints the message on its own line and draws the
// bar again below it.
func (d *barDisplay) note(format string, args ...any) {
	if d.drawn {
		fmt.Fprint(d.w, "\r\x1b[K")
	}
	fmt.Fprintf(d.w, format+"\n", args...)
	if d.drawn {
		d.draw()
	}
}

func (d *barDisplay) tick() {}

// stop leaves the bar as it stands, with the line ended.
func (d *barDisplay) stop(bool) {
	if d.drawn {
		fmt.Fprintln(d.w)
	}
}
