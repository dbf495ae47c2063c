package redfish

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/budget"
)

// wire is the http.RoundTripper under the gofish client. gofish gives no
// hook to count requests or connections, keeps its auth token private (so it
// cannot log in again after a 401), and only exposes the service root's
// Links.Sessions through a method that costs another GET. Wrapping its
// HTTP client is the smallest way around all three without re-implementing
// the protocol: this type counts, adds the auth header, and keeps a copy of
// the service root body gofish fetches anyway. It is also where every request
// takes its turn in the endpoint's request budget (Options.RequestsPerSecond),
// logins and logouts included.
type wire struct {
	base   *http.Transport
	budget *budget.Budget // shared by every session to the endpoint; nil: unlimited

	// owner is what the Driver that owns the session (Dial's) counts: its
	// own system's requests, the login and the logout, and any request
	// made outside a Driver's call. Each Driver opened with OpenSystem
	// counts its own (Driver.counts).
	owner counts

	mu       sync.Mutex
	header   string // "X-Auth-Token" or "Authorization"
	value    string
	noAuth   string // POST to this path goes without auth (session creation)
	rootBody []byte

	unusedMu sync.Mutex
	unused   map[*fencedConn]struct{} // dialed, not yet counted (claim)
}

// counts is what one Driver's calls cost on the wire. A request counts
// toward the Driver whose call made it, which the call's ctx names
// (withCounts); so the counts of the Drivers sharing a session add up to the
// session's traffic, and each Driver's Stats is its own share.
type counts struct {
	requests    atomic.Int64
	connections atomic.Int64
	logins      atomic.Int64
	throttle    budget.Counter // requests that waited for the budget, and how long
}

func (c *counts) stats() bmc.Stats {
	return bmc.Stats{
		Requests:     c.requests.Load(),
		Connections:  c.connections.Load(),
		Logins:       c.logins.Load(),
		Throttled:    c.throttle.Throttled(),
		ThrottleWait: c.throttle.ThrottleWait(),
	}
}

type countsKey struct{}

// withCounts returns ctx naming c as the counts its requests go to.
func withCounts(ctx context.Context, c *counts) context.Context {
	if cur, _ := ctx.Value(countsKey{}).(*counts); cur == c {
		return ctx
	}
	return context.WithValue(ctx, countsKey{}, c)
}

// countsFor is the counts a request made under ctx goes to: its Driver's,
// or the session owner's for a request made outside any Driver's call.
func (w *wire) countsFor(ctx context.Context) *counts {
	if c, _ := ctx.Value(countsKey{}).(*counts); c != nil {
		return c
	}
	return &w.owner
}

// wait takes the request's turn in the endpoint's budget, counting a wait
// toward the request's Driver.
// turn waits for a request's turn in the endpoint's budget, then asks the
// fence (bmc.Admit) whether it may go out: the last check before the
// request is handed to a connection, so a pause anywhere before it, the
// budget's wait included, is caught. Every request of a session takes it
// (wire and the event stream's transport).
func (w *wire) turn(ctx context.Context) error {
	if err := w.countsFor(ctx).throttle.Wait(ctx, w.budget); err != nil {
		return err
	}
	return bmc.Admit(ctx)
}

// sent counts a request toward its Driver.
func (w *wire) sent(ctx context.Context) { w.countsFor(ctx).requests.Add(1) }

func newWire(tlsCfg *tls.Config, connectTimeout time.Duration, maxConns int, bg *budget.Budget) *wire {
	w := &wire{budget: bg}
	dialer := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	w.base = &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			fc := &fencedConn{Conn: c, w: w} // fencedconn.go
			w.unusedMu.Lock()
			if w.unused == nil {
				w.unused = map[*fencedConn]struct{}{}
			}
			w.unused[fc] = struct{}{}
			w.unusedMu.Unlock()
			return fc, nil
		},
		TLSClientConfig:     tlsCfg.Clone(),
		TLSHandshakeTimeout: connectTimeout,
		// One BMC: Options.MaxConnections kept-alive connections (1 by
		// default), shared by every system on the session.
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		MaxConnsPerHost:     maxConns,
		IdleConnTimeout:     90 * time.Second,
	}
	return w
}

func (w *wire) setToken(token string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.header, w.value = "X-Auth-Token", token
}

func (w *wire) setBasic(user, pass string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.header = "Authorization"
	w.value = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// setLoginPath makes POSTs to sessionsPath (logins) go without auth, so a
// re-login does not send the expired token while other systems' requests
// still carry it.
func (w *wire) setLoginPath(sessionsPath string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noAuth = sessionsPath
}

func (w *wire) serviceRoot() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rootBody
}

// A connection is counted when a request first gets it (atConn), toward
// that request's Driver, and not when it is dialed: net/http dials for a
// request that may meanwhile get a connection another request freed, and
// the dial then completes after the request (and its job, which read its
// Driver's Stats) finished, so the count came too late to be seen (CI,
// TestWirePerJobOnSharedSession: 3 connections counted, 4 opened). One no
// request ever used is counted toward whoever closes the session
// (countUnused), or toward the owner when it is closed before.

// claim marks c counted and reports whether this call did.
func (w *wire) claim(c *fencedConn) bool {
	if c.claimed.Load() || !c.claimed.CompareAndSwap(false, true) {
		return false
	}
	w.unusedMu.Lock()
	delete(w.unused, c)
	w.unusedMu.Unlock()
	return true
}

// countUnused counts the connections no request has used toward the
// Driver ctx names (the one closing the session), before they are closed.
func (w *wire) countUnused(ctx context.Context) {
	w.unusedMu.Lock()
	conns := make([]*fencedConn, 0, len(w.unused))
	for c := range w.unused {
		conns = append(conns, c)
	}
	w.unusedMu.Unlock()
	for _, c := range conns {
		if w.claim(c) {
			w.countsFor(ctx).connections.Add(1)
		}
	}
}

// CloseIdleConnections closes the kept-alive connections. It is called on
// the wire itself, not through the http.Client, whose transport may be
// wrapped (Options.WrapTransport) by one that does not pass it on.
func (w *wire) CloseIdleConnections() { w.base.CloseIdleConnections() }

// RoundTrip implements http.RoundTripper. It first waits for the request's
// turn in the endpoint's budget, within the request's ctx (so the wait
// counts against RequestTimeout), before it takes a connection.
func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := w.turn(req.Context()); err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // RoundTrip must close it, even on error
		}
		return nil, err
	}
	w.mu.Lock()
	header, value := w.header, w.value
	skip := req.Method == http.MethodPost && w.noAuth != "" && req.URL.Path == w.noAuth
	w.mu.Unlock()
	if header != "" && !skip {
		req = req.Clone(req.Context())
		req.Header.Set(header, value)
	}
	req = w.atConn(req) // the fence again at the socket, and the count (fencedconn.go)
	w.sent(req.Context())
	resp, err := w.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if p := strings.TrimSuffix(req.URL.Path, "/"); p == "/redfish/v1" {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		_ = resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		w.mu.Lock()
		w.rootBody = body
		w.mu.Unlock()
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}
