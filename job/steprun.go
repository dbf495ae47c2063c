package job

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/internal/endpointcache"
	"github.com/bmckit/bmckit/job/internal/powerpoll"
	"github.com/bmckit/bmckit/job/internal/powerwait"
	"github.com/bmckit/bmckit/job/internal/wiretally"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// One step of one job: what the step works with (stepRun), what every step
// of a Stepper shares (stepEnv), and the small things every part of the
// step machine uses: the step's time, its BMC connection, the calls'
// context, the views handed to kinds.

// stepEnv is what every step of a Stepper shares: its configuration
// (defaults applied), what kinds read of it, the BMC connections, the
// parsed endpoints, the power waits and the adaptive polling's learner.
type stepEnv struct {
	cfg     StepperConfig
	kc      kindConfig // what kinds read of cfg
	pool    *connpool.Pool
	learner *powerpoll.Learner // adaptive polling's landing histories
	waits   *powerwait.Table   // power waits in progress, by job
	eps     endpointcache.Cache
	// pending dials with the pending credentials of a rotation when the
	// current ones are refused (docs/credential-rotation.md).
	pending bmc.PendingFallback
}

// stepRun is one step of one job: Stepper.Step makes it, and the step
// machine's parts (stepper.go, taskrun.go, outcome.go, ...) work on it.
// Kinds never see it: they get a taskView.
type stepRun struct {
	s      *stepEnv
	j      *Job
	store  PersistFunc // the host's, through the observer (use persist)
	now    time.Time   // when the step began, moved on by tick
	log    logr.Logger
	ep     bmc.Endpoint
	base   context.Context // the step's ctx, bounded by the lock
	drv    bmc.Driver      // the connection this step used, if any
	intent int             // 1 + the task whose intent this step stored, or 0
	// early is what a kind's readBeforeIntent returned, for the prepare of
	// the same task in this step.
	early struct {
		task int // 1 + the task it was read for, or 0
		read earlyRead
	}
	wire wiretally.Tally // what the step's BMC calls cost (recordWire)
	// resetMarked is 1 + the task whose LastResetBefore this step read
	// (lastreset.go), or 0.
	resetMarked int
	// next is set when a task succeeded and the next one starts in this
	// step (advanceAll).
	next bool
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
	// tv is the view kinds get of their task (view).
	tv taskView
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

// view is task i as its kind sees it, on connection drv (nil for a kind
// that does not use the BMC), sent saying whether its action was sent. The
// step keeps one view (no allocation per call): it is valid until the next
// call of view, so whoever hands a kind another task's view (preflight,
// boot attempts, a read before the intent) takes its own task's again
// afterwards.
func (r *stepRun) view(i int, drv bmc.Driver, sent bool) *taskView {
	r.tv = taskView{KindTask: KindTask{BMC: drv, Job: r.j.Name, Task: i, Sent: sent},
		status: &r.j.Status.Tasks[i], job: r.j, ep: &r.ep, log: r.log, now: r.now, cfg: &r.s.kc}
	if r.early.task == i+1 {
		r.tv.early = r.early.read
	}
	return &r.tv
}

// waited moves the step's time on after a kind that waited (taskView.waited).
func (r *stepRun) waited(t *taskView) {
	if t.waited {
		t.waited = false
		t.now = r.tick()
	}
}

// callCtx tags ctx with the job and task a BMC call is made for.
func (r *stepRun) callCtx(ctx context.Context, i int) context.Context {
	return WithCall(ctx, Call{Job: r.j.Name, Task: i, Attempt: r.j.Status.Tasks[i].Attempts})
}

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

// driver is the job's connection to its system's BMC, from the pool (dialed
// on first use, with the credentials resolved now). Its error is a
// *dialError.
func (r *stepRun) driver(ctx context.Context) (bmc.Driver, error) {
	creds, err := r.s.cfg.Credentials.Resolve(ctx, r.j.Spec.CredentialsRef)
	if err != nil {
		err = fmt.Errorf("resolving credentials %q: %w", r.j.Spec.CredentialsRef, err)
		if !bmc.IsTransient(err) { // e.g. a resolver that marked an apiserver timeout
			err = bmc.Permanent(err)
		}
		return nil, &dialError{err}
	}
	var drv bmc.Driver
	var fresh bool
	used, pending, err := r.s.pending.Try(ctx, r.s.cfg.Credentials, r.j.Spec.CredentialsRef, creds, func(c bmc.Credentials) (err error) {
		drv, fresh, err = r.s.pool.GetFor(ctx, r.ep, c, r.j.Name)
		return err
	})
	if err != nil {
		return nil, &dialError{err}
	}
	if pending && fresh {
		r.log.Info("rotation in progress: the BMC takes the pending credentials, not the current ones", "user", used.Username)
	}
	r.wire.Count(&r.j.Status.Wire, drv, fresh)
	return drv, nil
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

// dialError is a failed dial (a login) or credentials lookup: handleErr
// counts what the dial cost on the wire and drops the pooled session.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// recordWire stores in Status.Wire what the job cost on the wire so far.
func (r *stepRun) recordWire() { r.wire.Record(&r.j.Status.Wire) }

// addWire adds st, a cost no connection of the step counts (a failed dial,
// the logout of a shared session the job's completion ended), and records.
func (r *stepRun) addWire(st bmc.Stats) { r.wire.Add(&r.j.Status.Wire, st) }

// taskTimeout is task i's timeout: its Spec's, else its kind's default.
func (r *stepRun) taskTimeout(i int) time.Duration {
	spec := &r.j.Spec.Tasks[i]
	if spec.Timeout.Duration > 0 {
		return spec.Timeout.Duration
	}
	return kindOf(spec).defaultTimeout(&r.s.kc)
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
