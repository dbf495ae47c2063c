package stagger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/stagger"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// rack groups systems by the first three octets of their host:
// "10.0.1.7:443/..." is in rack "10.0.1"; hosts starting with "free" are in
// no group.
func rack(system string) string {
	if strings.HasPrefix(system, "free") {
		return ""
	}
	host := strings.Split(system, ":")[0]
	return host[:strings.LastIndex(host, ".")]
}

func sys(rack, n int) string { return fmt.Sprintf("10.0.%d.%d:443/redfish/v1/Systems/1", rack, n) }

func newLimiter(t *testing.T, s storage.Store, clk stagger.Clock, limit int, interval time.Duration) *stagger.Limiter {
	t.Helper()
	l, err := stagger.New(stagger.Config{Store: s, Group: rack, Limit: limit, Interval: interval, Clock: clk})
	require.NoError(t, err)
	return l
}

func admit(t *testing.T, l *stagger.Limiter, system, jobName string, task int) time.Duration {
	t.Helper()
	w, err := l.Admit(context.Background(), system, jobName, task)
	require.NoError(t, err)
	return w
}

// stored decodes a group's record.
func stored(t *testing.T, s storage.Store, key string) (raw string, ids []string) {
	t.Helper()
	rec, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	var v struct {
		Admitted []struct {
			ID string    `json:"id"`
			At time.Time `json:"at"`
		} `json:"admitted"`
	}
	require.NoError(t, json.Unmarshal(rec.Value, &v))
	for _, e := range v.Admitted {
		ids = append(ids, e.ID)
	}
	return string(rec.Value), ids
}

func TestNewValidates(t *testing.T) {
	s := memstore.New()
	ok := stagger.Config{Store: s, Group: rack, Limit: 1, Interval: time.Second}
	for _, tc := range []struct {
		field string
		mod   func(*stagger.Config)
	}{
		{"Config.Store", func(c *stagger.Config) { c.Store = nil }},
		{"Config.Group", func(c *stagger.Config) { c.Group = nil }},
		{"Config.Limit 0", func(c *stagger.Config) { c.Limit = 0 }},
		{"Config.Limit -1", func(c *stagger.Config) { c.Limit = -1 }},
		{"Config.Limit 10001", func(c *stagger.Config) { c.Limit = stagger.MaxLimit + 1 }},
		{"Config.Interval 0s", func(c *stagger.Config) { c.Interval = 0 }},
		{"Config.Interval -1s", func(c *stagger.Config) { c.Interval = -time.Second }},
		{"Config.KeyPrefix", func(c *stagger.Config) { c.KeyPrefix = "bad\x00" }},
	} {
		cfg := ok
		tc.mod(&cfg)
		_, err := stagger.New(cfg)
		require.Error(t, err, tc.field)
		assert.Contains(t, err.Error(), tc.field)
	}
	l, err := stagger.New(ok)
	require.NoError(t, err)
	assert.Equal(t, "bmckit/stagger/rack%2F1", l.Key("rack/1"), "default prefix, group escaped")
}

func TestAdmitValidates(t *testing.T) {
	l := newLimiter(t, memstore.New(), clock.NewFake(t0), 1, time.Second)
	ctx := context.Background()
	_, err := l.Admit(ctx, "", "j", 0)
	assert.ErrorContains(t, err, "system is empty")
	_, err = l.Admit(ctx, sys(1, 1), "", 0)
	assert.ErrorContains(t, err, "job is empty")
	_, err = l.Admit(ctx, sys(1, 1), "j", -1)
	assert.ErrorContains(t, err, "taskIndex -1 is negative")
	long := stagger.Config{Store: memstore.New(), Group: func(string) string { return strings.Repeat("g", 600) }, Limit: 1, Interval: time.Second}
	l2, err := stagger.New(long)
	require.NoError(t, err)
	_, err = l2.Admit(ctx, sys(1, 1), "j", 0)
	assert.ErrorIs(t, err, storage.ErrInvalidKey)
	assert.ErrorContains(t, err, "group")
}

// At most Limit admissions in any Interval-long stretch, and the wait
// returned is the time until the oldest admission leaves the window.
func TestLimitAndWait(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, memstore.New(), clk, 3, 5*time.Second)
	for n := 1; n <= 3; n++ { // at t0, t0+1s, t0+2s
		assert.Zero(t, admit(t, l, sys(1, n), "j", 0), "server %d", n)
		clk.Advance(time.Second)
	}
	// t0+3s: full; the first leaves at t0+5s.
	assert.Equal(t, 2*time.Second, admit(t, l, sys(1, 4), "j", 0))
	assert.Equal(t, 2*time.Second, admit(t, l, sys(1, 5), "j", 0), "a denial takes no slot")
	clk.Advance(2*time.Second - time.Nanosecond)
	assert.Equal(t, stagger.MinWait, admit(t, l, sys(1, 4), "j", 0), "a wait never drops below MinWait")
	clk.Advance(time.Nanosecond) // t0+5s: the first admission is exactly Interval old
	assert.Zero(t, admit(t, l, sys(1, 4), "j", 0))
	// Full again; the next to leave is t0+1s's at t0+6s.
	assert.Equal(t, time.Second, admit(t, l, sys(1, 5), "j", 0))
	clk.Advance(time.Second)
	assert.Zero(t, admit(t, l, sys(1, 5), "j", 0))
}

// A resumed or retried step is admitted again without a second slot; its
// admission moves to the time it is asked again. A different task of the
// same job is another action.
func TestIdempotentReadmission(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	l := newLimiter(t, s, clk, 2, 5*time.Second)
	assert.Zero(t, admit(t, l, sys(1, 1), "j1", 2))
	clk.Advance(time.Second)
	for i := 0; i < 3; i++ {
		assert.Zero(t, admit(t, l, sys(1, 1), "j1", 2), "re-admission %d", i)
	}
	raw, ids := stored(t, s, l.Key("10.0.1"))
	assert.Equal(t, []string{sys(1, 1) + "|j1|2"}, ids)
	assert.Contains(t, raw, `"at":"2026-03-01T12:00:01Z"`, "moved to the re-admission")
	assert.Zero(t, admit(t, l, sys(1, 1), "j1", 4), "another task")
	assert.Equal(t, 5*time.Second, admit(t, l, sys(1, 2), "j2", 0), "two slots taken, both at t0+1s")
	clk.Advance(4 * time.Second)
	assert.Zero(t, admit(t, l, sys(1, 1), "j1", 2), "re-admitted when the window is full: its own slot moves")
	assert.Equal(t, time.Second, admit(t, l, sys(1, 2), "j2", 0), "j1's task 4 leaves at t0+6s")
}

// An admission whose action was sent late (the runner that was admitted
// stopped before sending; the next one sends it) counts from the send: the
// stale admission must not leave the window early and let one more in.
func TestReadmissionCountsFromTheSend(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, memstore.New(), clk, 2, 5*time.Second)
	assert.Zero(t, admit(t, l, sys(1, 1), "a", 1)) // t0, never sent
	clk.Advance(time.Second)
	assert.Zero(t, admit(t, l, sys(1, 2), "b", 1)) // t0+1s, sent
	clk.Advance(2 * time.Second)
	assert.Zero(t, admit(t, l, sys(1, 1), "a", 1)) // t0+3s: resumed, sent now
	clk.Advance(2 * time.Second)
	// t0+5s: a's first admission would have left; a's send at t0+3s has not.
	assert.Equal(t, time.Second, admit(t, l, sys(1, 3), "c", 1), "b leaves at t0+6s")
	clk.Advance(time.Second)
	assert.Zero(t, admit(t, l, sys(1, 3), "c", 1))
}

// Limiters that disagree on Limit (a config change rolled out to one replica
// first) never let a re-admission exceed the smaller limit.
func TestReadmissionFullWindow(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	wide := newLimiter(t, s, clk, 3, 5*time.Second)
	narrow := newLimiter(t, s, clk, 2, 5*time.Second)
	assert.Zero(t, admit(t, wide, sys(1, 1), "a", 0))
	clk.Advance(time.Second)
	assert.Zero(t, admit(t, wide, sys(1, 2), "b", 0))
	assert.Zero(t, admit(t, wide, sys(1, 3), "c", 0))
	clk.Advance(time.Second)
	assert.Equal(t, 3*time.Second, admit(t, narrow, sys(1, 3), "c", 0), "two others: full for narrow until a leaves")
	clk.Advance(3 * time.Second)
	assert.Zero(t, admit(t, narrow, sys(1, 3), "c", 0), "a left")
}

func TestGroupsIndependent(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	l := newLimiter(t, s, clk, 1, 5*time.Second)
	assert.Zero(t, admit(t, l, sys(1, 1), "j", 0))
	assert.Zero(t, admit(t, l, sys(2, 1), "j", 0), "rack 2 has its own window")
	assert.Equal(t, 5*time.Second, admit(t, l, sys(1, 2), "j", 0))
	assert.Equal(t, 5*time.Second, admit(t, l, sys(2, 2), "j", 0))
	recs, err := s.List(context.Background(), "bmckit/stagger/")
	require.NoError(t, err)
	assert.Len(t, recs, 2)
}

func TestUngroupedUnlimited(t *testing.T) {
	s := memstore.New()
	l := newLimiter(t, s, clock.NewFake(t0), 1, time.Hour)
	for n := 0; n < 100; n++ {
		assert.Zero(t, admit(t, l, fmt.Sprintf("free%d:623", n), "j", 0))
	}
	recs, err := s.List(context.Background(), "")
	require.NoError(t, err)
	assert.Empty(t, recs, "nothing stored for systems in no group")
}

// Records keep only the admissions of the last Interval, at most Limit of
// them, as small JSON.
func TestRecordsPruned(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	l := newLimiter(t, s, clk, 3, 5*time.Second)
	for n := 1; n <= 50; n++ {
		if w := admit(t, l, sys(1, n), fmt.Sprintf("job-%d", n), 1); w > 0 {
			clk.Advance(w)
			require.Zero(t, admit(t, l, sys(1, n), fmt.Sprintf("job-%d", n), 1))
		}
		raw, ids := stored(t, s, l.Key("10.0.1"))
		require.LessOrEqual(t, len(ids), 3, raw)
	}
	clk.Advance(time.Minute)
	assert.Zero(t, admit(t, l, sys(1, 99), "last", 0))
	raw, ids := stored(t, s, l.Key("10.0.1"))
	assert.Equal(t, []string{sys(1, 99) + "|last|0"}, ids, "everything older than Interval pruned")
	// 50 admissions at 3 per 5s: 16 full windows, then a minute.
	assert.Equal(t, t0.Add(16*5*time.Second+time.Minute), clk.Now())
	assert.Equal(t, `{"admitted":[{"id":"10.0.1.99:443/redfish/v1/Systems/1|last|0","at":"2026-03-01T12:02:20Z"}]}`, raw)
}

// A new Limiter (a restarted runner, another replica) on the same store sees
// the admissions still in the window.
func TestStateInStore(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	a := newLimiter(t, s, clk, 2, 5*time.Second)
	assert.Zero(t, admit(t, a, sys(1, 1), "j", 0))
	assert.Zero(t, admit(t, a, sys(1, 2), "j", 0))
	clk.Advance(time.Second)
	b := newLimiter(t, s, clk, 2, 5*time.Second)
	assert.Equal(t, 4*time.Second, admit(t, b, sys(1, 3), "j", 0))
	assert.Zero(t, admit(t, b, sys(1, 1), "j", 0), "admitted by a, re-admitted by b")
}

// Many goroutines on two Limiters (two replicas) sharing a store: exactly
// Limit admissions, however they race.
func TestConcurrentNeverExceeds(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	lims := []*stagger.Limiter{newLimiter(t, s, clk, 7, time.Minute), newLimiter(t, s, clk, 7, time.Minute)}
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for n := 0; n < 64; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := lims[n%2].Admit(context.Background(), sys(1, n), "j", 0)
			assert.NoError(t, err)
			if w == 0 {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 7, admitted)
}

// A stamp far in the future (a replica whose clock is hours ahead) holds the
// group back for one Interval, not until this clock catches up.
func TestFutureStampClamped(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	ahead := newLimiter(t, s, clock.NewFake(t0.Add(3*time.Hour)), 1, 5*time.Second)
	assert.Zero(t, admit(t, ahead, sys(1, 1), "j", 0))
	l := newLimiter(t, s, clk, 1, 5*time.Second)
	assert.Equal(t, 5*time.Second, admit(t, l, sys(1, 2), "j", 0))
	clk.Advance(5 * time.Second)
	assert.Zero(t, admit(t, l, sys(1, 2), "j", 0))
	// A stamp less than an Interval ahead is kept as it is.
	s2 := memstore.New()
	near := newLimiter(t, s2, clock.NewFake(clk.Now().Add(2*time.Second)), 1, 5*time.Second)
	assert.Zero(t, admit(t, near, sys(1, 1), "j", 0))
	l2 := newLimiter(t, s2, clk, 1, 5*time.Second)
	assert.Equal(t, 7*time.Second, admit(t, l2, sys(1, 2), "j", 0))
}

type failingStore struct {
	storage.Store
	err error
}

func (f failingStore) Get(context.Context, string) (storage.Record, error) {
	return storage.Record{}, f.err
}

func TestStoreErrors(t *testing.T) {
	down := errors.New("connection refused")
	l := newLimiter(t, failingStore{memstore.New(), down}, clock.NewFake(t0), 1, time.Second)
	_, err := l.Admit(context.Background(), sys(1, 1), "j", 3)
	assert.ErrorIs(t, err, down)
	assert.ErrorContains(t, err, `task 3 of job "j" on 10.0.1.1:443/redfish/v1/Systems/1 (group "10.0.1")`)

	s := memstore.New()
	l = newLimiter(t, s, clock.NewFake(t0), 1, time.Second)
	_, err = s.Create(context.Background(), l.Key("10.0.1"), []byte("{not json"))
	require.NoError(t, err)
	_, err = l.Admit(context.Background(), sys(1, 1), "j", 0)
	assert.ErrorContains(t, err, `delete it to reset group "10.0.1"`)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.Admit(ctx, sys(2, 1), "j", 0)
	assert.ErrorIs(t, err, context.Canceled)
}
