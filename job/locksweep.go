package job

import (
	"context"
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
// Locks of unfinished jobs stay: those jobs are resumed first (claim).
//
// It runs beside the loop (sweepLocks): every delete is a compare-and-swap
// on the revision listed, so a claim, renewal or handover that rewrote the
// lock meanwhile wins; a lock this deletes under a handover or a release in
// flight makes that write fail as lost, and the system is claimed again the
// usual way. Only locks whose holder has completed are deleted, and a
// completed job sends nothing more to its BMC. Errors are logged and end
// the sweep until the next one. It returns how many locks it deleted.
func (r *Runner) sweepOwnLocks(ctx context.Context) int {
	recs, err := r.cfg.Store.List(ctx, r.locks.prefix)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error(err, "listing system locks to clear this runner's stale ones failed; they expire after a lease")
		}
		return 0
	}
	deleted := 0
	for _, rec := range recs {
		var l lockRecord
		if unmarshalRecord(rec.Value, &l) != nil || l.Owner != r.cfg.Owner || l.Holder == "" {
			continue
		}
		unfinished, err := r.unfinished(ctx, l.Holder)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error(err, "reading a lock holder's job failed; its stale lock expires after a lease", "key", rec.Key, "job", l.Holder)
			}
			return deleted
		}
		if unfinished {
			continue
		}
		switch err := r.cfg.Store.Delete(ctx, rec.Key, rec.Revision); {
		case err == nil:
			deleted++
		case lostRace(err):
		default:
			if ctx.Err() == nil {
				r.log.Error(err, "deleting a stale system lock failed; it expires after a lease", "key", rec.Key, "job", l.Holder)
			}
			return deleted
		}
	}
	if deleted > 0 {
		r.log.Info("deleted system locks this runner's Owner left behind for completed jobs", "locks", deleted)
	}
	return deleted
}
