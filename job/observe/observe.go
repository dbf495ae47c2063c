// Package observe is the job package's observer hook: the events a
// job.Runner or job.Stepper reports for metrics and traces (Observer), and
// Join to combine several observers. Adapters live in their own modules
// (contrib/prometheus, contrib/otel), so the core has no metrics or tracing
// dependency; docs/observability.md has the decisions.
package observe

import (
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
)

// Observer receives events from a job.Runner or a job.Stepper for metrics and
// traces. Every field is optional; a nil func is not called, and the zero
// Observer costs nothing. Set it in job.Config.Observer or
// job.StepperConfig.Observer; combine several with [Join].
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
	// "bootDevice", "virtualMedia", "bmcReset", "waitForBoot",
	// "firmwareUpdate", "inventory", "bios" or "clearLog" (see
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

// Join returns an Observer that calls each of obs in turn for
// every event (e.g. a Prometheus and an OpenTelemetry adapter).
func Join(obs ...Observer) Observer {
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
