// Package monitortest is the test harness of package monitor, shared by the
// monitor's own tests in the core module (fake BMCs, memstore) and the
// end-to-end tests in the integration module (real drivers over loopback,
// PostgreSQL), so neither copies it. It drives a [monitor.Monitor] on a fake
// clock through the monitor's exported API only ([monitor.Monitor.Idle],
// [monitor.Monitor.Key]).
//
// It is internal: bmckit's modules import it (every module under
// github.com/bmckit/bmckit/ may), users cannot. It must not import a driver
// or a database client: the core module carries neither.
package monitortest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage"
)

// T0 is the time every test's fake clock starts at.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Secret is every test's password: it must never show in a record, a log
// line or an error.
const Secret = "s3cret-Pa55word"

// Creds is a bmc.CredentialsResolver whose answers a test changes. Safe for
// concurrent use.
type Creds struct {
	mu sync.Mutex
	m  map[string]bmc.Credentials
}

// NewCreds returns a resolver that resolves ref to c.
func NewCreds(ref string, c bmc.Credentials) *Creds {
	return &Creds{m: map[string]bmc.Credentials{ref: c}}
}

// Set makes ref resolve to v from now on.
func (c *Creds) Set(ref string, v bmc.Credentials) {
	c.mu.Lock()
	c.m[ref] = v
	c.mu.Unlock()
}

// Resolve implements bmc.CredentialsResolver; an unknown ref is an error.
func (c *Creds) Resolve(_ context.Context, ref string) (bmc.Credentials, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[ref]
	if !ok {
		return bmc.Credentials{}, fmt.Errorf("no secret named %q", ref)
	}
	return v, nil
}

// LogSink collects the lines logged through its Logger (up to V(2)), so a
// test can check that no secret was logged. Safe for concurrent use.
type LogSink struct {
	mu    sync.Mutex
	lines []string
}

// Logger returns a logger that appends to s.
func (s *LogSink) Logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		s.lines = append(s.lines, prefix+" "+args)
		s.mu.Unlock()
	}, funcr.Options{Verbosity: 2})
}

// Text returns every line logged so far.
func (s *LogSink) Text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// Start runs m until the test ends; the cleanup fails the test if Start
// returns an error or m does not stop within 30s.
func Start(t testing.TB, m *monitor.Monitor) {
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

// Settle waits (polling, up to 20s) until every monitor has done all it had
// to do at clk's time ([monitor.Monitor.Idle]).
func Settle(t testing.TB, clk *clock.Fake, ms ...*monitor.Monitor) {
	t.Helper()
	require.Eventually(t, func() bool {
		now := clk.Now()
		for _, m := range ms {
			if !m.Idle(now) {
				return false
			}
		}
		return true
	}, 20*time.Second, 200*time.Microsecond, "monitors did not settle at %s", clk.Now())
}

// Advance moves clk by total in steps, letting the monitors settle after
// each.
func Advance(t testing.TB, clk *clock.Fake, total, step time.Duration, ms ...*monitor.Monitor) {
	t.Helper()
	for d := time.Duration(0); d < total; d += step {
		clk.Advance(step)
		Settle(t, clk, ms...)
	}
}

// Record reads the record of the machine at bmcURL from s, checks that its
// raw value holds no Secret, and decodes it.
func Record(t testing.TB, s storage.Store, m *monitor.Monitor, bmcURL string) *monitor.Machine {
	t.Helper()
	key, err := m.Key(bmcURL)
	require.NoError(t, err)
	rec, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	require.NotContains(t, string(rec.Value), Secret)
	mc, err := monitor.Decode(rec.Value)
	require.NoError(t, err)
	return mc
}

// Contactable returns mc's Contactable condition, failing the test if there
// is none.
func Contactable(t testing.TB, mc *monitor.Machine) conditions.Condition {
	t.Helper()
	c := mc.Contactable()
	require.NotNil(t, c, "no Contactable condition: %+v", mc)
	return *c
}

// MustJSON encodes v, for checking that no secret shows in it.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
