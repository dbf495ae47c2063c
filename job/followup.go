package job

import (
	"context"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/powerplan"
)

// Follow-up actions: what the Stepper sends on a task's behalf when the
// task's kind decides so (followUp, kind.go): another kind's action (an
// earlier task's boot override set again, a BMC reset), or a power cycle
// of the system. Each is stored, fenced, dialed and gated as a task's own
// action, and its errors are the task's (handleErr); the kind then records
// what happened (follower).

// follow sends follow-up f for task i, whose view is t, and says what its
// read-back showed (f.check).
func (r *stepRun) follow(ctx context.Context, i int, t *taskView, f followUp) (done bool, observed string, err error) {
	if f.cycle {
		return true, "", r.cycleSystem(ctx, i, f.store)
	}
	if f.store {
		if err := r.persist(ctx, r.j); err != nil {
			return false, "", &storeError{err}
		}
	}
	// A resumed or retried stage: prove the copy current first.
	if err := r.confirm(ctx); err != nil {
		return false, "", &storeError{err}
	}
	drv, err := r.driver(ctx)
	if err != nil {
		return false, "", err
	}
	k, cctx := kindOf(f.send), r.callCtx(ctx, i)
	t.BMC, t.Sent = drv, false
	if err := r.sendAction(ctx, cctx, k, t); err != nil {
		return false, "", err
	}
	if !f.check {
		return true, "", nil
	}
	return r.readBackSent(cctx, k, t)
}

// cycleSystem power-cycles the system for task i, powered on where it is
// off (bmc/powerplan's rule for a cycle), at most once per intent where the
// BMC reports when the system last reset (lastreset.go): the last reset
// time is read and stored with the cycle's intent (store: the kind recorded
// an intent of its own, stored with it), and a step that resumes a stored
// intent sends nothing if that time moved since. The PowerGate admits the
// cycle (it may power the server on) before the step's copy is confirmed,
// so a cycle held back costs no write.
func (r *stepRun) cycleSystem(ctx context.Context, i int, store bool) error {
	ts := &r.j.Status.Tasks[i]
	cctx := r.callCtx(ctx, i)
	if store || ts.LastResetBefore == nil {
		// The last reset time goes out with the cycle's intent. A failed
		// dial stores the intent without it (handleErr writes the status),
		// and the cycle is retried.
		drv, err := r.driver(ctx)
		if err != nil {
			return err
		}
		r.markReset(cctx, drv, i)
		if store || ts.LastResetBefore != nil {
			if err := r.persist(ctx, r.j); err != nil { // intent before the cycle
				return &storeError{err}
			}
		}
	}
	send, release, err := r.gatePower(cctx, i)
	if err != nil {
		return err
	}
	defer release(ctx) // after the request's call, whichever way this step ends
	if err := r.confirm(ctx); err != nil {
		return &storeError{err}
	}
	drv, err := r.driver(ctx)
	if err != nil {
		return err
	}
	landed, err := r.cycleLanded(cctx, drv, i)
	if err != nil {
		return err
	}
	if !landed {
		act := bmc.PowerActionCycle
		if st, err := drv.PowerState(cctx); err == nil {
			if step, _ := powerplan.Plan(st, act); step == powerplan.StepOn {
				act = bmc.PowerActionOn
			}
		}
		if err := drv.SetPower(send, act); err != nil {
			return err
		}
	}
	ts.LastResetBefore = nil // the result of sending is stored next: done with
	return nil
}
