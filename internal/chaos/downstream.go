package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// downstream is the external service the webhook kind posts to: it
// honours Idempotency-Key (a key is applied once; a repeat gets the first
// answer) and logs every request, for the offline checks.
type downstream struct {
	srv *http.Server
	ln  net.Listener

	mu      sync.Mutex
	applied map[string]applied
	// requests counts every request by key, repeats included.
	requests map[string]int
	total    int
	// slow, when above 0, is how long each request takes: a downstream
	// slower than the processor's timeout makes unknown outcomes.
	slow time.Duration
}

// applied is one key's effect.
type applied struct {
	ID string
	At time.Time
}

func newDownstream() (*downstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &downstream{ln: ln, applied: map[string]applied{}, requests: map[string]int{}}
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	go d.srv.Serve(ln)
	return d, nil
}

func (d *downstream) url() string { return "http://" + d.ln.Addr().String() + "/customers" }

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "no Idempotency-Key", http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	d.total++
	d.requests[key]++
	a, seen := d.applied[key]
	if !seen {
		a = applied{ID: fmt.Sprintf("crm-%d", len(d.applied)+1), At: time.Now()}
		d.applied[key] = a
	}
	slow := d.slow
	d.mu.Unlock()
	// A downstream takes its time: 2–6 ms, which keeps the batches
	// running while the faults come.
	time.Sleep(time.Duration(2000+rand.IntN(4000)) * time.Microsecond)
	if slow > 0 {
		time.Sleep(slow)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":%q}`, a.ID)
}

// snapshot copies the log.
func (d *downstream) snapshot() (map[string]applied, map[string]int, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ap := make(map[string]applied, len(d.applied))
	for k, v := range d.applied {
		ap[k] = v
	}
	rq := make(map[string]int, len(d.requests))
	for k, v := range d.requests {
		rq[k] = v
	}
	return ap, rq, d.total
}

func (d *downstream) setSlow(s time.Duration) {
	d.mu.Lock()
	d.slow = s
	d.mu.Unlock()
}

func (d *downstream) close() { d.srv.Close() }
