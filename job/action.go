package job

import (
	"context"
	"errors"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job/internal/powergate"
)

// How an action goes out and how its effect is read back, the same for
// every kind and for the follow-ups a kind asks for: the Stepper runs the
// kind's prepare (and stores what it recorded) and send, admits an action
// that can power a server on through the PowerGate, drops the session of a
// BMC the action restarts, and reads back through the kind's check. Before
// any of it the step's copy of the job is confirmed (confirm).

// sendAction sends kind k's action for t's task on t.BMC (the step's copy
// confirmed already). ctx is the step's, cctx the call's (callCtx). A
// *powergate.Gated error: the PowerGate holds it back, nothing was sent.
func (r *stepRun) sendAction(ctx, cctx context.Context, k kind, t *taskView) error {
	pc, power := k.(powerChanger)
	if power {
		r.watchBeforeSend(cctx, t.Task)
	}
	if p, ok := k.(preparer); ok {
		pr, err := p.prepare(cctx, t)
		r.early.task = 0 // prepare had it
		r.waited(t)
		if err != nil {
			return err
		}
		if pr.skip {
			return nil
		}
		if pr.store {
			if err := r.persist(ctx, r.j); err != nil {
				return &storeError{err}
			}
		}
	}
	send := cctx
	if power && pc.boots() {
		gctx, release, err := r.gatePower(cctx, t.Task)
		if err != nil {
			return err
		}
		defer release(cctx) // after the request's call
		send = gctx
	}
	if err := k.send(send, t); err != nil {
		return err
	}
	if _, ok := k.(bmcRestarter); ok {
		// The BMC forgets its sessions as it restarts: the next read dials.
		r.s.pool.Invalidate(cctx, r.ep)
	}
	return nil
}

// gatePower asks the PowerGate, if any, for the power action of task i
// (powergate.Admit).
func (r *stepRun) gatePower(ctx context.Context, i int) (send context.Context, release func(context.Context), err error) {
	gate := r.s.cfg.PowerGate
	if gate == nil {
		return ctx, func(context.Context) {}, nil // no system key to build
	}
	return powergate.Admit(ctx, gate, r.ep.SystemKey(), r.j.Name, i)
}

// readBackSent reads back the action kind k just sent for t: through a new
// session where the action restarted the BMC (bmcRestarter), a dial that
// fails transiently reading as "not answering yet".
func (r *stepRun) readBackSent(cctx context.Context, k kind, t *taskView) (bool, string, error) {
	t.Sent = true
	if _, ok := k.(bmcRestarter); ok {
		drv, err := r.driver(cctx)
		if err != nil {
			return r.answering(cctx, &notAnswering{bmcRestarting, err})
		}
		t.BMC = drv
	}
	return r.readBack(cctx, k, t)
}

// readBack reads kind k's effect back (its check) for t's task, under the
// call's ctx.
func (r *stepRun) readBack(ctx context.Context, k kind, t *taskView) (bool, string, error) {
	ok, observed, err := k.check(ctx, t)
	r.waited(t)
	if err != nil {
		return r.answering(ctx, err)
	}
	return ok, observed, nil
}

// answering maps a check's error: a *notAnswering one, from a BMC that
// restarts, is "not yet" while it is transient (an expired session is
// dropped, so the next read logs in again); any other error is the error.
func (r *stepRun) answering(ctx context.Context, err error) (bool, string, error) {
	var na *notAnswering
	if !errors.As(err, &na) {
		return false, "", err
	}
	if !bmc.IsTransient(na.err) || ctx.Err() != nil {
		return false, "", na.err
	}
	if errors.Is(na.err, bmc.ErrSessionExpired) {
		r.s.pool.Invalidate(ctx, r.ep)
	}
	return false, na.Error(), nil
}
