package powerwait

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// A job has one wait at a time: a wait of another task or attempt ends the
// one before, and Get creates nothing.
func TestOneWaitPerJob(t *testing.T) {
	tab := New()
	assert.Nil(t, tab.Get("j", 0, 1))
	w := tab.Open("j", 0, 1, t0, true)
	assert.Same(t, w, tab.Open("j", 0, 1, t0.Add(time.Second), false), "the same task and attempt: the same wait, unchanged")
	assert.Equal(t, t0, tab.Sent(w))
	assert.Same(t, w, tab.Get("j", 0, 1))
	assert.Nil(t, tab.Get("j", 0, 2), "another attempt: the wait before ends")
	assert.True(t, w.ended)
	assert.Nil(t, tab.Get("j", 0, 1), "gone")
	w2 := tab.Open("j", 1, 1, t0, true)
	tab.End("j")
	assert.True(t, w2.ended)
	assert.Nil(t, tab.Get("j", 1, 1))
}

// The landing is the middle between the last read that did not show the
// change and the one that did, at most dense before the latter (dense/4
// after a read-back), measured from the read-back where there was one; an
// announcing event gives its own time.
func TestLanded(t *testing.T) {
	const dense = 500 * time.Millisecond
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		name     string
		readBack bool
		lastNeg  int // ms after the request
		now      int
		want     time.Duration
	}{
		{"middle of a dense interval", false, 2000, 2400, 2200 * time.Millisecond},
		{"after a sparse stretch: at most dense before", false, 1000, 3000, 2500 * time.Millisecond},
		{"after the read-back: at most dense/4 before, from the read-back", true, 100, 2100, 1975 * time.Millisecond},
	} {
		tab := New()
		w := tab.Open("j", 0, 1, t0, true)
		tab.Missed(w, at(c.lastNeg), c.readBack)
		l := tab.Landed(w, at(c.now), dense)
		want := c.want
		if c.readBack {
			want -= time.Duration(c.lastNeg) * time.Millisecond
		}
		assert.Equal(t, Landing{Waited: true, Measured: true, After: want}, l, c.name)
		assert.Nil(t, tab.Get("j", 0, 1), "%s: the wait ended", c.name)
	}

	tab := New()
	w := tab.Open("j", 0, 1, t0, false)
	assert.Equal(t, Landing{}, tab.Landed(w, at(100), dense), "seen at the read-back: nothing waited")
	w = tab.Open("j", 0, 1, t0, false)
	tab.Missed(w, at(100), false)
	assert.Equal(t, Landing{Waited: true}, tab.Landed(w, at(600), dense), "not followed from the request: not measured")
}

type watcher struct {
	notify func(bmc.PowerEvent)
	err    error
	stops  int
}

func (p *watcher) WatchPower(_ context.Context, notify func(bmc.PowerEvent)) (func(), error) {
	if p.err != nil {
		return nil, p.err
	}
	p.notify = notify
	return func() { p.stops++ }, nil
}

// A watch is registered once per wait; its events wake the job and date
// the landing; a stream that ends is not registered again in the wait.
func TestWatch(t *testing.T) {
	clk := clock.NewFake(t0)
	tab := New()
	var woken []string
	wake := func(job string) { woken = append(woken, job) }
	pw := &watcher{}
	w := tab.Open("j", 0, 1, t0, true)
	live, err := tab.Watch(context.Background(), w, pw, clk, wake)
	require.NoError(t, err)
	assert.True(t, live)
	tab.Missed(w, t0, true)
	clk.Advance(1500 * time.Millisecond)
	pw.notify(bmc.PowerEvent{})
	assert.Equal(t, []string{"j"}, woken)
	clk.Advance(100 * time.Millisecond)
	live, _ = tab.Watch(context.Background(), w, pw, clk, wake)
	assert.True(t, live, "still live")
	l := tab.Landed(w, clk.Now(), 500*time.Millisecond)
	assert.Equal(t, Landing{Waited: true, Watched: true, Announced: true, Measured: true, After: 1500 * time.Millisecond}, l)
	assert.Equal(t, 1, pw.stops, "the wait's end stops the watch")
	pw.notify(bmc.PowerEvent{})
	assert.Len(t, woken, 1, "nothing after the end")

	w = tab.Open("j", 1, 1, t0, true)
	_, _ = tab.Watch(context.Background(), w, pw, clk, wake)
	pw.notify(bmc.PowerEvent{Err: errors.New("stream closed")})
	assert.Equal(t, []string{"j", "j"}, woken, "the stream's end wakes the job")
	live, err = tab.Watch(context.Background(), w, pw, clk, wake)
	assert.False(t, live || err != nil, "not again in this wait: it polls")

	failing := &watcher{err: bmc.ErrNotSupported}
	w = tab.Open("j", 2, 1, t0, true)
	_, err = tab.Watch(context.Background(), w, failing, clk, wake)
	assert.ErrorIs(t, err, bmc.ErrNotSupported)
	live, err = tab.Watch(context.Background(), w, failing, clk, wake)
	assert.False(t, live || err != nil, "tried once per wait")
}
