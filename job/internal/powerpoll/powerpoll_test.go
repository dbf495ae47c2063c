package powerpoll

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readTimes follows adaptiveDelay from the sending (0) to until, as a step
// that runs exactly on time would.
func readTimes(lo, hi, dense, maxGap, until time.Duration) []time.Duration {
	var ts []time.Duration
	for t := time.Duration(0); t < until; {
		t += Delay(t, lo, hi, dense, maxGap)
		ts = append(ts, t)
	}
	return ts
}

// The schedule's rules (adaptivepoll.go): no gap over maxGap; every dense
// from the window's first read on; the window read from its end, so its
// last read in the window is hi and its first covers lo; dense/2 after hi,
// then every dense.
func TestAdaptiveDelayGrid(t *testing.T) {
	const D, G = 500 * time.Millisecond, 2500 * time.Millisecond
	for _, c := range []struct{ lo, hi time.Duration }{
		{1800 * time.Millisecond, 2200 * time.Millisecond},
		{7 * time.Second, 9 * time.Second},
		{time.Second, 11 * time.Second},
		{0, 100 * time.Millisecond},
		{20 * time.Second, 20 * time.Second},
	} {
		t.Run(fmt.Sprint(c.lo, "-", c.hi), func(t *testing.T) {
			ts := readTimes(c.lo, c.hi, D, G, c.hi+3*time.Second)
			prev := time.Duration(0)
			for _, r := range ts {
				gap := r - prev
				assert.Greater(t, gap, D/4, "reads at %v", ts)
				assert.LessOrEqual(t, gap, G, "reads at %v", ts)
				if prev >= c.lo && prev >= D/4 {
					assert.LessOrEqual(t, gap, D, "in and after the window, reads at %v", ts)
				}
				prev = r
			}
			if c.hi > D/4 { // else merged with the read-back
				require.Contains(t, ts, c.hi, "a read at the window's end")
			}
			var first time.Duration
			for _, r := range ts {
				if r+D > c.lo {
					first = r
					break
				}
			}
			assert.LessOrEqual(t, first, max(c.lo, D/4)+D, "the window's first read covers lo")
			assert.Contains(t, ts, c.hi+D/2, "the first read after the window")
		})
	}
}

// A narrow window that starts within maxGap costs one read, at its end.
func TestAdaptiveDelayNarrowWindowOneRead(t *testing.T) {
	ts := readTimes(1850*time.Millisecond, 2150*time.Millisecond, 500*time.Millisecond, 2500*time.Millisecond, 2150*time.Millisecond)
	assert.Equal(t, []time.Duration{2150 * time.Millisecond}, ts)
}

// A step that runs late does not shift the later reads, and a read made a
// little before a grid point stands for it (no two reads in a row).
func TestAdaptiveDelayLateAndEarlySteps(t *testing.T) {
	const D, G = 500 * time.Millisecond, 2500 * time.Millisecond
	lo, hi := 7*time.Second, 9*time.Second
	on := readTimes(lo, hi, D, G, hi)
	// Late by 0.3 s at the read before 8 s: the next is still on the grid.
	for i, r := range on {
		if r >= 8*time.Second && i > 0 {
			late := on[i-1] + 300*time.Millisecond
			assert.Equal(t, r, late+Delay(late, lo, hi, D, G))
			early := on[i-1] - 50*time.Millisecond
			assert.Equal(t, r, early+Delay(early, lo, hi, D, G), "a read 50ms before a grid point stands for it")
			break
		}
	}
}
