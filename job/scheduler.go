package job

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/storage"
)

// This file is the Runner's scheduler: per-system queues fed by the store's
// change feed, and claiming systems through their lock records.

// jobHead is the part of a stored job the scheduler needs; decoding only it
// skips most of the record's allocations.
type jobHead struct {
	CancelRequested bool `json:"cancelRequested"`
	Spec            struct {
		BMC string `json:"bmc"`
	} `json:"spec"`
	Status struct {
		StartTime  *time.Time `json:"startTime"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

func (h *jobHead) completed() bool {
	for _, c := range h.Status.Conditions {
		if c.Type == "Completed" {
			return c.Status == "True"
		}
	}
	return false
}

// queued is an unfinished job in its system's queue.
type queued struct {
	name    string
	seq     int64 // the revision it was first seen at: its create revision if unstarted
	ep      bmc.Endpoint
	sys     string // ep.SystemKey(); "" when the BMC address is invalid
	started bool
	cancel  bool
}

// before orders a system's queue: a started job first (there is at most one
// per system), then submission order.
func (a *queued) before(b *queued) bool {
	if a.started != b.started {
		return a.started
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.name < b.name
}

// queue holds every unfinished job, by name and per system in order, and
// the systems that may be claimable (free: the loop drops held ones lazily).
type queue struct {
	jobs  map[string]*queued
	bySys map[string][]*queued
	free  map[string]struct{}
}

func newQueue() *queue {
	return &queue{jobs: map[string]*queued{}, bySys: map[string][]*queued{}, free: map[string]struct{}{}}
}

// put adds or updates a job seen at revision rev.
func (q *queue) put(name string, h *jobHead, rev int64) *queued {
	e := q.jobs[name]
	if e == nil {
		e = &queued{name: name, seq: rev}
		if ep, err := parseEndpoint(h.Spec.BMC); err == nil {
			e.ep, e.sys = ep, ep.SystemKey()
		}
		q.jobs[name] = e
	} else {
		q.unlink(e)
	}
	e.started = h.Status.StartTime != nil
	e.cancel = h.CancelRequested
	if e.sys != "" {
		list := q.bySys[e.sys]
		i := sort.Search(len(list), func(i int) bool { return e.before(list[i]) })
		list = append(list, nil)
		copy(list[i+1:], list[i:])
		list[i] = e
		q.bySys[e.sys] = list
		q.free[e.sys] = struct{}{}
	}
	return e
}

func (q *queue) remove(name string) {
	if e := q.jobs[name]; e != nil {
		q.unlink(e)
		delete(q.jobs, name)
	}
}

// unlink takes e out of its system's list. The head (the usual case: the
// job that ran and finished) goes by reslicing, not by moving the rest up,
// so a system with many jobs queued pays O(1) per finished job, not O(n).
func (q *queue) unlink(e *queued) {
	list := q.bySys[e.sys]
	for i, o := range list {
		if o != e {
			continue
		}
		if i == 0 {
			list[0] = nil // the backing array must not keep e alive
			list = list[1:]
		} else {
			list = append(list[:i], list[i+1:]...)
			list[:len(list)+1][len(list)] = nil
		}
		break
	}
	if len(list) == 0 {
		delete(q.bySys, e.sys)
	} else {
		q.bySys[e.sys] = list
	}
}

// claim takes system sys's lock for the job that must run on it next: the
// lock's holder if it is unfinished (a started job is resumed before any
// other), else head, the first of this runner's queue for sys. It returns
// that job, the lock's revision and when the lock write was sent.
func (r *Runner) claim(ctx context.Context, sys, head string) (job string, rev int64, sent time.Time, ok bool) {
	if !r.locks.observed(sys) {
		// Most systems are free: try to create the lock first (one write,
		// no read). No lock record means no job holds the system: a lock is
		// deleted only after its holder completed.
		sent = r.cfg.Clock.Now()
		rev, err := r.locks.write(ctx, sys, lockRecord{Holder: head, Owner: r.cfg.Owner}, 0, r.cfg.LeaseDuration)
		if err == nil {
			return head, rev, sent, true
		}
		if !errors.Is(err, storage.ErrExists) {
			if ctx.Err() == nil {
				r.log.Error(err, "taking system lock failed; will retry", "system", sys)
			}
			return "", 0, time.Time{}, false
		}
	}
	cur, curRev, err := r.locks.read(ctx, sys)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error(err, "reading system lock failed; will retry", "system", sys)
		}
		return "", 0, time.Time{}, false
	}
	job = head
	if !r.takeable(sys, cur, curRev) {
		return "", 0, time.Time{}, false
	}
	if cur.Holder != "" && r.locks.ours(cur) && cur.Holder != head {
		// A started job is resumed before any other.
		unfinished, err := r.unfinished(ctx, cur.Holder)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error(err, "reading the lock holder's job failed; will retry", "system", sys, "job", cur.Holder)
			}
			return "", 0, time.Time{}, false
		}
		if unfinished {
			job = cur.Holder
		}
	}
	sent = r.cfg.Clock.Now()
	rev, err = r.locks.write(ctx, sys, lockRecord{Holder: job, Owner: r.cfg.Owner}, curRev, r.cfg.LeaseDuration)
	if err != nil {
		if !lostRace(err) && ctx.Err() == nil {
			r.log.Error(err, "taking system lock failed; will retry", "system", sys)
		}
		return "", 0, time.Time{}, false
	}
	if cur.Owner != "" && cur.Owner != r.cfg.Owner {
		r.log.Info("took over an expired system lock", "system", sys, "previousOwner", cur.Owner, "job", job)
	}
	return job, rev, sent, true
}

// takeable reports whether this runner may take system sys's lock cur (at
// revision rev) now: it is free; or released (no owner), or this runner's
// own Owner's; or its lease was seen unchanged for a whole lease by this
// runner's clock. A lock whose holder is a job of another namespace
// (another KeyPrefix) is taken only so, whoever owns it: only that
// namespace's runners can resume its holder, so this runner waits for it
// to be freed or to expire, then takes the system for its own queue's
// head. It records lease observations (lockTable.expired); claim and the
// replicas' watch (replicas.go) share it.
func (r *Runner) takeable(sys string, cur lockRecord, rev int64) bool {
	switch {
	case rev == 0 || cur.Holder == "":
		return true
	case !r.locks.ours(cur):
		return r.locks.expired(sys, cur, rev)
	default:
		return cur.Owner == "" || cur.Owner == r.cfg.Owner || r.locks.expired(sys, cur, rev)
	}
}

// unfinished reports whether job name exists and has not completed.
func (r *Runner) unfinished(ctx context.Context, name string) (bool, error) {
	rec, err := r.cfg.Store.Get(ctx, r.jobKey(name))
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var h jobHead
	if err := unmarshalRecord(rec.Value, &h); err != nil {
		return false, nil // undecodable: it cannot be run
	}
	return !h.completed(), nil
}

// completeWithoutBMC completes a job whose step touches no BMC (canceled
// before it started, or with an invalid BMC address) without its system's
// lock. A concurrent writer makes the compare-and-swap fail and the job is
// looked at again on a later scan.
func (r *Runner) completeWithoutBMC(ctx context.Context, name string) {
	j, rev, err := r.load(ctx, name)
	if err != nil || j.Completed() {
		return
	}
	if _, epErr := parseEndpoint(j.Spec.BMC); epErr == nil && !(j.CancelRequested && j.Status.StartTime == nil) {
		return
	}
	_, err = r.stepper.Step(ctx, j, r.persister(name, &rev))
	if err != nil && ctx.Err() == nil && !errors.Is(err, storage.ErrConflict) {
		r.log.Error(err, "completing a job that needs no BMC failed; will retry", "job", name)
	}
}
