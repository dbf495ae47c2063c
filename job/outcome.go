package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// How a task's step comes out: its effect is there (succeedTask: the next
// task's intent goes out with the result), it failed (failTask), or an
// error decides (handleErr: retried, or the task fails); and how the job
// ends (finish). The Stepper alone completes tasks and jobs: a kind's
// errors and decisions come here.

func (r *stepRun) succeedTask(ctx context.Context, i int, observed string) (StepResult, error) {
	j := r.j
	ts := &j.Status.Tasks[i]
	now := r.tick()
	if _, ok := kindOf(&j.Spec.Tasks[i]).(bootWaiter); ok {
		// Open the next wait's attempt before any later task powers the
		// server on again; on failure this task stays unfinished and the
		// next step (which finds the boot done again) retries.
		if err := r.openNextBoot(ctx, i+1); err != nil {
			return r.handleErr(ctx, i, bmc.Transient(fmt.Errorf("opening the next boot attempt: %w", err)))
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
	if k, ok := kindOf(&j.Spec.Tasks[i+1]).(intentReader); ok && r.drv != nil {
		// e.g. the override to restore goes out with this write
		err := k.readBeforeIntent(r.callCtx(ctx, i+1), r.view(i+1, r.drv, false))
		r.early.task, r.early.read = i+2, earlyRead{done: true, err: err}
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

// handleErr maps an error of task i's step, the one place where errors
// become outcomes: a failed write of the step (*storeError) or a fenced
// request ends the step; a task failure (Fail, a kind's *taskFailure)
// fails the task with its reason; a BMC error is classified
// (bmc.IsTransient): transient ones are retried after a backoff (an
// expired session, or a failed dial, *dialError, logs in again), permanent
// ones fail the task (Unauthorized, NotSupported, BMCError).
func (r *stepRun) handleErr(ctx context.Context, i int, err error) (StepResult, error) {
	var se *storeError
	if errors.As(err, &se) {
		return StepResult{}, se.err
	}
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
	var de *dialError
	dialing := errors.As(err, &de)
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
	return r.retry(ctx, i, err)
}

// openNextBoot opens the boot attempt of the first wait-for-boot task at or
// after index from, if any. Its deadline is that task's timeout, counted from
// now: the boot it waits for starts with the tasks before it.
func (r *stepRun) openNextBoot(ctx context.Context, from int) error {
	for i := from; i < len(r.j.Spec.Tasks); i++ {
		if w, ok := kindOf(&r.j.Spec.Tasks[i]).(bootWaiter); ok {
			return w.openBoot(ctx, r.view(i, nil, false), BootAttemptID(r.j, i))
		}
	}
	return nil
}
