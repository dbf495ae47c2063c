package syslock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
)

// This file holds the fence: a lease's validity as a bmc.Fence, which every
// driver asks immediately before it writes a request (bmc.Admit). It
// depends on nothing but the clock: not on the job Runner's loop, a renewal
// or a store call returning, so a process that was paused anywhere (GC, VM
// migration, SIGSTOP, a frozen container, a store call that hung) sends
// nothing once its lease may have lapsed. See docs/jobs.md, "The fence".

// Fence admits requests while its clock reads before the validity end
// it was last given. Validity is kept as nanoseconds since base, so an
// update is one atomic store (no allocation) and, on the wall clock, the
// comparison uses the monotonic reading of both times: a pause, or a step of
// the wall clock, cannot make a lapsed lease look valid.
type Fence struct {
	clk    clock.Clock
	base   time.Time
	system string
	until  atomic.Int64 // ns since base; <= 0: admits nothing
}

// NewFence returns a fence for system that admits nothing until Set; base
// is any time before the validity ends it will be given (the clock's Now).
func NewFence(c clock.Clock, base time.Time, system string) *Fence {
	f := &Fence{}
	f.Init(c, base, system)
	return f
}

// Init readies a fence that admits nothing until set (a held system's,
// which lives in the held struct).
func (f *Fence) Init(c clock.Clock, base time.Time, system string) {
	f.clk, f.base, f.system = c, base, system
}

// Set makes the fence admit requests until t (by the fence's clock).
func (f *Fence) Set(t time.Time) { f.until.Store(max(int64(t.Sub(f.base)), 0)) }

// Close makes the fence admit nothing any more (the lease was lost or
// released).
func (f *Fence) Close() { f.until.Store(0) }

// ValidFor is how long the fence admits requests from now; <= 0: none.
func (f *Fence) ValidFor() time.Duration {
	return time.Duration(f.until.Load() - int64(f.clk.Now().Sub(f.base)))
}

// Admit implements bmc.Fence.
func (f *Fence) Admit() error {
	if left := f.ValidFor(); left <= 0 {
		return &FencedError{System: f.system, Late: -left}
	}
	return nil
}

// FencedError is the error a request refused by a lease's fence reports: the
// lease (or lock) on System may have lapsed, Late ago. It wraps
// bmc.ErrFenced.
type FencedError struct {
	System string
	Late   time.Duration
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("request not sent: the lease on system %s may have lapsed %s ago (fenced)", e.System, e.Late.Round(time.Millisecond))
}

// Unwrap returns bmc.ErrFenced.
func (e *FencedError) Unwrap() error { return bmc.ErrFenced }

// FencedContext returns ctx carrying f, with a deadline at f's validity end
// (converted to the real clock, which context deadlines use, whatever clock
// the fence reads): a BMC call blocked in a read ends when the lease may
// have lapsed, and so does a store call made under it. For the controller
// path, whose lock is not renewed during a step.
func FencedContext(ctx context.Context, f *Fence) (context.Context, context.CancelFunc) {
	ctx = bmc.WithFence(ctx, f)
	return context.WithTimeout(ctx, max(f.ValidFor(), 0))
}

// LapseWatch cancels the step in flight of a held system when the system's
// fence lapses: for the Runner, whose renewals extend the fence while a step
// runs (a context's deadline cannot be moved). Its timer is the runtime's,
// not the Runner's loop's: it fires at the validity end and cancels the
// armed step unless a renewal extended the fence meanwhile (then it waits
// for the new end). One per held system, re-armed by each step, so a step
// allocates nothing for it. Like FencedContext's deadline, the timer runs on
// the real clock.
type LapseWatch struct {
	F      *Fence // the fence it watches; set before the first Arm
	mu     sync.Mutex
	t      *time.Timer
	cancel context.CancelFunc // the armed step's; nil when none is
}

// Arm makes w cancel the step whose ctx cancel ends when the fence lapses.
func (w *LapseWatch) Arm(cancel context.CancelFunc) {
	d := max(w.F.ValidFor(), 0)
	w.mu.Lock()
	w.cancel = cancel
	if w.t == nil {
		w.t = time.AfterFunc(d, w.fire)
	} else {
		w.t.Reset(d)
	}
	w.mu.Unlock()
}

// Disarm forgets the armed step (it ended).
func (w *LapseWatch) Disarm() {
	w.mu.Lock()
	w.cancel = nil
	if w.t != nil {
		w.t.Stop()
	}
	w.mu.Unlock()
}

func (w *LapseWatch) fire() {
	w.mu.Lock()
	cancel := w.cancel
	if cancel == nil {
		w.mu.Unlock()
		return
	}
	if left := w.F.ValidFor(); left > 0 {
		w.t.Reset(left) // renewed meanwhile
		w.mu.Unlock()
		return
	}
	w.cancel = nil
	w.mu.Unlock()
	cancel()
}
