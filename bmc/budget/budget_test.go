package budget

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// frozen is a rate with no refill during a test: the burst is all there is.
const frozen = 0.001

// spend takes every token of b's burst, failing the test if one waits.
func spend(t *testing.T, b *Budget, n int) {
	t.Helper()
	for i := range n {
		if waited, err := b.Wait(context.Background()); err != nil || waited != 0 {
			t.Fatalf("token %d of a burst of %d: waited %s, %v; want at once", i+1, n, waited, err)
		}
	}
}

// noTurn checks that b has no token left: a wait ends with its ctx.
func noTurn(t *testing.T, b *Budget) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on a spent budget: %v, want the ctx's DeadlineExceeded", err)
	}
}

// One budget per key: sessions acquiring one key share it, another key
// has its own.
func TestSharedPerKey(t *testing.T) {
	s := NewSet(frozen, 2)
	a1, rel1 := s.Acquire("a:443")
	defer rel1()
	a2, rel2 := s.Acquire("a:443")
	defer rel2()
	b, relB := s.Acquire("b:443")
	defer relB()
	if a1 == nil || a1 != a2 || b == nil || b == a1 || s.Len() != 2 {
		t.Fatalf("budgets a1 %p a2 %p b %p, %d in the set; want a1 == a2 != b, 2", a1, a2, b, s.Len())
	}
	spend(t, a1, 1)
	spend(t, a2, 1) // the second token of the shared burst
	noTurn(t, a1)
	noTurn(t, a2)
	spend(t, b, 2) // untouched by a's
}

// A budget is dropped when its last session releases it (release is
// idempotent); the next session starts with a full bucket.
func TestReleaseOnLastClose(t *testing.T) {
	s := NewSet(frozen, 1)
	a1, rel1 := s.Acquire("a:443")
	_, rel2 := s.Acquire("a:443")
	spend(t, a1, 1)
	rel1()
	rel1() // idempotent: must not release rel2's reference
	if n := s.Len(); n != 1 {
		t.Fatalf("after one of two sessions released (twice) the set holds %d budgets, want 1", n)
	}
	a3, rel3 := s.Acquire("a:443")
	if a3 != a1 {
		t.Fatal("a session acquired while another still holds the budget got a new one")
	}
	rel3()
	rel2()
	if n := s.Len(); n != 0 {
		t.Fatalf("after every session released the set holds %d budgets, want 0", n)
	}
	a4, rel4 := s.Acquire("a:443")
	defer rel4()
	if a4 == a1 {
		t.Fatal("a session after the last release got the dropped budget")
	}
	spend(t, a4, 1) // a full bucket
}

// A waiter whose ctx ends gets an error naming the budget that unwraps to
// the ctx's, and gives its reserved token back.
func TestCtxEndReturnsToken(t *testing.T) {
	s := NewSet(frozen, 1)
	b, release := s.Acquire("a:443")
	defer release()
	spend(t, b, 1)
	before := b.lim.Tokens()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	waited, err := b.Wait(ctx)
	var we *WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) || we.Key != "a:443" || we.RPS != frozen {
		t.Fatalf("wait beyond the budget: %#v; want a *WaitError for a:443 at %g/s unwrapping to DeadlineExceeded", err, frozen)
	}
	if waited < 10*time.Millisecond || we.Waited != waited {
		t.Errorf("waited %s (error says %s), want about the ctx's 20ms", waited, we.Waited)
	}
	if msg := err.Error(); !strings.Contains(msg, "request budget of a:443") || !strings.Contains(msg, "Options.RequestsPerSecond") {
		t.Errorf("error %q: want it to name the budget, its endpoint and the option", msg)
	}
	// Without the token back the bucket would be a whole token further in
	// debt (-1); the refill meanwhile is 0.001/s.
	if after := b.lim.Tokens(); after < before-0.01 {
		t.Errorf("tokens %.3f after a cancelled wait, %.3f before it: the reserved token was not given back", after, before)
	}

	// A ctx already done takes no token and does not wait.
	b2, release2 := s.Acquire("b:443")
	defer release2()
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if waited, err := b2.Wait(done); !errors.Is(err, context.Canceled) || waited != 0 {
		t.Fatalf("wait with a done ctx: waited %s, %v; want at once with context.Canceled", waited, err)
	}
	spend(t, b2, 1)
}

// A rate <= 0 (the drivers' negative RequestsPerSecond) means no budget: a
// nil *Budget that never waits, and nothing kept in the set.
func TestUnlimited(t *testing.T) {
	for _, s := range []*Set{NewSet(-1, 1), NewSet(0, 1), nil} {
		b, release := s.Acquire("a:443")
		if b != nil {
			t.Fatalf("unlimited set %v: Acquire returned a budget", s)
		}
		for range 1000 {
			if waited, err := b.Wait(context.Background()); waited != 0 || err != nil {
				t.Fatalf("nil budget: waited %s, %v; want at once", waited, err)
			}
		}
		release()
		release()
		if n := s.Len(); n != 0 {
			t.Errorf("unlimited set holds %d budgets, want 0", n)
		}
	}
}

// A burst below 1 admits no request (the drivers refuse such options).
func TestZeroBurst(t *testing.T) {
	b, release := NewSet(10, 0).Acquire("a:443")
	defer release()
	if _, err := b.Wait(context.Background()); err == nil || !strings.Contains(err.Error(), "admits no request") {
		t.Fatalf("wait on a budget of burst 0: %v, want an error saying it admits no request", err)
	}
}

// Counter counts the waits, a wait that ended with its ctx included, and
// not the requests that went at once.
func TestCounter(t *testing.T) {
	b, release := NewSet(5, 1).Acquire("a:443") // a token every 200ms
	defer release()
	var c Counter
	if err := c.Wait(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if c.Throttled() != 0 || c.ThrottleWait() != 0 {
		t.Fatalf("after a request that went at once: %d throttled, %s; want none", c.Throttled(), c.ThrottleWait())
	}
	if err := c.Wait(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if c.Throttled() != 1 || c.ThrottleWait() <= 0 {
		t.Fatalf("after a request that waited its turn: %d throttled, %s; want 1 and its wait", c.Throttled(), c.ThrottleWait())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := c.Wait(ctx, b); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait beyond the budget with a 1ms ctx: %v, want DeadlineExceeded", err)
	}
	if c.Throttled() != 2 {
		t.Errorf("after a wait that ended with its ctx: %d throttled, want 2", c.Throttled())
	}
	if err := c.Wait(context.Background(), nil); err != nil || c.Throttled() != 2 {
		t.Errorf("no budget: %v, %d throttled; want nil, still 2", err, c.Throttled())
	}
}

// admit reserves n requests on b, the i-th arriving at arrive(i), and
// returns their admission times (no waiting: reserve only computes them).
func admit(t *testing.T, b *Budget, n int, arrive func(i int) time.Time) []time.Time {
	t.Helper()
	out := make([]time.Time, n)
	for i := range n {
		at, _, err := b.reserve(arrive(i))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = at
	}
	return out
}

// busiest is the largest number of admissions in any Window.
func busiest(ats []time.Time) int {
	best, lo := 0, 0
	for hi := range ats {
		for ats[hi].Sub(ats[lo]) >= Window {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// A lone job's request sequence on an idle endpoint (22 requests, 2 ms
// apart: an IPMI netboot with a re-login) is never delayed by the default
// shape (50/s, burst 25); after a quiet second the next job's is not
// either.
func TestLoneSequenceNotThrottled(t *testing.T) {
	b := newBudget("a:623", 50, 25)
	t0 := time.Unix(1_000_000, 0)
	for job := range 3 {
		start := t0.Add(time.Duration(job) * 2 * time.Second)
		arrive := func(i int) time.Time { return start.Add(time.Duration(i) * 2 * time.Millisecond) }
		for i, at := range admit(t, b, 22, arrive) {
			if !at.Equal(arrive(i)) {
				t.Fatalf("job %d request %d delayed by %s on an idle endpoint", job, i, at.Sub(arrive(i)))
			}
		}
	}
}

// A crowd (2000 requests arriving at once, and 2000 arriving 1 ms apart)
// never gets more than the rate out in any second, whatever the burst,
// and is served at about the rate (the first burst is served at once).
func TestCrowdHoldsRate(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, burst := range []int{1, 25, 50} {
		for _, gap := range []time.Duration{0, time.Millisecond} {
			b := newBudget("a:443", 50, burst)
			ats := admit(t, b, 2000, func(i int) time.Time { return t0.Add(time.Duration(i) * gap) })
			if got := busiest(ats); got > 50 {
				t.Errorf("burst %d, arrivals %s apart: %d requests in the busiest second, want <= 50", burst, gap, got)
			}
			span := ats[len(ats)-1].Sub(ats[0]).Seconds()
			if rate := float64(len(ats)-1) / span; rate < 45 || rate > 52 {
				t.Errorf("burst %d, arrivals %s apart: served at %.1f/s, want about 50", burst, gap, rate)
			}
		}
	}
	// Without the window a burst of 25 would let 75 out in the first second.
	b := newBudget("a:443", 50, 25)
	b.ring = nil
	if got := busiest(admit(t, b, 2000, func(int) time.Time { return t0 })); got <= 50 {
		t.Errorf("bucket alone: busiest second %d; the check cannot tell the window from the bucket", got)
	}
}

func TestWindowCap(t *testing.T) {
	for _, c := range []struct {
		rps   float64
		burst int
		want  int
	}{{50, 25, 50}, {50, 1, 50}, {10, 25, 25}, {0.5, 2, 2}, {1e9, 1, 0}} {
		if got := WindowCap(c.rps, c.burst); got != c.want {
			t.Errorf("WindowCap(%g, %d) = %d, want %d", c.rps, c.burst, got, c.want)
		}
	}
}
