package stagger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/stagger"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

func newHeld(t *testing.T, s storage.Store, clk stagger.Clock, limit int, interval, hold time.Duration) *stagger.Limiter {
	t.Helper()
	l, err := stagger.New(stagger.Config{Store: s, Group: rack, Limit: limit, Interval: interval, Hold: hold, Clock: clk})
	require.NoError(t, err)
	return l
}

func admitHeld(t *testing.T, l *stagger.Limiter, system, jobName string, task int) (context.Context, func(context.Context), time.Duration) {
	t.Helper()
	send, release, w, err := l.AdmitHeld(context.Background(), system, jobName, task)
	require.NoError(t, err)
	require.NotNil(t, send)
	require.NotNil(t, release)
	return send, release, w
}

func TestHoldValidated(t *testing.T) {
	_, err := stagger.New(stagger.Config{Store: memstore.New(), Group: rack, Limit: 1, Interval: time.Second, Hold: -time.Second})
	assert.ErrorContains(t, err, "Config.Hold -1s")
}

// A held slot counts as made now until it is released, then from its
// release: the window counts from the request's return, however long after
// the grant that came.
func TestHeldSlotCountsUntilReleased(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newHeld(t, memstore.New(), clk, 1, 5*time.Second, time.Minute)
	_, release, w := admitHeld(t, l, sys(1, 1), "a", 0)
	require.Zero(t, w)
	clk.Advance(20 * time.Second) // a slow dial, a slow BMC: still not returned
	_, _, w = admitHeld(t, l, sys(1, 2), "b", 0)
	assert.Equal(t, 5*time.Second, w, "held: counted as now, leaves no earlier than an Interval from now")
	release(context.Background()) // returned at t0+20s
	clk.Advance(5*time.Second - time.Nanosecond)
	_, _, w = admitHeld(t, l, sys(1, 2), "b", 0)
	assert.Equal(t, stagger.MinWait, w, "stamped at its release")
	clk.Advance(time.Nanosecond)
	_, _, w = admitHeld(t, l, sys(1, 2), "b", 0)
	assert.Zero(t, w)
}

// A slot never released (its process died) counts until grant + Hold, then
// ages out from there. A request under it is refused from grant + Hold on,
// so none goes out later than the window counts it.
func TestHeldSlotBoundedByHold(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	l := newHeld(t, s, clk, 1, 5*time.Second, 30*time.Second)
	send, _, _ := admitHeld(t, l, sys(1, 1), "a", 0)
	lease := &toggleFence{}
	// The drivers' check: the lease's fence first, then the slot.
	sendUnderLease := bmc.WithFence(send, lease)
	require.NoError(t, bmc.Admit(sendUnderLease))
	lease.closed = true
	assert.ErrorIs(t, bmc.Admit(sendUnderLease), bmc.ErrFenced, "the lease's fence still applies under the slot")
	clk.Advance(30*time.Second - time.Nanosecond)
	require.NoError(t, bmc.Admit(send), "within the hold")
	_, _, w := admitHeld(t, l, sys(1, 2), "b", 0)
	assert.Equal(t, 5*time.Second, w)
	clk.Advance(time.Nanosecond) // grant + Hold
	err := bmc.Admit(send)
	assert.ErrorIs(t, err, stagger.ErrHoldExpired)
	assert.True(t, bmc.IsTransient(err), "a request refused for its slot is retried (and takes its slot again): %v", err)
	_, _, w = admitHeld(t, l, sys(1, 2), "b", 0)
	assert.Equal(t, 5*time.Second, w, "counted from grant + Hold")
	clk.Advance(5 * time.Second)
	_, _, w = admitHeld(t, l, sys(1, 2), "b", 0)
	assert.Zero(t, w)
}

// On the wall clock, send ends when the hold does, so a request blocked in a
// read does not outlive it either.
func TestHeldSendEndsAtHold(t *testing.T) {
	l := newHeld(t, memstore.New(), nil, 1, time.Second, 20*time.Millisecond)
	send, release, w, err := l.AdmitHeld(context.Background(), sys(1, 1), "a", 0)
	require.NoError(t, err)
	require.Zero(t, w)
	defer release(context.Background())
	select {
	case <-send.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("send did not end within 10s of a 20ms hold")
	}
	assert.ErrorIs(t, context.Cause(send), stagger.ErrHoldExpired)
	assert.ErrorIs(t, bmc.Admit(send), stagger.ErrHoldExpired)
}

// A retried request takes its slot again: the old one (held or stamped) is
// replaced by a newly held one, which always fits. The release of the
// replaced grant changes nothing; a second release does nothing.
func TestHeldReadmission(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	l := newHeld(t, s, clk, 2, 5*time.Second, time.Minute)
	_, rel1, _ := admitHeld(t, l, sys(1, 1), "a", 0)
	_, _, _ = admitHeld(t, l, sys(1, 2), "b", 0)
	clk.Advance(time.Second)
	_, rel2, w := admitHeld(t, l, sys(1, 1), "a", 0)
	require.Zero(t, w, "a re-admission into a full window fits")
	rel1(context.Background()) // the first attempt's call returned late
	entries := heldEntries(t, s, l.Key("10.0.1"))
	require.Len(t, entries, 2)
	assert.NotNil(t, entries[sys(1, 1)+"|a|0"].HeldUntil, "the newer grant stays held")
	assert.Equal(t, t0.Add(time.Second), entries[sys(1, 1)+"|a|0"].At)
	clk.Advance(time.Second)
	rel2(context.Background())
	clk.Advance(time.Second)
	rel2(context.Background()) // again: nothing
	entries = heldEntries(t, s, l.Key("10.0.1"))
	assert.Nil(t, entries[sys(1, 1)+"|a|0"].HeldUntil)
	assert.Equal(t, t0.Add(2*time.Second), entries[sys(1, 1)+"|a|0"].At, "stamped at the first release")
}

// Stored records: a held entry adds "heldUntil"; a record written before it
// existed is read as stamped entries; a reader that predates it decodes a
// held entry as stamped at its grant; a release whose entry is gone (pruned
// or dropped by such a reader) still records the request.
func TestHeldRecordCompatible(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	l := newHeld(t, s, clk, 2, 5*time.Second, time.Minute)
	key := l.Key("10.0.1")
	old := `{"admitted":[{"id":"` + sys(1, 9) + `|old|0","at":"2026-03-01T11:59:58Z"}]}`
	_, err := s.Create(context.Background(), key, []byte(old))
	require.NoError(t, err)
	_, release, w := admitHeld(t, l, sys(1, 1), "a", 0)
	require.Zero(t, w)
	_, _, w = admitHeld(t, l, sys(1, 2), "b", 0)
	assert.Equal(t, 3*time.Second, w, "the old stamped entry counts, it leaves at t0+3s")
	rec, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	assert.Contains(t, string(rec.Value), `"id":"`+sys(1, 1)+`|a|0","at":"2026-03-01T12:00:00Z","heldUntil":"2026-03-01T12:01:00Z"`)
	var before struct { // the record type before held slots
		Admitted []struct {
			ID string    `json:"id"`
			At time.Time `json:"at"`
		} `json:"admitted"`
	}
	require.NoError(t, json.Unmarshal(rec.Value, &before))
	assert.Len(t, before.Admitted, 2)
	// An older replica rewrites the record without the held entry at all.
	_, err = s.Update(context.Background(), key, []byte(`{"admitted":[]}`), rec.Revision)
	require.NoError(t, err)
	clk.Advance(time.Second)
	release(context.Background())
	entries := heldEntries(t, s, key)
	assert.Equal(t, t0.Add(time.Second), entries[sys(1, 1)+"|a|0"].At, "the request went out: it is counted from its return")
}

func TestHeldReleaseStoreDown(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	l := newHeld(t, s, clk, 1, 5*time.Second, 10*time.Second)
	_, release, _ := admitHeld(t, l, sys(1, 1), "a", 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	release(ctx) // the write fails: the slot stays held
	assert.NotNil(t, heldEntries(t, s, l.Key("10.0.1"))[sys(1, 1)+"|a|0"].HeldUntil)
	clk.Advance(14 * time.Second)
	_, _, w := admitHeld(t, l, sys(1, 2), "b", 0)
	assert.Equal(t, time.Second, w, "counted from grant + Hold")
}

// No slot, no hold: a system in no group, a denial, an error.
func TestHeldWithoutSlot(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	l := newHeld(t, s, clk, 1, 5*time.Second, time.Minute)
	ctx := context.Background()
	send, release, w, err := l.AdmitHeld(ctx, "free:443/x", "a", 0)
	require.NoError(t, err)
	assert.Zero(t, w)
	assert.Equal(t, ctx, send)
	release(ctx)
	_, _, _ = admitHeld(t, l, sys(1, 1), "a", 0)
	send, release, w, err = l.AdmitHeld(ctx, sys(1, 2), "b", 0)
	require.NoError(t, err)
	assert.Positive(t, w)
	assert.Equal(t, ctx, send)
	release(ctx)
	_, _, _, err = l.AdmitHeld(ctx, "", "b", 0)
	assert.Error(t, err)
	assert.Len(t, heldEntries(t, s, l.Key("10.0.1")), 1)
}

// Held admissions from two Limiters, released at once or never, never put
// more than Limit live slots in the record.
func TestHeldConcurrentNeverExceeds(t *testing.T) {
	clk := clock.NewFake(t0)
	s := memstore.New()
	ls := []*stagger.Limiter{newHeld(t, s, clk, 3, 5*time.Second, time.Minute), newHeld(t, s, clk, 3, 5*time.Second, time.Minute)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, release, w, err := ls[i%2].AdmitHeld(context.Background(), sys(1, i+1), "j", 0)
			if !assert.NoError(t, err) || w > 0 {
				return
			}
			mu.Lock()
			granted++
			mu.Unlock()
			if i%3 == 0 {
				release(context.Background())
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 3, granted)
	assert.Len(t, heldEntries(t, s, ls[0].Key("10.0.1")), 3)
}

type storedEntry struct {
	At        time.Time  `json:"at"`
	HeldUntil *time.Time `json:"heldUntil"`
}

func heldEntries(t *testing.T, s storage.Store, key string) map[string]storedEntry {
	t.Helper()
	rec, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	var v struct {
		Admitted []struct {
			ID string `json:"id"`
			storedEntry
		} `json:"admitted"`
	}
	require.NoError(t, json.Unmarshal(rec.Value, &v))
	out := map[string]storedEntry{}
	for _, e := range v.Admitted {
		out[e.ID] = e.storedEntry
	}
	return out
}

type toggleFence struct{ closed bool }

func (f *toggleFence) Admit() error {
	if f.closed {
		return fmt.Errorf("lapsed: %w", bmc.ErrFenced)
	}
	return nil
}
