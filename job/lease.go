package job

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// lease is a runner's hold on one system's lock while a worker runs its job.
// A keeper goroutine renews it every LeaseDuration/3 (every LeaseDuration/30
// after a failed renewal, so the end of a store outage is noticed quickly).
//
// Fencing: the lease is valid until LeaseDuration minus leaseMargin after the
// *sending* of the last successful write, by this runner's own (monotonic)
// clock; other runners take it over only after seeing it unchanged for a
// whole LeaseDuration by theirs. BMC calls run under act's context, which the
// keeper cancels when validity ends, so no request is sent when the lease
// might have expired. The worker then waits instead of ending; if a renewal
// by compare-and-swap on the revision this runner last wrote succeeds later
// (nobody took the lock meanwhile), act is renewed and work goes on. A
// conflict means the lock was taken over: the lease is lost for good.
type lease struct {
	r   *Runner
	sys string
	job string
	log logr.Logger

	mu      sync.Mutex
	rev     int64
	until   time.Time // end of validity
	lost    bool
	act     context.Context // nil while fenced
	cancel  context.CancelFunc
	changed chan struct{} // closed and replaced when act or lost change

	onFence func() // closes the job's BMC connection

	stopKeeper context.CancelFunc
	done       chan struct{}
}

// hold starts keeping the lock at revision rev, written at time sent.
// onFence is called when the lease lapses.
func (r *Runner) hold(parent context.Context, sys, job string, rev int64, sent time.Time, log logr.Logger, onFence func()) *lease {
	l := &lease{r: r, sys: sys, job: job, log: log, rev: rev, until: r.validUntil(sent), onFence: onFence, changed: make(chan struct{}), done: make(chan struct{})}
	l.act, l.cancel = context.WithCancel(parent)
	kctx, stop := context.WithCancel(parent)
	l.stopKeeper = stop
	go l.keep(kctx, parent)
	return l
}

func (r *Runner) validUntil(sent time.Time) time.Time {
	return sent.Add(r.cfg.LeaseDuration - leaseMargin(r.cfg.LeaseDuration))
}

var errLeaseLost = errors.New("lost the system lock to another runner")

// wait returns the context to act under, waiting while the lease is fenced.
// It fails once the lease is lost or ctx is done.
func (l *lease) wait(ctx context.Context) (context.Context, error) {
	for {
		l.mu.Lock()
		act, lost, ch := l.act, l.lost, l.changed
		l.mu.Unlock()
		if lost {
			return nil, errLeaseLost
		}
		if act != nil && act.Err() == nil {
			return act, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

func (l *lease) keep(ctx, parent context.Context) {
	defer close(l.done)
	cfg := &l.r.cfg
	interval := cfg.LeaseDuration / 3
	retry := max(cfg.LeaseDuration/30, 100*time.Millisecond)
	lastTry := cfg.Clock.Now()
	failing := false
	for {
		every := interval
		if failing {
			every = retry
		}
		next := lastTry.Add(every)
		l.mu.Lock()
		if l.act != nil && l.until.Before(next) {
			next = l.until
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-cfg.Clock.After(next.Sub(cfg.Clock.Now())):
		}
		now := cfg.Clock.Now()
		l.mu.Lock()
		fenced := false
		if l.act != nil && !now.Before(l.until) {
			l.log.Info("system lock not renewed in time; pausing BMC calls until it is")
			l.fenceLocked()
			fenced = true
		}
		rev := l.rev
		l.mu.Unlock()
		if fenced {
			// Close the BMC session within the lease's margin, so a runner
			// that takes the job over is alone on the BMC.
			l.onFence()
		}
		if now.Before(lastTry.Add(every)) {
			continue
		}
		lastTry = now
		n, err := l.r.locks.write(ctx, l.sys, lockRecord{Holder: l.job, Owner: cfg.Owner}, rev, cfg.LeaseDuration)
		switch {
		case err == nil:
			l.mu.Lock()
			l.rev, l.until = n, l.r.validUntil(now)
			if l.act == nil && !l.lost {
				l.log.Info("system lock renewed after an outage; resuming")
				l.act, l.cancel = context.WithCancel(parent)
				l.notifyLocked()
			}
			l.mu.Unlock()
			failing = false
		case ctx.Err() != nil:
			return
		case lostRace(err):
			l.log.Info("lost the system lock to another runner; stopping the job here")
			l.mu.Lock()
			l.lost = true
			l.fenceLocked()
			l.mu.Unlock()
			return
		default:
			if !failing {
				l.log.Error(err, "renewing the system lock failed; will retry")
			}
			failing = true
		}
	}
}

func (l *lease) fenceLocked() {
	if l.act != nil {
		l.cancel()
		l.act, l.cancel = nil, nil
	}
	l.notifyLocked()
}

func (l *lease) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// stop ends renewal and returns the revision this runner last wrote, and
// false if the lock was taken over. (A lapsed but untaken lock can still be
// released: releasing is a compare-and-swap on that revision.)
func (l *lease) stop() (int64, bool) {
	l.stopKeeper()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel()
	}
	return l.rev, !l.lost
}
