package main

import (
	"errors"
	"io"
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
}

type pair struct{ client, server net.Conn }

func (p *pair) close() {
	p.client.Close()
	p.server.Close()
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[*pair]struct{}{}}
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
	go func() { defer wg.Done(); p.copy(s, c); pr.close() }()
	go func() { defer wg.Done(); p.copy(c, s); pr.close() }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
}

// copy forwards bytes, waiting while the proxy holds and sleeping the
// latency before each write.
func (p *proxy) copy(dst, src net.Conn) {
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
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			return
		}
	}
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
