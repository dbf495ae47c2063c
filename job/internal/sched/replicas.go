package sched

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/job/internal/fanout"
)

// This file is the event loop's side of sharing the claimable systems among
// the Runner replicas on one Store (docs/jobs.md, "Replicas share the
// fleet"): package job/internal/membership keeps the heartbeat records,
// judges which replicas live and derives the share; the loop launches its
// heartbeats and listings, watches the locks beyond its share, and starts
// claim rounds on what it learns.

// heartbeat writes this runner's record and lists the others' in the
// background (with the lock renewals, every LeaseDuration/3).
func (l *loop) heartbeat() {
	if l.e.members.Heartbeat() {
		l.launchBeat(true)
	}
}

// tick lists the other runners' records again when due, from each claim
// round (membership.View.Tick).
func (l *loop) tick(now time.Time) {
	q := l.e.queue
	if launch, write := l.e.members.Tick(now, len(q.bySys), func(sys string) bool { return len(q.bySys[sys]) > 0 }); launch {
		l.launchBeat(write)
	}
}

// launchBeat runs one heartbeat (write, then list) or listing in the
// background, as Heartbeat or Tick said.
func (l *loop) launchBeat(write bool) {
	held := len(l.held) + len(l.handing)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, l.e.storeCallTimeout())
		defer cancel()
		l.e.members.Beat(ctx, held, write)
	}()
}

// watch reads the locks of systems this runner may not claim now (its
// share is full), without writing: it keeps the lease observation of each
// running (syslock.Table.Expired), so a lock found expired once the share
// grows (a dead replica stopped counting) is taken at once instead of a
// lease later, and it tells the membership view which systems are
// takeable. It costs what a failed claim of them would: one Get each.
func (e *Engine) watch(ctx context.Context, systems []string) {
	fanout.Do(len(systems), func(i int) {
		sys := systems[i]
		cur, rev, err := e.locks.Read(ctx, sys)
		if err != nil {
			return
		}
		e.members.Watched(sys, e.takeable(sys, cur, rev)) // Engine.claim's rules, without the write
	})
}

// claimAgain starts the next claim round at once, instead of at the next
// scan, when the watch of the round that just ended found systems takeable
// and this runner has room for them: a system another replica gave back is
// taken within milliseconds of being found free, not a ScanInterval later.
// (bench/fleet -replicas 3 -jobs-per-system 3: the given-back systems
// waited up to 4 s in 1 s rounds whose claims were partly spent on systems
// still held.) A round that finds nothing new ends the sequence.
func (l *loop) claimAgain() {
	m := l.e.members
	found := m.TakeFound()
	if len(found) == 0 || l.claiming || l.ctx.Err() != nil {
		return
	}
	if m.Share(len(l.e.queue.bySys))-len(l.held)-len(l.handing) <= 0 {
		return
	}
	again := false
	for _, sys := range found {
		if l.held[sys] == nil && !l.handing[sys] && len(l.e.queue.bySys[sys]) > 0 {
			if _, ok := l.e.queue.free[sys]; ok {
				delete(l.retryAt, sys)
				again = true
			}
		}
	}
	if again {
		l.claim()
	}
}

// completedElsewhere notes that another replica completed job name (the
// scan saw its completion): if its system has more jobs queued and this
// runner does not hold it, the other replica may have given it back (it
// deletes the lock right after the completion write), so the claim round of
// this scan looks at it at once, first among the systems not found free
// yet, instead of at its next retry. A handed-over system costs that round
// one failed claim or watch read.
func (l *loop) completedElsewhere(name string) {
	e := l.e.queue.jobs[name]
	if e == nil || e.sys == "" || l.held[e.sys] != nil || l.handing[e.sys] || len(l.e.queue.bySys[e.sys]) < 2 {
		return
	}
	delete(l.retryAt, e.sys)
	l.e.queue.free[e.sys] = struct{}{}
	l.e.members.Hint(e.sys)
}
