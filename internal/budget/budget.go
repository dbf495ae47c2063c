// Package budget is the per-endpoint request budget of the redfish and ipmi
// drivers (their Options.RequestsPerSecond and RequestBurst): one token
// bucket (golang.org/x/time/rate) per endpoint key, kept in a driver's
// Dialer and shared by every session it opens to that endpoint, under any
// credentials, and dropped when the endpoint's last session closes. Both
// drivers use it; each keeps only the wiring of where a request takes its
// turn (bmc/redfish: the wire RoundTripper; bmc/ipmi: Driver.send) and
// reports the waits through a [Counter] in its bmc.Stats (Throttled,
// ThrottleWait).
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

// Budget is one endpoint's token bucket. A nil *Budget is unlimited.
type Budget struct {
	key  string
	rps  float64
	lim  *rate.Limiter
	refs int // sessions using it; guarded by the Set's mu
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
		b = &Budget{key: key, rps: float64(s.limit), lim: rate.NewLimiter(s.limit, s.burst)}
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
	r := b.lim.ReserveN(start, 1)
	if !r.OK() { // burst < 1; the drivers' option checks prevent it
		return 0, fmt.Errorf("request budget of %s admits no request (burst %d)", b.key, b.lim.Burst())
	}
	d := r.DelayFrom(start)
	if d <= 0 {
		return 0, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return time.Since(start), nil
	case <-ctx.Done():
		r.Cancel()
		waited := time.Since(start)
		return waited, &WaitError{Key: b.key, RPS: b.rps, Waited: waited, Err: ctx.Err()}
	}
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
