// Package prometheus exports bmckit's job and boot-state events as
// Prometheus metrics. It lives in its own module
// (github.com/bmckit/bmckit/contrib/prometheus), so a program that does not
// import it never has client_golang in its module graph.
//
// # Use
//
// [New] returns a [Metrics], a prometheus.Collector: register it, and hand
// its observers to the Runner (or Stepper) and the boot-state Tracker.
//
//	m := prometheus.New(prometheus.Options{})
//	registry.MustRegister(m)
//	runner, _ := job.NewRunner(job.Config{..., StepperConfig: job.StepperConfig{..., Observer: m.JobObserver()}})
//	tracker, _ := bootstate.NewTracker(bootstate.Config{..., Observer: m.BootObserver()})
//	mon, _ := monitor.New(monitor.Config{..., Observer: m.MonitorObserver()})
//	rcv, _ := bmcevents.NewReceiver(bmcevents.Config{..., Observer: m.EventObserver()})
//	src, _ := bmcevents.NewSource(bmcevents.SourceConfig{..., Observer: m.EventObserver()})
//
// # Metrics
//
// Names below use the default namespace "bmckit". Labels are bounded: a
// driver is a BMC protocol ("redfish", "ipmi"), a kind a task action, a
// result and a reason CamelCase words from package conditions, a signal a
// boot signal the host configured. Job names, system addresses and UUIDs
// are never labels (their number is unbounded), and no label ever holds a
// credential.
//
//	bmckit_jobs_started_total{driver}                   counter
//	bmckit_jobs_finished_total{driver,result,reason}    counter
//	bmckit_job_duration_seconds{driver,result}          histogram
//	bmckit_tasks_started_total{kind}                    counter
//	bmckit_task_duration_seconds{kind,result}           histogram (count: tasks finished)
//	bmckit_bmc_requests_total{driver}                   counter
//	bmckit_bmc_connections_total{driver}                counter
//	bmckit_bmc_logins_total{driver}                     counter
//	bmckit_bmc_errors_total{driver,op,class}            counter (op: login|call)
//	bmckit_bmc_throttled_requests_total{driver}         counter
//	bmckit_bmc_throttle_wait_seconds_total{driver}      counter
//	bmckit_runner_queue_jobs                            gauge (unfinished jobs known)
//	bmckit_runner_queue_waiting                         gauge (queue depth: jobs not running)
//	bmckit_runner_held_systems                          gauge
//	bmckit_runner_steps_in_flight                       gauge
//	bmckit_lease_losses_total                           counter
//	bmckit_bootstate_signals_total{signal}              counter
//	bmckit_bootstate_boots_completed_total              counter
//	bmckit_bootstate_boot_timeouts_total{reason}        counter
//	bmckit_bootstate_boot_duration_seconds{result}      histogram
//	bmckit_monitor_health_changes_total{health}         counter (health: the worst after the change)
//	bmckit_monitor_critical_events_total                counter (critical BMC events set on machine records, per machine)
//	bmckit_bmc_events_total{severity,via}               counter (events stored; via: push, sse, poll)
//	bmckit_bmc_event_duplicates_total{via}              counter (copies dropped: retries, streamed copies of pushed events)
//	bmckit_bmc_event_pushes_refused_total{status}       counter (the Receiver's 4xx and 503 answers)
//	bmckit_rollout_server_transitions_total{from,to}    counter (a rollout's servers: pending, held, running, succeeded, failed, skipped)
//	bmckit_rollout_halts_total{reason}                  counter (FailureBudgetSpent, CanaryFailed, Aborted)
//	bmckit_rollouts_completed_total{result}             counter (Succeeded, Failed, Halted, Aborted)
//
// Rollout events are counted by the replica whose write made them, so sum
// them over replicas: servers unavailable now across rollouts are
// sum(to="running") - sum(from="running").
//
// The queue gauges are one Runner's; with several replicas, each reports
// every unfinished job in the shared Store, so aggregate
// bmckit_runner_queue_jobs with max, not sum. Run two Runners in one
// process with a ConstLabels value each (e.g. runner="a").
package prometheus

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/rollout"
)

// Options configures [New]. The zero value means the defaults.
type Options struct {
	// Namespace prefixes every metric name. Defaults to "bmckit".
	Namespace string
	// ConstLabels are added to every metric, e.g. to tell two Runners of
	// one process apart. Defaults to none.
	ConstLabels prometheus.Labels
	// TaskBuckets are the task-duration histogram's buckets, in seconds.
	// Defaults to [DefaultTaskBuckets].
	TaskBuckets []float64
	// JobBuckets are the job- and boot-duration histograms' buckets, in
	// seconds. Defaults to [DefaultJobBuckets].
	JobBuckets []float64
}

// Default histogram buckets, in seconds: tasks take from a fraction of a
// second (a boot-device PATCH) to tens of minutes (a wait for boot).
var (
	DefaultTaskBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}
	DefaultJobBuckets  = []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600}
)

// Metrics holds the collectors. It implements prometheus.Collector; its
// observer funcs only update metrics (no I/O, no allocation beyond label
// lookups), as the observer contracts require. Safe for concurrent use.
type Metrics struct {
	jobsStarted, jobsFinished *prometheus.CounterVec
	jobDuration               *prometheus.HistogramVec
	tasksStarted              *prometheus.CounterVec
	taskDuration              *prometheus.HistogramVec

	requests, connections, logins, errs, throttled, throttleWait *prometheus.CounterVec

	queueJobs, queueWaiting, held, steps prometheus.Gauge
	leaseLosses                          prometheus.Counter

	signals, bootsCompleted, bootTimeouts *prometheus.CounterVec
	bootDuration                          *prometheus.HistogramVec

	healthChanges    *prometheus.CounterVec
	criticalOnRecord *prometheus.CounterVec

	events, eventDuplicates, eventRefusals *prometheus.CounterVec

	rolloutServers, rolloutHalts, rolloutsCompleted *prometheus.CounterVec

	all []prometheus.Collector
}

var _ prometheus.Collector = (*Metrics)(nil)

// New creates the metrics. Register the result with a prometheus.Registerer.
func New(opts Options) *Metrics {
	ns := opts.Namespace
	if ns == "" {
		ns = "bmckit"
	}
	tb, jb := opts.TaskBuckets, opts.JobBuckets
	if len(tb) == 0 {
		tb = DefaultTaskBuckets
	}
	if len(jb) == 0 {
		jb = DefaultJobBuckets
	}
	m := &Metrics{}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help, ConstLabels: opts.ConstLabels}, labels)
		m.all = append(m.all, c)
		return c
	}
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, Buckets: buckets, ConstLabels: opts.ConstLabels}, labels)
		m.all = append(m.all, h)
		return h
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help, ConstLabels: opts.ConstLabels})
		m.all = append(m.all, g)
		return g
	}
	m.jobsStarted = counter("jobs_started_total", "Jobs started (their start stored), by BMC driver.", "driver")
	m.jobsFinished = counter("jobs_finished_total", "Jobs completed, by BMC driver, result (Succeeded, Failed, Canceled) and reason.", "driver", "result", "reason")
	m.jobDuration = hist("job_duration_seconds", "Time from a job's start to its completion.", jb, "driver", "result")
	m.tasksStarted = counter("tasks_started_total", "Tasks started (their first intent stored), by kind.", "kind")
	m.taskDuration = hist("task_duration_seconds", "Time from a task's start to its result, retries and polling included, by kind and result.", tb, "kind", "result")
	m.requests = counter("bmc_requests_total", "Protocol requests sent to BMCs (HTTP requests, IPMI commands), by driver.", "driver")
	m.connections = counter("bmc_connections_total", "Transport connections opened to BMCs, by driver.", "driver")
	m.logins = counter("bmc_logins_total", "BMC sessions created, by driver.", "driver")
	m.errs = counter("bmc_errors_total", "Errors BMC calls (op=call) and logins (op=login) returned, by driver and class (transient, permanent, unauthorized, notSupported, sessionExpired).", "driver", "op", "class")
	m.throttled = counter("bmc_throttled_requests_total", "Requests that waited for their endpoint's request budget, by driver.", "driver")
	m.throttleWait = counter("bmc_throttle_wait_seconds_total", "Time requests waited for their endpoint's request budget, by driver.", "driver")
	m.queueJobs = gauge("runner_queue_jobs", "Unfinished jobs the Runner knows of (every replica sees all of them: aggregate with max).")
	m.queueWaiting = gauge("runner_queue_waiting", "Queue depth: unfinished jobs the Runner is not running (waiting for their system or an endpoint slot).")
	m.held = gauge("runner_held_systems", "Systems the Runner holds, i.e. jobs it is running.")
	m.steps = gauge("runner_steps_in_flight", "Job steps with BMC calls under way.")
	m.leaseLosses = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "lease_losses_total", Help: "System locks another runner took over from this one.", ConstLabels: opts.ConstLabels})
	m.all = append(m.all, m.leaseLosses)
	m.signals = counter("bootstate_signals_total", "Boot signals stored, by signal.", "signal")
	m.bootsCompleted = counter("bootstate_boots_completed_total", "Boot attempts that completed (their policy met).")
	m.bootTimeouts = counter("bootstate_boot_timeouts_total", "Boot attempts that timed out, by reason (TimedOut, or a stage's timeout such as IPXETimeout).", "reason")
	m.bootDuration = hist("bootstate_boot_duration_seconds", "Time from a boot attempt's start to its end, by result.", jb, "result")
	m.healthChanges = counter("monitor_health_changes_total", "Changes of a machine's worst health the monitor stored, by the health after the change (OK, Warning, Critical, none for unknown).", "health")
	m.criticalOnRecord = counter("monitor_critical_events_total", "Critical BMC events the monitor applied to machine records' CriticalBMCEvent condition, one per event per machine it concerns, counted by the replica that stored them.")
	m.events = counter("bmc_events_total", "BMC events stored, by severity (OK, Warning, Critical, none) and how they came (push, sse, poll).", "severity", "via")
	m.eventDuplicates = counter("bmc_event_duplicates_total", "BMC event copies dropped as already stored (a BMC's retry, the streamed copy of a pushed event, a log entry read again), by how they came.", "via")
	m.eventRefusals = counter("bmc_event_pushes_refused_total", "Event pushes the Receiver refused, by HTTP status (400, 401, 404, 405, 413; 503 when the store failed).", "status")
	m.rolloutServers = counter("rollout_server_transitions_total", "Transitions of rollouts' servers this process wrote, by state before and after (pending, held, running, succeeded, failed, skipped).", "from", "to")
	m.rolloutHalts = counter("rollout_halts_total", "Rollouts this process halted, by reason (FailureBudgetSpent, CanaryFailed, Aborted).", "reason")
	m.rolloutsCompleted = counter("rollouts_completed_total", "Rollouts this process completed, by result (Succeeded, Failed, Halted, Aborted).", "result")
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.all {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.all {
		c.Collect(ch)
	}
}

// JobObserver returns the observer to set in job.Config.Observer or
// job.StepperConfig.Observer (with observe.Join to add others).
func (m *Metrics) JobObserver() observe.Observer {
	return observe.Observer{
		JobStarted: func(e observe.JobEvent) { m.jobsStarted.WithLabelValues(label(e.Driver)).Inc() },
		JobFinished: func(e observe.JobEvent) {
			d, r := label(e.Driver), label(string(e.Result))
			m.jobsFinished.WithLabelValues(d, r, label(e.Reason)).Inc()
			m.jobDuration.WithLabelValues(d, r).Observe(e.Duration().Seconds())
		},
		TaskStarted: func(e observe.TaskEvent) { m.tasksStarted.WithLabelValues(label(e.Kind)).Inc() },
		TaskFinished: func(e observe.TaskEvent) {
			m.taskDuration.WithLabelValues(label(e.Kind), label(string(e.Result))).Observe(e.Duration().Seconds())
		},
		BMCError: func(e observe.BMCErrorEvent) {
			op := "call"
			if e.Login {
				op = "login"
			}
			m.errs.WithLabelValues(label(e.Driver), op, label(e.Class)).Inc()
		},
		Wire: func(e observe.WireEvent) {
			d := label(e.Driver)
			add := func(c *prometheus.CounterVec, v float64) {
				if v > 0 {
					c.WithLabelValues(d).Add(v)
				}
			}
			add(m.requests, float64(e.Delta.Requests))
			add(m.connections, float64(e.Delta.Connections))
			add(m.logins, float64(e.Delta.Logins))
			add(m.throttled, float64(e.Delta.Throttled))
			add(m.throttleWait, e.Delta.ThrottleWait.Seconds())
		},
		Queue: func(e observe.QueueEvent) {
			m.queueJobs.Set(float64(e.Jobs))
			m.queueWaiting.Set(float64(e.Waiting))
			m.held.Set(float64(e.Held))
			m.steps.Set(float64(e.Steps))
		},
		LeaseLost: func(observe.LeaseEvent) { m.leaseLosses.Inc() },
	}
}

// BootObserver returns the observer to set in bootstate.Config.Observer.
func (m *Metrics) BootObserver() bootstate.Observer {
	return bootstate.Observer{
		SignalStored: func(e bootstate.SignalEvent) { m.signals.WithLabelValues(label(e.Signal)).Inc() },
		BootCompleted: func(e bootstate.BootEvent) {
			m.bootsCompleted.WithLabelValues().Inc()
			m.bootDuration.WithLabelValues(label(string(e.Result))).Observe(e.Duration().Seconds())
		},
		BootTimedOut: func(e bootstate.BootEvent) {
			m.bootTimeouts.WithLabelValues(label(e.Reason)).Inc()
			m.bootDuration.WithLabelValues(label(string(e.Result))).Observe(e.Duration().Seconds())
		},
	}
}

// MonitorObserver returns the observer to set in monitor.Config.Observer.
func (m *Metrics) MonitorObserver() monitor.Observer {
	return monitor.Observer{
		HealthChanged: func(e monitor.HealthEvent) { m.healthChanges.WithLabelValues(label(string(e.To))).Inc() },
		CriticalEvent: func(e monitor.CriticalEvent) { m.criticalOnRecord.WithLabelValues().Add(float64(len(e.Events))) },
	}
}

// EventObserver returns the observer to set in bmcevents.Config.Observer
// (the Receiver) and bmcevents.SourceConfig.Observer (SSE and log
// polling). Alert on rate(bmckit_bmc_events_total{severity="Critical"}).
func (m *Metrics) EventObserver() bmcevents.Observer {
	via := func(k bmcevents.Kind) string {
		if k == "" {
			return string(bmcevents.KindPush)
		}
		return label(string(k))
	}
	return bmcevents.Observer{
		Stored:    func(ev bmcevents.Event) { m.events.WithLabelValues(label(string(ev.Severity)), via(ev.Via)).Inc() },
		Duplicate: func(_ string, k bmcevents.Kind) { m.eventDuplicates.WithLabelValues(via(k)).Inc() },
		Refused:   func(status int) { m.eventRefusals.WithLabelValues(strconv.Itoa(status)).Inc() },
	}
}

// RolloutObserver returns the observer to set in rollout.Config.Observer.
// Rollout and server names are never labels.
func (m *Metrics) RolloutObserver() rollout.Observer {
	return rollout.Observer{Transition: func(e rollout.Event) {
		switch e.Kind {
		case rollout.EventServer:
			m.rolloutServers.WithLabelValues(label(e.From.String()), label(e.To.String())).Inc()
		case rollout.EventCompleted:
			m.rolloutsCompleted.WithLabelValues(label(string(e.Result))).Inc()
		case rollout.EventHalting:
			m.rolloutHalts.WithLabelValues(label(e.Reason)).Inc()
		}
	}}
}

// label keeps a label value bounded and printable: empty becomes "none"
// and anything longer than 64 bytes is cut (values come from bounded sets;
// this only guards against a host's odd custom driver or signal name).
func label(s string) string {
	if s == "" {
		return "none"
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.ToValidUTF8(s, "?")
}
