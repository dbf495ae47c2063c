package redfish

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/bmckit/bmckit/bmc"
)

// The fence is asked twice for a request under one (bmc.Admit): in the
// transport before the request is handed to net/http (wire.turn), and again
// at the socket, before each write of the request's bytes. net/http may keep
// a request between the two: waiting for a free connection of the session
// (Options.MaxConnections, shared by every system on it), or dialing one
// (TCP and TLS handshakes, up to ConnectTimeout). A lease that lapses
// meanwhile refuses the write, so the BMC receives nothing (a request whose
// headers were written and whose body is refused is cut off, and the BMC
// acts on no partial request). Found by integration/job's replica tests: a
// request admitted before a pause waited for a connection across it.

// fencedConn is the TCP connection under a session's requests (TLS runs on
// top of it). While a request is being written on it, it asks that
// request's fence before every write.
type fencedConn struct {
	net.Conn
	w       *wire       // whose Stats count the connection (wire.claim)
	claimed atomic.Bool // counted toward a Driver (wire.claim)
	mu      sync.Mutex
	ctx     context.Context // the request being written, if it has a fence
}

// Close closes the connection; one no request used is counted toward the
// session's owner (wire.claim).
func (c *fencedConn) Close() error {
	if c.w != nil && c.w.claim(c) {
		c.w.owner.connections.Add(1)
	}
	return c.Conn.Close()
}

func (c *fencedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	ctx := c.ctx
	c.mu.Unlock()
	if ctx != nil {
		if err := bmc.Admit(ctx); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(p)
}

func (c *fencedConn) arm(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
}

// fencedConnOf finds the fencedConn under a connection net/http got for a
// request (itself, or under its TLS).
func fencedConnOf(c net.Conn) *fencedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	fc, _ := c.(*fencedConn)
	return fc
}

// atConn returns req with a trace that arms the connection net/http gets
// for it with req's fence (a request without a fence disarms it), and
// counts a connection no request used before toward req's Driver. The
// connection stays armed until the next request on it arms it again: its
// bytes are flushed after net/http's WroteRequest, so it cannot be disarmed
// there, and a client writes nothing on an HTTP/1.1 connection between
// requests (a TLS close_notify under a lapsed fence is not sent: harmless).
// The session's transports speak HTTP/1.1 only (no ForceAttemptHTTP2 with
// a custom dialer), so one request at a time is written on a connection.
func (w *wire) atConn(req *http.Request) *http.Request {
	ctx := req.Context()
	armed := ctx
	if bmc.FenceFrom(ctx) == nil {
		armed = nil
	}
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if fc := fencedConnOf(info.Conn); fc != nil {
				fc.arm(armed)
				if w.claim(fc) {
					w.countsFor(ctx).connections.Add(1)
				}
			}
		},
	}
	return req.WithContext(httptrace.WithClientTrace(ctx, trace))
}
