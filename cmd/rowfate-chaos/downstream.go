package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// downstream is the external service the customers-webhook kind posts to
// (and the customers-exec kind's program): it honours Idempotency-Key the
// way a careful API does and logs every request it gets, for the offline
// checks.
//
// A request with a key it has not applied is applied: the key gets an id,
// and the key's application count goes up. A request with a key already
// applied is a replay: it gets the first answer and applies nothing — a
// second application happens only if the key's dedupe fails, which is
// why applications are counted per key (and, since the key is the
// engine's, per row: a row sent under two keys is applied twice). A
// replay with another payload than the applied one is refused (422) and
// applies nothing.
//
// Faults make it answer 503 without applying (downstream_errors), hang
// past the processor's timeout, applying first or not (downstream_hang),
// or answer slowly (slow_downstream).
type downstream struct {
	srv  *http.Server
	ln   net.Listener
	stop chan struct{}
	once sync.Once

	mu sync.Mutex
	// reqs is every request, in the order they came.
	reqs []request
	// keys is every key applied.
	keys map[string]*effect
	rng  *rand.Rand
	// slow, when above 0, is how long each request takes.
	slow time.Duration
	// errorsUntil: until then, errorRate of the requests answer 503.
	errorsUntil time.Time
	errorRate   float64
	// hangUntil: until then, hangRate of the requests hang for hangFor.
	hangUntil time.Time
	hangRate  float64
	hangFor   time.Duration
	// reapply breaks the dedupe (-sabotage downstream-reapply): a replay
	// is applied again, to show that the checks see it.
	reapply bool
}

// The outcomes of a request, as the downstream logged them.
const (
	outApplied  = "applied"  // first application of its key
	outReplayed = "replayed" // its key was applied: first answer, nothing applied
	outRefused  = "refused"  // its key was applied with another payload: 422
	outFailed   = "failed"   // 503, nothing applied
	outLost     = "lost"     // hung before it was applied: nothing applied
	outBad      = "bad"      // no key or no body: 400
)

// request is one request as it arrived.
type request struct {
	Seq int       `json:"seq"`
	At  time.Time `json:"at"`
	Key string    `json:"key"`
	// Tenant, Batch, Row and Attempt are the X-Rowfate- headers: which
	// row the engine sent it for.
	Tenant  string `json:"tenant"`
	Batch   int64  `json:"batch"`
	Row     int64  `json:"row"`
	Attempt string `json:"attempt"`
	// Email is the body's: which row of the files it carries.
	Email   string `json:"email"`
	Digest  string `json:"digest"`
	Outcome string `json:"outcome"`
	// Hung is set when the request was left unanswered past the
	// processor's timeout (its outcome says whether it applied).
	Hung bool   `json:"hung,omitempty"`
	ID   string `json:"id,omitempty"`
}

// applied reports whether the request applied its key.
func (r *request) applied() bool { return r.Outcome == outApplied }

// effect is one applied key.
type effect struct {
	ID     string
	At     time.Time
	Digest string
	// Applications counts the times the key was applied: 1, unless the
	// dedupe broke.
	Applications int
}

func newDownstream(seed uint64, reapply bool) (*downstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &downstream{ln: ln, stop: make(chan struct{}), keys: map[string]*effect{},
		rng: rand.New(rand.NewPCG(seed, seed^0xd0d0)), reapply: reapply}
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	go d.srv.Serve(ln)
	return d, nil
}

func (d *downstream) url() string { return "http://" + d.ln.Addr().String() + "/customers" }

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req := request{At: time.Now(), Key: r.Header.Get("Idempotency-Key"), Tenant: r.Header.Get("X-Rowfate-Tenant"),
		Attempt: r.Header.Get("X-Rowfate-Attempt")}
	fmt.Sscan(r.Header.Get("X-Rowfate-Batch"), &req.Batch)
	fmt.Sscan(r.Header.Get("X-Rowfate-Row"), &req.Row)
	var c struct {
		Email string `json:"email"`
	}
	_ = json.Unmarshal(body, &c)
	req.Email = c.Email
	sum := sha256.Sum256(body)
	req.Digest = hex.EncodeToString(sum[:8])

	d.mu.Lock()
	req.Seq = len(d.reqs) + 1
	now := req.At
	var hang time.Duration
	status := http.StatusOK
	switch {
	case req.Key == "" || err != nil || len(body) == 0:
		req.Outcome, status = outBad, http.StatusBadRequest
	case now.Before(d.errorsUntil) && d.rng.Float64() < d.errorRate:
		req.Outcome, status = outFailed, http.StatusServiceUnavailable
	default:
		if req.Hung = now.Before(d.hangUntil) && d.rng.Float64() < d.hangRate; req.Hung {
			hang = d.hangFor
			if d.rng.IntN(2) == 0 {
				// Lost before it was applied: the client waits all the same.
				req.Outcome = outLost
				break
			}
		}
		e, seen := d.keys[req.Key]
		switch {
		case !seen || d.reapply:
			if !seen {
				e = &effect{Digest: req.Digest}
				d.keys[req.Key] = e
			}
			e.Applications++
			e.ID, e.At = fmt.Sprintf("crm-%d", req.Seq), now
			req.Outcome = outApplied
		case e.Digest != req.Digest:
			req.Outcome, status = outRefused, http.StatusUnprocessableEntity
		default:
			req.Outcome = outReplayed
		}
		req.ID = e.ID
	}
	slow := d.slow
	d.reqs = append(d.reqs, req)
	d.mu.Unlock()

	// A downstream takes its time: 2–6 ms, which keeps the batches
	// running while the faults come.
	wait := time.Duration(2000+rand.IntN(4000))*time.Microsecond + slow + hang
	select {
	case <-time.After(wait):
	case <-r.Context().Done():
		return
	case <-d.stop:
		return
	}
	switch status {
	case http.StatusOK:
		if req.Outcome == outLost {
			// Its client gave up long ago; nothing was applied.
			http.Error(w, "lost", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q}`, req.ID)
	case http.StatusUnprocessableEntity:
		http.Error(w, "Idempotency-Key reused with another payload", status)
	default:
		http.Error(w, http.StatusText(status), status)
	}
}

// log copies the requests and the applied keys.
func (d *downstream) log() ([]request, map[string]effect) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys := make(map[string]effect, len(d.keys))
	for k, e := range d.keys {
		keys[k] = *e
	}
	return append([]request(nil), d.reqs...), keys
}

func (d *downstream) setSlow(s time.Duration) {
	d.mu.Lock()
	d.slow = s
	d.mu.Unlock()
}

// failFor makes rate of the requests answer 503, applying nothing, for
// the next dur.
func (d *downstream) failFor(dur time.Duration, rate float64) {
	d.mu.Lock()
	d.errorsUntil, d.errorRate = time.Now().Add(dur), rate
	d.mu.Unlock()
}

// hangFor makes rate of the requests that arrive in the next dur go
// unanswered for hang (half of them applied first, half not).
func (d *downstream) hangNext(dur time.Duration, rate float64, hang time.Duration) {
	d.mu.Lock()
	d.hangUntil, d.hangRate, d.hangFor = time.Now().Add(dur), rate, hang
	d.mu.Unlock()
}

// calm ends every fault of the downstream.
func (d *downstream) calm() {
	d.mu.Lock()
	d.slow, d.errorsUntil, d.hangUntil = 0, time.Time{}, time.Time{}
	d.mu.Unlock()
}

func (d *downstream) close() {
	d.once.Do(func() { close(d.stop) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = d.srv.Shutdown(ctx)
	d.srv.Close()
}
