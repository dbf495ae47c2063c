package job

import (
	"context"
	"errors"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/internal/powergate"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// A task's run within a step, by its phase: act (Started: recheck where a
// resumed task's effect may be there, the job's preflight before its first
// action, the action, the read-back at once), verify (Requested: read
// back), and timedOut (its time ran out: read back once, then fail). What
// a read-back that did not show the effect leads to is the kind's decision
// (decision.go); how the task comes out is outcome.go's.

// act checks (when recheck) whether the task's effect is already there, and
// otherwise sends the action, then reads back once.
func (r *stepRun) act(ctx context.Context, i int, recheck bool) (StepResult, error) {
	k := kindOf(&r.j.Spec.Tasks[i])
	drv, err := r.driverFor(ctx, k)
	if err != nil {
		return r.handleErr(ctx, i, err)
	}
	cctx := r.callCtx(ctx, i)
	if recheck && k.recheckable() {
		ok, _, err := r.readBack(cctx, k, r.view(i, drv, false))
		if err != nil {
			return r.handleErr(ctx, i, err)
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
			return r.handleErr(ctx, i, err)
		}
	}
	if err := r.confirm(ctx); err != nil {
		return StepResult{}, err
	}
	t := r.view(i, drv, false)
	if err := r.sendAction(ctx, cctx, k, t); err != nil {
		var g *powergate.Gated
		if errors.As(err, &g) {
			// Not sent: wait and ask again, without counting an attempt.
			next := r.now.Add(g.Wait)
			r.j.Status.Tasks[i].NextAttemptTime = timestamp.Ptr(next)
			return StepResult{RequeueAfter: g.Wait}, nil
		}
		return r.handleErr(ctx, i, err)
	}
	// Sent: read back at once. If the effect is there, the completion is
	// the action's stored result; otherwise phase Requested is.
	ts := &r.j.Status.Tasks[i]
	ts.Phase = task.PhaseRequested
	ts.RequestTime = timestamp.Ptr(r.now)
	ts.NextAttemptTime = nil
	readAt := r.s.cfg.Clock.Now()
	ok, observed, err := r.readBackSent(cctx, k, t)
	if err != nil {
		return r.handleErr(ctx, i, err)
	}
	r.notePower(k, i, ok, readAt, true)
	if ok {
		return r.succeedTask(ctx, i, observed)
	}
	if err := r.persist(ctx, r.j); err != nil {
		return StepResult{}, err
	}
	return r.decide(ctx, i, k, t, observed)
}

// verify reads back the effect of task i, whose action was sent (phase
// Requested).
func (r *stepRun) verify(ctx context.Context, i int) (StepResult, error) {
	k := kindOf(&r.j.Spec.Tasks[i])
	drv, err := r.driverFor(ctx, k)
	if err != nil {
		return r.handleErr(ctx, i, err)
	}
	t := r.view(i, drv, true)
	readAt := r.s.cfg.Clock.Now()
	ok, observed, err := r.readBack(r.callCtx(ctx, i), k, t)
	if err != nil {
		return r.handleErr(ctx, i, err)
	}
	r.notePower(k, i, ok, readAt, false)
	if ok {
		return r.succeedTask(ctx, i, observed)
	}
	return r.decide(ctx, i, k, t, observed)
}

// notePower notes a read-back of task i for a kind that changes the power
// (powerwatch.go), and records what the step cost on the wire.
func (r *stepRun) notePower(k kind, i int, ok bool, readAt time.Time, sent bool) {
	if pc, isPower := k.(powerChanger); isPower {
		r.notePowerRead(i, pc.powerAction(), ok, readAt, sent)
	}
	r.recordWire()
}

// timedOut ends task i, whose time (or the job's) ran out: first it reads
// the BMC back, once, where the task may have sent its action (phase
// Requested, or Started for a kind whose effect can be taken as done): an
// effect that landed is the task's success, whatever the clock says — a
// replica that took a job over after its holder died, or a step delayed by
// an outage, must not report a power-on the BMC carried out as Failed.
// Otherwise (not there, or the read failed) the task fails TimedOut
// (docs/jobs.md, "A task whose time ran out reads the BMC back first").
func (r *stepRun) timedOut(ctx context.Context, i int, msg string) (StepResult, error) {
	k := kindOf(&r.j.Spec.Tasks[i])
	ts := &r.j.Status.Tasks[i]
	sent := ts.Phase == task.PhaseRequested
	if k.usesBMC() && (sent || ts.Phase == task.PhaseStarted && k.recheckable()) {
		if drv, err := r.driverFor(ctx, k); err == nil {
			rctx, cancel := boundBy(ctx, timeoutReadBack)
			ok, observed, err := r.readBack(r.callCtx(rctx, i), k, r.view(i, drv, sent))
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
