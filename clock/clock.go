// Package clock provides the time source bmckit's packages take by injection:
// a real clock and a manually advanced fake for tests, so timeouts and backoff
// are tested without sleeping.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock is the time source of every bmckit package that waits: their own
// Clock names (job.Clock, bootstate.Clock, fake.Clock, redfish.Clock) are
// aliases of it, so any value with these two methods fits all of them.
type Clock interface {
	Source
	After(d time.Duration) <-chan time.Time
}

// Source is a time source that only tells the time, for packages that
// never wait (stagger.Clock, the simulators' Clock are aliases of it).
// Every Clock is a Source.
type Source interface {
	Now() time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Fake is a clock that moves only when Advance or Set is called. Safe for
// concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	added   chan struct{}
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start, added: make(chan struct{}, 1)} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After returns a channel that receives once the fake time reaches now+d.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := f.now.Add(d)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, waiter{at, ch})
	select {
	case f.added <- struct{}{}:
	default:
	}
	return ch
}

// Waiters is the number of pending After calls.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// WaiterAdded receives (at most one buffered signal) whenever After registers
// a waiter, so a test can advance the clock right after code starts waiting.
func (f *Fake) WaiterAdded() <-chan struct{} { return f.added }

// Advance moves the clock forward by d and fires every waiter that is due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	sort.Slice(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	keep := f.waiters[:0]
	var fire []chan time.Time
	for _, w := range f.waiters {
		if !w.at.After(now) {
			fire = append(fire, w.ch)
		} else {
			keep = append(keep, w)
		}
	}
	f.waiters = keep
	f.mu.Unlock()
	for _, ch := range fire {
		ch <- now
	}
}
