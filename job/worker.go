package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/internal/growstack"
	"github.com/bmckit/bmckit/storage"
)

// This file is the Runner's workers: the goroutines that run the steps of
// held jobs while their BMC calls are in flight (bounded by Config.Workers,
// reused across steps, retired when idle), one step of a job, and the
// persist function that writes its record by compare-and-swap.

// stepOutcome is what a step reports back to the loop.
type stepOutcome struct {
	h    *heldSystem
	j    *Job  // the job as this step left it; nil: reload
	rev  int64 // j's revision
	res  StepResult
	err  error
	done bool // completed, or deleted: release the system
	// worker ran the step and waits for the next (nil: not a worker's).
	worker *stepWorker
}

// step loads the job if needed (j nil) and runs one Step under ctx, which
// ends when the lease's validity does.
func (r *Runner) step(ctx context.Context, h *heldSystem, j *Job, rev int64) stepOutcome {
	o := stepOutcome{h: h}
	if j == nil {
		rec, err := r.cfg.Store.Get(ctx, r.jobKey(h.job))
		if errors.Is(err, storage.ErrNotFound) {
			o.done = true // deleted: nothing left to run
			return o
		}
		if err != nil {
			o.err = err
			return o
		}
		j = new(Job)
		if err := unmarshalRecord(rec.Value, j); err != nil {
			r.log.Error(err, "decoding stored job failed; leaving it", "job", h.job)
			o.done = true
			return o
		}
		rev = rec.Revision
	}
	if j.Completed() {
		o.j, o.rev, o.done = j, rev, true
		return o
	}
	// The step adds the job's name itself: its logger here names the
	// system only, so no line carries "job" twice.
	res, err := r.stepper.Step(logr.NewContext(ctx, r.log.WithValues("system", h.sys)), j, r.persister(h.job, &rev))
	o.res, o.err = res, err
	switch {
	case err == nil:
		o.j, o.rev, o.done = j, rev, res.Done
	case errors.Is(err, storage.ErrNotFound):
		o.done = true // deleted
	}
	return o
}

// persister returns the PersistFunc of job name: a compare-and-swap on its
// record at *rev, which it advances. The revisions it writes are noted, so
// the scheduler skips their change events without decoding them.
func (r *Runner) persister(name string, rev *int64) PersistFunc {
	key := r.jobKey(name)
	return func(ctx context.Context, j *Job) error {
		var n int64
		err := encodePooled(j, func(data []byte) error {
			var err error
			n, err = r.cfg.Store.Update(ctx, key, data, *rev)
			if err == nil && r.cfg.OnUpdate != nil {
				var cp Job // a deep copy: the step goes on mutating j
				if unmarshalRecord(data, &cp) == nil {
					defer r.cfg.OnUpdate(cp)
				}
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("persisting job %q: %w", name, err)
		}
		*rev = n
		r.own.note(name, n)
		if j.Completed() {
			r.signalDone(name, j) // Wait returns completed jobs only
		}
		return nil
	}
}

// completeWithoutBMC completes a job whose step touches no BMC (canceled
// before it started, or with an invalid BMC address) without its system's
// lock. A concurrent writer makes the compare-and-swap fail and the job is
// looked at again on a later scan.
func (r *Runner) completeWithoutBMC(ctx context.Context, name string) {
	j, rev, err := r.load(ctx, name)
	if err != nil || j.Completed() {
		return
	}
	if _, epErr := r.stepper.eps.parse(j.Spec.BMC); epErr == nil && !(j.CancelRequested && j.Status.StartTime == nil) {
		return
	}
	_, err = r.stepper.Step(ctx, j, r.persister(name, &rev))
	if err != nil && ctx.Err() == nil && !errors.Is(err, storage.ErrConflict) {
		r.log.Error(err, "completing a job that needs no BMC failed; will retry", "job", name)
	}
}

// launchDue starts steps for due jobs while workers are free. A job whose
// lease lapsed waits for its renewal instead.
func (l *loop) launchDue(now time.Time) {
	for l.running < l.r.cfg.Workers {
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
		w := stepWork{ctx: ctx, cancel: cancel, h: h, j: h.j, rev: h.rev}
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
	j      *Job
	rev    int64
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
		o := l.r.step(w.ctx, w.h, w.j, w.rev)
		w.h.watch.Disarm()
		w.cancel()
		o.worker = sw
		l.steps <- o
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
