package job

import (
	"context"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job/internal/powerpoll"
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

// powerWait is what the Stepper remembers, in memory, of one power task's
// wait: when its reads did not yet show the target (to learn when the change
// landed) and its event watch.
type powerWait struct {
	task, attempt int
	ep            bmc.Endpoint
	action        bmc.PowerAction
	req           time.Time // the task's RequestTime
	followed      bool      // this Stepper sent the request: landings are measurable
	lastNeg       time.Time // the last read that did not show the target
	negIsReadBack bool      // lastNeg is the action's read-back

	// The watch; guarded by waitTable.mu (notify runs on the driver's goroutine).
	drv       bmc.Driver
	stop      func()
	live      bool
	liveSince time.Time
	tried     bool      // WatchPower was called in this wait; not again after it failed or ended
	gone      bool      // the stream ended
	eventAt   time.Time // the latest event of this wait, zero if none
	ended     bool
}

type waitTable struct {
	mu sync.Mutex
	m  map[string]*powerWait // by job name
}

// get returns the wait of job's task i at the given attempt, creating it (and
// ending any other wait of the job) when create is set.
func (t *waitTable) get(job string, i, attempt int, create func() *powerWait) *powerWait {
	t.mu.Lock()
	w := t.m[job]
	if w != nil && w.task == i && w.attempt == attempt {
		t.mu.Unlock()
		return w
	}
	var old *powerWait
	if w != nil {
		old = w
		delete(t.m, job)
	}
	if create != nil {
		w = create()
		t.m[job] = w
	} else {
		w = nil
	}
	stop := t.endLocked(old)
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	return w
}

// end forgets job's wait and stops its watch.
func (t *waitTable) end(job string) {
	t.mu.Lock()
	w := t.m[job]
	delete(t.m, job)
	stop := t.endLocked(w)
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (t *waitTable) endLocked(w *powerWait) func() {
	if w == nil {
		return nil
	}
	w.ended, w.live = true, false
	stop := w.stop
	w.stop = nil
	return stop
}

// powerWaitFor is the wait of the power task i, created when create is set.
// followed says whether this step sent the request (then the wait is
// followed from the request on, and its landing can be learned).
func (r *stepRun) powerWaitFor(i int, a bmc.PowerAction, create, followed bool) *powerWait {
	ts := &r.j.Status.Tasks[i]
	var mk func() *powerWait
	if create && ts.RequestTime != nil {
		mk = func() *powerWait {
			// Add(0): a time.Time whichever time type the status uses.
			return &powerWait{task: i, attempt: ts.Attempts, ep: r.ep, action: a, req: ts.RequestTime.Add(0), followed: followed}
		}
	}
	return r.s.waits.get(r.j.Name, i, ts.Attempts, mk)
}

// notePowerRead records what a read of power task i showed, at readAt (taken
// before the read; sent: this step sent the action): a read that does not
// show the target moves the wait's last negative read; one that does ends the
// wait and, when the wait was followed from the request, teaches the learner
// when the change landed.
func (r *stepRun) notePowerRead(i int, a bmc.PowerAction, ok bool, readAt time.Time, sent bool) {
	if r.j.Status.Tasks[i].Phase != task.PhaseRequested {
		return
	}
	if !ok {
		w := r.powerWaitFor(i, a, true, sent)
		if w != nil {
			r.s.waits.mu.Lock()
			w.lastNeg, w.negIsReadBack = readAt, sent
			if sent {
				// The read-back follows the action's answer: the wait
				// counts from here (not from the step's start, which
				// may have queued behind the endpoint's budget).
				w.req = readAt
			}
			r.s.waits.mu.Unlock()
		}
		return
	}
	w := r.powerWaitFor(i, a, false, false)
	if w == nil {
		return
	}
	now := r.s.cfg.Clock.Now()
	r.s.waits.mu.Lock()
	lastNeg, eventAt, followed, req, fromReadBack := w.lastNeg, w.eventAt, w.followed, w.req, w.negIsReadBack
	watched := w.drv != nil && !w.liveSince.IsZero() && !w.liveSince.After(lastNeg) && (w.live || !eventAt.Before(lastNeg) && !eventAt.IsZero())
	r.s.waits.mu.Unlock()
	r.s.waits.end(r.j.Name)
	if lastNeg.IsZero() {
		return // seen at the read-back: nothing waited, nothing learned
	}
	// An event at or after the last read that did not show the change can
	// have announced it (an earlier one was about something else).
	announced := !eventAt.IsZero() && !eventAt.Before(lastNeg)
	if watched {
		// The stream was open while the change landed: did it say so?
		r.s.learner.EventSeen(r.ep.Key(), announced)
	}
	if !followed || r.s.cfg.AdaptivePoll.Disabled {
		return
	}
	// The middle of (lastNeg, now]; but when the read before was the
	// read-back, at most half a dense interval before now: the schedule
	// put no read between the two because the learned window starts later
	// (a narrow window is read once, at its end), so the interval says
	// nothing of when in it the change came, and its middle would pull the
	// window ever earlier. After a read of the schedule, the middle: a
	// change that came early moves the window towards it.
	dense := r.s.cfg.AdaptivePoll.DenseInterval
	landed := lastNeg.Add(now.Sub(lastNeg) / 2)
	late := now.Add(-dense)
	if fromReadBack {
		late = now.Add(-dense / 4)
	}
	if late.After(landed) {
		landed = late
	}
	if announced && !eventAt.After(now) {
		landed = eventAt
	}
	r.s.learner.Observe(r.ep, a, landed.Sub(req))
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
			if w := r.powerWaitFor(i, a, false, false); w != nil {
				r.s.waits.mu.Lock()
				sent = w.req
				r.s.waits.mu.Unlock()
			}
			if elapsed := now.Sub(sent); now.Sub(ts.RequestTime.Add(0)) < cfg.SlowPollAfter {
				ap := &cfg.AdaptivePoll
				res = StepResult{RequeueAfter: powerpoll.Delay(elapsed, lo, hi, ap.DenseInterval, ap.MaxGap)}
			}
		}
	}
	if r.watchPower(ctx, i, a) && r.s.learner.Trusted(r.ep.Key()) {
		res.RequeueAfter = max(res.RequeueAfter, cfg.PowerEvents.PollInterval)
	}
	return res
}

// watchPower makes sure a watch on the step's driver is live for task i's
// wait, where events are enabled and the driver can watch; it reports
// whether one is.
func (r *stepRun) watchPower(ctx context.Context, i int, a bmc.PowerAction) bool {
	cfg := &r.s.cfg
	if cfg.Wake == nil || cfg.PowerEvents.Disabled || r.drv == nil {
		return false
	}
	pw, ok := r.drv.(bmc.PowerWatcher)
	if !ok {
		return false
	}
	w := r.powerWaitFor(i, a, true, false)
	if w == nil {
		return false
	}
	t := &r.s.waits
	t.mu.Lock()
	if w.live && w.drv == r.drv {
		t.mu.Unlock()
		return true
	}
	if w.tried || w.ended {
		t.mu.Unlock()
		return false // failed or ended earlier in this wait: poll
	}
	w.tried = true
	t.mu.Unlock()

	name, wake, clk := r.j.Name, cfg.Wake, cfg.Clock
	stop, err := pw.WatchPower(ctx, func(ev bmc.PowerEvent) {
		t.mu.Lock()
		if w.ended {
			t.mu.Unlock()
			return
		}
		if ev.Err != nil {
			w.live, w.gone = false, true
		} else {
			w.eventAt = clk.Now()
		}
		t.mu.Unlock()
		wake(name)
	})
	if err != nil {
		r.log.V(1).Info("no power event stream; polling", "error", err.Error())
		return false
	}
	t.mu.Lock()
	if w.ended || w.gone {
		// Ended (or the stream broke) before WatchPower returned.
		t.mu.Unlock()
		stop()
		return false
	}
	w.drv, w.stop = r.drv, stop
	w.live, w.liveSince = true, clk.Now()
	t.mu.Unlock()
	return true
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
func (r *stepRun) watchBeforeSend(ctx context.Context, i int, a bmc.PowerAction) {
	cfg := &r.s.cfg
	if cfg.Wake == nil || cfg.PowerEvents.Disabled || !r.s.learner.Trusted(r.ep.Key()) {
		return
	}
	ts := &r.j.Status.Tasks[i]
	// The request time the send will record (act sets RequestTime = r.now).
	req := r.now
	r.s.waits.get(r.j.Name, i, ts.Attempts, func() *powerWait {
		return &powerWait{task: i, attempt: ts.Attempts, ep: r.ep, action: a, req: req, followed: true}
	})
	r.watchPower(ctx, i, a)
}
