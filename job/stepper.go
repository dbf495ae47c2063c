package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/internal/powerpoll"
	"github.com/bmckit/bmckit/job/internal/powerwait"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/retry"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// Clock is the time source: [clock.Clock], so clock.Real, clock.Fake and any
// value with Now and After fit.
type Clock = clock.Clock

// PersistFunc stores the job's current state. The Stepper calls it with the
// intent before it touches the BMC and again with each result, so the same
// state machine is crash-safe whether persist is a compare-and-swap on a
// Store (the Runner) or a status patch of a host's own object (a controller).
// If persist fails, Step stops and returns the error without touching the BMC.
//
// j is the Stepper's working copy: Step goes on changing it, in place, after
// persist returned. A host that patches its own object from a copy taken
// inside persist uses [Stepper.StepPatch] instead, which hands it the status
// before and after each change as copies of their own.
type PersistFunc func(ctx context.Context, j *Job) error

// StepResult says when to call Step again.
type StepResult struct {
	// Done is true once the job completed; no further steps are needed.
	Done bool
	// RequeueAfter is how long to wait before the next Step (0: at once).
	RequeueAfter time.Duration
	// Waiting is true when another job holds the job's system (see
	// StepperConfig.Locks): the step touched neither the BMC nor the job.
	Waiting bool
	// Busy, when Waiting, is the locker's answer: which job holds the
	// system (it may be this job, held by another process: Busy.Holder is
	// then the job's own name), which process acts for it and, where the
	// locker knows, when its lock runs out. A host shows it (the Kubernetes
	// kit's Waiting condition and event).
	Busy *syslock.BusyError
}

// StepperConfig configures a Stepper. The zero value of every field but
// Dialer means its default.
type StepperConfig struct {
	// Dialer opens BMC connections. Required.
	Dialer bmc.Dialer
	// Kinds are the task kinds the program adds, by domain-qualified name
	// ("example.com/raid-reset"), run by tasks whose spec sets Custom with
	// that name (see [Kind] and docs/custom-kinds.md). A job with a custom
	// task whose kind is not here, or whose params its kind refuses, fails
	// at its start with reason InvalidSpec (and Runner.Submit refuses it).
	Kinds Kinds
	// Credentials resolves Spec.CredentialsRef. Defaults to a resolver that
	// returns empty credentials for an empty ref and an error otherwise.
	Credentials bmc.CredentialsResolver
	// Boot tracks boots for wait-for-boot tasks. Required only for jobs that
	// have such tasks; without it they fail with reason NotSupported.
	Boot BootTracker
	// Clock defaults to the wall clock.
	Clock Clock
	// Logger defaults to logr.Discard(); a logger in the ctx passed to Step
	// (logr.NewContext) takes precedence.
	Logger logr.Logger
	// DefaultTaskTimeout bounds a task whose Spec has no Timeout. Defaults
	// to 5 minutes (30 minutes for wait-for-boot tasks).
	DefaultTaskTimeout time.Duration
	// PollInterval is the delay between read-backs right after an action.
	// Defaults to 250ms (at most 4 polls per second, so a change is seen
	// within about 0.3 s of landing).
	PollInterval time.Duration
	// SlowPollAfter is how long after an action polling stays fast.
	// Defaults to 30s; after it polls come every SlowPollInterval.
	SlowPollAfter time.Duration
	// SlowPollInterval defaults to 2s.
	SlowPollInterval time.Duration
	// ResendAfter re-sends a power action whose effect was not observed
	// after this long while the BMC reports no transition (BMCs drop
	// requests). Defaults to 30s.
	ResendAfter time.Duration
	// BootPollInterval is the delay between boot-state checks of a
	// wait-for-boot task. Defaults to 1s.
	BootPollInterval time.Duration
	// MaxVerifyResends is how often a boot override that the BMC ignored or
	// reverted is set again before the task fails. Defaults to 2.
	MaxVerifyResends int
	// Retry is the backoff between attempts after transient errors.
	// Defaults to 500ms doubling to 15s, +/-20% jitter.
	Retry retry.Policy
	// IdleTimeout closes pooled connections unused for this long. Defaults
	// to 2 minutes.
	IdleTimeout time.Duration
	// Locks keeps two jobs (and two processes stepping one job) from acting
	// on one system at the same time on the controller path (see
	// [syslock.Locker] and [syslock.NewStoreLocker]). Step locks the job's system
	// before it touches the BMC and unlocks it once the job completed; while
	// another job, or another process, holds the system, Step touches
	// nothing and returns a StepResult with Waiting set. Every BMC request of
	// the step is fenced by the lock's validity (see docs/jobs.md, "The
	// fence"). Required: a host that keeps two jobs off one system by other
	// means says so with [syslock.NoLocking]; NewStepper refuses nil, so a lock
	// cannot be left out by accident.
	Locks syslock.Locker
	// LockRetryInterval is the RequeueAfter of a Step that found its system
	// held by another job. Defaults to 2s.
	LockRetryInterval time.Duration
	// PowerGate, if set, admits every power on, cycle and reset before it is
	// sent (power-on staggering); while it says to wait, the task waits
	// without touching the BMC. Nil admits everything.
	PowerGate PowerGate
	// PowerSettle, when > 0, is how long a power on, off or soft-off task
	// that finds its target state already there (nothing sent yet) keeps
	// reading the state, every PollInterval, before it takes the effect as
	// present: some BMCs report the old state, with no transitional state,
	// while another client's change is still landing. If the state leaves
	// the target within the window, the task sends its action as usual.
	// The window is waited out within one Step. Defaults to 0 (off): it
	// costs that much time, and a read every PollInterval, on every power
	// task that finds its target already there.
	PowerSettle time.Duration
	// AdaptivePoll makes power tasks poll sparsely before the time the
	// system's recent changes of the same action took and densely around
	// it, learned in memory (see [AdaptivePoll]). On by default; set
	// AdaptivePoll.Disabled for the fixed schedule above.
	AdaptivePoll AdaptivePoll
	// PowerEvents confirms power changes from the BMC's event stream where
	// the driver implements bmc.PowerWatcher (see [PowerEvents]). It needs
	// Wake; on by default when Wake is set.
	PowerEvents PowerEvents
	// Wake, when set, is called with a job's name when the job should be
	// stepped again now, ahead of the RequeueAfter its last Step returned:
	// the BMC reported a change the job waits for (or the event stream it
	// relied on ended). It is called from a driver's goroutine and must not
	// block (a controller sends a GenericEvent on a buffered channel
	// source; the Runner sets its own). Defaults to nil: no events are
	// watched, power tasks only poll.
	Wake func(job string)
	// Observer receives job, task, BMC error and wire events for metrics
	// and traces (see [observe.Observer]; adapters in contrib/prometheus and
	// contrib/otel). Defaults to none.
	Observer observe.Observer
}

// Stepper advances jobs one step at a time. One Stepper serves any number of
// jobs concurrently (but never call Step twice at once for the same job);
// it keeps BMC connections in a connpool.Pool between steps.
//
// A controller that keeps the job in its own object calls [Stepper.StepPatch]
// from Reconcile: Step changes the job's status in place, so a patch whose
// base is copied inside persist would miss the change; StepPatch hands
// persist the status before and after each change, as copies of its own, to
// build the patch from (see its example and docs/kubernetes.md). Call
// [Stepper.Release] when the object is deleted.
type Stepper struct {
	cfg     StepperConfig
	pool    *connpool.Pool
	learner *powerpoll.Learner // adaptive polling's landing histories
	waits   *powerwait.Table   // power waits in progress, by job
	eps     endpointCache
}

// NewStepper validates cfg and applies defaults.
func NewStepper(cfg StepperConfig) (*Stepper, error) {
	if cfg.Dialer == nil {
		return nil, errors.New("job: StepperConfig.Dialer is required")
	}
	if cfg.Locks == nil {
		return nil, errors.New("job: StepperConfig.Locks is required: use a syslock.Locker shared by every process that steps jobs on the same systems (syslock.NewStoreLocker over one Store, or a Lease-backed one), or syslock.NoLocking if the host keeps two jobs off one system by other means")
	}
	if err := cfg.Kinds.check(); err != nil {
		return nil, err
	}
	if cfg.Credentials == nil {
		cfg.Credentials = bmc.CredentialsFunc(func(_ context.Context, ref string) (bmc.Credentials, error) {
			if ref == "" {
				return bmc.Credentials{}, nil
			}
			return bmc.Credentials{}, fmt.Errorf("no bmc.CredentialsResolver configured to resolve %q", ref)
		})
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.DefaultTaskTimeout, 5*time.Minute)
	def(&cfg.PollInterval, 250*time.Millisecond)
	def(&cfg.SlowPollAfter, 30*time.Second)
	def(&cfg.SlowPollInterval, 2*time.Second)
	def(&cfg.ResendAfter, 30*time.Second)
	def(&cfg.BootPollInterval, time.Second)
	def(&cfg.IdleTimeout, 2*time.Minute)
	def(&cfg.LockRetryInterval, 2*time.Second)
	if cfg.MaxVerifyResends <= 0 {
		cfg.MaxVerifyResends = 2
	}
	def(&cfg.AdaptivePoll.DenseInterval, 2*cfg.PollInterval)
	def(&cfg.AdaptivePoll.MaxGap, 10*cfg.PollInterval)
	cfg.AdaptivePoll.MaxGap = max(cfg.AdaptivePoll.MaxGap, cfg.AdaptivePoll.DenseInterval)
	if cfg.AdaptivePoll.MinSamples <= 0 {
		cfg.AdaptivePoll.MinSamples = 3
	}
	if cfg.AdaptivePoll.MaxKeys <= 0 {
		cfg.AdaptivePoll.MaxKeys = 100_000
	}
	def(&cfg.PowerEvents.PollInterval, 10*time.Second)
	s := &Stepper{cfg: cfg, pool: connpool.New(cfg.Dialer, cfg.IdleTimeout, cfg.Clock.Now),
		learner: powerpoll.New(cfg.AdaptivePoll.MinSamples, cfg.AdaptivePoll.MaxKeys), waits: powerwait.New()}
	s.observeSetup()
	return s, nil
}

// Close closes every pooled BMC connection.
func (s *Stepper) Close(ctx context.Context) error { return s.pool.Close(ctx) }

// Pool exposes the connection pool (for hosts that want CloseIdle on a ticker).
func (s *Stepper) Pool() *connpool.Pool { return s.pool }

// validate checks spec as a job start does: Spec.Validate (with the
// endpoint cache) and its custom tasks against the registered Kinds.
func (s *Stepper) validate(spec *Spec) error {
	if err := spec.validate(s.eps.parse); err != nil {
		return err
	}
	return s.cfg.Kinds.validate(spec)
}

// Release is for job name, on system bmcURL (its Spec.BMC), when it will
// not be stepped again here (its object was deleted, or the caller stops
// working on it): it closes the BMC connection the Stepper keeps for the
// system if this job was the last to use it (the endpoint's shared session
// closes once no system uses it) and, with Locks, unlocks the system if the
// job holds it. Step calls it by itself when a job completes. Idempotent.
func (s *Stepper) Release(ctx context.Context, name, bmcURL string) error {
	s.waits.End(name)
	ep, err := s.eps.parse(bmcURL)
	if err != nil {
		return nil // never dialed, never locked
	}
	s.pool.ReleaseFor(ctx, ep, name)
	if !syslock.IsNoLocking(s.cfg.Locks) {
		return s.cfg.Locks.Unlock(ctx, ep.SystemKey(), name)
	}
	return nil
}

// BootAttemptID is the boot attempt that wait-for-boot task taskIndex of j
// waits for. Hosts that embed boot tokens in the iPXE script or Ignition they
// serve compute the token from it (see package bootstate).
//
// Each wait-for-boot task has its own attempt, opened when the job starts
// (the first) or when the previous wait-for-boot task completed (the next),
// before the tasks that power the server on, so a callback from an earlier
// boot cannot complete a later wait.
func BootAttemptID(j *Job, taskIndex int) string {
	return fmt.Sprintf("%s.%d.%d.%d", j.Name, j.CreatedAt.UnixNano(), j.Generation, taskIndex)
}

// Step advances j until it must wait: for a power change to land, a boot, a
// retry, or its system. Each action is preceded by its intent (persist) and
// read back at once; a task whose effect is there completes in the same step,
// its result stored together with the next task's intent (no BMC call lies
// between them), and the next task's action follows. So a job whose effects
// show at once costs one write per task plus one, and each task that must be
// polled one more. It mutates j. BMC errors do not make Step fail:
// transient ones are retried on later steps with backoff, permanent ones fail
// the task and the job, both recorded in j.Status. Step returns an error only
// when persist fails or ctx is done; the job is then unchanged in storage
// beyond what persist accepted, and calling Step again later is safe.
func (s *Stepper) Step(ctx context.Context, j *Job, persist PersistFunc) (StepResult, error) {
	defer s.observeStepEnd(j)
	persist = s.observePersist(j, persist)
	st := &stepRun{s: s, j: j, store: persist, now: s.cfg.Clock.Now(), log: logr.FromContextOrDiscard(ctx)}
	if st.log.GetSink() == nil || isDiscard(st.log) {
		st.log = s.cfg.Logger
	}
	st.log = st.log.WithValues("job", j.Name)
	if err := ctx.Err(); err != nil {
		return StepResult{}, err
	}
	// Reads a driver makes in this step may serve its later pre-reads in
	// this step, until it sends an action (bmc.ReadScope).
	ctx = bmc.WithReadScope(ctx)
	return st.run(ctx)
}

func isDiscard(l logr.Logger) bool { return l.GetSink() == logr.Discard().GetSink() }

type stepRun struct {
	s      *Stepper
	j      *Job
	store  PersistFunc // the host's, through the observer (use persist)
	now    time.Time   // when the step began, moved on by tick
	log    logr.Logger
	ep     bmc.Endpoint
	base   context.Context // the step's ctx, bounded by the lock
	drv    bmc.Driver      // the connection this step used, if any
	intent int             // 1 + the task whose intent this step stored, or 0
	next   bool            // a task succeeded and the next one starts in this step (advanceAll)
	// prevRead is what readBeforeIntent found when it recorded nothing
	// (bootrestore.go).
	prevRead previousRead
	wire     wireTally // what the step's BMC calls cost (recordWire)
	// resetMarked is 1 + the task whose LastResetBefore this step read
	// (kind_waitforboot.go), or 0.
	resetMarked int
	// confirmed is set once a persist of this step succeeded: the copy of
	// the job the step works on has proven itself current (the host's
	// compare-and-swap took it). No state-changing request goes out before
	// (confirm).
	confirmed bool
	// takenAnew is set when this step took the job's system lock anew
	// (syslock.Taker) rather than renewing this process's live lock.
	takenAnew bool
	// lockValidFor is how long the job's lock was valid when this step
	// took or renewed it (0 without Locks).
	lockValidFor time.Duration
}

// unlockTaken gives back the lock this step took anew when the step's
// first write failed: the copy of the job was stale (another replica
// completed the job, or it was deleted) or the store is out, and nothing
// was sent. Without it a stale copy left its system locked for a whole
// lease after the job had completed (issue 33). Bounded, best effort: the
// lease expires anyway.
func (r *stepRun) unlockTaken(ctx context.Context) {
	r.takenAnew = false
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	if err := r.s.cfg.Locks.Unlock(uctx, r.ep.SystemKey(), r.j.Name); err != nil {
		r.log.Info("giving back a lock taken for a copy of the job the store refused failed; it runs out with its lease", "error", err.Error())
	}
}

func (r *stepRun) run(ctx context.Context) (StepResult, error) {
	j := r.j
	ep, epErr := r.s.eps.parse(j.Spec.BMC)
	r.ep = ep
	if j.Completed() {
		// Done here, or completed by a step whose unlock failed: release
		// again (idempotent).
		if err := r.s.Release(ctx, j.Name, j.Spec.BMC); err != nil {
			return StepResult{Done: true}, err
		}
		return StepResult{Done: true}, nil
	}
	fresh := j.Status.StartTime == nil || j.Status.ObservedGeneration != j.Generation || len(j.Status.Tasks) != len(j.Spec.Tasks)
	if fresh && j.CancelRequested {
		// Canceled before it started: nothing to touch on the BMC, so no
		// need to wait for the system either.
		now := r.now
		j.Status = Status{ObservedGeneration: j.Generation, StartTime: timestamp.Ptr(now), Tasks: make([]task.Status, len(j.Spec.Tasks))}
		return r.finish(ctx, conditions.ResultCanceled, conditions.ReasonCanceled, "canceled on request before it started", conditions.ReasonCanceled)
	}
	if locks := r.s.cfg.Locks; !syslock.IsNoLocking(locks) && epErr == nil {
		// The lock's validity counts from before the call: whatever the
		// locker took to answer (a store that hung) is already spent.
		asked := r.s.cfg.Clock.Now()
		var validFor time.Duration
		var taken bool
		var err error
		if lt, ok := locks.(syslock.Taker); ok {
			validFor, taken, err = lt.TakeLock(ctx, ep.SystemKey(), j.Name)
		} else {
			validFor, err = locks.Lock(ctx, ep.SystemKey(), j.Name)
		}
		if errors.Is(err, syslock.ErrBusy) {
			r.log.V(1).Info("system held by another job or process; waiting", "error", err.Error())
			res := StepResult{RequeueAfter: r.s.cfg.LockRetryInterval, Waiting: true}
			if errors.As(err, &res.Busy) && res.Busy.SameJob && !res.Busy.Until.IsZero() {
				// This job's own lock, held by another process: nothing
				// changes before it runs out (or is renewed, which moves
				// Until), so look again just after that, not every
				// LockRetryInterval: a new leader waiting for a dead
				// one's locks costs one read per job, and takes each job
				// over as soon as its lock has run out. Another job's
				// lock may be released at any moment: polled as before.
				if d := res.Busy.Until.Sub(r.s.cfg.Clock.Now()) + r.s.cfg.LockRetryInterval/4; d > res.RequeueAfter {
					res.RequeueAfter = d
				}
			}
			return res, nil
		}
		if err != nil {
			return StepResult{}, fmt.Errorf("locking system %s for job %q: %w", ep.SystemKey(), j.Name, err)
		}
		// Nothing this step does may outlive the lock: every BMC request
		// is fenced by it, and the step's calls end when it may lapse.
		f := syslock.NewFence(r.s.cfg.Clock, asked, ep.SystemKey())
		f.Set(asked.Add(validFor))
		if err := f.Admit(); err != nil {
			return StepResult{}, err // Lock took longer than the lock lasts
		}
		r.lockValidFor = validFor
		var cancel context.CancelFunc
		ctx, cancel = syslock.FencedContext(ctx, f)
		defer cancel()
		r.takenAnew = taken
		if taken && !fresh {
			// The system was taken anew for a job that has started: store
			// the job first, so a stale copy (completed and unlocked by
			// another replica meanwhile) fails here, at the host's
			// compare-and-swap, before any BMC call (syslock.Taker). A fresh
			// job's first write (its intent) comes first anyway.
			if err := r.persist(ctx, j); err != nil {
				return StepResult{}, fmt.Errorf("confirming job %q before acting on system %s it just locked: %w", j.Name, ep.SystemKey(), err)
			}
		}
	}
	if fresh {
		if res, done, err := r.initialize(ctx); done {
			return res, err
		}
	} else if j.CancelRequested {
		return r.finish(ctx, conditions.ResultCanceled, conditions.ReasonCanceled, "canceled on request", conditions.ReasonCanceled)
	}
	r.base = ctx
	res, err := r.advanceAll()
	if r.lockValidFor > 0 && !res.Done && res.RequeueAfter > r.lockValidFor/2 {
		// Only a step renews the lock on this path: a job that waits longer
		// (a boot try's backoff, a power gate, a long retry) is stepped
		// within its lock's validity, or another job could take its system.
		res.RequeueAfter = r.lockValidFor / 2
	}
	return res, err
}

// advanceAll runs advance until the job must wait: again after each task
// that succeeded with the next one to start (succeedTask sets next).
func (r *stepRun) advanceAll() (StepResult, error) {
	for {
		r.next = false
		res, err := r.advance()
		if err != nil || !r.next {
			return res, err
		}
	}
}

// advance works on the current task until the job must wait: an action is
// sent after its intent was stored, its effect read back at once, and when
// the effect is there the task's completion is stored together with the next
// task's intent (no BMC call between them), and the next task's action
// follows in the same step. So a task whose effect shows at once costs one
// write, and a task that must be polled two.
func (r *stepRun) advance() (StepResult, error) {
	j := r.j
	ctx := r.base
	if err := r.restoreDue(ctx); err != nil { // bootrestore.go
		return StepResult{}, err
	}
	if to := j.Spec.Timeout.Duration; to > 0 && r.now.Sub(j.Status.StartTime.Time) >= to {
		i := j.Status.CurrentTask
		return r.timedOut(ctx, i, fmt.Sprintf("job timed out after %s%s", to, lastErrSuffix(&j.Status.Tasks[i])))
	}
	i := j.Status.CurrentTask
	ts := &j.Status.Tasks[i]
	limit := r.taskTimeout(i) + kindOf(&j.Spec.Tasks[i]).grace(&r.s.cfg)
	if ts.StartTime != nil && r.now.Sub(ts.StartTime.Time) >= limit {
		return r.timedOut(ctx, i, fmt.Sprintf("timed out after %s%s", r.taskTimeout(i), lastErrSuffix(ts)))
	}
	if ts.NextAttemptTime != nil && r.now.Before(ts.NextAttemptTime.Time) {
		return StepResult{RequeueAfter: ts.NextAttemptTime.Sub(r.now)}, nil
	}
	// A BMC call that hangs must not outlive the task's (or the job's)
	// deadline: bound this step's calls by what is left of it. The next
	// step then fails the task as timed out.
	left := limit
	if ts.StartTime != nil {
		left -= r.now.Sub(ts.StartTime.Time)
	}
	if to := j.Spec.Timeout.Duration; to > 0 {
		if jl := to - r.now.Sub(j.Status.StartTime.Time); jl < left {
			left = jl
		}
	}
	ctx, cancel := boundBy(ctx, left)
	defer cancel()
	switch ts.Phase {
	case task.PhasePending:
		r.startTask(i)
		if err := r.persist(ctx, j); err != nil { // intent before action
			return StepResult{}, err
		}
		return r.begin(ctx, i)
	case task.PhaseStarted:
		if r.intent == i+1 { // its intent was stored by this step
			return r.act(ctx, i, false)
		}
		// Resumed after a crash, or retrying after a transient error: the
		// action may or may not have reached the BMC, so look first. A
		// retry was counted when it was scheduled (NextAttemptTime set); a
		// resume after a crash is counted here. Either way the attempt is
		// stored before the BMC is touched, even a scheduled retry's: the
		// write proves this copy of the job current (a stale cached copy
		// whose retry time came fails here, opening no connection).
		if ts.NextAttemptTime == nil {
			ts.Attempts++
		}
		ts.NextAttemptTime = nil
		if err := r.persist(ctx, j); err != nil { // the attempt before the BMC
			return StepResult{}, err
		}
		return r.act(ctx, i, true)
	case task.PhaseRequested:
		return r.verify(ctx, i)
	}
	return r.failTask(ctx, i, conditions.ReasonFailed, fmt.Sprintf("unknown task phase %q in stored status", ts.Phase))
}

// taskStartedMessage is the message of a task's conditions from its start
// until it completes.
const taskStartedMessage = "started"

// startTask records (in memory) that task i starts now. A task that sends
// nothing to the BMC (wait for boot) starts directly in phase Requested.
func (r *stepRun) startTask(i int) {
	j := r.j
	ts := &j.Status.Tasks[i]
	now := r.now
	ts.Phase = task.PhaseStarted
	if !kindOf(&j.Spec.Tasks[i]).usesBMC() {
		ts.Phase = task.PhaseRequested
		ts.RequestTime = timestamp.Ptr(now)
	}
	ts.Attempts = 1
	ts.StartTime = timestamp.Ptr(now)
	conditions.MarkRunning(&ts.Conditions, j.Generation, taskStartedMessage, now)
	conditions.MarkRunning(&j.Status.Conditions, j.Generation, fmt.Sprintf("running task %d of %d (%s)", i+1, len(j.Spec.Tasks), j.Spec.Tasks[i].Describe()), now)
	r.intent = i + 1
}

// begin acts on task i, whose intent was just stored.
func (r *stepRun) begin(ctx context.Context, i int) (StepResult, error) {
	if r.j.Status.Tasks[i].Phase == task.PhaseRequested {
		return r.verify(ctx, i)
	}
	return r.act(ctx, i, false)
}

func lastErrSuffix(ts *task.Status) string {
	if ts.LastError != "" {
		return "; last error: " + ts.LastError
	}
	return ""
}

func (r *stepRun) taskTimeout(i int) time.Duration {
	spec := &r.j.Spec.Tasks[i]
	if spec.Timeout.Duration > 0 {
		return spec.Timeout.Duration
	}
	return kindOf(spec).defaultTimeout(&r.s.cfg)
}

// initialize (re)starts the job's status for the current generation, in
// memory, and registers its boot attempts before any task can power the
// server on; the first task's intent stores it. done is true when the job
// completed (it cannot run) or must wait.
func (r *stepRun) initialize(ctx context.Context) (res StepResult, done bool, err error) {
	j := r.j
	now := r.now
	// The job's and every task's two conditions (Completed, Running) in
	// one array, each slice capped at its own two: one allocation instead
	// of two per condition list.
	conds := make([]conditions.Condition, 2*(len(j.Spec.Tasks)+1))
	j.Status = Status{ObservedGeneration: j.Generation, StartTime: timestamp.Ptr(now), Tasks: make([]task.Status, len(j.Spec.Tasks)),
		Conditions: conds[0:0:2]}
	if err := r.s.validate(&j.Spec); err != nil {
		res, err := r.finish(ctx, conditions.ResultFailed, conditions.ReasonInvalidSpec, err.Error(), conditions.ReasonSkipped)
		return res, true, err
	}
	for i := range j.Status.Tasks {
		j.Status.Tasks[i].Conditions = conds[2*i+2 : 2*i+2 : 2*i+4]
		conditions.MarkPending(&j.Status.Tasks[i].Conditions, j.Generation, now)
	}
	for i := range j.Spec.Tasks {
		w, ok := kindOf(&j.Spec.Tasks[i]).(bootWaiter)
		if !ok {
			continue
		}
		if why := w.bootUnsupported(r.s.cfg.Boot); why != "" {
			res, err := r.finish(ctx, conditions.ResultFailed, conditions.ReasonNotSupported,
				fmt.Sprintf("task %d (%s): %s", i+1, j.Spec.Tasks[i].Describe(), why), conditions.ReasonSkipped)
			return res, true, err
		}
	}
	if err := r.openNextBoot(ctx, 0); err != nil {
		// Not stored: the next step initializes again.
		r.log.Info("registering boot attempt failed; will retry", "error", err.Error())
		j.Status = Status{}
		return StepResult{RequeueAfter: r.s.cfg.Retry.Delay(1)}, true, nil
	}
	return StepResult{}, false, nil
}

// openNextBoot opens the boot attempt of the first wait-for-boot task at or
// after index from, if any. Its deadline is that task's timeout, counted from
// now: the boot it waits for starts with the tasks before it.
func (r *stepRun) openNextBoot(ctx context.Context, from int) error {
	for i := from; i < len(r.j.Spec.Tasks); i++ {
		if w, ok := kindOf(&r.j.Spec.Tasks[i]).(bootWaiter); ok {
			return w.openBoot(ctx, r, i, BootAttemptID(r.j, i))
		}
	}
	return nil
}

func (r *stepRun) driver(ctx context.Context) (bmc.Driver, error) {
	creds, err := r.s.cfg.Credentials.Resolve(ctx, r.j.Spec.CredentialsRef)
	if err != nil {
		err = fmt.Errorf("resolving credentials %q: %w", r.j.Spec.CredentialsRef, err)
		if bmc.IsTransient(err) { // e.g. a resolver that marked an apiserver timeout
			return nil, err
		}
		return nil, bmc.Permanent(err)
	}
	drv, fresh, err := r.s.pool.GetFor(ctx, r.ep, creds, r.j.Name)
	if err == nil {
		r.countWire(drv, fresh)
	}
	return drv, err
}

// driverFor is the connection for a kind that uses the BMC; nil otherwise.
// The step remembers it, so what it cost on the wire is recorded whatever
// the step's outcome.
func (r *stepRun) driverFor(ctx context.Context, k kind) (bmc.Driver, error) {
	if !k.usesBMC() {
		return nil, nil
	}
	drv, err := r.driver(ctx)
	if err == nil {
		r.drv = drv
	}
	return drv, err
}

// callCtx tags ctx with the job and task a BMC call is made for.
func (r *stepRun) callCtx(ctx context.Context, i int) context.Context {
	return WithCall(ctx, Call{Job: r.j.Name, Task: i, Attempt: r.j.Status.Tasks[i].Attempts})
}

// act checks (when recheck) whether the task's effect is already there, and
// otherwise sends the action, then reads back once.
func (r *stepRun) act(ctx context.Context, i int, recheck bool) (StepResult, error) {
	k := kindOf(&r.j.Spec.Tasks[i])
	drv, err := r.driverFor(ctx, k)
	if err != nil {
		return r.handleErr(ctx, i, err, true)
	}
	cctx := r.callCtx(ctx, i)
	if recheck && k.recheckable() {
		ok, _, err := k.check(cctx, r, drv, false)
		if err != nil {
			return r.handleErr(ctx, i, err, false)
		}
		if ok {
			return r.succeedTask(ctx, i, "effect already present")
		}
	}
	if r.preflightDue(i) {
		if err := r.preflight(cctx, drv, i); err != nil {
			var pf *preflightFailure
			if errors.As(err, &pf) {
				return r.refuse(ctx, i, pf)
			}
			return r.handleErr(ctx, i, err, false)
		}
	}
	if err := r.confirm(ctx); err != nil {
		return StepResult{}, err
	}
	if pc, ok := k.(powerChanger); ok {
		pc.beforeSend(cctx, r, i)
	}
	if err := k.send(cctx, r, drv); err != nil {
		var g *gated
		if errors.As(err, &g) {
			// Not sent: wait and ask again, without counting an attempt.
			next := r.now.Add(g.wait)
			r.j.Status.Tasks[i].NextAttemptTime = timestamp.Ptr(next)
			return StepResult{RequeueAfter: g.wait}, nil
		}
		return r.handleErr(ctx, i, err, false)
	}
	// Sent: read back at once. If the effect is there, the completion is
	// the action's stored result; otherwise phase Requested is.
	ts := &r.j.Status.Tasks[i]
	now := r.now
	ts.Phase = task.PhaseRequested
	ts.RequestTime = timestamp.Ptr(now)
	ts.NextAttemptTime = nil
	readAt := r.s.cfg.Clock.Now()
	ok, observed, err := k.check(cctx, r, drv, true)
	if err != nil {
		return r.handleErr(ctx, i, err, false)
	}
	if pc, isPower := k.(powerChanger); isPower {
		pc.afterRead(r, i, ok, readAt, true)
	}
	r.recordWire()
	if ok {
		return r.succeedTask(ctx, i, observed)
	}
	if err := r.persist(ctx, r.j); err != nil {
		return StepResult{}, err
	}
	return k.notYet(ctx, r, i, observed)
}

func (r *stepRun) verify(ctx context.Context, i int) (StepResult, error) {
	k := kindOf(&r.j.Spec.Tasks[i])
	drv, err := r.driverFor(ctx, k)
	if err != nil {
		return r.handleErr(ctx, i, err, true)
	}
	readAt := r.s.cfg.Clock.Now()
	ok, observed, err := k.check(r.callCtx(ctx, i), r, drv, true)
	if err != nil {
		return r.handleErr(ctx, i, err, false)
	}
	if pc, isPower := k.(powerChanger); isPower {
		pc.afterRead(r, i, ok, readAt, false)
	}
	r.recordWire()
	if ok {
		return r.succeedTask(ctx, i, observed)
	}
	return k.notYet(ctx, r, i, observed)
}

// resend goes back to PhaseStarted so the next step re-checks and re-sends.
func (r *stepRun) resend(ctx context.Context, i int, why string) (StepResult, error) {
	ts := &r.j.Status.Tasks[i]
	r.log.Info("effect not observed; sending the action again", "task", i+1, "why", why)
	r.s.waits.End(r.j.Name) // the next attempt is a new wait
	ts.Phase = task.PhaseStarted
	ts.Attempts++
	ts.LastError = why
	next := r.now.Add(r.s.cfg.PollInterval)
	ts.NextAttemptTime = timestamp.Ptr(next)
	if err := r.persist(ctx, r.j); err != nil {
		return StepResult{}, err
	}
	return StepResult{RequeueAfter: r.s.cfg.PollInterval}, nil
}

// handleErr records a BMC error: transient ones are retried after a backoff,
// permanent ones fail the task.
func (r *stepRun) handleErr(ctx context.Context, i int, err error, dialing bool) (StepResult, error) {
	if errors.Is(err, bmc.ErrFenced) {
		// Nothing was sent: the task is neither failed nor counted as
		// sent, and resumes (re-checking first) under a valid lease.
		return StepResult{}, err
	}
	if ctx.Err() != nil {
		return StepResult{}, ctx.Err()
	}
	// Count what went on the wire, also for a failed call or login (a
	// driver's dial error may report its requests).
	var sr bmc.StatsReporter
	if dialing && errors.As(err, &sr) {
		r.addWire(sr.Stats())
	} else {
		r.recordWire()
	}
	var tf *taskFailure
	if errors.As(err, &tf) {
		return r.failTask(ctx, i, tf.reason, tf.msg)
	}
	r.observeBMCError(i, err, dialing)
	ts := &r.j.Status.Tasks[i]
	if !bmc.IsTransient(err) {
		reason := conditions.ReasonBMCError
		switch {
		case errors.Is(err, bmc.ErrUnauthorized):
			reason = conditions.ReasonUnauthorized
		case errors.Is(err, bmc.ErrNotSupported):
			reason = conditions.ReasonNotSupported
		}
		return r.failTask(ctx, i, reason, err.Error())
	}
	if dialing || errors.Is(err, bmc.ErrSessionExpired) {
		// The session is spent: the next attempt dials (logs in) again.
		r.s.pool.Invalidate(ctx, r.ep)
	}
	ts.LastError = err.Error()
	ts.Attempts++
	delay := r.s.cfg.Retry.Delay(ts.Attempts - 1)
	next := r.now.Add(delay)
	ts.NextAttemptTime = timestamp.Ptr(next)
	r.log.Info("transient BMC error; will retry", "task", i+1, "attempt", ts.Attempts, "in", delay.String(), "error", err.Error())
	if perr := r.persist(ctx, r.j); perr != nil {
		return StepResult{}, perr
	}
	return StepResult{RequeueAfter: delay}, nil
}

// wireTally is what a step's BMC calls cost on the wire, for Status.Wire:
// what the job had cost before (Status.Wire when the step first got a
// connection, plus failed dials) and what the connection counted since the
// step got it. A pooled connection (bmc.StatsReporter) counts its own calls
// only, also when it shares its session with other systems' jobs; one the
// pool dialed or opened for the step counted nothing before.
type wireTally struct {
	started bool
	counts  bool      // something reported what it cost: Status.Wire is set
	from    bmc.Stats // the job's cost before drv
	drv     bmc.Driver
	base    bmc.Stats // drv's Stats when the step got it
}

// countWire notes that the step uses drv from now on; fresh: the pool
// dialed or opened it for this step.
func (r *stepRun) countWire(drv bmc.Driver, fresh bool) {
	w := &r.wire
	if drv == w.drv {
		return
	}
	r.startWire()
	w.from = r.wireTotal() // the previous connection's share, if any
	w.drv, w.base = drv, bmc.Stats{}
	if sr, ok := drv.(bmc.StatsReporter); ok {
		w.counts = true
		if !fresh {
			w.base = sr.Stats()
		}
	}
}

func (r *stepRun) startWire() {
	if w := &r.wire; !w.started {
		w.started = true
		if cur := r.j.Status.Wire; cur != nil {
			w.from, w.counts = *cur, true
		}
	}
}

func (r *stepRun) wireTotal() bmc.Stats {
	w := &r.wire
	if sr, ok := w.drv.(bmc.StatsReporter); ok {
		return w.from.Add(sr.Stats().Since(w.base))
	}
	return w.from
}

// recordWire stores in Status.Wire what the job cost on the wire so far.
func (r *stepRun) recordWire() {
	r.startWire()
	if r.wire.counts {
		st := r.wireTotal()
		r.j.Status.Wire = &st
	}
}

// addWire adds st, a cost no connection of the step counts (a failed dial,
// the logout of a shared session the job's completion ended), and records.
func (r *stepRun) addWire(st bmc.Stats) {
	r.startWire()
	r.wire.from = r.wire.from.Add(st)
	r.wire.counts = true
	r.recordWire()
}

func (r *stepRun) succeedTask(ctx context.Context, i int, observed string) (StepResult, error) {
	j := r.j
	ts := &j.Status.Tasks[i]
	now := r.tick()
	if _, ok := kindOf(&j.Spec.Tasks[i]).(bootWaiter); ok {
		// Open the next wait's attempt before any later task powers the
		// server on again; on failure this task stays unfinished and the
		// next step (which finds the boot done again) retries.
		if err := r.openNextBoot(ctx, i+1); err != nil {
			return r.handleErr(ctx, i, bmc.Transient(fmt.Errorf("opening the next boot attempt: %w", err)), false)
		}
	}
	ts.Phase = task.PhaseDone
	ts.Result = conditions.ResultSucceeded
	ts.Reason = conditions.ReasonSucceeded
	ts.Message = observed
	ts.LastError = ""
	ts.NextAttemptTime = nil
	ts.CompletionTime = timestamp.Ptr(now)
	conditions.MarkCompleted(&ts.Conditions, j.Generation, conditions.ResultSucceeded, "", observed, now)
	j.Status.CurrentTask = i + 1
	if j.Status.CurrentTask == len(j.Spec.Tasks) {
		return r.finish(ctx, conditions.ResultSucceeded, conditions.ReasonSucceeded, fmt.Sprintf("all %d tasks succeeded", len(j.Spec.Tasks)), "")
	}
	// The next task's intent goes out with this task's result: no BMC
	// action lies between them (at most a boot-device task's read of the
	// override to restore, which changes nothing on the server).
	r.startTask(i + 1)
	if k, ok := kindOf(&j.Spec.Tasks[i+1]).(intentReader); ok {
		k.readBeforeIntent(ctx, r, i+1) // e.g. the override to restore goes out with this write
	}
	if err := r.persist(ctx, j); err != nil {
		return StepResult{}, err
	}
	// The next task follows in this step: advanceAll calls advance again
	// once this call chain has returned, so a step that runs several tasks
	// does not stack a call chain per task (goroutine stack growth was a
	// tenth of the CPU of 10,000 jobs at once).
	r.next = true
	return StepResult{}, nil
}

func (r *stepRun) failTask(ctx context.Context, i int, reason, msg string) (StepResult, error) {
	j := r.j
	ts := &j.Status.Tasks[i]
	now := r.tick()
	ts.Phase = task.PhaseDone
	ts.Result = conditions.ResultFailed
	ts.Reason = reason
	ts.Message = msg
	ts.NextAttemptTime = nil
	ts.CompletionTime = timestamp.Ptr(now)
	conditions.MarkCompleted(&ts.Conditions, j.Generation, conditions.ResultFailed, reason, msg, now)
	r.s.waits.End(j.Name)
	jobMsg := fmt.Sprintf("task %d (%s) failed: %s", i+1, j.Spec.Tasks[i].Describe(), msg)
	return r.finish(ctx, conditions.ResultFailed, reason, jobMsg, conditions.ReasonSkipped)
}

// finish completes the job; tasks that never completed are marked with
// result Canceled and reason skipReason.
func (r *stepRun) finish(ctx context.Context, result conditions.Result, reason, msg, skipReason string) (StepResult, error) {
	j := r.j
	suffix, err := r.restoreAtEnd(ctx, result) // bootrestore.go
	if err != nil {
		return StepResult{}, err // fenced: completes in a later step
	}
	msg += suffix
	now := r.tick() // after the restore's BMC calls
	if skipReason == "" {
		skipReason = conditions.ReasonSkipped
	}
	for k := range j.Status.Tasks {
		ts := &j.Status.Tasks[k]
		if ts.Phase == task.PhaseDone {
			continue
		}
		why := "not run: " + msg
		if ts.Phase != task.PhasePending {
			why = "interrupted: " + msg
		}
		ts.Phase = task.PhaseDone
		ts.Result = conditions.ResultCanceled
		ts.Reason = skipReason
		ts.Message = why
		ts.CompletionTime = timestamp.Ptr(now)
		conditions.MarkCompleted(&ts.Conditions, j.Generation, conditions.ResultCanceled, skipReason, why, now)
	}
	r.s.waits.End(j.Name)
	j.Status.Result = result
	j.Status.Reason = reason
	j.Status.Message = msg
	j.Status.CompletionTime = timestamp.Ptr(now)
	if j.Status.StartTime == nil {
		j.Status.StartTime = timestamp.Ptr(now)
	}
	j.Status.ObservedGeneration = j.Generation
	conditions.MarkCompleted(&j.Status.Conditions, j.Generation, result, reason, msg, now)
	// Close the job's BMC connection before the completion is written, so
	// whoever sees Completed=True also sees it gone (connections are per
	// system, so this never closes another job's). If the write fails, the
	// next step dials again.
	if closing := r.s.pool.ReleaseFor(ctx, r.ep, j.Name); closing != (bmc.Stats{}) {
		r.addWire(closing) // this job ended a shared session: its logout
	} else {
		r.recordWire() // after the close: the logout of its own session counts too
	}
	if err := r.persist(ctx, j); err != nil {
		return StepResult{}, err
	}
	r.log.Info("job completed", "result", string(result), "reason", reason, "message", msg)
	// Unlock only once the completion is stored: a job that holds its system
	// until then cannot be overtaken by the next one. A failed unlock is
	// retried by the next Step, which finds the job completed.
	if locks := r.s.cfg.Locks; !syslock.IsNoLocking(locks) && r.ep.Host != "" {
		// Tried even when the step's ctx ended (the completion is stored),
		// but bounded: a store that hangs must not hold the step.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		if err := locks.Unlock(uctx, r.ep.SystemKey(), j.Name); err != nil {
			return StepResult{Done: true}, fmt.Errorf("job %q completed; unlocking its system: %w", j.Name, err)
		}
	}
	return StepResult{Done: true}, nil
}

// tick moves the step's time to the clock's (never back) and returns it:
// what a step stamps after its BMC calls or a wait (a completion, the next
// task's start) carries the time it happened, not when the step began. The
// time is a wall-clock reading only (no monotonic one), like every stored
// time: a duration between two stamps is their wall-clock difference.
func (r *stepRun) tick() time.Time {
	if now := r.s.cfg.Clock.Now().Round(0); now.After(r.now) {
		r.now = now
	}
	return r.now
}

// unlockTimeout bounds the unlock after a job's completion on the
// controller path; a failed one is retried by the job's next Step.
const unlockTimeout = 30 * time.Second

// taskFailure is a permanent task failure with its own reason (e.g. a boot
// that timed out), as opposed to a BMC error.
type taskFailure struct {
	reason, msg string
}

func (e *taskFailure) Error() string { return e.msg }

// boundBy returns ctx bounded to end left from now: context.WithTimeout,
// except when ctx already ends no later (with StepperConfig.Locks a step
// runs under its lock's validity, usually shorter than a task's time; so
// may a host's own step context): then ctx itself and
// a no-op cancel, saving the context and timer WithTimeout would allocate
// only for them never to fire first. Both deadlines are on the real clock
// (context deadlines are), whatever clock the Stepper is given.
func boundBy(ctx context.Context, left time.Duration) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= left {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, left)
}
