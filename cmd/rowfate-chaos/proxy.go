package main

import (
	"bytes"
	"net"
	"sync"
	"time"
)

// proxy is a TCP proxy of our own between the workers and PostgreSQL, that
// can reset every connection, hold them as a half-open network would
// (blackhole), or slow them down.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[*pair]struct{}
	// hold, while set, stops copying bytes: connections stay open and
	// silent, as across a partitioned network.
	hold    bool
	latency time.Duration
	resets  int
	// commit, when set, is what happens to the next COMMIT of a
	// transaction that ran a COPY (an import's ingest): the import sees
	// its connection reset either way, and cannot tell whether its batch
	// was written. Then it is cleared, and the hit counted.
	commit commitFault
	hits   map[commitFault]int
}

// commitFault is what the proxy does to an ingest's COMMIT.
type commitFault int

const (
	commitPass commitFault = iota
	// commitLoseAnswer forwards the COMMIT, then resets the connection
	// before its answer comes back: the batch is written.
	commitLoseAnswer
	// commitDrop resets the connection instead of forwarding the
	// COMMIT: the batch is not written.
	commitDrop
)

func (f commitFault) String() string {
	return [...]string{"pass", "commit's answer lost", "commit dropped"}[f]
}

// commitMsg is pgx's COMMIT on the wire: a simple Query message
// ('Q', length 11, "commit\0"), which is how pgx commits a transaction.
var commitMsg = []byte("Q\x00\x00\x00\x0bcommit\x00")

type pair struct {
	client, server net.Conn
	// copied is set once the client sent a COPY on this connection.
	copied bool
}

func (p *pair) close() {
	p.client.Close()
	p.server.Close()
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[*pair]struct{}{}, hits: map[commitFault]int{}}
	go p.accept()
	return p, nil
}

func (p *proxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *proxy) serve(c net.Conn) {
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	pr := &pair{client: c, server: s}
	p.mu.Lock()
	p.conns[pr] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.copy(s, c, pr); pr.close() }()
	go func() { defer wg.Done(); p.copy(c, s, nil); pr.close() }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
}

// copy forwards bytes, waiting while the proxy holds and sleeping the
// latency before each write. from is set for the client's direction,
// where an armed commit fault looks for the ingest's COMMIT.
func (p *proxy) copy(dst, src net.Conn, from *pair) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			for {
				p.mu.Lock()
				hold, lat := p.hold, p.latency
				p.mu.Unlock()
				if !hold {
					if lat > 0 {
						time.Sleep(lat)
					}
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if from != nil && p.interceptCommit(dst, from, buf[:n]) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// interceptCommit applies an armed commit fault to data the client sent,
// and reports whether it cut the connection.
func (p *proxy) interceptCommit(dst net.Conn, pr *pair, data []byte) bool {
	p.mu.Lock()
	f := p.commit
	p.mu.Unlock()
	if f == commitPass {
		return false
	}
	if !pr.copied && bytes.Contains(bytes.ToLower(data), []byte("copy ")) {
		pr.copied = true
	}
	if !pr.copied || !bytes.Contains(data, commitMsg) {
		return false
	}
	p.mu.Lock()
	if p.commit != f { // another connection took it
		p.mu.Unlock()
		return false
	}
	p.commit = commitPass
	p.hits[f]++
	p.mu.Unlock()
	if f == commitLoseAnswer {
		_, _ = dst.Write(data)
		// Let the server commit; the answer never reaches the client.
		time.Sleep(100 * time.Millisecond)
	}
	pr.close()
	return true
}

// armCommit sets what happens to the next ingest's COMMIT.
func (p *proxy) armCommit(f commitFault) {
	p.mu.Lock()
	p.commit = f
	p.mu.Unlock()
}

// commitHits returns how often each commit fault hit since it was last
// asked, and disarms.
func (p *proxy) commitHits() map[commitFault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commit = commitPass
	out := p.hits
	p.hits = map[commitFault]int{}
	return out
}

// reset closes every connection through the proxy: both ends see a reset.
func (p *proxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pr := range p.conns {
		pr.close()
	}
	p.resets++
}

// blackhole holds every connection silent for d, then resets them: what a
// client sees of a network that drops packets until its peer gives up.
func (p *proxy) blackhole(d time.Duration) {
	p.mu.Lock()
	p.hold = true
	p.mu.Unlock()
	time.Sleep(d)
	p.mu.Lock()
	p.hold = false
	p.mu.Unlock()
	p.reset()
}

// slow adds latency to every write for d.
func (p *proxy) slow(lat, d time.Duration) {
	p.mu.Lock()
	p.latency = lat
	p.mu.Unlock()
	time.Sleep(d)
	p.mu.Lock()
	p.latency = 0
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.ln.Close()
	p.reset()
}
