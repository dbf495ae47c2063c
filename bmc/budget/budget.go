// Package budget is the per-endpoint request budget of the redfish and ipmi
// drivers (their Options.RequestsPerSecond and RequestBurst): one token
// bucket (golang.org/x/time/rate) per endpoint key, capped by a sliding
// one-second window, kept in a driver's
// Dialer and shared by every session it opens to that endpoint, under any
// credentials, and dropped when the endpoint's last session closes. Both
// drivers use it; each keeps only the wiring of where a request takes its
// turn (bmc/redfish: the wire RoundTripper; bmc/ipmi: Driver.send) and
// reports the waits through a [Counter] in its bmc.Stats (Throttled,
// ThrottleWait).
//
// # Shape
//
// The bucket holds burst tokens and refills at the rate, so a lone job on
// an idle endpoint sends its whole request sequence without waiting (the
// drivers' default burst covers one job's sequence). On its own a bucket
// lets burst + rate requests out in a second; the window caps every
// one-second span at max(burst, rate) requests (the rate, with the
// drivers' defaults), so a crowd never exceeds the endpoint's rate in any
// second, as a BMC that counts per second sees it, and the bucket spaces
// the crowd's requests within the second.
//
// The limiter runs on the wall clock, not an injected one: it paces real
// requests to a real BMC.
package budget

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Set holds one [Budget] per endpoint key ([bmc.Endpoint.Key] in the
// drivers), shared by every session that acquired it. A budget is dropped
// when its last session releases it; the next session starts with a full
// bucket, which costs the BMC at most burst extra requests. A nil Set, like
// one made with a rate <= 0, is unlimited. It is safe for concurrent use.
type Set struct {
	limit rate.Limit // requests per second; 0: unlimited
	burst int

	mu sync.Mutex
	m  map[string]*Budget
}

// Budget is one endpoint's token bucket and window. A nil *Budget is
// unlimited.
type Budget struct {
	key  string
	rps  float64
	lim  *rate.Limiter
	refs int // sessions using it; guarded by the Set's mu

	// mu guards the window: the admission times of the last len(ring)
	// requests, oldest at head, in order (admissions are reserved in
	// order under mu and never move earlier). nil: no window.
	mu   sync.Mutex
	ring []time.Time
	head int
	// sent is the same for actual departures (the planned times of ring
	// are only as good as the timers that keep them).
	sent     []time.Time
	sentHead int
}

// DefaultBurst is the drivers' RequestBurst when none is set: enough for
// one job's whole request sequence (an IPMI netboot sends 18 requests, 22
// with a re-login; a Redfish netboot about 10 besides its polls), so a
// lone job on an idle endpoint never waits.
const DefaultBurst = 25

// BurstFor is the default burst for a budget of rps requests per second:
// DefaultBurst, but no more than the rate (at least 1), so that the window
// cap stays the rate (a 10/s budget gets a burst of 10).
func BurstFor(rps float64) int {
	return max(1, min(DefaultBurst, int(rps)))
}

// Window is the span over which the window caps requests.
const Window = time.Second

// maxWindow bounds the window's memory: a budget allowing more requests
// per second than this is a bucket alone.
const maxWindow = 1 << 16

// WindowCap is how many requests a budget of rps requests per second and
// burst admits in any [Window]: max(burst, floor(rps)); 0 means no cap.
func WindowCap(rps float64, burst int) int {
	n := max(burst, int(rps))
	if n > maxWindow {
		return 0
	}
	return n
}

func newBudget(key string, limit rate.Limit, burst int) *Budget {
	b := &Budget{key: key, rps: float64(limit), lim: rate.NewLimiter(limit, burst)}
	if n := WindowCap(float64(limit), burst); n > 0 {
		b.ring = make([]time.Time, n)
		b.sent = make([]time.Time, n)
	}
	return b
}

// reserve takes a token and a place in the window at now and returns when
// the request may go out, and the reservation to cancel if it does not.
func (b *Budget) reserve(now time.Time) (time.Time, *rate.Reservation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.lim.ReserveN(now, 1)
	if !r.OK() { // burst < 1; the drivers' option checks prevent it
		return now, nil, fmt.Errorf("request budget of %s admits no request (burst %d)", b.key, b.lim.Burst())
	}
	at := now.Add(r.DelayFrom(now))
	if b.ring != nil {
		// The request n back must be a whole Window earlier. A slot
		// taken by a waiter that gave up stays taken: conservative.
		if oldest := b.ring[b.head]; !oldest.IsZero() && oldest.Add(Window).After(at) {
			at = oldest.Add(Window)
		}
		b.ring[b.head] = at
		b.head = (b.head + 1) % len(b.ring)
	}
	return at, r, nil
}

// NewSet returns a Set of budgets of rps requests per second, burst deep;
// rps <= 0 means unlimited. The drivers reject a burst < 1 for a limited
// budget, which would admit no request.
func NewSet(rps float64, burst int) *Set {
	s := &Set{burst: burst, m: map[string]*Budget{}}
	if rps > 0 {
		s.limit = rate.Limit(rps)
	}
	return s
}

// Acquire returns the budget of the endpoint key (nil when unlimited) and a
// release func for the session that uses it; release is idempotent.
func (s *Set) Acquire(key string) (*Budget, func()) {
	if s == nil || s.limit == 0 {
		return nil, func() {}
	}
	s.mu.Lock()
	b := s.m[key]
	if b == nil {
		b = newBudget(key, s.limit, s.burst)
		s.m[key] = b
	}
	b.refs++
	s.mu.Unlock()
	var once sync.Once
	return b, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			b.refs--
			if b.refs == 0 && s.m[key] == b {
				delete(s.m, key)
			}
		})
	}
}

// Len is the number of endpoints with a budget (for tests).
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// WaitError is a request that gave up waiting for its turn because its ctx
// ended: it unwraps to the ctx's error.
type WaitError struct {
	Key    string        // the endpoint
	RPS    float64       // the budget's rate, requests per second
	Waited time.Duration // how long the request waited
	Err    error         // the ctx's error
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("waited %s for a turn in the request budget of %s (%g requests/s, Options.RequestsPerSecond): %v",
		e.Waited.Round(time.Millisecond), e.Key, e.RPS, e.Err)
}

func (e *WaitError) Unwrap() error { return e.Err }

// Wait takes one token, waiting for it within ctx, and returns how long it
// waited. A waiter whose ctx ends gives its reserved token back and returns
// a [*WaitError] that unwraps to ctx.Err(); a ctx already done returns its
// error at once. A nil b returns at once.
func (b *Budget) Wait(ctx context.Context) (time.Duration, error) {
	if b == nil {
		return 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	start := time.Now()
	at, r, err := b.reserve(start)
	if err != nil {
		return 0, err
	}
	for waited := false; ; waited = true {
		if d := at.Sub(time.Now()); d > 0 {
			waited = true
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				r.Cancel()
				waited := time.Since(start)
				return waited, &WaitError{Key: b.key, RPS: b.rps, Waited: waited, Err: ctx.Err()}
			}
		}
		// The planned time came; a waiter woken late (a busy machine)
		// may find the window of actual departures full, and waits for
		// it once more, so the cap holds for when requests really leave.
		var ok bool
		if at, ok = b.depart(time.Now()); ok {
			if !waited {
				return 0, nil
			}
			return time.Since(start), nil
		}
	}
}

// depart records a departure at now if the window of actual departures
// has room, else returns when it will.
func (b *Budget) depart(now time.Time) (time.Time, bool) {
	if b.sent == nil {
		return now, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if oldest := b.sent[b.sentHead]; !oldest.IsZero() && now.Sub(oldest) < Window {
		return oldest.Add(Window), false
	}
	b.sent[b.sentHead] = now
	b.sentHead = (b.sentHead + 1) % len(b.sent)
	return now, true
}

// Counter counts the requests that waited for a budget and their total
// wait: bmc.Stats Throttled and ThrottleWait. The zero value is ready.
type Counter struct {
	throttled atomic.Int64
	wait      atomic.Int64 // nanoseconds
}

// Wait is b.Wait(ctx), counting the wait (a request that gave up waiting
// included) in c.
func (c *Counter) Wait(ctx context.Context, b *Budget) error {
	waited, err := b.Wait(ctx)
	if waited > 0 {
		c.throttled.Add(1)
		c.wait.Add(int64(waited))
	}
	return err
}

// Throttled is the number of requests that waited.
func (c *Counter) Throttled() int64 { return c.throttled.Load() }

// ThrottleWait is the total time they waited.
func (c *Counter) ThrottleWait() time.Duration { return time.Duration(c.wait.Load()) }
