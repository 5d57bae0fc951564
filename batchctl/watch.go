package batchctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/progress"
)

// streamsAnnotation marks the commands that take -o jsonl: they print a
// batch's events as they come.
const streamsAnnotation = "batchctl/streams"

// streams returns the Annotations of a command that streams events.
func streams() map[string]string { return map[string]string{streamsAnnotation: "true"} }

type watchOptions struct {
	cursor   int64
	interval time.Duration
}

func (c *cli) watchCommand() *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch <batch>",
		Short: "Follow a batch's progress live until it finishes",
		Long: `Follow a batch while workers (batchctl worker, batchctl import, in any
process) work it, until it finishes (or is cancelled and no row is left
under a lease), then print its summary as status does. It changes
nothing.

On a terminal a bar on stderr shows the rows done of the total, the rate,
the estimated time left and the rows in each state; when stderr is not a
terminal, a plain line says the same at most every --progress-interval,
and a last one when the batch finishes. A batch already finished prints its
summary at once.

-o jsonl prints on stdout every message of the batch's event stream as
one JSON object a line, as batchctl serve streams them:
{"type":"event","event":{...},"cursor":N}, with "replay":true for events
that happened before the watch started, and {"type":"cursor_expired",
"cursor":N} when the events after --cursor were trimmed (the stream goes
on after N; a finished batch whose events were all trimmed ends there,
with the batch). Every event is printed, in order, none left out (the bar
and the plain lines take at most four a second: a progress event then
stands for the ones before it, as each carries the batch's totals). The
stream ends with the batch itself: {"type":"batch","batch":{...}}. -o json
prints only that batch, at the end.

--cursor N resumes after the event whose cursor was N. Watching from
another process works on both stores: PostgreSQL tells every process of
new events at once, a SQLite file is read four times a second.

Exit codes as status: 3 when the batch finished with invalid, failed, dead
or unknown rows, 0 when every row succeeded; 1 for a batch the tenant does
not have; 130 on Ctrl-C (the batch goes on; the message says how to
resume).`,
		Example: `  batchctl watch 7
  batchctl import customers big.csv --no-work && batchctl worker --until-done &
  batchctl watch 1 -o jsonl | jq -c 'select(.type == "event") | .event.counts'
  batchctl watch 7 --database postgres://db/app --tenant acme --cursor 42`,
		Args:        batchIDArg,
		Annotations: streams(),
		RunE: func(cmd *cobra.Command, a []string) error {
			id, _ := parseBatchID(a[0])
			return c.runWatch(cmd.Context(), id, o)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.cursor, "cursor", 0, "follow the events after this cursor (the last one received); 0 replays them all")
	addProgressInterval(f.DurationVar, &o.interval)
	return cmd
}

// addProgressInterval adds --progress-interval to a command that shows a
// batch's progress.
func addProgressInterval(durationVar func(*time.Duration, string, time.Duration, string), p *time.Duration) {
	durationVar(p, "progress-interval", defaultProgressInterval, "when stderr is not a terminal, print a progress line at most this often (0: none)")
}

func (c *cli) runWatch(ctx context.Context, id int64, o watchOptions) error {
	if o.cursor < 0 {
		return usagef("--cursor must be 0 or more, not %d", o.cursor)
	}
	if o.interval < 0 {
		return usagef("--progress-interval must be 0 or more, not %v", o.interval)
	}
	app, err := c.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer app.close()
	b, err := c.batchGet(ctx, app.engine, id)
	if err != nil {
		return err
	}
	if settled(b) {
		// Nothing will happen to it: print it at once. A JSON lines reader
		// still gets the events it asked for.
		more, err := c.eventsAfter(ctx, app.engine, id, o.cursor)
		if err != nil {
			return err
		}
		if !more || c.global.output != "jsonl" {
			return c.printOutcome(b)
		}
	}

	f, stop := c.follower(ctx, app)
	defer stop()
	show := c.newDisplay(id, o.interval)
	last, err := f.follow(ctx, show, id, o.cursor)
	show.stop(err == nil)
	if err != nil {
		if ctx.Err() != nil {
			cursor := o.cursor
			if last != nil {
				cursor = last.Seq
			}
			return &interruptedError{msg: fmt.Sprintf("batch %d goes on; resume with `batchctl watch %d --cursor %d%s`", id, id, cursor, c.hint())}
		}
		return err
	}
	if b, err = c.batchGet(ctx, app.engine, id); err != nil {
		return err
	}
	return c.printOutcome(b)
}

// settled reports whether nothing happens to a batch unless a person acts:
// what the final event says.
func settled(b *batchtype.Batch) bool {
	return b.Status == batchtype.StatusFinished || b.Status == batchtype.StatusCancelled && b.Counts.Open() == 0 ||
		b.Status == batchtype.StatusRunning && b.Paused && b.FailuresExceeded()
}

// batchGet reads a batch, naming the tenant when it has no such batch.
func (c *cli) batchGet(ctx context.Context, eng *batch.Engine, id int64) (*batchtype.Batch, error) {
	b, err := eng.Batch(ctx, batch.BatchParams{TenantID: c.global.tenant, ID: id})
	if errors.Is(err, batch.ErrNotFound) {
		return nil, fmt.Errorf("batch %d of tenant %q: %w", id, c.global.tenant, batch.ErrNotFound)
	}
	return b, err
}

// eventsAfter reports whether the batch has events after cursor: expired
// ones count, as the stream says so and goes on.
func (c *cli) eventsAfter(ctx context.Context, eng *batch.Engine, id, cursor int64) (bool, error) {
	evs, err := eng.Events(ctx, batch.EventsParams{TenantID: c.global.tenant, BatchID: id, AfterSeq: cursor, Limit: 1})
	switch {
	case errors.Is(err, batch.ErrCursorExpired):
		return true, nil
	case errors.Is(err, batch.ErrCursorAhead):
		return false, usagef("--cursor %d: %v", cursor, err)
	case errors.Is(err, batch.ErrNotFound):
		return false, fmt.Errorf("batch %d of tenant %q: %w", id, c.global.tenant, batch.ErrNotFound)
	case err != nil:
		return false, err
	}
	return len(evs) > 0, nil
}

// printOutcome prints a batch at the end of a command that followed it:
// its summary (text), the batch (json), or the last line of the stream
// (jsonl).
func (c *cli) printOutcome(b *batchtype.Batch) error {
	if c.global.output == "jsonl" {
		if err := json.NewEncoder(c.stdout).Encode(batchMessage{Type: "batch", Batch: toBatchJSON(b)}); err != nil {
			return err
		}
	} else if err := c.printBatch(c.stdout, b, true); err != nil {
		return err
	}
	return exitWith(batchExit(b))
}

// batchMessage is the last line of a -o jsonl stream.
type batchMessage struct {
	Type  string     `json:"type"`
	Batch *batchJSON `json:"batch"`
}

// follower follows a command's batch: a progress.Broadcaster on the
// command's store, and the JSON lines the events are printed as (-o jsonl).
type follower struct {
	c     *cli
	eng   *batch.Engine
	bc    *progress.Broadcaster
	jsonl *json.Encoder
}

// follower returns a follower on the app's engine and the function that
// stops it.
// A terminal gets at most four updates a second, progress coalesced; a
// JSON lines reader every event as it is read. A SQLite file written by
// another process is polled four times a second; PostgreSQL notifies.
func (c *cli) follower(ctx context.Context, app *app) (*follower, func()) {
	cfg := progress.Config{Rate: 4, PollInterval: 250 * time.Millisecond, Logger: c.logger}
	if t, err := c.database(); err == nil && t.postgres {
		cfg.PollInterval = 0 // the default: notifications come across processes
	}
	f := &follower{c: c, eng: app.engine}
	if c.global.output == "jsonl" {
		cfg.Rate = math.Inf(1)
		f.jsonl = json.NewEncoder(c.stdout)
	}
	f.bc = progress.New(app.store, &cfg)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Notifications only hurry the feed: without them it polls.
		if err := f.bc.Run(ctx); err != nil && ctx.Err() == nil {
			c.logger.Warn("listen for batch events; polling", "err", err)
		}
	}()
	return f, func() { cancel(); <-done }
}

// followTick is how often a display that prints on a schedule is asked to.
const followTick = 250 * time.Millisecond

// follow shows the batch's events after cursor until its final one,
// printing each message as a JSON line for -o jsonl, and returns the last
// event it got. It returns early, with an error, when ctx is done (the
// error is ctx's) or the stream fails.
func (f *follower) follow(ctx context.Context, show display, id, cursor int64) (*batchtype.Event, error) {
	tick := time.NewTicker(followTick)
	defer tick.Stop()
	var last *batchtype.Event
	for {
		sub, err := f.bc.Subscribe(ctx, progress.SubscribeParams{TenantID: f.c.global.tenant, BatchID: id, Cursor: cursor})
		switch {
		case errors.Is(err, batch.ErrCursorAhead):
			return last, usagef("--cursor %d: %v", cursor, err)
		case errors.Is(err, batch.ErrNotFound):
			return last, fmt.Errorf("batch %d of tenant %q: %w", id, f.c.global.tenant, batch.ErrNotFound)
		case err != nil:
			return last, fmt.Errorf("follow batch %d: %w", id, err)
		}
		final, err := f.read(ctx, sub, show, tick.C, id, &cursor, &last)
		sub.Close()
		if final || err != nil {
			return last, err
		}
		// Too slow a reader (stdout blocked for long): go on from the
		// cursor, as a websocket client would.
	}
}

// over reports whether a followed batch is over with nothing in its log
// after cursor: settled, so no event will come. The batch is read before
// the log: a batch reopened after it was read (a retry, a re-run) has
// events after cursor by then, and is followed on.
func (f *follower) over(ctx context.Context, id, cursor int64) (bool, error) {
	b, err := f.c.batchGet(ctx, f.eng, id)
	if err != nil || !settled(b) {
		return false, err
	}
	more, err := f.c.eventsAfter(ctx, f.eng, id, cursor)
	return !more && err == nil, err
}

// read reads one subscription until the batch's final event (true), the
// subscription ends because its reader was too slow (false, nil: resume),
// or an error.
func (f *follower) read(ctx context.Context, sub *progress.Subscription, show display, tick <-chan time.Time, id int64, cursor *int64, last **batchtype.Event) (bool, error) {
	for {
		var (
			m  progress.Message
			ok bool
		)
		select {
		case <-tick:
			show.tick()
			continue
		case m, ok = <-sub.C:
		}
		if !ok {
			err := sub.Err()
			switch {
			case errors.Is(err, progress.ErrSlowConsumer):
				return false, nil
			case errors.Is(err, batch.ErrNotFound):
				return false, fmt.Errorf("batch %d of tenant %q is gone: %w", id, f.c.global.tenant, err)
			case err == nil:
				err = ctx.Err()
			}
			if err == nil {
				err = context.Canceled
			}
			return false, err
		}
		if f.jsonl != nil {
			if err := f.jsonl.Encode(toMessageJSON(m)); err != nil {
				return false, fmt.Errorf("write events of batch %d: %w", id, err)
			}
		}
		*cursor = m.Cursor
		switch m.Type {
		case progress.MessageCursorExpired:
			show.note("batch %d: the events up to %d were trimmed; following from there", id, m.Cursor)
			// The stream goes on from the oldest event kept. When
			// retention trimmed them all, a settled batch's final event is
			// gone with the rest and nothing will follow: the batch itself
			// says it is over.
			over, err := f.over(ctx, id, m.Cursor)
			if err != nil || over {
				return over, err
			}
		case progress.MessageEvent:
			*last = m.Event
			show.show(m.Event)
			if !m.Event.Final {
				continue
			}
			// A final event in the replay may be followed by a retry
			// that reopened the batch: follow on if anything came after.
			more, err := f.c.eventsAfter(ctx, f.eng, id, m.Event.Seq)
			if err != nil {
				return false, err
			}
			if !more {
				return true, nil
			}
		}
	}
}
