package job

import (
	"context"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job/internal/powerpoll"
	"github.com/bmckit/bmckit/job/internal/powerwait"
	"github.com/bmckit/bmckit/task"
)

// Event-driven confirmation of power changes.
//
// Where the job's driver implements bmc.PowerWatcher (Redfish with an
// EventService that offers Server-Sent Events) and the host can be woken
// (StepperConfig.Wake; the Runner always can), a power task that is still
// waiting after its read-back registers a watch on the driver. The driver
// keeps one stream per session, shared by every system on it, and calls the
// watch's notify from its own goroutine; notify only records the event and
// calls Wake, so a waiting job costs no goroutine. The woken step confirms the
// change with one read (PowerState stays the only source of truth).
//
// Polling never stops, it only thins out: while a watch is live on an
// endpoint whose events proved themselves ("trusted": a change came with an
// event, and no two changes in a row were found by polls while a watch was
// live and silent), the next poll is at least PowerEvents.PollInterval
// away; otherwise the usual (adaptive or fixed) schedule applies and events
// only shorten it. When the stream ends mid-wait (notify with an error), the
// job is woken and polls on the usual schedule for the rest of that wait.

// PowerEvents configures event-driven confirmation of power changes; the
// zero value turns it on with the defaults below.
type PowerEvents struct {
	// Disabled turns it off: power tasks only poll. Defaults to false (on
	// where the driver implements bmc.PowerWatcher and the host can be woken,
	// see StepperConfig.Wake).
	Disabled bool
	// PollInterval is how often a task still polls while a trusted event
	// stream is live, in case an event is lost. Defaults to 10s.
	PollInterval time.Duration
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

// jobWakes collects the Runner's StepperConfig.Wake calls for its loop,
// without blocking the driver goroutine that makes them.
type jobWakes struct {
	mu    sync.Mutex
	names map[string]struct{}
	ch    chan struct{} // signalled when names is not empty
}

func newJobWakes() *jobWakes {
	return &jobWakes{names: map[string]struct{}{}, ch: make(chan struct{}, 1)}
}

func (w *jobWakes) add(name string) {
	w.mu.Lock()
	w.names[name] = struct{}{}
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w *jobWakes) take() map[string]struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := w.names
	w.names = map[string]struct{}{}
	return names
}

// wakeJobs makes the woken jobs this runner holds due now; a job whose step
// is in flight is looked at again right after it.
func (l *loop) wakeJobs(names map[string]struct{}) {
	now := l.r.cfg.Clock.Now()
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
