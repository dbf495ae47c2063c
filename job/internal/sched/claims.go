package sched

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job/internal/fanout"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// This file claims systems for the engine: the lock write that takes a
// system for the head of its queue (queue.go) or for the unfinished job
// that holds it, many at once so a store with group commit batches them,
// and the loop's handling of the outcomes.

// claim takes system sys's lock for the job that must run on it next: the
// lock's holder if it is unfinished (a started job is resumed before any
// other), else head, the first of this runner's queue for sys. It returns
// that job, the lock's revision and when the lock write was sent.
func (e *Engine) claim(ctx context.Context, sys, head string) (job string, rev int64, sent time.Time, ok bool) {
	if !e.locks.Observed(sys) {
		// Most systems are free: try to create the lock first (one write,
		// no read). No lock record means no job holds the system: a lock is
		// deleted only after its holder completed.
		sent = e.cfg.Clock.Now()
		rev, err := e.locks.Write(ctx, sys, syslock.Record{Holder: head, Owner: e.cfg.Owner}, 0, e.cfg.LeaseDuration)
		if err == nil {
			return head, rev, sent, true
		}
		if !errors.Is(err, storage.ErrExists) {
			if ctx.Err() == nil {
				e.log.Error(err, "taking system lock failed; will retry", "system", sys)
			}
			return "", 0, time.Time{}, false
		}
	}
	cur, curRev, err := e.locks.Read(ctx, sys)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error(err, "reading system lock failed; will retry", "system", sys)
		}
		return "", 0, time.Time{}, false
	}
	job = head
	if !e.takeable(sys, cur, curRev) {
		return "", 0, time.Time{}, false
	}
	if cur.Holder != "" && e.locks.Ours(cur) && cur.Holder != head {
		// A started job is resumed before any other.
		unfinished, err := e.unfinished(ctx, cur.Holder)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Error(err, "reading the lock holder's job failed; will retry", "system", sys, "job", cur.Holder)
			}
			return "", 0, time.Time{}, false
		}
		if unfinished {
			job = cur.Holder
		}
	}
	sent = e.cfg.Clock.Now()
	rev, err = e.locks.Write(ctx, sys, syslock.Record{Holder: job, Owner: e.cfg.Owner}, curRev, e.cfg.LeaseDuration)
	if err != nil {
		if !syslock.LostRace(err) && ctx.Err() == nil {
			e.log.Error(err, "taking system lock failed; will retry", "system", sys)
		}
		return "", 0, time.Time{}, false
	}
	if cur.Owner != "" && cur.Owner != e.cfg.Owner {
		e.log.Info("took over an expired system lock", "system", sys, "previousOwner", cur.Owner, "job", job)
	}
	return job, rev, sent, true
}

// takeable reports whether this runner may take system sys's lock cur (at
// revision rev) now: it is free; or released (no owner), or this runner's
// own Owner's; or its lease was seen unchanged for a whole lease by this
// runner's clock. A lock whose holder is a job of another namespace
// (another KeyPrefix) is taken only so, whoever owns it: only that
// namespace's runners can resume its holder, so this runner waits for it
// to be freed or to expire, then takes the system for its own queue's
// head. It records lease observations (syslock.Table.Expired); claim and
// the replicas' watch (replicas.go) share it.
func (e *Engine) takeable(sys string, cur syslock.Record, rev int64) bool {
	switch {
	case rev == 0 || cur.Holder == "":
		return true
	case !e.locks.Ours(cur):
		return e.locks.Expired(sys, cur, rev)
	default:
		return cur.Owner == "" || cur.Owner == e.cfg.Owner || e.locks.Expired(sys, cur, rev)
	}
}

// unfinished reports whether job name exists and has not completed.
func (e *Engine) unfinished(ctx context.Context, name string) (bool, error) {
	rec, err := e.cfg.Store.Get(ctx, e.cfg.KeyPrefix+"jobs/"+name)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	h, err := e.jobs.Head(rec.Value)
	if err != nil {
		return false, nil // undecodable: it cannot be run
	}
	return !h.Completed, nil
}

// claim takes the locks of free systems with queued jobs, concurrently, in
// the background; claimed receives the results. It claims no more than this
// runner's share of the claimable systems (job/internal/membership); the
// locks of the others it only watches (replicas.go).
func (l *loop) claim() {
	if l.ctx.Err() != nil {
		return
	}
	now := l.e.cfg.Clock.Now()
	l.tick(now) // heartbeat listings (replicas.go)
	if l.claiming {
		// Asked again during a round (a job completed, a scan found
		// more): the round's end claims again, instead of the next scan
		// a ScanInterval later.
		l.claimWanted = true
		return
	}
	l.claimWanted = false
	e, m := l.e, l.e.members
	share := m.Share(len(e.queue.bySys)) - len(l.held) - len(l.handing)
	free := l.freeWorkers(now)
	room := min(share, free)
	var want []claimWant
	var watch []string
	if free < share {
		// The workers or the pace bound this round, not the share: the
		// systems beyond room wait for a worker, not for another replica,
		// so they are neither watched nor looked at. Looking at every queued
		// system in every round cost each round time in proportion to the
		// queue (rounds come with every completion): the square of the
		// fleet.
		for sys := range e.queue.free {
			if len(want) >= room {
				break
			}
			if !l.claimable(sys, now) {
				continue
			}
			if w, ok := l.reserve(sys); ok {
				want = append(want, w)
			}
		}
		m.ClearHints()
	} else {
		cands := l.cands[:0]
		for sys := range e.queue.free {
			if l.claimable(sys, now) {
				cands = append(cands, sys)
			}
		}
		if len(cands) > room {
			m.Prefer(cands, e.locks.Observed)
		}
		for _, sys := range cands {
			if len(want) >= room && !m.Overdue(sys, now) {
				watch = append(watch, sys)
				l.retryAt[sys] = now.Add(e.cfg.ScanInterval)
				continue
			}
			if w, ok := l.reserve(sys); ok {
				want = append(want, w)
			}
		}
		clear(cands)
		l.cands = cands[:0]
		m.ClearHints()
	}
	if len(want) == 0 && len(watch) == 0 {
		return
	}
	for _, w := range want {
		delete(e.queue.free, w.sys)
	}
	l.claiming = true
	// The round is held back by the pace when the pace, not the share, the
	// workers or the queue, left systems unclaimed.
	l.pace.roundStarts(len(want) >= room && room < share && room < l.e.cfg.Workers-l.running)
	go func() {
		ctx, cancel := context.WithTimeout(l.ctx, e.storeCallTimeout())
		defer cancel()
		e.claimAll(ctx, want, watch, l.claims)
	}()
}

// claimable reports whether sys, a system of the queue's free set, may be
// claimed in this round, and drops it from the set when it is held or has
// no job left.
func (l *loop) claimable(sys string, now time.Time) bool {
	e, m := l.e, l.e.members
	if l.held[sys] != nil || l.handing[sys] || len(e.queue.bySys[sys]) == 0 {
		delete(e.queue.free, sys)
		m.Forget(sys)
		return false
	}
	if t, ok := l.retryAt[sys]; ok && now.Before(t) {
		return false // held by another runner: look again at the next scan interval
	}
	return true
}

// reserve takes a place for sys's claim under its endpoint's
// EndpointConcurrency, or parks sys until a system of its endpoint is
// released.
func (l *loop) reserve(sys string) (claimWant, bool) {
	e := l.e
	head := e.queue.bySys[sys][0]
	epKey := head.ep.Key()
	if l.perEndpoint[epKey] >= e.cfg.EndpointConcurrency {
		delete(e.queue.free, sys)
		pk := l.parked[epKey]
		if pk == nil {
			pk = map[string]struct{}{}
			l.parked[epKey] = pk
		}
		pk[sys] = struct{}{}
		return claimWant{}, false
	}
	l.perEndpoint[epKey]++ // reserved; claimed() keeps or returns it
	return claimWant{sys: sys, head: head.name, ep: head.ep}, true
}

// freeWorkers is how many claimed jobs the workers could start now: a
// claimed job is due at once, and one that waits for a worker holds its
// lock for nothing, renewed every LeaseDuration/3, and keeps it from the
// replicas with workers to spare. At 100,000 queued jobs, claiming every
// system at once made the renewals of locks whose jobs waited for a worker
// the store's largest load and let leases lapse (docs/benchmarks.md).
// Jobs that wait on a timer (a boot, a power change) hold no worker and
// do not count.
func (l *loop) freeWorkers(now time.Time) int {
	// Jobs claimed in the last round may not have been launched yet:
	// launch what is due first, so that running counts them.
	l.launchDue(now)
	if first, ok := l.due.Peek(); ok && !first.Due().After(now) {
		return 0 // saturated: due jobs already wait for a worker
	}
	return max(min(l.e.cfg.Workers, l.pace.admit)-l.running, 0)
}

// claimed takes in the systems a claim round got so far; last says the
// round ended.
func (l *loop) claimed(cs []claimed, last bool) {
	for _, c := range cs {
		if c.ok {
			l.pace.note(c.took)
		}
	}
	if last {
		l.claiming = false
		if l.pace.roundEnded(l.e.cfg.Workers) || l.claimWanted {
			defer l.claim() // room to start more now
		}
	}
	e := l.e
	now := e.cfg.Clock.Now()
	for _, c := range cs {
		if !c.ok {
			l.endpointDone(c.ep.Key())
			if len(e.queue.bySys[c.sys]) > 0 {
				e.queue.free[c.sys] = struct{}{}
				l.retryAt[c.sys] = now.Add(e.cfg.ScanInterval)
			}
			continue
		}
		delete(l.retryAt, c.sys)
		h := &heldSystem{sys: c.sys, ep: c.ep, epKey: c.ep.Key(), job: c.job, lockRev: c.rev, until: l.e.validUntil(c.sent),
			log: l.e.log.WithValues("job", c.job, "system", c.sys)}
		h.fence.Init(e.cfg.Clock, l.fenceBase, c.sys)
		h.fence.Set(h.until)
		h.fctx, h.watch.F = bmc.WithFence(l.ctx, &h.fence), &h.fence
		if fc, ok := e.fresh.take(c.job); ok {
			h.copy = fc // as Submit created it: no read back (freshjobs.go)
		}
		l.held[c.sys] = h
		e.sweep.Hold(c.sys)
		l.noteUntil(h.until)
		l.schedule(h, now)
	}
}

// claimWant is a system to claim, with the first job of this runner's queue
// for it.
type claimWant struct {
	sys  string
	head string
	ep   bmc.Endpoint
}

// claimed is the result of one claim.
type claimed struct {
	claimWant
	job  string // the job to run: the lock's unfinished holder, or head
	rev  int64
	sent time.Time
	ok   bool
	took time.Duration // the lock write's round trip (pace.go)
}

// claimBatch is what a claim round got since its last report; last says
// the round ended (its watch reads too).
type claimBatch struct {
	cs   []claimed
	last bool
}

// claimFanout bounds the lock writes of one claim round in flight at once:
// high enough that a store with group commit takes a fleet's claims in a
// few commits (at 256, 10,000 claims on bbolt took some 40 commits in a
// row and the last job started seconds after the first).
const claimFanout = 4096

// claimAll claims systems concurrently, so a store with group commit
// batches the lock writes into few commits, then watches the systems of
// watch (replicas.go). It reports the claims on out as they land, a batch
// at a time while the loop is busy, so a job starts as soon as its own
// claim is written rather than when the round's slowest is; the last batch
// says the round ended.
func (e *Engine) claimAll(ctx context.Context, want []claimWant, watch []string, out chan<- claimBatch) {
	var mu sync.Mutex
	var landed []claimed
	more := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fanout.DoLimit(len(want), claimFanout, func(i int) {
			w := want[i]
			job, rev, sent, ok := e.claim(ctx, w.sys, w.head)
			took := e.cfg.Clock.Now().Sub(sent)
			mu.Lock()
			landed = append(landed, claimed{claimWant: w, job: job, rev: rev, sent: sent, ok: ok, took: took})
			mu.Unlock()
			select {
			case more <- struct{}{}:
			default:
			}
		})
		e.watch(ctx, watch)
	}()
	for last := false; !last; {
		select {
		case <-more:
		case <-done:
			last = true
		}
		mu.Lock()
		cs := landed
		landed = nil
		mu.Unlock()
		if len(cs) > 0 || last {
			out <- claimBatch{cs: cs, last: last}
		}
	}
}
