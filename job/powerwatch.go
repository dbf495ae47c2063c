package job

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job/internal/powerpoll"
	"github.com/bmckit/bmckit/job/internal/powerwait"
	"github.com/bmckit/bmckit/task"
)

// How the Stepper follows a power change a task requested (the rules:
// powerevents.go, [AdaptivePoll]): the watch opened before the request or
// after the read-back, every read-back noted (learning when changes land,
// and whether the event stream announced them), and when to read again.
// Kinds that change the power declare it (powerChanger); the rest poll on
// the fixed schedule (pollAfterAction).

// pollAfterAction is the common "keep polling" answer: fast right after the
// action, slower after SlowPollAfter.
func (r *stepRun) pollAfterAction(i int) StepResult {
	since := r.now.Sub(r.j.Status.Tasks[i].RequestTime.Time)
	if since < r.s.cfg.SlowPollAfter {
		return StepResult{RequeueAfter: r.s.cfg.PollInterval}
	}
	return StepResult{RequeueAfter: r.s.cfg.SlowPollInterval}
}

// powerWaitFor is the wait of the power task i (job/internal/powerwait),
// created when create is set and the task has a request time. followed
// says whether this step sent the request (then the wait is followed from
// the request on, and its landing can be learned).
func (r *stepRun) powerWaitFor(i int, create, followed bool) *powerwait.Wait {
	ts := &r.j.Status.Tasks[i]
	if create && ts.RequestTime != nil {
		// Add(0): a time.Time whichever time type the status uses.
		return r.s.waits.Open(r.j.Name, i, ts.Attempts, ts.RequestTime.Add(0), followed)
	}
	return r.s.waits.Get(r.j.Name, i, ts.Attempts)
}

// notePowerRead records what a read of power task i showed, at readAt (taken
// before the read; sent: this step sent the action): a read that does not
// show the target moves the wait's last negative read; one that does ends the
// wait and teaches the learner whether the endpoint's event stream announced
// the change and, when the wait was followed from the request, when the
// change landed.
func (r *stepRun) notePowerRead(i int, a bmc.PowerAction, ok bool, readAt time.Time, sent bool) {
	if r.j.Status.Tasks[i].Phase != task.PhaseRequested {
		return
	}
	if !ok {
		if w := r.powerWaitFor(i, true, sent); w != nil {
			r.s.waits.Missed(w, readAt, sent)
		}
		return
	}
	w := r.powerWaitFor(i, false, false)
	if w == nil {
		return
	}
	l := r.s.waits.Landed(w, r.s.cfg.Clock.Now(), r.s.cfg.AdaptivePoll.DenseInterval)
	if l.Watched {
		// The stream was open while the change landed: did it say so?
		r.s.learner.EventSeen(r.ep.Key(), l.Announced)
	}
	if l.Measured && !r.s.cfg.AdaptivePoll.Disabled {
		r.s.learner.Observe(r.ep, a, l.After)
	}
}

// powerPoll is when to read the power state again while task i waits for
// action a to land: the adaptive schedule once the learner knows the
// (system, action), until SlowPollAfter, else the fixed one; stretched to
// PowerEvents.PollInterval while a trusted event stream is live.
func (r *stepRun) powerPoll(ctx context.Context, i int, a bmc.PowerAction) StepResult {
	res := r.pollAfterAction(i)
	cfg := &r.s.cfg
	ts := &r.j.Status.Tasks[i]
	now := cfg.Clock.Now()
	if !cfg.AdaptivePoll.Disabled && ts.RequestTime != nil {
		if lo, hi, ok := r.s.learner.Window(r.ep, a); ok {
			// Counted from when the action was answered where this
			// Stepper saw it (the wait), else from the request.
			sent := ts.RequestTime.Add(0)
			if w := r.powerWaitFor(i, false, false); w != nil {
				sent = r.s.waits.Sent(w)
			}
			if elapsed := now.Sub(sent); now.Sub(ts.RequestTime.Add(0)) < cfg.SlowPollAfter {
				ap := &cfg.AdaptivePoll
				res = StepResult{RequeueAfter: powerpoll.Delay(elapsed, lo, hi, ap.DenseInterval, ap.MaxGap)}
			}
		}
	}
	if r.watchPower(ctx, i) && r.s.learner.Trusted(r.ep.Key()) {
		res.RequeueAfter = max(res.RequeueAfter, cfg.PowerEvents.PollInterval)
	}
	return res
}

// watchPower makes sure a watch on the step's driver is live for task i's
// wait, where events are enabled and the driver can watch; it reports
// whether one is.
func (r *stepRun) watchPower(ctx context.Context, i int) bool {
	cfg := &r.s.cfg
	if cfg.Wake == nil || cfg.PowerEvents.Disabled || r.drv == nil {
		return false
	}
	pw, ok := r.drv.(bmc.PowerWatcher)
	if !ok {
		return false
	}
	w := r.powerWaitFor(i, true, false)
	if w == nil {
		return false
	}
	live, err := r.s.waits.Watch(ctx, w, pw, cfg.Clock, cfg.Wake)
	if err != nil {
		r.log.V(1).Info("no power event stream; polling", "error", err.Error())
	}
	return live
}

// watchBeforeSend opens the watch of power task i before its action is sent,
// where the endpoint's events are trusted: a change that lands between the
// read-back and a watch opened after it would be announced to nobody and
// seen only at the next safety poll (PowerEvents.PollInterval). Elsewhere
// the watch opens after the read-back, when there is something to wait for,
// and the usual polls cover that gap.
func (r *stepRun) watchBeforeSend(ctx context.Context, i int) {
	cfg := &r.s.cfg
	if cfg.Wake == nil || cfg.PowerEvents.Disabled || !r.s.learner.Trusted(r.ep.Key()) {
		return
	}
	// The request time the send will record (act sets RequestTime = r.now).
	r.s.waits.Open(r.j.Name, i, r.j.Status.Tasks[i].Attempts, r.now, true)
	r.watchPower(ctx, i)
}
