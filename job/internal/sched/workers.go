package sched

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/internal/growstack"
)

// This file is the engine's workers: the goroutines that run the steps of
// held jobs while their BMC calls are in flight (bounded by Config.Workers,
// reused across steps, retired when idle). A step itself is the job side's
// (Jobs.Step).

// stepOutcome is what a step reports back to the loop.
type stepOutcome struct {
	Outcome
	h *heldSystem
	// worker ran the step and waits for the next (nil: not a worker's).
	worker *stepWorker
}

// launchDue starts steps for due jobs while workers are free. A job whose
// lease lapsed waits for its renewal instead.
func (l *loop) launchDue(now time.Time) {
	for l.running < l.e.cfg.Workers {
		first, ok := l.due.Peek()
		if !ok || first.Due().After(now) {
			return
		}
		h := l.due.Pop()
		if !now.Before(h.until) {
			l.fenced[h] = true
			continue
		}
		// Every BMC request of the step is fenced by the lease (syslock.Fence),
		// asked right before it is written, whatever this loop is doing,
		// and the step's ctx ends when the lease lapses (renewals extend
		// it), by a timer of its own (h.watch). The loop also cancels the
		// step when it sees the lease lapse (fence).
		ctx, cancel := context.WithCancel(h.fctx)
		h.watch.Arm(cancel)
		h.running, h.cancel = true, cancel
		l.running++
		w := stepWork{ctx: ctx, cancel: cancel, h: h, copy: h.copy}
		if n := len(l.idle); n > 0 {
			sw := l.idle[n-1] // the most recently used: its stack is warm
			l.idle[n-1] = nil
			l.idle = l.idle[:n-1]
			sw.work <- w
		} else {
			sw := &stepWorker{work: make(chan stepWork, 1)}
			l.wg.Add(1)
			go l.worker(sw, w)
		}
	}
}

// stepWork is one step for a worker; a zero stepWork tells it to exit.
type stepWork struct {
	ctx    context.Context
	cancel context.CancelFunc
	h      *heldSystem
	copy   Copy
}

// stepWorker is a goroutine that runs steps. Its work channel has room for
// one step, so the loop never blocks handing one over.
type stepWorker struct {
	work  chan stepWork
	since time.Time // when it became idle, by the Runner's clock
}

// idleWorkerTimeout is how long a worker stays idle before the loop retires
// it.
const idleWorkerTimeout = 2 * time.Second

// worker runs steps: w, then the ones the loop hands it after each outcome.
// Workers outlive one step so that their stacks, grown by the first step
// (JSON, BMC calls), are reused: a goroutine per step spent ~10% of the
// Runner's CPU growing fresh stacks. The loop keeps the idle ones (stepped
// returns a worker to l.idle with its outcome, before any new step is
// launched, so there are never more workers than steps recently in flight)
// and retires those idle for idleWorkerTimeout or beyond maxIdleWorkers
// (retireIdle), and all of them when it stops. Workers still bounds steps in flight.
func (l *loop) worker(sw *stepWorker, w stepWork) {
	defer l.wg.Done()
	growstack.Grow()
	for w.h != nil {
		o := l.e.jobs.Step(w.ctx, w.h.job, w.h.sys, w.copy)
		w.h.watch.Disarm()
		w.cancel()
		l.steps <- stepOutcome{Outcome: o, h: w.h, worker: sw}
		w = <-sw.work
	}
}

// maxIdleWorkers bounds the idle workers kept. A step's worker is reused
// at once when its job has another step due; the idle ones beyond this are
// workers of jobs that completed or wait (a timer, an event), and keeping
// them would add a goroutine per such job to the one the job's lock
// release (drop) takes.
const maxIdleWorkers = 256

// retireIdle stops the workers idle since before now - idleWorkerTimeout,
// and the longest idle beyond maxIdleWorkers.
func (l *loop) retireIdle(now time.Time) {
	n := max(len(l.idle)-maxIdleWorkers, 0)
	for n < len(l.idle) && now.Sub(l.idle[n].since) >= idleWorkerTimeout {
		n++
	}
	if n > 0 {
		for _, sw := range l.idle[:n] {
			sw.work <- stepWork{}
		}
		rest := copy(l.idle, l.idle[n:])
		clear(l.idle[rest:])
		l.idle = l.idle[:rest]
	}
}
