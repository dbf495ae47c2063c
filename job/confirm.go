package job

import (
	"context"
	"errors"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// The step's proof that its copy of the job is current (confirm), what it
// gives back when the store refuses that copy (unlockTaken), and the
// read-back of a task whose time ran out (timedOut): docs/jobs.md, "No
// state change from a copy that has not proven itself current" and "A task
// whose time ran out reads the BMC back first".

// persist stores the job through the host's PersistFunc and notes what the
// write proved: a success confirms the step's copy (confirm); a failure
// before any success gives back a lock this step took anew (unlockTaken).
// A method, not a closure made per step: the Runner steps on its hot path.
func (r *stepRun) persist(ctx context.Context, j *Job) error {
	err := r.store(ctx, j)
	if err == nil {
		r.confirmed = true
	} else if r.takenAnew && !r.confirmed {
		r.unlockTaken(ctx)
	}
	return err
}

// confirm makes sure the step's copy of the job has proven itself current
// before a state-changing request: if no write of this step succeeded yet,
// it stores the job as it is (a compare-and-swap against the stored
// object). A stale copy — an informer cache that lags after an API-server
// restart, a replica that lost its lock, a retry scheduled by a write that
// was overtaken — fails here, with nothing sent. Every state-changing
// request of every kind is preceded by it (TestNoStateChangeBeforeAWrite);
// reads are not, so a polling step costs no write.
func (r *stepRun) confirm(ctx context.Context) error {
	if r.confirmed {
		return nil
	}
	return r.persist(ctx, r.j)
}

// timedOut ends task i, whose time (or the job's) ran out: first it reads
// the BMC back, once, where the task may have sent its action (phase
// Requested, or Started for a kind whose effect can be taken as done): an
// effect that landed is the task's success, whatever the clock says — a
// replica that took a job over after its holder died, or a step delayed by
// an outage, must not report a power-on the BMC carried out as Failed.
// Otherwise (not there, or the read failed) the task fails TimedOut.
func (r *stepRun) timedOut(ctx context.Context, i int, msg string) (StepResult, error) {
	k := kindOf(&r.j.Spec.Tasks[i])
	ts := &r.j.Status.Tasks[i]
	sent := ts.Phase == task.PhaseRequested
	if k.usesBMC() && (sent || ts.Phase == task.PhaseStarted && k.recheckable()) {
		if drv, err := r.driverFor(ctx, k); err == nil {
			rctx, cancel := boundBy(ctx, timeoutReadBack)
			ok, observed, err := k.check(r.callCtx(rctx, i), r, drv, sent)
			cancel()
			r.recordWire()
			switch {
			case errors.Is(err, bmc.ErrFenced):
				return StepResult{}, err // read again under a valid lock
			case err == nil && ok:
				r.log.Info("task's time ran out but its effect is there", "task", i+1, "observed", observed)
				return r.succeedTask(ctx, i, observed+" (read back when its time ran out)")
			case err != nil:
				msg += "; reading the BMC back failed: " + err.Error()
			}
		}
	}
	return r.failTask(ctx, i, conditions.ReasonTimedOut, msg)
}

// timeoutReadBack bounds the read-back of a task whose time ran out.
const timeoutReadBack = 30 * time.Second
