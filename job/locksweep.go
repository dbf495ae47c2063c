package job

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bmckit/bmckit/syslock"
)

// lockSweepEvery is how many leases apart sweepLocks runs after its first
// two sweeps.
const lockSweepEvery = 10

// sweepLocks runs sweepOwnLocks at Start; again a lease later, because a
// write the previous process sent before it died (a completion) may land
// after this one started; and then every lockSweepEvery leases, for the
// releases that gave up during a store outage. It returns when ctx ends.
func (r *Runner) sweepLocks(ctx context.Context) {
	r.sweepOwnLocks(ctx)
	wait := r.cfg.LeaseDuration
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.cfg.Clock.After(wait):
		}
		r.sweepOwnLocks(ctx)
		wait = lockSweepEvery * r.cfg.LeaseDuration
	}
}

// sweepOwnLocks deletes the system locks this runner's Owner left behind for
// jobs that completed, or no longer exist. A runner that died between a
// job's completion write and its lock's delete leaves such a lock, and so
// does one whose store was down when it stopped. Nothing else would delete
// it: no job is queued for the system, and a claim only looks at a lock when
// one is. Left alone, it stays in the store, and a runner with another Owner
// waits a whole lease before it takes the system for its next job. A runner
// restarted with the same Owner knows such a lock is its own and stale.
// Locks of unfinished jobs stay: those jobs are resumed first (claim). So do
// the locks of systems this runner holds now: a job of theirs that just
// completed is being handed over or released by the loop (a sweep that
// deleted it first made the handover fail and the system be claimed again:
// TestHandOverQueuedJobs failed 1 run in 60).
//
// It runs beside the loop (sweepLocks): every delete is a compare-and-swap
// on the revision listed, so a claim, renewal or handover that rewrote the
// lock meanwhile wins; a lock this deletes under a handover or a release in
// flight makes that write fail as lost, and the system is claimed again the
// usual way. Only locks whose holder has completed are deleted, and a
// completed job sends nothing more to its BMC. The first error is logged
// and ends the sweep until the next one. It returns how many locks it
// deleted.
func (r *Runner) sweepOwnLocks(ctx context.Context) int {
	recs, err := r.cfg.Store.List(ctx, syslock.KeyPrefix)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error(err, "listing system locks to clear this runner's stale ones failed; will try again later")
		}
		return 0
	}
	// This runner's locks (its Owner, its namespace), each with its holder.
	own := recs[:0]
	var holders []string
	for _, rec := range recs {
		var l syslock.Record
		if unmarshalRecord(rec.Value, &l) == nil && l.Owner == r.cfg.Owner && l.Holder != "" && r.locks.Ours(l) && !r.holdsKey(rec.Key) {
			own = append(own, rec)
			holders = append(holders, l.Holder)
		}
	}
	// storeFanOut at once, as releases go: after a crash there may be
	// thousands, and one at a time a durable store commits each alone.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var once sync.Once
	fail := func(err error, msg string, kv ...any) {
		once.Do(func() {
			if ctx.Err() == nil {
				r.log.Error(err, msg, kv...)
			}
			cancel() // the first error ends the sweep
		})
	}
	var deleted atomic.Int64
	fanOut(len(own), func(i int) {
		rec, holder := own[i], holders[i]
		if sctx.Err() != nil {
			return // ended by an error
		}
		unfinished, err := r.unfinished(sctx, holder)
		if err != nil {
			fail(err, "reading a lock holder's job failed; the sweep of stale locks stops until the next one", "key", rec.Key, "job", holder)
			return
		}
		if unfinished || r.holdsKey(rec.Key) {
			// Checked again here: the loop may have claimed the system
			// since the list (its claim writes the lock first).
			return
		}
		switch err := r.cfg.Store.Delete(sctx, rec.Key, rec.Revision); {
		case err == nil:
			deleted.Add(1)
		case syslock.LostRace(err):
		default:
			fail(err, "deleting a stale system lock failed; the sweep stops until the next one", "key", rec.Key, "job", holder)
		}
	})
	n := int(deleted.Load())
	if n > 0 {
		r.log.Info("deleted system locks this runner's Owner left behind for completed jobs", "locks", n)
	}
	return n
}

// holdsKey reports whether the lock at key is of a system the loop holds or
// hands over now.
func (r *Runner) holdsKey(key string) bool {
	sys, err := url.PathUnescape(strings.TrimPrefix(key, syslock.KeyPrefix))
	if err != nil {
		return false
	}
	return r.holding.has(sys)
}

// holdingSet is a set of systems safe for concurrent use.
type holdingSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (h *holdingSet) add(sys string) {
	h.mu.Lock()
	if h.m == nil {
		h.m = map[string]struct{}{}
	}
	h.m[sys] = struct{}{}
	h.mu.Unlock()
}

func (h *holdingSet) remove(sys string) {
	h.mu.Lock()
	delete(h.m, sys)
	h.mu.Unlock()
}

func (h *holdingSet) has(sys string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.m[sys]
	return ok
}
