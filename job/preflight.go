package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// A job that cannot finish does not start (docs/preflight.md). Before the
// action of its first task that uses the BMC, a job checks every task's
// needs against what the BMC advertises, with reads only: a netboot job on
// a system whose Boot has no override must not power the server off first
// and then find out (issue 34: Apollo XL675d and Cray EX nodes were left
// off). A task whose needs the BMC shows it lacks ends the job there, with
// 0 state-changing requests; where the BMC advertises nothing either way,
// the task proceeds as it would without the check. Spec.SkipPreflight
// turns it off for a job. Each kind declares its needs (preflighter,
// kind.go); this file runs the check and ends a job that fails it.

// preflightDue says whether task i's action is the job's first that
// talks to the BMC: the job's needs are checked just before it.
func (r *stepRun) preflightDue(i int) bool {
	if r.j.Spec.SkipPreflight {
		return false
	}
	for k := range i {
		if kindOf(&r.j.Spec.Tasks[k]).usesBMC() {
			return false
		}
	}
	return true
}

// preflightFailure is a task that cannot run on this BMC: the job fails
// with its reason before anything was sent.
type preflightFailure struct {
	task   int
	reason string
	msg    string
}

func (e *preflightFailure) Error() string { return e.msg }

// preflight checks the needs of tasks from..end on drv. The reads are the
// driver's, cached for its life (bmc.NeedChecker), so a retry costs little.
func (r *stepRun) preflight(ctx context.Context, drv bmc.Driver, from int) error {
	for i := from; i < len(r.j.Spec.Tasks); i++ {
		p, ok := kindOf(&r.j.Spec.Tasks[i]).(preflighter)
		if !ok {
			continue
		}
		err := p.preflight(ctx, r.view(i, drv, false))
		if err == nil {
			continue
		}
		var tf *taskFailure
		switch {
		case errors.As(err, &tf):
			return &preflightFailure{task: i, reason: tf.reason, msg: tf.msg}
		case errors.Is(err, bmc.ErrNotSupported):
			return &preflightFailure{task: i, reason: conditions.ReasonNotSupported, msg: err.Error()}
		case bmc.IsTransient(err) || errors.Is(err, bmc.ErrUnauthorized) || errors.Is(err, bmc.ErrFenced) || ctx.Err() != nil:
			return err // the first task's error, retried or failed as its own
		}
		// A read the BMC refused for good (an unknown firmware component):
		// the task could not run either.
		return &preflightFailure{task: i, reason: conditions.ReasonBMCError, msg: err.Error()}
	}
	return nil
}

// refuse ends the job because task pf.task cannot run on this BMC: that
// task fails with the check's reason, the others are not run. Task
// current (whose intent was stored) sent nothing: it goes back to pending,
// so it reads "not run".
func (r *stepRun) refuse(ctx context.Context, current int, pf *preflightFailure) (StepResult, error) {
	j := r.j
	r.recordWire()
	j.Status.Tasks[current].Phase = task.PhasePending
	ts := &j.Status.Tasks[pf.task]
	now := r.tick()
	msg := "this BMC cannot run it, so the job sent nothing: " + pf.msg
	ts.Phase = task.PhaseDone
	ts.Result = conditions.ResultFailed
	ts.Reason = pf.reason
	ts.Message = msg
	ts.CompletionTime = timestamp.Ptr(now)
	conditions.MarkCompleted(&ts.Conditions, j.Generation, conditions.ResultFailed, pf.reason, msg, now)
	return r.finish(ctx, conditions.ResultFailed, pf.reason,
		fmt.Sprintf("task %d (%s) failed: %s", pf.task+1, j.Spec.Tasks[pf.task].Describe(), msg), conditions.ReasonSkipped)
}
