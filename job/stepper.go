package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/internal/powerpoll"
	"github.com/bmckit/bmckit/job/internal/powerwait"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// The step machine: Stepper.Step locks the job's system, starts the job
// (initialize) or cancels it, and advances it task by task until it must
// wait. Its parts, below it: the task's run by phase (taskrun.go), what a
// kind decides (decision.go) and the follow-ups it asks for
// (followup.go), how an action goes out (action.go), how a task comes out
// (outcome.go), its next attempt (attempts.go), the preflight
// (preflight.go), the fence (confirm.go), the boot-override restore
// (bootrestore.go), the power watch (powerwatch.go), the wire tally
// (job/internal/wiretally), and the step itself (steprun.go). The kinds are reached only
// through the kind contract (kind.go).

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
	stepEnv
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
	cfg = cfg.withDefaults()
	s := &Stepper{stepEnv{cfg: cfg, kc: cfg.forKinds(), pool: connpool.New(cfg.Dialer, cfg.IdleTimeout, cfg.Clock.Now),
		learner: powerpoll.New(cfg.AdaptivePoll.MinSamples, cfg.AdaptivePoll.MaxKeys), waits: powerwait.New()}}
	s.observeSetup()
	return s, nil
}

// Close closes every pooled BMC connection.
func (s *Stepper) Close(ctx context.Context) error { return s.pool.Close(ctx) }

// Pool exposes the connection pool (for hosts that want CloseIdle on a ticker).
func (s *Stepper) Pool() *connpool.Pool { return s.pool }

// validate checks spec as a job start does: Spec.Validate (with the
// endpoint cache) and its custom tasks against the registered Kinds.
func (s *stepEnv) validate(spec *Spec) error {
	if err := spec.validate(s.eps.Parse); err != nil {
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
	return s.release(ctx, name, bmcURL)
}

func (s *stepEnv) release(ctx context.Context, name, bmcURL string) error {
	s.waits.End(name)
	ep, err := s.eps.Parse(bmcURL)
	if err != nil {
		return nil // never dialed, never locked
	}
	s.pool.ReleaseFor(ctx, ep, name)
	if !syslock.IsNoLocking(s.cfg.Locks) {
		return s.cfg.Locks.Unlock(ctx, ep.SystemKey(), name)
	}
	return nil
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
	st := &stepRun{s: &s.stepEnv, j: j, store: persist, now: s.cfg.Clock.Now(), log: logr.FromContextOrDiscard(ctx)}
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

func (r *stepRun) run(ctx context.Context) (StepResult, error) {
	j := r.j
	ep, epErr := r.s.eps.Parse(j.Spec.BMC)
	r.ep = ep
	if j.Completed() {
		// Done here, or completed by a step whose unlock failed: release
		// again (idempotent).
		if err := r.s.release(ctx, j.Name, j.Spec.BMC); err != nil {
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
	timeout := r.taskTimeout(i)
	limit := timeout
	if w, ok := kindOf(&j.Spec.Tasks[i]).(bootWaiter); ok {
		limit += w.grace(&r.s.kc) // the deadline is the tracker's
	}
	if ts.StartTime != nil && r.now.Sub(ts.StartTime.Time) >= limit {
		return r.timedOut(ctx, i, fmt.Sprintf("timed out after %s%s", timeout, lastErrSuffix(ts)))
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
