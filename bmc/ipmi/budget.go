package ipmi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// budgets holds one request budget (a token bucket) per endpoint, keyed by
// [bmc.Endpoint.Key], shared by every session a Dialer opens to it (a job's
// session and one dialed under rotated credentials, say). A budget is
// dropped when its last session closes; the next session starts with a full
// bucket, which costs the BMC at most RequestBurst extra requests. The same
// code lives in bmc/redfish (budget.go); the two drivers share no package
// below bmc.
type budgets struct {
	limit rate.Limit // requests per second; 0: unlimited
	burst int

	mu sync.Mutex
	m  map[string]*budget
}

type budget struct {
	key  string
	rps  float64
	lim  *rate.Limiter
	refs int // sessions using it
}

func newBudgets(rps float64, burst int) *budgets {
	b := &budgets{burst: burst, m: map[string]*budget{}}
	if rps > 0 {
		b.limit = rate.Limit(rps)
	}
	return b
}

// acquire returns the endpoint's budget (nil when unlimited) and a release
// func for the session that uses it; release is idempotent.
func (b *budgets) acquire(key string) (*budget, func()) {
	if b == nil || b.limit == 0 {
		return nil, func() {}
	}
	b.mu.Lock()
	bg := b.m[key]
	if bg == nil {
		bg = &budget{key: key, rps: float64(b.limit), lim: rate.NewLimiter(b.limit, b.burst)}
		b.m[key] = bg
	}
	bg.refs++
	b.mu.Unlock()
	var once sync.Once
	return bg, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			bg.refs--
			if bg.refs == 0 && b.m[key] == bg {
				delete(b.m, key)
			}
		})
	}
}

// size is the number of endpoints with a budget (for tests).
func (b *budgets) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

// budgetWaitError is a request that gave up waiting for its turn because
// its ctx ended: it unwraps to the ctx's error.
type budgetWaitError struct {
	key    string
	rps    float64
	waited time.Duration
	err    error
}

func (e *budgetWaitError) Error() string {
	return fmt.Sprintf("waited %s for a turn in the request budget of %s (%g requests/s, Options.RequestsPerSecond): %v",
		e.waited.Round(time.Millisecond), e.key, e.rps, e.err)
}

func (e *budgetWaitError) Unwrap() error { return e.err }

// wait takes one token, waiting for it within ctx, and returns how long it
// waited. A waiter whose ctx ends gives its reserved token back and returns
// an error that unwraps to ctx.Err(). The limiter runs on the wall clock: it
// paces real requests to a real BMC.
func (bg *budget) wait(ctx context.Context) (time.Duration, error) {
	if bg == nil {
		return 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	start := time.Now()
	r := bg.lim.ReserveN(start, 1)
	if !r.OK() { // burst < 1; resolve prevents it
		return 0, fmt.Errorf("request budget of %s admits no request (burst %d)", bg.key, bg.lim.Burst())
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
		return waited, &budgetWaitError{key: bg.key, rps: bg.rps, waited: waited, err: ctx.Err()}
	}
}
