package job

import (
	"context"
	"errors"

	"github.com/bmckit/bmckit/job/internal/powergate"
)

// Carrying out a kind's decision (decision, kind.go) after a read-back
// that did not show its effect: keep polling (the kind's pace, or the
// Stepper's schedule for it), store what the kind recorded, move on to the
// kind's next stage, send the action again, fail the task, or send a
// follow-up and tell the kind. The kind decides; the Stepper stores,
// fences, sends and maps the errors.

// decide asks kind k what to do about task i, whose read-back showed
// observed but not the effect, and carries it out.
func (r *stepRun) decide(ctx context.Context, i int, k kind, t *taskView, observed string) (StepResult, error) {
	dk, ok := k.(decider)
	if !ok {
		return r.poll(ctx, i, k), nil
	}
	d, err := dk.notYet(ctx, t, observed)
	for err == nil {
		switch {
		case d.fail != nil:
			return r.failTask(ctx, i, d.fail.reason, d.fail.msg)
		case d.resend != "":
			return r.resend(ctx, i, d.resend)
		case d.follow.set():
			d, err = r.followThen(ctx, i, k, t, d.follow)
			continue
		case d.succeed != "":
			return r.succeedTask(ctx, i, d.succeed) // stores the status with the result
		}
		if d.store {
			r.recordWire()
			if err := r.persist(ctx, r.j); err != nil {
				return StepResult{}, err
			}
		}
		if !d.again {
			if d.after > 0 {
				return StepResult{RequeueAfter: d.after}, nil
			}
			return r.poll(ctx, i, k), nil
		}
		d, err = dk.notYet(ctx, t, "")
	}
	var g *powergate.Gated
	if errors.As(err, &g) {
		return StepResult{RequeueAfter: g.Wait}, nil // not sent: ask the gate again then
	}
	return r.handleErr(ctx, i, err)
}

// followThen sends follow-up f of task i and asks kind k what follows. A
// kind that asks for a follow-up without following it keeps polling, the
// follow-up's result stored.
func (r *stepRun) followThen(ctx context.Context, i int, k kind, t *taskView, f followUp) (decision, error) {
	done, observed, err := r.follow(ctx, i, t, f)
	if err != nil {
		return decision{}, err
	}
	fk, ok := k.(follower)
	if !ok {
		return storeThenPoll(0), nil
	}
	return fk.followed(ctx, t, f, done, observed)
}

// poll is the Stepper's schedule for task i while its kind keeps polling:
// a power change's (adaptive, and watched: powerwatch.go), else
// PollInterval, SlowPollInterval after SlowPollAfter.
func (r *stepRun) poll(ctx context.Context, i int, k kind) StepResult {
	if pc, ok := k.(powerChanger); ok {
		return r.powerPoll(ctx, i, pc.powerAction())
	}
	return r.pollAfterAction(i)
}
