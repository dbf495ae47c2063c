// Package powerwait follows, in memory, each power task's wait for its
// change to land, for the job package's Stepper: the reads that did not
// show the change yet, the BMC event watch that may announce it, and, once
// a read shows it, what the wait showed ([Table.Landed]): when the change
// landed, measured from the request (what adaptive polling learns, package
// powerpoll), and whether an open event stream announced it (whether the
// endpoint's events can be trusted).
//
// A wait is one attempt of one task of one job; a job has at most one at a
// time. Its watch ([Table.Watch]) is registered on the driver's
// bmc.PowerWatcher, whose notify runs on the driver's goroutine: it only
// records the event and calls the host's wake, so a waiting job costs no
// goroutine.
//
// Each landing is estimated as the middle between the last read that did
// not show it and the first that did, but at most D (adaptive polling's
// DenseInterval) before the latter: after a sparse stretch the change most
// likely landed late in it, so a window that is too late moves earlier by
// up to D per change rather than jumping. When the read before was the
// read-back, at most D/4 before it: the schedule put no read between the
// two because the learned window starts later (a narrow window is read
// once, at its end), so the interval says nothing of when in it the change
// came, and its middle would pull the window ever earlier; the window of a
// BMC that got faster still moves earlier, slowly. An event that announced
// the change gives its time instead. Only waits this Stepper followed from
// the request on are measured.
package powerwait

import (
	"context"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
)

// Table holds the waits in progress, by job. Safe for concurrent use.
type Table struct {
	mu sync.Mutex
	m  map[string]*Wait // by job name
}

// New returns an empty table.
func New() *Table { return &Table{m: map[string]*Wait{}} }

// Wait is one power task's wait: when its reads did not yet show the
// target, and its event watch. Its fields are guarded by its Table's mutex
// (the watch's notify runs on the driver's goroutine).
type Wait struct {
	job           string
	task, attempt int
	req           time.Time // when the wait counts from (Sent)
	followed      bool      // the Stepper sent the request: the landing is measurable
	lastNeg       time.Time // the last read that did not show the target
	negIsReadBack bool      // lastNeg is the action's read-back

	// The watch.
	pw        bmc.PowerWatcher // the driver watched
	stop      func()
	live      bool
	liveSince time.Time
	tried     bool      // Watch called WatchPower in this wait; not again after it failed or ended
	gone      bool      // the stream ended
	eventAt   time.Time // the latest event of this wait, zero if none
	ended     bool
}

// Get returns job's wait for task at attempt, or nil if there is none; a
// wait of the job for another task or attempt is ended.
func (t *Table) Get(job string, task, attempt int) *Wait {
	return t.get(job, task, attempt, false, time.Time{}, false)
}

// Open returns job's wait for task at attempt, creating it (and ending any
// other wait of the job) if there is none. req is when the wait counts
// from (the task's request); followed says whether the Stepper sent that
// request itself, so that the landing can be measured from it.
func (t *Table) Open(job string, task, attempt int, req time.Time, followed bool) *Wait {
	return t.get(job, task, attempt, true, req, followed)
}

func (t *Table) get(job string, task, attempt int, create bool, req time.Time, followed bool) *Wait {
	t.mu.Lock()
	w := t.m[job]
	if w != nil && w.task == task && w.attempt == attempt {
		t.mu.Unlock()
		return w
	}
	var old *Wait
	if w != nil {
		old = w
		delete(t.m, job)
	}
	w = nil
	if create {
		w = &Wait{job: job, task: task, attempt: attempt, req: req, followed: followed}
		t.m[job] = w
	}
	stop := endLocked(old)
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	return w
}

// End forgets job's wait, if any, and stops its watch.
func (t *Table) End(job string) {
	t.mu.Lock()
	w := t.m[job]
	delete(t.m, job)
	stop := endLocked(w)
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// endLocked marks w ended and returns its watch's stop, to call once the
// table's mutex is released.
func endLocked(w *Wait) func() {
	if w == nil {
		return nil
	}
	w.ended, w.live = true, false
	stop := w.stop
	w.stop = nil
	return stop
}

// Missed records a read of w's task, made at readAt, that did not show the
// target. readBack says it was the read-back right after the Stepper sent
// the action: the wait then counts from it (when the BMC answered the
// action, not when the step began, which may have queued behind the
// endpoint's request budget).
func (t *Table) Missed(w *Wait, readAt time.Time, readBack bool) {
	t.mu.Lock()
	w.lastNeg, w.negIsReadBack = readAt, readBack
	if readBack {
		w.req = readAt
	}
	t.mu.Unlock()
}

// Sent is when w counts from: the action's read-back where the Stepper saw
// it, else the request.
func (t *Table) Sent(w *Wait) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return w.req
}

// Landing is what a wait showed once a read saw its change.
type Landing struct {
	// Waited says an earlier read of the wait did not show the change;
	// otherwise the read-back saw it, nothing waited and nothing is learned.
	Waited bool
	// Watched says an event stream was open while the change landed;
	// Announced, that an event came at or after the last read that did not
	// show the change (an earlier one was about something else).
	Watched, Announced bool
	// Measured says the wait was followed from the request on; After is
	// then when the change landed, after the request (see the package doc).
	Measured bool
	After    time.Duration
}

// Landed ends w, whose change a read that ended at now showed, and returns
// what the wait showed; dense is adaptive polling's DenseInterval.
func (t *Table) Landed(w *Wait, now time.Time, dense time.Duration) Landing {
	t.mu.Lock()
	lastNeg, eventAt, followed, req, fromReadBack := w.lastNeg, w.eventAt, w.followed, w.req, w.negIsReadBack
	watched := w.pw != nil && !w.liveSince.IsZero() && !w.liveSince.After(lastNeg) && (w.live || !eventAt.Before(lastNeg) && !eventAt.IsZero())
	t.mu.Unlock()
	t.End(w.job)
	if lastNeg.IsZero() {
		return Landing{}
	}
	l := Landing{Waited: true, Watched: watched, Announced: !eventAt.IsZero() && !eventAt.Before(lastNeg), Measured: followed}
	if !followed {
		return l
	}
	landed := lastNeg.Add(now.Sub(lastNeg) / 2)
	late := now.Add(-dense)
	if fromReadBack {
		late = now.Add(-dense / 4)
	}
	if late.After(landed) {
		landed = late
	}
	if l.Announced && !eventAt.After(now) {
		landed = eventAt
	}
	l.After = landed.Sub(req)
	return l
}

// Watch makes sure a watch on pw (the driver of the step) is live for w,
// and reports whether one is. It registers one at most once per wait: not
// again after WatchPower failed (its error is returned) or the stream
// ended; the job then polls for the rest of the wait. Every event, and the
// stream's end, calls wake with the job's name.
func (t *Table) Watch(ctx context.Context, w *Wait, pw bmc.PowerWatcher, clk clock.Clock, wake func(job string)) (bool, error) {
	t.mu.Lock()
	if w.live && w.pw == pw {
		t.mu.Unlock()
		return true, nil
	}
	if w.tried || w.ended {
		t.mu.Unlock()
		return false, nil // failed or ended earlier in this wait: poll
	}
	w.tried = true
	t.mu.Unlock()

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
		wake(w.job)
	})
	if err != nil {
		return false, err
	}
	t.mu.Lock()
	if w.ended || w.gone {
		// Ended (or the stream broke) before WatchPower returned.
		t.mu.Unlock()
		stop()
		return false, nil
	}
	w.pw, w.stop = pw, stop
	w.live, w.liveSince = true, clk.Now()
	t.mu.Unlock()
	return true, nil
}
