package stagger_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage/memstore"
)

// offsetClock reads another clock, shifted: a replica whose clock is off.
type offsetClock struct {
	c   *clock.Fake
	off time.Duration
}

func (o offsetClock) Now() time.Time { return o.c.Now().Add(o.off) }

// The limit of the guarantee that replicas' clocks set: two Limiters share a
// store, one with its clock ahead by skew; 40 requests (held slots released
// at once), each asked again when its wait is over (true time moves 10 ms at
// a time). Measured in true time: with
// no skew no 2-s window holds more than 5; with skew s, no window of 2 s - s
// does (the replica ahead may admit up to s early), and the test logs how
// many the busiest 2-s window held.
func TestClockSkewMeasured(t *testing.T) {
	const limit, interval, n = 5, 2 * time.Second, 40
	for _, skew := range []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second} {
		clk := clock.NewFake(t0)
		s := memstore.New()
		ls := [2]interface {
			AdmitHeld(context.Context, string, string, int) (context.Context, func(context.Context), time.Duration, error)
		}{newHeld(t, s, clk, limit, interval, time.Minute), newHeld(t, s, offsetClock{clk, skew}, limit, interval, time.Minute)}
		var grants []time.Time
		done := make([]bool, n)
		next := make([]time.Time, n) // when request i asks again: after the wait it was given
		for left := n; left > 0; clk.Advance(10 * time.Millisecond) {
			for i := range n {
				if done[i] || clk.Now().Before(next[i]) {
					continue
				}
				_, release, w, err := ls[i%2].AdmitHeld(context.Background(), sys(1, i+1), "j", 0)
				require.NoError(t, err)
				if w == 0 {
					release(context.Background())
					grants = append(grants, clk.Now())
					done[i] = true
					left--
				}
				next[i] = clk.Now().Add(w)
			}
		}
		sort.Slice(grants, func(a, b int) bool { return grants[a].Before(grants[b]) })
		most := func(win time.Duration) int {
			m := 0
			for i := range grants {
				m = max(m, sort.Search(len(grants), func(k int) bool { return !grants[k].Before(grants[i].Add(win)) })-i)
			}
			return m
		}
		assert.LessOrEqual(t, most(interval-skew), limit, "skew %v: a window of Interval - skew", skew)
		if skew == 0 {
			assert.Equal(t, limit, most(interval))
		}
		t.Logf("replica clock ahead by %v: busiest %v window held %d (limit %d); busiest %v window held %d; last grant %v after the first",
			skew, interval, most(interval), limit, interval-skew, most(interval-skew), grants[len(grants)-1].Sub(grants[0]))
	}
}
