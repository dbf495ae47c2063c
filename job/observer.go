package job

import (
	"context"
	"errors"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job/internal/hookcall"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/task"
)

// This file reports to the observer hook (package job/observe) what a
// Stepper reports for metrics and traces: jobs, tasks, BMC errors and wire
// costs (docs/observability.md has the decisions; the Runner's scheduling
// engine reports its queue and leases, job/internal/sched, through
// hookcall.Wrap). Every hook is called through job/internal/hookcall, so an
// observer that panics cannot unwind a step between its writes.

// jobEvents says whether o wants job or task events.
func jobEvents(o *observe.Observer) bool {
	return o.JobStarted != nil || o.JobFinished != nil || o.TaskStarted != nil || o.TaskFinished != nil
}

// observeSetup connects the pool's wire accounting to the observer.
func (s *stepEnv) observeSetup() {
	if f := s.cfg.Observer.Wire; f != nil {
		log := s.cfg.Logger
		s.pool.SetWire(func(proto, endpoint string, d bmc.Stats) {
			hookcall.Emit(log, f, observe.WireEvent{Driver: proto, Endpoint: endpoint, Delta: d})
		})
	}
}

// observedRun is what the observer last saw stored of a job's run.
type observedRun struct {
	gen     int64
	start   time.Time // zero: not started
	done    bool
	started []bool // per task: intent stored
	ended   []bool // per task: result stored
}

func observedOf(j *Job) observedRun {
	o := observedRun{gen: j.Status.ObservedGeneration, done: j.Completed()}
	if j.Status.StartTime != nil {
		o.start = j.Status.StartTime.Time
	}
	o.started = make([]bool, len(j.Status.Tasks))
	o.ended = make([]bool, len(j.Status.Tasks))
	for i := range j.Status.Tasks {
		ts := &j.Status.Tasks[i]
		o.started[i] = ts.StartTime != nil
		o.ended[i] = ts.Phase == task.PhaseDone
	}
	return o
}

// observePersist wraps a step's persist so that each successful write
// reports what it stored that the previous one had not. Without job or
// task observers it returns persist.
func (s *stepEnv) observePersist(j *Job, persist PersistFunc) PersistFunc {
	o := &s.cfg.Observer
	if !jobEvents(o) {
		return persist
	}
	prev := observedOf(j)
	return func(ctx context.Context, j *Job) error {
		if err := persist(ctx, j); err != nil {
			return err
		}
		cur := observedOf(j)
		s.report(j, prev, cur)
		prev = cur
		return nil
	}
}

// report emits the events of the change from prev to cur.
func (s *stepEnv) report(j *Job, prev, cur observedRun) {
	o, log := &s.cfg.Observer, s.cfg.Logger
	if prev.gen != cur.gen || !prev.start.Equal(cur.start) {
		prev = observedRun{} // a new run (first start, or a new generation)
	}
	sys, drv := "", ""
	if ep, err := s.eps.Parse(j.Spec.BMC); err == nil {
		sys, drv = ep.SystemKey(), ep.Protocol
	}
	if prev.start.IsZero() && !cur.start.IsZero() {
		hookcall.Emit(log, o.JobStarted, observe.JobEvent{Job: j.Name, Generation: cur.gen, System: sys, Driver: drv, Start: cur.start})
	}
	for i := range cur.started {
		was := i < len(prev.started) && prev.started[i]
		if cur.started[i] && !was {
			hookcall.Emit(log, o.TaskStarted, taskEvent(j, i, sys, drv))
		}
	}
	for i := range cur.ended {
		was := i < len(prev.ended) && prev.ended[i]
		if cur.ended[i] && !was && cur.started[i] {
			hookcall.Emit(log, o.TaskFinished, taskEvent(j, i, sys, drv))
		}
	}
	if cur.done && !prev.done && o.JobFinished != nil {
		e := observe.JobEvent{
			Job: j.Name, Generation: cur.gen, System: sys, Driver: drv, Start: cur.start,
			Result: j.Status.Result, Reason: j.Status.Reason, Message: j.Status.Message,
			Tasks: make([]observe.TaskEvent, len(j.Status.Tasks)),
		}
		if t := j.Status.CompletionTime; t != nil {
			e.End = t.Time
		}
		if j.Status.Wire != nil {
			e.Wire = *j.Status.Wire
		}
		for i := range e.Tasks {
			e.Tasks[i] = taskEvent(j, i, sys, drv)
		}
		hookcall.Emit(log, o.JobFinished, e)
	}
}

func taskEvent(j *Job, i int, sys, drv string) observe.TaskEvent {
	ts := &j.Status.Tasks[i]
	e := observe.TaskEvent{Job: j.Name, System: sys, Driver: drv, Index: i, Attempt: ts.Attempts}
	if i < len(j.Spec.Tasks) {
		e.Kind = j.Spec.Tasks[i].Action()
	}
	if ts.StartTime != nil {
		e.Start = ts.StartTime.Time
	}
	if ts.Phase == task.PhaseDone {
		if ts.CompletionTime != nil {
			e.End = ts.CompletionTime.Time
		}
		e.Result, e.Reason, e.Message = ts.Result, ts.Reason, ts.Message
	}
	return e
}

// observeStepEnd reports what the job's connection cost during the step.
func (s *stepEnv) observeStepEnd(j *Job) {
	if s.cfg.Observer.Wire == nil {
		return
	}
	if ep, err := s.eps.Parse(j.Spec.BMC); err == nil {
		s.pool.ReportWire(ep)
	}
}

// observeBMCError reports err, which a step is handling for task i, if it
// came from the BMC: a driver's *bmc.OpError, or a failed dial that
// reports its traffic.
func (r *stepRun) observeBMCError(i int, err error, dialing bool) {
	f := r.s.cfg.Observer.BMCError
	if f == nil {
		return
	}
	var oe *bmc.OpError
	var sr bmc.StatsReporter
	if !errors.As(err, &oe) && !(dialing && errors.As(err, &sr)) {
		return
	}
	class := "permanent"
	switch {
	case errors.Is(err, bmc.ErrUnauthorized):
		class = "unauthorized"
	case errors.Is(err, bmc.ErrNotSupported):
		class = "notSupported"
	case errors.Is(err, bmc.ErrSessionExpired):
		class = "sessionExpired"
	case bmc.IsTransient(err):
		class = "transient"
	}
	hookcall.Emit(r.s.cfg.Logger, f, observe.BMCErrorEvent{
		Job: r.j.Name, System: r.ep.SystemKey(), Driver: r.ep.Protocol, Task: i, Login: dialing, Class: class,
	})
}
