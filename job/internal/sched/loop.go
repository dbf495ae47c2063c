package sched

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/internal/dueheap"
	"github.com/bmckit/bmckit/job/internal/fanout"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// This file is the engine's event loop. One goroutine owns all scheduling
// state: the per-system queues, the systems this runner holds, and a timer
// heap of when each held job is due for its next step. A job that waits (for
// a power change to land, a boot, a retry) is an entry in the heap and costs
// no goroutine; a due job's step runs on a worker goroutine (workers.go,
// reused across steps, see (*loop).worker), bounded by Config.Workers, so
// Workers bounds concurrent BMC calls, not jobs.

// heldSystem is a system whose lock this runner holds, with the job it runs.
type heldSystem struct {
	sys   string
	ep    bmc.Endpoint
	epKey string
	job   string
	log   logr.Logger

	lockRev      int64
	until        time.Time          // lease validity, by this runner's clock
	fence        syslock.Fence      // until, as the bmc.Fence of every request for this system
	fctx         context.Context    // the loop's ctx with fence: the parent of each step's
	watch        syslock.LapseWatch // cancels the step in flight when the fence lapses
	renewFailing bool

	copy  Copy // the job as last loaded or written; zero: load it before the next step
	stale bool // another writer changed the job during the step in flight

	dueheap.Entry // when the next step is due, in the loop's timer heap

	running   bool // a step is in flight
	woken     bool // woken (StepperConfig.Wake) while its step was in flight
	cancel    context.CancelFunc
	storeErrs int
	lost      bool
	done      bool // the job completed (or was deleted)
	// completedSeen: the scan saw the job completed and left it in the
	// queue for drop to take out (scan, queue.go).
	completedSeen bool
}

// DueEntry implements dueheap.Item.
func (h *heldSystem) DueEntry() *dueheap.Entry { return &h.Entry }

// loop is the state of one Run.
type loop struct {
	e    *Engine
	ctx  context.Context
	held map[string]*heldSystem // by system
	// perEndpoint counts held systems (and claims in flight) per endpoint.
	perEndpoint map[string]int
	// retryAt is when to try again to claim a system another runner holds.
	retryAt map[string]time.Time
	// parked holds, per endpoint, systems waiting for a place under
	// EndpointConcurrency.
	parked   map[string]map[string]struct{}
	due      dueheap.Heap[*heldSystem]
	fenced   map[*heldSystem]bool // due, but the lease lapsed: waiting for renewal
	running  int
	steps    chan stepOutcome
	idle     []*stepWorker // workers waiting for a step; idle[0] waited longest
	claims   chan claimBatch
	renewals chan []renewal
	claiming bool
	pace     pace // how many jobs to keep in a step at once (pace.go)
	// claimWanted: claim was asked for while a round was in flight.
	claimWanted bool
	renewing    bool
	cands       []string // scratch for claim
	// handovers receives the outcome of passing a held system's lock from
	// a completed job to the next queued one (handOver); handing holds
	// those systems meanwhile, which no claim may take.
	handovers chan claimed
	handing   map[string]bool

	nextScan  time.Time
	nextRenew time.Time
	nextFence time.Time      // the earliest lease validity end among held systems
	fenceBase time.Time      // the base of the held systems' fences
	wg        sync.WaitGroup // steps and background releases
	queued    queueEvents    // what Observer.Queue was told
}

// Run runs the engine until ctx is done, then waits for in-flight steps to
// stop and releases its system locks (keeping each unfinished job as its
// system's holder, so the next runner resumes it first). It returns nil
// after a clean stop. An Engine runs once.
func (e *Engine) Run(ctx context.Context) error {
	l := &loop{
		e: e, ctx: ctx, held: map[string]*heldSystem{}, fenced: map[*heldSystem]bool{},
		perEndpoint: map[string]int{}, retryAt: map[string]time.Time{}, parked: map[string]map[string]struct{}{},
		steps: make(chan stepOutcome, 64), claims: make(chan claimBatch, 1), renewals: make(chan []renewal, 1),
		handovers: make(chan claimed, 64), handing: map[string]bool{},
		pace: newPace(e.cfg.LeaseDuration, e.cfg.Workers),
	}
	now := e.cfg.Clock.Now()
	l.fenceBase = now
	e.cfg.Health.Start(now)
	defer e.cfg.Health.Stop()
	l.nextRenew = now.Add(e.cfg.LeaseDuration / 3)
	if _, ok := e.cfg.Store.(storage.ChangeFeed); !ok {
		e.log.Info("the Store has no change feed (storage.ChangeFeed): every scan lists all jobs, which costs time in proportion to the jobs stored; a wrapper around a store should pass Changes through")
	}
	// Count the live replicas before claiming (job/internal/membership).
	sctx, cancel := context.WithTimeout(ctx, e.storeCallTimeout())
	e.members.Start(sctx)
	cancel()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		e.sweep.Run(ctx) // job/internal/locksweep
	}()
	defer func() {
		l.stop()
		e.members.Stop(ctx)
		e.fresh.close()
		_ = e.jobs.Close(context.WithoutCancel(ctx))
		l.queued.report(e.cfg.Queue, len(e.queue.jobs), 0, 0) // stopped: nothing held, no step in flight
	}()
	for {
		now := e.cfg.Clock.Now()
		e.cfg.Health.Turn(now)
		if !now.Before(l.nextScan) {
			l.scan()
			l.nextScan = e.cfg.Clock.Now().Add(e.cfg.ScanInterval)
		}
		if !l.renewing && !now.Before(l.nextRenew) {
			l.renew()
			l.heartbeat() // replicas.go
		}
		if !l.nextFence.IsZero() && !now.Before(l.nextFence) {
			l.fence(now)
		}
		l.launchDue(now)
		l.retireIdle(now)
		l.queued.report(e.cfg.Queue, len(e.queue.jobs), len(l.held), l.running)
		wait := l.nextScan.Sub(now)
		if !l.renewing {
			wait = min(wait, l.nextRenew.Sub(now))
		}
		if !l.nextFence.IsZero() {
			wait = min(wait, l.nextFence.Sub(now))
		}
		if first, ok := l.due.Peek(); ok && l.running < e.cfg.Workers {
			wait = min(wait, first.Due().Sub(now))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-e.wake:
			l.nextScan = time.Time{}
		case o := <-l.steps:
			l.stepped(o)
		case <-e.wakes.ch:
			l.wakeJobs(e.wakes.take())
		case b := <-l.claims:
			l.claimed(b.cs, b.last)
			if b.last {
				l.claimAgain() // replicas.go
			}
		case c := <-l.handovers:
			l.handedOver(c)
		case rs := <-l.renewals:
			l.renewed(rs)
		case <-e.cfg.Clock.After(max(wait, 0)):
		}
	}
}

// endpointDone returns a system's place in its endpoint's budget.
func (l *loop) endpointDone(epKey string) {
	if l.perEndpoint[epKey]--; l.perEndpoint[epKey] <= 0 {
		delete(l.perEndpoint, epKey)
	}
	// The systems parked at this endpoint's limit may be claimed again.
	for sys := range l.parked[epKey] {
		l.e.queue.free[sys] = struct{}{}
	}
	delete(l.parked, epKey)
}

// noteUntil keeps nextFence at the earliest lease validity end.
func (l *loop) noteUntil(t time.Time) {
	if l.nextFence.IsZero() || t.Before(l.nextFence) {
		l.nextFence = t
	}
}

// fence stops work on every held system whose lease's validity ended: its
// in-flight step is canceled (no BMC request goes out after this), its BMC
// connection closed within the lease's margin (so a runner that takes over is
// alone on the BMC), and it waits for a renewal to succeed.
func (l *loop) fence(now time.Time) {
	l.nextFence = time.Time{}
	for _, h := range l.held {
		if h.lost {
			continue
		}
		if now.Before(h.until) {
			l.noteUntil(h.until)
			continue
		}
		if l.fenced[h] {
			continue
		}
		h.log.Info("system lock not renewed in time; pausing BMC calls until it is")
		l.fenced[h] = true
		l.due.Remove(h)
		if h.running {
			h.cancel()
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.releaseConn(h) // under the lapsed fence: nothing is sent
		}()
	}
}

// releaseConn closes the BMC connection of h's job under h's fence: a
// logout goes out only while the lease is valid (a lapsed or lost lease's
// session is left to expire on the BMC; the fence admits nothing).
func (l *loop) releaseConn(h *heldSystem) {
	ctx := bmc.WithFence(context.WithoutCancel(l.ctx), &h.fence)
	_ = l.e.jobs.Release(ctx, h.job, h.ep.String())
}

// schedule makes h due at t (or earlier, if it already is).
func (l *loop) schedule(h *heldSystem, t time.Time) {
	if h.running || h.done || h.lost {
		return
	}
	if l.fenced[h] {
		return // due once its lease is renewed
	}
	if h.Queued() && !t.Before(h.Due()) {
		return
	}
	l.due.Set(h, t)
}

// stepped takes in one step's outcome.
func (l *loop) stepped(o stepOutcome) {
	e, h := l.e, o.h
	if o.worker != nil {
		o.worker.since = e.cfg.Clock.Now()
		l.idle = append(l.idle, o.worker)
	}
	h.running, h.cancel = false, nil
	woken := h.woken
	h.woken = false
	l.running--
	now := e.cfg.Clock.Now()
	h.copy = o.Copy
	if h.stale {
		// Another writer changed the job while the step ran; a step that
		// did not write (a poll) would not have noticed.
		h.copy, h.stale = Copy{}, false
		if o.Err == nil && !o.Done {
			o.After = 0
		}
	}
	switch {
	case h.lost:
		l.drop(h, false)
		return
	case o.Done:
		h.done = true
		l.drop(h, true)
		return
	case o.Err == nil:
		h.storeErrs = 0
		l.schedule(h, now.Add(o.After))
		if woken { // an event came during the step: look again now
			l.schedule(h, now)
		}
	case errors.Is(o.Err, storage.ErrConflict):
		h.copy = Copy{} // changed under us (cancel, spec edit): reload at once
		l.schedule(h, now)
	case l.ctx.Err() != nil:
		h.copy = Copy{}
	case l.fenced[h]:
		h.copy = Copy{} // the lease lapsed mid-step; the status may be half written
	default:
		h.copy = Copy{}
		h.storeErrs++
		if h.storeErrs == 1 || h.storeErrs%20 == 0 {
			e.log.Error(o.Err, "step failed; will retry", "job", h.job, "failures", h.storeErrs)
		}
		l.schedule(h, now.Add(storeRetryDelay(h.storeErrs)))
	}
}

// drop forgets a held system: its job completed (the lock is deleted), or
// the lock was lost (nothing to release). The job's BMC connection is closed
// first, so the next job or runner is alone on the BMC.
func (l *loop) drop(h *heldSystem, completed bool) {
	e := l.e
	delete(l.held, h.sys)
	if completed || h.completedSeen {
		// The queue learns of other runners' completions from the change
		// feed; this runner's own writes are skipped there, and the
		// completions of the jobs it holds are left for here (scan).
		e.queue.remove(h.job)
	}
	delete(l.fenced, h)
	l.due.Remove(h)
	if h.lost {
		h.fence.Close()
	}
	if completed && !h.lost && l.ctx.Err() == nil && len(e.queue.bySys[h.sys]) > 0 && len(l.parked[h.epKey]) == 0 &&
		!e.members.GiveBack(len(l.held)+len(l.handing)+1, len(e.queue.bySys)) {
		l.handOver(h, e.queue.bySys[h.sys][0])
		e.jobs.Signal(h.job)
		return
	}
	l.endpointDone(h.epKey)
	e.sweep.Drop(h.sys)
	if len(e.queue.bySys[h.sys]) > 0 {
		e.queue.free[h.sys] = struct{}{}
	}
	l.wg.Add(1)
	deadline := e.cfg.Clock.Now().Add(e.cfg.LeaseDuration)
	go func() {
		defer l.wg.Done()
		l.releaseConn(h)
		h.fence.Close()
		if completed && !h.lost {
			e.release(l.ctx, h.sys, h.job, h.lockRev, true, deadline)
			e.Poke() // the system may have more jobs
		}
	}()
	e.jobs.Signal(h.job)
}

// handOver passes the lock of h's system, whose job completed, to next, the
// system's first queued job, in one compare-and-swap of the lock record
// (holder next, this runner's lease) instead of a delete and a new claim,
// and keeps the system's place under EndpointConcurrency: jobs queued on
// one system follow each other without a claim round. The order rule is the
// claim's: next is the oldest job this runner knows for the system. drop
// hands over only when no other system waits for a place at the endpoint
// (parked), so a long queue on one system does not keep its neighbours
// waiting. The completed job's BMC connection is closed as after any job
// (its completion was written after the close). If the write fails (the
// lease was taken over, the store refused), the system is claimed again the
// usual way (handedOver).
func (l *loop) handOver(h *heldSystem, next *queued) {
	e := l.e
	l.handing[h.sys] = true
	want := claimWant{sys: h.sys, head: next.name, ep: next.ep}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.releaseConn(h)
		h.fence.Close()
		sent := e.cfg.Clock.Now()
		rev, err := e.locks.Write(l.ctx, h.sys, syslock.Record{Holder: next.name, Owner: e.cfg.Owner}, h.lockRev, e.cfg.LeaseDuration)
		if err != nil && !syslock.LostRace(err) && l.ctx.Err() == nil {
			e.log.Error(err, "passing the system lock to the next job failed; will claim it again", "system", h.sys, "job", next.name)
		}
		l.handovers <- claimed{claimWant: want, job: next.name, rev: rev, sent: sent, ok: err == nil}
	}()
}

// handedOver takes in a handover's outcome: the next job holds the system,
// or the system goes back to claiming (as after a failed claim).
func (l *loop) handedOver(c claimed) {
	delete(l.handing, c.sys)
	if !c.ok {
		l.e.sweep.Drop(c.sys)
	}
	l.claimed([]claimed{c}, false)
}

// renew starts renewing every held lock in the background.
func (l *loop) renew() {
	now := l.e.cfg.Clock.Now()
	hs := l.renewable(now)
	if len(hs) == 0 {
		l.nextRenew = now.Add(l.e.cfg.LeaseDuration / 3)
		return
	}
	l.renewing = true
	go func() {
		// A renewal that has not returned within a lease's validity can
		// grant none (validity counts from its sending).
		ctx, cancel := context.WithTimeout(l.ctx, l.e.storeCallTimeout())
		defer cancel()
		l.e.renewAll(ctx, hs, l.renewals)
	}()
}

// renewable returns the held locks a renewal round at now renews. A lock
// written less than LeaseDuration/12 ago waits for the next round, a third
// of a lease later: its renewal is then sent at most 5/12 of a lease after
// its last write, with 5/12 of a lease of validity left for it to land (the
// validity is 5/6 of a lease; renewing every lock in every round left
// half a lease). Most jobs end within seconds of their claim; renewing
// their locks anyway cost a write each that the release right after made
// moot, and a conflict for the release when the renewal landed between the
// two (docs/benchmarks.md).
func (l *loop) renewable(now time.Time) []*heldSystem {
	lease := l.e.cfg.LeaseDuration
	fresh := lease - syslock.Margin(lease) - lease/12 // validity left at LeaseDuration/12 of age
	var hs []*heldSystem
	for _, h := range l.held {
		if !h.lost && h.until.Sub(now) <= fresh {
			hs = append(hs, h)
		}
	}
	return hs
}

// renewed takes in a renewal batch: extended leases, lost ones, and failures
// to retry soon.
func (l *loop) renewed(rs []renewal) {
	e := l.e
	l.renewing = false
	now := e.cfg.Clock.Now()
	failing := false
	for _, x := range rs {
		h := x.h
		if l.held[h.sys] != h {
			continue // dropped meanwhile
		}
		switch {
		case x.err == nil:
			e.cfg.Health.Store(now, nil)
			h.lockRev, h.until = x.rev, e.validUntil(x.sent)
			h.fence.Set(h.until)
			l.noteUntil(h.until)
			if h.renewFailing {
				e.log.Info("system lock renewed after store errors", "system", h.sys, "job", h.job)
			}
			h.renewFailing = false
			if l.fenced[h] {
				delete(l.fenced, h)
				l.schedule(h, now)
			}
		case l.ctx.Err() != nil:
		case syslock.LostRace(x.err):
			e.log.Info("lost the system lock to another runner; stopping the job here", "system", h.sys, "job", h.job)
			h.lost = true
			h.fence.Close()
			if f := e.cfg.LeaseLost; f != nil {
				f(observe.LeaseEvent{System: h.sys, Job: h.job})
			}
			if h.running {
				h.cancel() // stepped drops it
			} else {
				l.drop(h, false)
			}
		default:
			e.cfg.Health.Store(now, x.err)
			if !h.renewFailing {
				e.log.Error(x.err, "renewing the system lock failed; will retry", "system", h.sys, "job", h.job)
			}
			h.renewFailing = true
			failing = true
		}
	}
	every := e.cfg.LeaseDuration / 3
	if failing {
		every = max(e.cfg.LeaseDuration/30, 100*time.Millisecond)
	}
	l.nextRenew = now.Add(every)
}

// stop waits for in-flight steps (their ctx is done), then releases every
// held lock: deleted for completed jobs, and kept with the job as holder and
// no owner for unfinished ones, so the next runner resumes them at once.
func (l *loop) stop() {
	e := l.e
	for l.running > 0 {
		l.stepped(<-l.steps)
	}
	for l.claiming {
		b := <-l.claims
		l.claimed(b.cs, b.last) // so their locks are released below
	}
	for len(l.handing) > 0 {
		l.handedOver(<-l.handovers) // likewise
	}
	if l.renewing {
		l.renewed(<-l.renewals)
	}
	// One deadline for every release: with the store down, each retries
	// until it, so the stop ends within a lease. (A deadline per release
	// made the batches of fanout.Do wait a lease each, one after the
	// other: 2 minutes for 922 locks; bench/fleet -crash-at.)
	deadline := e.cfg.Clock.Now().Add(e.cfg.LeaseDuration)
	hs := make([]*heldSystem, 0, len(l.held))
	for _, h := range l.held {
		hs = append(hs, h)
	}
	fanout.Do(len(hs), func(i int) {
		h := hs[i]
		l.releaseConn(h)
		h.fence.Close()
		if !h.lost {
			e.release(l.ctx, h.sys, h.job, h.lockRev, h.done, deadline)
		}
	})
	// Every step's outcome is in, so every worker is idle.
	for _, sw := range l.idle {
		sw.work <- stepWork{}
	}
	l.idle = nil
	l.wg.Wait()
}

// wakeJobs makes the woken jobs this runner holds due now; a job whose step
// is in flight is looked at again right after it.
func (l *loop) wakeJobs(names map[string]struct{}) {
	now := l.e.cfg.Clock.Now()
	for _, h := range l.held {
		if _, ok := names[h.job]; !ok {
			continue
		}
		if h.running {
			h.woken = true
			continue
		}
		l.schedule(h, now)
	}
}
