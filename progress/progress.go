// Package progress streams batches' events to their watchers: admin pages
// over a websocket (package server), terminals (batchctl watch).
//
// The store's event log is the truth (one event per change, in sequence,
// committed with the change); a Broadcaster only reads it. Per watched
// batch it keeps one feed, which reads new events once for all the batch's
// subscribers when the store says something committed (a notification)
// and every PollInterval in any case, so that a lost notification delays an
// update but never loses it. Each subscriber first replays the log after
// its cursor, as fast as it reads, then follows the feed at no more than
// Rate messages a second: progress events it had no turn for are coalesced
// into the latest (each carries the batch's totals), lifecycle events and
// the final one are always delivered, in order, and nothing is sent twice.
package progress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
)

// Source is the event log a Broadcaster reads: a store.
type Source interface {
	EventsList(ctx context.Context, params driver.EventsListParams) ([]batchtype.Event, error)
}

// ErrSlowConsumer ends a subscription whose reader did not take a message
// within Config.SendTimeout. The reader resumes from its last cursor.
var ErrSlowConsumer = errors.New("subscriber too slow")

// MessageType says what a Message carries.
type MessageType string

// The message types.
const (
	// MessageEvent carries an event of the batch's log.
	MessageEvent MessageType = "event"
	// MessageCursorExpired says the events between the subscriber's
	// cursor and Cursor were trimmed: the subscriber should read the
	// batch afresh. The stream goes on after Cursor.
	MessageCursorExpired MessageType = "cursor_expired"
	// MessageNotFound says the batch does not exist for the tenant; the
	// stream ends.
	MessageNotFound MessageType = "not_found"
)

// Message is what a subscriber receives.
type Message struct {
	Type  MessageType
	Event *batchtype.Event
	// Replay marks an event read from the log after the subscriber's
	// cursor, before the live stream: replays are not rate-limited.
	Replay bool
	// Cursor is what to resume from: the event's seq, or for
	// cursor_expired the seq the stream goes on after.
	Cursor int64
}

// Config configures a Broadcaster. The zero value is usable.
type Config struct {
	// Rate is how many live messages a second a subscriber gets at most.
	// Defaults to 4. math.Inf(1) sends every event as it comes, none
	// coalesced: for machine readers that want the whole stream.
	Rate float64
	// PollInterval is how often a feed reads the log without being told
	// of a change. Defaults to 1s.
	PollInterval time.Duration
	// Buffer is how many messages a subscription holds for its reader.
	// Defaults to 16.
	Buffer int
	// SendTimeout is how long a subscription waits for its reader to take
	// a message before it ends with ErrSlowConsumer. Defaults to 10s.
	SendTimeout time.Duration
	// Recent is how many events a feed keeps for its subscribers to
	// read; one further behind reads the store. Defaults to 1024.
	Recent int
	// Logger receives errors reading the log. Defaults to discarding.
	Logger *slog.Logger
	// LagFunc, when set, is told how long after its commit (its At, on
	// the database's clock) each new event was read by a feed: once per
	// event, not per subscriber (metrics.Metrics.ObserveEventLag).
	LagFunc func(time.Duration)
}

// Broadcaster fans a store's batch events out to subscribers. It is safe
// for concurrent use.
type Broadcaster struct {
	src Source
	cfg Config

	mu    sync.Mutex
	feeds map[int64]*feed
}

// New returns a Broadcaster reading src.
func New(src Source, cfg *Config) *Broadcaster {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Rate <= 0 {
		c.Rate = 4
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Buffer <= 0 {
		c.Buffer = 16
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 10 * time.Second
	}
	if c.Recent <= 0 {
		c.Recent = 1024
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Broadcaster{src: src, cfg: c, feeds: map[int64]*feed{}}
}

// Run passes the store's notifications of new events to Notify until ctx
// is done, when the source tells of them (driver.EventNotifier); without
// them, feeds poll. It returns nil when ctx is done.
func (b *Broadcaster) Run(ctx context.Context) error {
	n, ok := b.src.(driver.EventNotifier)
	if !ok {
		<-ctx.Done()
		return nil
	}
	return n.NotifyEvents(ctx, b.Notify)
}

// Notify tells the Broadcaster that a batch's event with that sequence
// number committed; batch 0 means anything may have changed. It never
// blocks.
func (b *Broadcaster) Notify(batchID, seq int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if batchID == 0 {
		for _, f := range b.feeds {
			f.poke()
		}
		return
	}
	if f := b.feeds[batchID]; f != nil && f.behind(seq) {
		f.poke()
	}
}

// SubscribeParams are the parameters of Broadcaster.Subscribe.
type SubscribeParams struct {
	TenantID string
	BatchID  int64
	// Cursor is the last seq the subscriber has; 0 replays the whole log.
	Cursor int64
}

// Subscription is one subscriber's stream. Read C until it is closed; Err
// then says why.
type Subscription struct {
	// C delivers the messages. It is closed when the subscription ends.
	C <-chan Message

	c      chan Message
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Close ends the subscription and waits for it.
func (s *Subscription) Close() {
	s.cancel()
	<-s.done
}

// Err says why C was closed: nil after Close or when the subscription's
// context ended, ErrSlowConsumer, driver.ErrNotFound (the batch is gone), or
// an error reading the log. It must be called after C is closed.
func (s *Subscription) Err() error {
	<-s.done
	return s.err
}

// Subscribe starts a subscription to a batch's events after p.Cursor. It
// reads the first page of the replay before it returns, so that a batch
// the tenant does not have is driver.ErrNotFound here, before anything is
// sent. The subscription ends when ctx is done, or on Close.
func (b *Broadcaster) Subscribe(ctx context.Context, p SubscribeParams) (*Subscription, error) {
	if p.Cursor < 0 {
		return nil, fmt.Errorf("progress: cursor %d: must be 0 or more", p.Cursor)
	}
	first, expired, err := b.read(ctx, p.TenantID, p.BatchID, p.Cursor)
	if err != nil {
		return nil, err
	}
	f := b.join(p.TenantID, p.BatchID)
	ctx, cancel := context.WithCancel(ctx)
	s := &Subscription{c: make(chan Message, b.cfg.Buffer), cancel: cancel, done: make(chan struct{})}
	s.C = s.c
	sub := &subscriber{b: b, f: f, s: s, tenant: p.TenantID, batch: p.BatchID, next: p.Cursor,
		lim: rate.NewLimiter(limit(b.cfg.Rate), 1)}
	go func() {
		defer close(s.done)
		defer close(s.c)
		defer b.leave(f)
		defer cancel()
		s.err = sub.run(ctx, first, expired)
		if errors.Is(s.err, context.Canceled) && ctx.Err() != nil {
			s.err = nil
		}
	}()
	return s, nil
}

// read reads one page of the log after a cursor. A cursor that expired is
// not an error: expired says where the log goes on.
func (b *Broadcaster) read(ctx context.Context, tenant string, batchID, after int64) ([]batchtype.Event, *driver.CursorExpiredError, error) {
	evs, err := b.src.EventsList(ctx, driver.EventsListParams{TenantID: tenant, BatchID: batchID, AfterSeq: after, Limit: pageSize})
	var ce *driver.CursorExpiredError
	if errors.As(err, &ce) {
		return nil, ce, nil
	}
	return evs, nil, err
}

func limit(perSecond float64) rate.Limit {
	if math.IsInf(perSecond, 1) {
		return rate.Inf
	}
	return rate.Limit(perSecond)
}

// pageSize is how many events one read of the log takes.
const pageSize = 500

// join returns the batch's feed, starting it for its first subscriber.
func (b *Broadcaster) join(tenant string, batchID int64) *feed {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.feeds[batchID]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &feed{b: b, tenant: tenant, batch: batchID, head: -1, cancel: cancel,
			wake: make(chan struct{}, 1), changed: make(chan struct{})}
		b.feeds[batchID] = f
		go f.run(ctx)
	}
	f.subs++
	return f
}

// leave stops the batch's feed when its last subscriber leaves.
func (b *Broadcaster) leave(f *feed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f.subs--
	if f.subs == 0 {
		f.cancel()
		delete(b.feeds, f.batch)
	}
}

// feed reads a batch's new events for all its subscribers and keeps the
// most recent ones.
type feed struct {
	b      *Broadcaster
	tenant string
	batch  int64
	cancel context.CancelFunc
	wake   chan struct{}
	subs   int // under b.mu

	mu sync.Mutex
	// head is the newest seq read; -1 until a subscriber's replay says
	// where the log stands.
	head int64
	// recent are the events up to head, contiguous, at most cfg.Recent.
	recent []batchtype.Event
	// changed is closed, and replaced, when head moves.
	changed chan struct{}
	// gone is set when the batch was not found: subscribers end.
	gone bool
}

func (f *feed) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// behind reports whether the feed has not read seq yet.
func (f *feed) behind(seq int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head >= 0 && seq > f.head
}

func (f *feed) run(ctx context.Context) {
	t := time.NewTicker(f.b.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-t.C:
		}
		if err := f.fetch(ctx); err != nil && ctx.Err() == nil {
			f.b.cfg.Logger.Warn("read batch events", "batch", f.batch, "err", err)
		}
	}
}

// fetch reads the log after head until it is read to its end.
func (f *feed) fetch(ctx context.Context) error {
	for {
		f.mu.Lock()
		head := f.head
		f.mu.Unlock()
		if head < 0 {
			return nil // not seeded yet
		}
		evs, expired, err := f.b.read(ctx, f.tenant, f.batch, head)
		if errors.Is(err, driver.ErrNotFound) {
			f.mu.Lock()
			f.gone = true
			f.signal()
			f.mu.Unlock()
			return nil
		}
		if err != nil {
			return err
		}
		if expired != nil {
			// Trimmed past head before it was read: start again at the
			// oldest kept, and let subscribers find out the same way.
			f.mu.Lock()
			f.head, f.recent = expired.Head, nil
			if expired.Oldest > 0 {
				f.head = expired.Oldest - 1
			}
			f.signal()
			f.mu.Unlock()
			continue
		}
		if len(evs) == 0 {
			return nil
		}
		if lag := f.b.cfg.LagFunc; lag != nil {
			now := time.Now()
			for _, ev := range evs {
				lag(now.Sub(ev.At))
			}
		}
		f.add(evs)
		if len(evs) < pageSize {
			return nil
		}
	}
}

// add appends events that follow head.
func (f *feed) add(evs []batchtype.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ev := range evs {
		if ev.Seq != f.head+1 {
			continue // already read, by a seed that raced the fetch
		}
		f.recent = append(f.recent, ev)
		f.head = ev.Seq
	}
	if n := len(f.recent) - f.b.cfg.Recent; n > 0 {
		f.recent = append(f.recent[:0:0], f.recent[n:]...)
	}
	f.signal()
}

// seed tells the feed where a subscriber's replay ended: a feed that has
// not read that far starts there.
func (f *feed) seed(head int64, tail []batchtype.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.head >= head {
		return
	}
	f.head = head
	f.recent = append([]batchtype.Event(nil), tail[max(0, len(tail)-f.b.cfg.Recent):]...)
	if len(f.recent) > 0 && f.recent[len(f.recent)-1].Seq != head {
		f.recent = nil
	}
	f.signal()
	f.poke()
}

// signal wakes the subscribers; f.mu must be held.
func (f *feed) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// after returns the events after seq that the feed holds, whether it holds
// all of them (false: read the store), and the channel closed at the
// next change.
func (f *feed) after(seq int64) (evs []batchtype.Event, ok bool, changed <-chan struct{}, gone bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.head < 0 || seq >= f.head {
		return nil, true, f.changed, f.gone
	}
	if len(f.recent) == 0 || f.recent[0].Seq > seq+1 {
		return nil, false, f.changed, f.gone
	}
	i := int(seq + 1 - f.recent[0].Seq)
	return f.recent[i:len(f.recent):len(f.recent)], true, f.changed, f.gone
}

// subscriber is a subscription's state, owned by its goroutine.
type subscriber struct {
	b      *Broadcaster
	f      *feed
	s      *Subscription
	tenant string
	batch  int64
	next   int64 // the last seq sent
	lim    *rate.Limiter
}

func (u *subscriber) send(ctx context.Context, m Message) error {
	select {
	case u.s.c <- m:
		return nil
	default:
	}
	t := time.NewTimer(u.b.cfg.SendTimeout)
	defer t.Stop()
	select {
	case u.s.c <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return ErrSlowConsumer
	}
}

// expired tells the subscriber its cursor expired and moves it to where
// the log goes on.
func (u *subscriber) expired(ctx context.Context, e *driver.CursorExpiredError) error {
	to := e.Head
	if e.Oldest > 0 {
		to = e.Oldest - 1
	}
	to = max(to, u.next)
	u.next = to
	return u.send(ctx, Message{Type: MessageCursorExpired, Cursor: to})
}

func (u *subscriber) run(ctx context.Context, first []batchtype.Event, exp *driver.CursorExpiredError) error {
	// Replay: the log after the cursor, page by page, unthrottled.
	page := first
	var tail []batchtype.Event
	for {
		if exp != nil {
			if err := u.expired(ctx, exp); err != nil {
				return err
			}
		}
		for i := range page {
			ev := page[i]
			if err := u.send(ctx, Message{Type: MessageEvent, Event: &ev, Replay: true, Cursor: ev.Seq}); err != nil {
				return err
			}
			u.next = ev.Seq
		}
		if len(page) > 0 {
			tail = page
		}
		if exp == nil && len(page) < pageSize {
			break
		}
		var err error
		if page, exp, err = u.b.read(ctx, u.tenant, u.batch, u.next); err != nil {
			return err
		}
	}
	u.f.seed(u.next, tail)
	return u.live(ctx)
}

// live follows the feed, one message per turn of the rate limiter.
func (u *subscriber) live(ctx context.Context) error {
	for {
		evs, ok, changed, gone := u.f.after(u.next)
		if gone {
			_ = u.send(ctx, Message{Type: MessageNotFound, Cursor: u.next})
			return fmt.Errorf("batch %d: %w", u.batch, driver.ErrNotFound)
		}
		if ok && len(evs) == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changed:
			}
			continue
		}
		// Something is due: wait for the turn, then pick from what is
		// there by then, so a progress event that came meanwhile stands in
		// for the one that was waiting.
		if err := u.lim.Wait(ctx); err != nil {
			return err
		}
		evs, ok, _, _ = u.f.after(u.next)
		if !ok {
			page, exp, err := u.b.read(ctx, u.tenant, u.batch, u.next)
			if err != nil {
				return err
			}
			if exp != nil {
				if err := u.expired(ctx, exp); err != nil {
					return err
				}
				continue
			}
			evs = page
		}
		if len(evs) == 0 {
			continue
		}
		ev := evs[0]
		if u.lim.Limit() != rate.Inf {
			ev = pick(evs)
		}
		if err := u.send(ctx, Message{Type: MessageEvent, Event: &ev, Cursor: ev.Seq}); err != nil {
			return err
		}
		u.next = ev.Seq
	}
}

// pick returns the event to send from the pending ones, in order: the
// first, or when it may be coalesced, the last of the run of coalescable
// events it starts.
func pick(evs []batchtype.Event) batchtype.Event {
	i := 0
	for i+1 < len(evs) && evs[i].Coalescable() && evs[i+1].Coalescable() {
		i++
	}
	return evs[i]
}
