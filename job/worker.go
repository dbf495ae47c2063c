package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/storage"
)

// work runs job name on its system until it completes, the lock is lost, or
// ctx is done. Store errors pause it (with a short backoff) instead of ending
// it, for as long as the lock is held.
func (r *Runner) work(ctx context.Context, name string, ep bmc.Endpoint, lockRev int64, sent time.Time) {
	sys := ep.SystemKey()
	log := r.log.WithValues("job", name, "system", sys)
	stub := &Job{Name: name, Spec: Spec{BMC: ep.String()}} // enough to release the connection
	closeConn := func() { _ = r.stepper.Release(context.WithoutCancel(ctx), stub) }
	l := r.hold(ctx, sys, name, lockRev, sent, log, closeConn)
	completed := false
	var last *Job // as last loaded or written
	defer func() {
		rev, held := l.stop()
		// Whatever ended the work, this runner is done with the BMC: close
		// the job's connection before the lock is released.
		closeConn()
		if held {
			r.release(ctx, sys, name, rev, completed, log)
		}
	}()

	key := r.jobKey(name)
	var cachedRev int64 // the revision last holds, if this worker wrote it
	storeErrs := 0
	pause := func(actx context.Context, err error, what string) bool {
		storeErrs++
		if storeErrs == 1 || storeErrs%20 == 0 {
			log.Error(err, what+"; will retry", "failures", storeErrs)
		}
		select {
		case <-ctx.Done():
			return false
		case <-actx.Done(): // fenced: wait for the lease instead
			return true
		case <-r.cfg.Clock.After(storeRetryDelay(storeErrs)):
			return true
		}
	}
	for {
		actx, err := l.wait(ctx)
		if err != nil {
			return
		}
		rec, err := r.cfg.Store.Get(actx, key)
		if errors.Is(err, storage.ErrNotFound) {
			completed = true // deleted: nothing left to run
			return
		}
		if err != nil {
			if !pause(actx, err, "loading job failed") {
				return
			}
			continue
		}
		j := last
		if j == nil || rec.Revision != cachedRev {
			j = new(Job)
			if err := json.Unmarshal(rec.Value, j); err != nil {
				log.Error(err, "decoding stored job failed; leaving it")
				return
			}
		}
		last, cachedRev = j, rec.Revision
		if j.Completed() {
			completed = true
			r.notify()
			return
		}
		rev := rec.Revision
		res, err := r.stepper.Step(logr.NewContext(actx, log), j, r.persister(name, &rev))
		cachedRev = rev
		if err == nil {
			storeErrs = 0
		}
		switch {
		case err == nil:
		case errors.Is(err, storage.ErrNotFound):
			completed = true // deleted
			return
		case errors.Is(err, storage.ErrConflict):
			last = nil // changed under us (cancel, spec edit): reload at once
			continue
		case actx.Err() != nil || ctx.Err() != nil:
			last = nil // fenced or stopping; the status may be half written
			continue
		default:
			last = nil
			if !pause(actx, err, "step failed") {
				return
			}
			continue
		}
		if res.Done {
			completed = true
			return
		}
		if res.RequeueAfter > 0 {
			select {
			case <-ctx.Done():
				return
			case <-r.cfg.Clock.After(res.RequeueAfter):
			}
		}
	}
}

// storeRetryDelay backs off from 100ms to 1s: short, so a worker notices the
// end of a store outage within a second.
func storeRetryDelay(failures int) time.Duration {
	d := 100 * time.Millisecond << min(failures-1, 4)
	return min(d, time.Second)
}

// persister returns the PersistFunc of job name: a compare-and-swap on its
// record at *rev, which it advances.
func (r *Runner) persister(name string, rev *int64) PersistFunc {
	return func(ctx context.Context, j *Job) error {
		data, err := json.Marshal(j)
		if err != nil {
			return err
		}
		n, err := r.cfg.Store.Update(ctx, r.jobKey(name), data, *rev)
		if err != nil {
			return fmt.Errorf("persisting job %q: %w", name, err)
		}
		*rev = n
		r.notify()
		if r.cfg.OnUpdate != nil {
			var cp Job // a deep copy: the worker keeps mutating j
			if json.Unmarshal(data, &cp) == nil {
				r.cfg.OnUpdate(cp)
			}
		}
		return nil
	}
}

// release gives up the system lock held at revision rev: deleted when the
// job completed (the next job may start), or with the job kept as holder and
// no owner when it did not (the next runner resumes it at once). Store
// errors are retried for up to a lease; after that the lock expires by
// itself.
func (r *Runner) release(ctx context.Context, sys, job string, rev int64, completed bool, log logr.Logger) {
	ctx = context.WithoutCancel(ctx)
	deadline := r.cfg.Clock.Now().Add(r.cfg.LeaseDuration)
	for failures := 1; ; failures++ {
		var err error
		if completed {
			err = r.cfg.Store.Delete(ctx, r.locks.key(sys), rev)
		} else {
			_, err = r.locks.write(ctx, sys, lockRecord{Holder: job}, rev, r.cfg.LeaseDuration)
		}
		if err == nil || lostRace(err) {
			return
		}
		if !r.cfg.Clock.Now().Before(deadline) {
			log.Error(err, "releasing the system lock failed; it expires after the lease")
			return
		}
		<-r.cfg.Clock.After(storeRetryDelay(failures))
	}
}
