package sched

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/storage"
)

// This file is the engine's queue: per system, the jobs waiting to run in
// submission order, fed by the scan of the store's change feed (which skips
// the runner's own writes without decoding them, ownWrites). Claiming a
// system for the head of its queue is claims.go; running a claimed job's
// steps is loop.go and workers.go.

// queued is an unfinished job in its system's queue.
type queued struct {
	name    string
	seq     int64 // the revision it was first seen at: its create revision if unstarted
	ep      bmc.Endpoint
	sys     string // ep.SystemKey(); "" when the BMC address is invalid
	started bool
	cancel  bool
}

// before orders a system's queue: a started job first (there is at most one
// per system), then submission order.
func (a *queued) before(b *queued) bool {
	if a.started != b.started {
		return a.started
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.name < b.name
}

// queue holds every unfinished job, by name and per system in order, and
// the systems that may be claimable (free: the loop drops held ones lazily).
type queue struct {
	parse func(bmcURL string) (bmc.Endpoint, error) // Jobs.Endpoint
	jobs  map[string]*queued
	bySys map[string][]*queued
	free  map[string]struct{}
}

func newQueue(parse func(string) (bmc.Endpoint, error)) *queue {
	return &queue{parse: parse, jobs: map[string]*queued{}, bySys: map[string][]*queued{}, free: map[string]struct{}{}}
}

// put adds or updates a job seen at revision rev.
func (q *queue) put(name string, h *Head, rev int64) *queued {
	e := q.jobs[name]
	if e == nil {
		e = &queued{name: name, seq: rev}
		if ep, err := q.parse(h.BMC); err == nil {
			e.ep, e.sys = ep, ep.SystemKey()
		}
		q.jobs[name] = e
	} else {
		q.unlink(e)
	}
	e.started = h.Started
	e.cancel = h.CancelRequested
	if e.sys != "" {
		list := q.bySys[e.sys]
		i := sort.Search(len(list), func(i int) bool { return e.before(list[i]) })
		list = append(list, nil)
		copy(list[i+1:], list[i:])
		list[i] = e
		q.bySys[e.sys] = list
		q.free[e.sys] = struct{}{}
	}
	return e
}

func (q *queue) remove(name string) {
	if e := q.jobs[name]; e != nil {
		q.unlink(e)
		delete(q.jobs, name)
	}
}

// unlink takes e out of its system's list. The head (the usual case: the
// job that ran and finished) goes by reslicing, not by moving the rest up,
// so a system with many jobs queued pays O(1) per finished job, not O(n).
func (q *queue) unlink(e *queued) {
	list := q.bySys[e.sys]
	for i, o := range list {
		if o != e {
			continue
		}
		if i == 0 {
			list[0] = nil // the backing array must not keep e alive
			list = list[1:]
		} else {
			list = append(list[:i], list[i+1:]...)
			list[:len(list)+1][len(list)] = nil
		}
		break
	}
	if len(list) == 0 {
		delete(q.bySys, e.sys)
	} else {
		q.bySys[e.sys] = list
	}
}

// ownWrites remembers the newest revision this runner wrote per job.
type ownWrites struct {
	mu  sync.Mutex
	rev map[string]int64
}

func (w *ownWrites) note(name string, rev int64) {
	w.mu.Lock()
	if rev > w.rev[name] {
		w.rev[name] = rev
	}
	w.mu.Unlock()
}

// covers reports whether the change of job name at revision rev is one this
// runner wrote (or older than one it wrote), like Engine.ownWrite, without
// forgetting anything: the change feed asks it while reading, before the
// scan sees the event. Only the scan forgets (ownWrite), and writes only
// raise a job's revision, so ownWrite later gives the same answer.
func (w *ownWrites) covers(name string, rev int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wr, ok := w.rev[name]
	return ok && rev <= wr
}

// ownWrite reports whether the change of job name at revision rev is one
// this runner wrote (or older than one it wrote).
func (e *Engine) ownWrite(name string, rev int64) bool {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	w, ok := e.own.rev[name]
	if ok && rev >= w {
		delete(e.own.rev, name) // caught up: nothing newer of ours to skip
	}
	return ok && rev <= w
}

// scan applies the store's changes to the queues, completes jobs that need no
// BMC, and starts claiming free systems. The runner's own writes are skipped
// without decoding them (their revisions are known).
func (l *loop) scan() {
	e := l.e
	// Store calls on the loop get a deadline: a store that hangs must not
	// stop the loop (the fence keeps requests safe without it, but
	// renewals, steps and stop wait for the loop).
	ctx, cancel := context.WithTimeout(l.ctx, e.storeCallTimeout())
	defer cancel()
	events, err := e.follower.Next(ctx)
	if l.ctx.Err() == nil {
		e.cfg.Health.Store(e.cfg.Clock.Now(), err)
	}
	if err != nil && l.ctx.Err() == nil {
		e.log.Error(err, "reading job changes failed; will retry")
	}
	prefix := e.cfg.KeyPrefix + "jobs/"
	e.fresh.saw(prefix, events) // before any claim can take a copy (freshjobs.go)
	var noBMC []string
	for _, ev := range events {
		name := ev.Key[len(prefix):]
		if ev.Type == storage.EventDelete {
			e.queue.remove(name)
			e.jobs.Signal(name)
			continue
		}
		if e.ownWrite(name, ev.Revision) {
			continue
		}
		if ev.Value == nil {
			// Left out by the feed as one of ours (Engine.follower's
			// SkipValues), yet not ours now: cannot happen while only the
			// scan forgets own writes; read it rather than drop the job.
			rec, err := e.cfg.Store.Get(l.ctx, ev.Key)
			if err != nil {
				if !errors.Is(err, storage.ErrNotFound) {
					e.log.Error(err, "reading a changed job failed", "key", ev.Key)
				}
				continue
			}
			ev.Value = rec.Value
		}
		h, err := e.jobs.Head(ev.Value)
		if err != nil {
			e.log.Error(err, "skipping undecodable job record", "key", ev.Key)
			e.queue.remove(name)
			continue
		}
		if h.Completed {
			e.jobs.Signal(name) // another replica completed it
			// It may have given the system back (replicas.go).
			l.completedElsewhere(name)
		}
		var held *heldSystem
		if q := e.queue.jobs[name]; q != nil {
			if hd := l.held[q.sys]; hd != nil && hd.job == name {
				// Changed under the job this runner runs (a cancel, a spec
				// edit): reload it, and look at it now (or after the step
				// in flight, which must not bring its stale copy back).
				hd.copy, hd.stale = Copy{}, true
				l.schedule(hd, e.cfg.Clock.Now())
				held = hd
			}
		}
		if h.Completed {
			if held != nil {
				// The job of a system this runner holds leaves the queue
				// when the system is dropped (drop), as it does when the
				// scan skips the completion as this runner's own: this one
				// may be, read before its step noted it (Wrote). Taken out
				// now, its system would count as held but not claimable,
				// and the claim round's share (claimable systems minus held
				// ones) would fall short by as many: at a wave of 46
				// completions, a job submitted then waited a ScanInterval
				// for its claim (bench/rollout).
				held.completedSeen = true
				continue
			}
			e.queue.remove(name)
			continue
		}
		q := e.queue.put(name, &h, ev.Revision)
		if (q.cancel && !q.started) || q.sys == "" {
			noBMC = append(noBMC, name)
		}
	}
	for _, name := range noBMC {
		e.jobs.CompleteWithoutBMC(ctx, name)
	}
	l.claim()
}
