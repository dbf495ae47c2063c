package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// secret is every test's password: it must never show in a record, a log
// line or an error.
const secret = "s3cret-Pa55word"

// creds is a CredentialsResolver whose answers a test changes.
type creds struct {
	mu sync.Mutex
	m  map[string]bmc.Credentials
}

func newCreds(ref string, c bmc.Credentials) *creds {
	return &creds{m: map[string]bmc.Credentials{ref: c}}
}

func (c *creds) set(ref string, v bmc.Credentials) {
	c.mu.Lock()
	c.m[ref] = v
	c.mu.Unlock()
}

func (c *creds) Resolve(_ context.Context, ref string) (bmc.Credentials, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[ref]
	if !ok {
		return bmc.Credentials{}, fmt.Errorf("no secret named %q", ref)
	}
	return v, nil
}

// logSink collects log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		s.lines = append(s.lines, prefix+" "+args)
		s.mu.Unlock()
	}, funcr.Options{Verbosity: 2})
}

func (s *logSink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// startMonitor starts m until the test ends.
func startMonitor(t *testing.T, m *Monitor) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("monitor did not stop")
		}
	})
}

// quiet reports whether m's loop waits with nothing to do at clk's time.
func quiet(m *Monitor, clk *clock.Fake) bool {
	return m.pokesSeen.Load() == m.pokes.Load() && m.quietAt.Load() == clk.Now().UnixNano() && m.inflight.Load() == 0
}

// settle waits until every monitor has done all it had to do at clk's time.
func settle(t *testing.T, clk *clock.Fake, ms ...*Monitor) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, m := range ms {
			if !quiet(m, clk) {
				return false
			}
		}
		return true
	}, 20*time.Second, 200*time.Microsecond, "monitors did not settle at %s", clk.Now())
}

// advance moves clk by total in steps, letting the monitors settle after
// each.
func advance(t *testing.T, clk *clock.Fake, total, step time.Duration, ms ...*Monitor) {
	t.Helper()
	for d := time.Duration(0); d < total; d += step {
		clk.Advance(step)
		settle(t, clk, ms...)
	}
}

// record reads a machine record and checks it holds no secret.
func record(t *testing.T, s storage.Store, m *Monitor, bmcURL string) *Machine {
	t.Helper()
	ep, err := bmc.ParseEndpoint(bmcURL)
	require.NoError(t, err)
	rec, err := s.Get(context.Background(), recordKey(m.Prefix(), ep.SystemKey()))
	require.NoError(t, err)
	require.NotContains(t, string(rec.Value), secret)
	mc, err := Decode(rec.Value)
	require.NoError(t, err)
	return mc
}

// contactable returns the Contactable condition (never nil).
func contactable(t *testing.T, mc *Machine) conditions.Condition {
	t.Helper()
	c := mc.Contactable()
	require.NotNil(t, c, "no Contactable condition: %+v", mc)
	return *c
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// proxy forwards TCP connections from a loopback port to target; down
// closes the port and every connection (the BMC becomes unreachable:
// connection refused), up listens on the same port again.
type proxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target, addr: "127.0.0.1:0", conns: map[net.Conn]bool{}}
	p.up()
	t.Cleanup(func() { p.down(); p.wg.Wait() })
	return p
}

func (p *proxy) up() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
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

func (p *proxy) down() {
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

// countingDialer counts sessions: dials, and how many were open at once.
type countingDialer struct {
	d bmc.Dialer

	mu                   sync.Mutex
	dials, open, maxOpen int
}

func (c *countingDialer) Dial(ctx context.Context, ep bmc.Endpoint, cr bmc.Credentials) (bmc.Driver, error) {
	drv, err := c.d.Dial(ctx, ep, cr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.dials++
	c.open++
	c.maxOpen = max(c.maxOpen, c.open)
	c.mu.Unlock()
	return &countedDriver{Driver: drv, c: c}, nil
}

func (c *countingDialer) counts() (dials, open, maxOpen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials, c.open, c.maxOpen
}

type countedDriver struct {
	bmc.Driver
	c    *countingDialer
	once sync.Once
}

func (d *countedDriver) Close(ctx context.Context) error {
	d.once.Do(func() {
		d.c.mu.Lock()
		d.c.open--
		d.c.mu.Unlock()
	})
	return d.Driver.Close(ctx)
}
