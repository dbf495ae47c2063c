package monitortest

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Proxy forwards TCP connections from a loopback port to a target: Down
// closes the port and every connection (the BMC becomes unreachable:
// connection refused), Up listens on the same port again. Hand-written
// because it is a dozen lines over net and io, and what the tests need is
// exactly this refuse-then-return behaviour on one stable address.
type Proxy struct {
	t      testing.TB
	target string

	mu    sync.Mutex
	addr  string
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// NewProxy listens on a free 127.0.0.1 port and forwards to target
// (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{t: t, target: target, addr: "127.0.0.1:0", conns: map[net.Conn]bool{}}
	p.Up()
	t.Cleanup(func() { p.Down(); p.wg.Wait() })
	return p
}

// Addr is the proxy's host:port; it stays the same across Down and Up.
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// Up listens again (on the same port) after Down.
func (p *Proxy) Up() {
	p.t.Helper()
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	ln, err := net.Listen("tcp", addr)
	require.NoError(p.t, err)
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[s] = true, true
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, s); _ = c.Close() }()
		}
	}()
}

// Down closes the listening port and every forwarded connection.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}
