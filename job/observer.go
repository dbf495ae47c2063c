package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// This file holds the observer hook: what a Runner or Stepper reports for
// metrics and traces (docs/observability.md has the decisions). Adapters
// live in their own modules (contrib/prometheus, contrib/otel), so the core
// has no metrics or tracing dependency.

// Observer receives events from a [Runner] or a [Stepper] for metrics and
// traces. Every field is optional; a nil func is not called, and the zero
// Observer costs nothing. Set it in Config.Observer or
// StepperConfig.Observer; combine several with [JoinObservers].
//
// Contract for the funcs:
//
//   - Fast and non-blocking. They run synchronously on the goroutine that
//     made the event: a step's goroutine (job and task events, BMC errors),
//     the goroutine that read or closed a BMC connection (Wire), or the
//     Runner's event loop (Queue, LeaseLost), which schedules every job of
//     the Runner and waits for the call. Increment a counter, set a gauge,
//     end a span; hand anything slower to a goroutine of your own.
//   - Safe for concurrent use: events of different jobs arrive concurrently.
//   - No locks of the Runner or the connection pool are held during a call,
//     and every event is a copy: an observer cannot change a job or the
//     scheduler's state. A panic in a func is recovered and logged.
//
// Job and task events are derived from the writes of the job's status
// (PersistFunc), after each write succeeded: an event means the state is
// stored, a job resumed after a crash does not report its finished tasks
// again, and a write that failed reports nothing. On the controller path,
// each event is reported once per successful status write; a host that
// replays a stale object may, after a conflict it ignored, see an event
// again.
//
// Events carry no credentials: the system is [bmc.Endpoint.SystemKey]
// (host, port and system path) and the driver is the address's protocol.
// Messages are the job's status messages, which never hold secrets, but
// they are free text: do not use them as metric labels.
type Observer struct {
	// JobStarted is called once the job's start (its first task's intent,
	// or a completion that needed no task) is stored. A job restarted by a
	// spec change (a new Generation) starts again.
	JobStarted func(JobEvent)
	// JobFinished is called once the job's completion is stored, with
	// every task's final state in JobEvent.Tasks.
	JobFinished func(JobEvent)
	// TaskStarted is called once a task's intent (its first attempt) is
	// stored.
	TaskStarted func(TaskEvent)
	// TaskFinished is called once the result of a task that started is
	// stored: Succeeded, Failed, or Canceled when the job ended while it
	// ran. Tasks skipped without starting report none.
	TaskFinished func(TaskEvent)
	// BMCError is called for every error a BMC call or login returned to a
	// step (transient ones that will be retried included). Errors that are
	// not the BMC's (resolving credentials, a boot tracker's store) are not
	// reported.
	BMCError func(BMCErrorEvent)
	// Wire is called with what BMC connections cost on the wire since the
	// last report: after every step that used a connection, when a
	// connection closes (its logout included), and for a failed login that
	// reports its traffic. Summing the deltas counts every request once,
	// also for sessions shared by several systems.
	Wire func(WireEvent)
	// Queue is called by a Runner's event loop whenever its queue changes.
	Queue func(QueueEvent)
	// LeaseLost is called by a Runner's event loop when another runner
	// took over a system lock this runner held: the job stops here and the
	// other runner resumes it.
	LeaseLost func(LeaseEvent)
}

// JobEvent is a job that started or finished.
type JobEvent struct {
	// Job is the job's Name.
	Job string
	// Generation is the spec generation the run is for.
	Generation int64
	// System is the job's [bmc.Endpoint.SystemKey] ("" when its BMC address
	// is invalid).
	System string
	// Driver is the BMC address's protocol: "redfish", "ipmi" or a host's
	// own ("" when the address is invalid).
	Driver string
	// Start is when the job started; End when it completed (zero for
	// JobStarted).
	Start, End time.Time
	// Result, Reason and Message are the job's outcome (empty for
	// JobStarted). Reason is a CamelCase word fit for a label.
	Result  conditions.Result
	Reason  string
	Message string
	// Wire is what the job's connection had cost when it completed (see
	// Status.Wire); zero when the driver does not count.
	Wire bmc.Stats
	// Tasks holds every task's final state, in order (JobFinished only).
	// A task that never started has a zero Start.
	Tasks []TaskEvent
}

// Duration is End minus Start (0 for JobStarted).
func (e JobEvent) Duration() time.Duration {
	if e.End.IsZero() {
		return 0
	}
	return e.End.Sub(e.Start)
}

// TaskEvent is a task that started or finished.
type TaskEvent struct {
	// Job, System and Driver are as in [JobEvent].
	Job    string
	System string
	Driver string
	// Index is the task's index in Spec.Tasks.
	Index int
	// Kind is the task's action: "power", "powerStatus", "reachable",
	// "bootDevice", "virtualMedia", "bmcReset" or "waitForBoot" (see
	// task.Spec.Action).
	Kind string
	// Attempt is the task's attempt count so far (1 for the first).
	Attempt int
	// Start is when the task's intent was stored; End when its result was
	// (zero for TaskStarted, and for a task that never started).
	Start, End time.Time
	// Result, Reason and Message are the task's outcome (empty for
	// TaskStarted).
	Result  conditions.Result
	Reason  string
	Message string
}

// Duration is End minus Start: the task's whole time, retries and polling
// included (0 until it finished, and for a task that never started).
func (e TaskEvent) Duration() time.Duration {
	if e.End.IsZero() || e.Start.IsZero() {
		return 0
	}
	return e.End.Sub(e.Start)
}

// BMCErrorEvent is an error a BMC call or login returned.
type BMCErrorEvent struct {
	// Job, System and Driver are as in [JobEvent]; Task is the index of the
	// task the call was made for.
	Job    string
	System string
	Driver string
	Task   int
	// Login is true for an error of opening the connection (dial, login).
	Login bool
	// Class is "unauthorized", "notSupported", "sessionExpired",
	// "transient" (retried) or "permanent" (the task fails), fit for a
	// label. The error's text is not included: it is free text.
	Class string
}

// WireEvent is what one BMC session cost on the wire since it was last
// reported (a delta, never a total).
type WireEvent struct {
	// Driver is the address's protocol ("redfish", "ipmi", ...).
	Driver string
	// Endpoint is the BMC's lower-case host:port ([bmc.Endpoint.Key]).
	Endpoint string
	// Delta counts the requests, connections and logins since the last
	// report (ThrottleWait included).
	Delta bmc.Stats
}

// QueueEvent is a Runner's queue.
type QueueEvent struct {
	// Jobs is the number of unfinished jobs this runner knows of: every
	// job in the Store, with replicas sharing it (aggregate replicas with
	// max, not sum).
	Jobs int
	// Held is the number of systems this runner holds, i.e. jobs it is
	// running (waiting for a power change, a boot or a retry included).
	Held int
	// Waiting is Jobs minus Held: jobs waiting for their system (held by
	// an earlier job, here or on another replica) or for a place under
	// EndpointConcurrency.
	Waiting int
	// Steps is the number of steps in flight (jobs with BMC calls under
	// way), bounded by Config.Workers.
	Steps int
}

// LeaseEvent is a system lock this runner lost.
type LeaseEvent struct {
	// System is the lock's [bmc.Endpoint.SystemKey]; Job the job that was
	// running under it.
	System string
	Job    string
}

// JoinObservers returns an Observer that calls each of obs in turn for
// every event (e.g. a Prometheus and an OpenTelemetry adapter).
func JoinObservers(obs ...Observer) Observer {
	var o Observer
	o.JobStarted = joinFn(obs, func(x Observer) func(JobEvent) { return x.JobStarted })
	o.JobFinished = joinFn(obs, func(x Observer) func(JobEvent) { return x.JobFinished })
	o.TaskStarted = joinFn(obs, func(x Observer) func(TaskEvent) { return x.TaskStarted })
	o.TaskFinished = joinFn(obs, func(x Observer) func(TaskEvent) { return x.TaskFinished })
	o.BMCError = joinFn(obs, func(x Observer) func(BMCErrorEvent) { return x.BMCError })
	o.Wire = joinFn(obs, func(x Observer) func(WireEvent) { return x.Wire })
	o.Queue = joinFn(obs, func(x Observer) func(QueueEvent) { return x.Queue })
	o.LeaseLost = joinFn(obs, func(x Observer) func(LeaseEvent) { return x.LeaseLost })
	return o
}

func joinFn[E any](obs []Observer, field func(Observer) func(E)) func(E) {
	var fns []func(E)
	for _, o := range obs {
		if f := field(o); f != nil {
			fns = append(fns, f)
		}
	}
	switch len(fns) {
	case 0:
		return nil
	case 1:
		return fns[0]
	}
	return func(e E) {
		for _, f := range fns {
			f(e)
		}
	}
}

// emit calls f(e) if f is set, recovering (and logging) a panic, so an
// observer cannot unwind a step between its writes.
func emit[E any](log logr.Logger, f func(E), e E) {
	if f == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error(fmt.Errorf("panic: %v", p), "job observer panicked; event dropped")
		}
	}()
	f(e)
}

func (o *Observer) jobEvents() bool {
	return o.JobStarted != nil || o.JobFinished != nil || o.TaskStarted != nil || o.TaskFinished != nil
}

// observeSetup connects the pool's wire accounting to the observer.
func (s *Stepper) observeSetup() {
	if f := s.cfg.Observer.Wire; f != nil {
		log := s.cfg.Logger
		s.pool.SetWire(func(proto, endpoint string, d bmc.Stats) {
			emit(log, f, WireEvent{Driver: proto, Endpoint: endpoint, Delta: d})
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

func observe(j *Job) observedRun {
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
func (s *Stepper) observePersist(j *Job, persist PersistFunc) PersistFunc {
	o := &s.cfg.Observer
	if !o.jobEvents() {
		return persist
	}
	prev := observe(j)
	return func(ctx context.Context, j *Job) error {
		if err := persist(ctx, j); err != nil {
			return err
		}
		cur := observe(j)
		s.report(j, prev, cur)
		prev = cur
		return nil
	}
}

// report emits the events of the change from prev to cur.
func (s *Stepper) report(j *Job, prev, cur observedRun) {
	o, log := &s.cfg.Observer, s.cfg.Logger
	if prev.gen != cur.gen || !prev.start.Equal(cur.start) {
		prev = observedRun{} // a new run (first start, or a new generation)
	}
	sys, drv := "", ""
	if ep, err := s.eps.parse(j.Spec.BMC); err == nil {
		sys, drv = ep.SystemKey(), ep.Protocol
	}
	if prev.start.IsZero() && !cur.start.IsZero() {
		emit(log, o.JobStarted, JobEvent{Job: j.Name, Generation: cur.gen, System: sys, Driver: drv, Start: cur.start})
	}
	for i := range cur.started {
		was := i < len(prev.started) && prev.started[i]
		if cur.started[i] && !was {
			emit(log, o.TaskStarted, taskEvent(j, i, sys, drv))
		}
	}
	for i := range cur.ended {
		was := i < len(prev.ended) && prev.ended[i]
		if cur.ended[i] && !was && cur.started[i] {
			emit(log, o.TaskFinished, taskEvent(j, i, sys, drv))
		}
	}
	if cur.done && !prev.done && o.JobFinished != nil {
		e := JobEvent{
			Job: j.Name, Generation: cur.gen, System: sys, Driver: drv, Start: cur.start,
			Result: j.Status.Result, Reason: j.Status.Reason, Message: j.Status.Message,
			Tasks: make([]TaskEvent, len(j.Status.Tasks)),
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
		emit(log, o.JobFinished, e)
	}
}

func taskEvent(j *Job, i int, sys, drv string) TaskEvent {
	ts := &j.Status.Tasks[i]
	e := TaskEvent{Job: j.Name, System: sys, Driver: drv, Index: i, Attempt: ts.Attempts}
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
func (s *Stepper) observeStepEnd(j *Job) {
	if s.cfg.Observer.Wire == nil {
		return
	}
	if ep, err := s.eps.parse(j.Spec.BMC); err == nil {
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
	emit(r.s.cfg.Logger, f, BMCErrorEvent{
		Job: r.j.Name, System: r.ep.SystemKey(), Driver: r.ep.Protocol, Task: i, Login: dialing, Class: class,
	})
}

// observeQueue reports the loop's queue when it changed since the last
// report.
func (l *loop) observeQueue() {
	f := l.r.cfg.Observer.Queue
	if f == nil {
		return
	}
	jobs, held := len(l.r.queue.jobs), len(l.held)
	e := QueueEvent{Jobs: jobs, Held: held, Waiting: max(jobs-held, 0), Steps: l.running}
	if l.lastQueue != nil && *l.lastQueue == e {
		return
	}
	l.lastQueue = &e
	emit(l.r.log, f, e)
}

// observeStopped reports the queue of a stopped loop: nothing held, no
// step in flight.
func (l *loop) observeStopped() {
	if l.r.cfg.Observer.Queue == nil {
		return
	}
	jobs := len(l.r.queue.jobs)
	e := QueueEvent{Jobs: jobs, Waiting: jobs}
	if l.lastQueue == nil || *l.lastQueue != e {
		emit(l.r.log, l.r.cfg.Observer.Queue, e)
	}
}

// observeLeaseLost reports a lock of h's system taken over by another
// runner.
func (l *loop) observeLeaseLost(h *held) {
	emit(l.r.log, l.r.cfg.Observer.LeaseLost, LeaseEvent{System: h.sys, Job: h.job})
}
