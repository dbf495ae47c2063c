package sched

import (
	"context"
	"errors"
	"time"

	"github.com/bmckit/bmckit/job/internal/fanout"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// This file holds the Runner's leases: one renewal loop for every system
// lock the runner holds, and their release.
//
// Fencing: a lease is valid until LeaseDuration minus leaseMargin after the
// *sending* of the last successful write, by this runner's own (monotonic)
// clock; other runners take it over only after seeing it unchanged for a
// whole LeaseDuration by theirs. Every BMC request of a step is admitted by
// the lease's fence (syslock.Fence) immediately before it is written, so no
// request is sent once the lease might have expired, even by a process that
// was paused; a step's context ends at the validity it had when the step
// began, and no step starts on a lapsed lease. A lapsed lease is not
// dropped: renewal goes on (every LeaseDuration/30 while failing) by
// compare-and-swap on the revision this runner last wrote, and if it
// succeeds (nobody took the lock meanwhile) the job goes on. A conflict means
// the lock was taken over: the lease is lost for good.

func (e *Engine) validUntil(sent time.Time) time.Time {
	return sent.Add(e.cfg.LeaseDuration - syslock.Margin(e.cfg.LeaseDuration))
}

// storeCallTimeout bounds the store calls the Runner makes while it holds
// systems (scans, claims, renewals): a lease's validity. A call that hangs
// longer could not have granted anything anyway, and the loop must keep
// turning.
func (e *Engine) storeCallTimeout() time.Duration {
	return e.cfg.LeaseDuration - syslock.Margin(e.cfg.LeaseDuration)
}

// renewal is the outcome of renewing one held system's lock.
type renewal struct {
	h    *heldSystem
	rev  int64
	sent time.Time
	err  error
}

// renewAll renews the locks of hs concurrently (so a store with group commit
// batches them) and reports each outcome on out.
func (e *Engine) renewAll(ctx context.Context, hs []*heldSystem, out chan<- []renewal) {
	res := make([]renewal, len(hs))
	fanout.Do(len(hs), func(i int) {
		h := hs[i]
		sent := e.cfg.Clock.Now()
		rev, err := e.locks.Write(ctx, h.sys, syslock.Record{Holder: h.job, Owner: e.cfg.Owner}, h.lockRev, e.cfg.LeaseDuration)
		res[i] = renewal{h: h, rev: rev, sent: sent, err: err}
	})
	out <- res
}

// release gives up the system lock held at revision rev: deleted when the
// job completed (the next job may start), or with the job kept as holder and
// no owner when it did not (the next runner resumes it at once). Store
// errors are retried until deadline (a lease after the release was due: by
// then the lock expires by itself, and a runner with the same Owner takes it
// back at once). The releases of one stop share one deadline, so a Runner
// whose store is down stops within a lease however many locks it holds.
func (e *Engine) release(ctx context.Context, sys, job string, rev int64, completed bool, deadline time.Time) {
	ctx = context.WithoutCancel(ctx)
	for failures := 1; ; failures++ {
		var err error
		if completed {
			err = e.cfg.Store.Delete(ctx, e.locks.Key(sys), rev)
			if errors.Is(err, storage.ErrConflict) {
				// A renewal in flight when the job completed may have
				// rewritten the lock since rev. Still this job's and this
				// runner's: delete it at its current revision. (Left alone,
				// it would stay until its lease ran out.)
				cur, curRev, rerr := e.locks.Read(ctx, sys)
				switch {
				case rerr != nil:
					err = rerr
				case curRev != 0 && cur.Holder == job && cur.Owner == e.cfg.Owner && curRev != rev:
					rev = curRev
					continue
				}
			}
		} else {
			_, err = e.locks.Write(ctx, sys, syslock.Record{Holder: job}, rev, e.cfg.LeaseDuration)
		}
		if err == nil || syslock.LostRace(err) {
			return
		}
		if !e.cfg.Clock.Now().Before(deadline) {
			e.log.Error(err, "releasing the system lock failed; it expires after the lease", "system", sys, "job", job)
			return
		}
		<-e.cfg.Clock.After(storeRetryDelay(failures))
	}
}

// storeRetryDelay backs off from 100ms to 1s: short, so a stalled job notices
// the end of a store outage within a second.
func storeRetryDelay(failures int) time.Duration {
	d := 100 * time.Millisecond << min(max(failures-1, 0), 4)
	return min(d, time.Second)
}
