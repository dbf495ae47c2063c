package monitor

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
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/clock"
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
