// Package retry computes retry delays: exponential with full-range jitter
// around the nominal value. It is a few lines, so it is written here rather
// than pulling in a retry library whose loop would own the waiting (callers
// here persist state between attempts and wait on an injected clock).
package retry

import (
	"math/rand/v2"
	"time"
)

// Policy is an exponential backoff policy. The zero value means Initial
// 500ms, Max 15s, Jitter 0.2.
type Policy struct {
	Initial time.Duration
	Max     time.Duration
	// Jitter is the +/- fraction applied to each delay (0.2 = +/-20%).
	Jitter float64
}

// Delay returns the delay before retry number attempt (1-based).
func (p Policy) Delay(attempt int) time.Duration {
	initial, max, jitter := p.Initial, p.Max, p.Jitter
	if initial <= 0 {
		initial = 500 * time.Millisecond
	}
	if max <= 0 {
		max = 15 * time.Second
	}
	if jitter == 0 {
		jitter = 0.2
	}
	if attempt < 1 {
		attempt = 1
	}
	d := initial
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	if jitter > 0 {
		f := 1 + jitter*(2*rand.Float64()-1)
		d = time.Duration(float64(d) * f)
	}
	return d
}
