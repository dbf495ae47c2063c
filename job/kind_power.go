package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

func init() { registerKind("power", func(s *task.Spec) kind { return powerKind{s.Power} }) }

// powerKind: on, off, soft-off, cycle, reset. Verified by polling the power
// state until it is the action's target; a request with no visible effect
// and no transition after ResendAfter is sent again (BMCs drop requests that
// arrive during a pending change). A transitional state (PoweringOn,
// PoweringOff) never counts as the target. With StepperConfig.PowerSettle, a
// target found already there before anything was sent must hold for the
// settle window first (see settle).
type powerKind struct{ a *task.PowerAction }

func (k powerKind) defaultTimeout(cfg *StepperConfig) time.Duration { return cfg.DefaultTaskTimeout }
func (k powerKind) grace(*StepperConfig) time.Duration              { return 0 }
func (k powerKind) usesBMC() bool                                   { return true }

// preflight: the BMC offers a reset type for the action (preflight.go).
func (k powerKind) preflight(ctx context.Context, _ *stepRun, drv bmc.Driver, _ int) error {
	return checkNeed(ctx, drv, bmc.Need{Power: k.action()})
}

// A cycle or reset ends where it started (On), so reading the state cannot
// tell whether it happened.
func (k powerKind) recheckable() bool {
	return k.a.Op != task.PowerCycle && k.a.Op != task.PowerReset
}

// boots says whether the action starts the server (on, cycle, reset): its
// success is the boot an emulated one-time override was for (bootrestore.go).
func (k powerKind) boots() bool {
	return k.a.Op == task.PowerOn || k.a.Op == task.PowerCycle || k.a.Op == task.PowerReset
}

func (k powerKind) beforeSend(ctx context.Context, r *stepRun, i int) {
	r.watchBeforeSend(ctx, i)
}
func (k powerKind) afterRead(r *stepRun, i int, ok bool, readAt time.Time, sent bool) {
	r.notePowerRead(i, k.action(), ok, readAt, sent)
}

func (k powerKind) action() bmc.PowerAction {
	switch k.a.Op {
	case task.PowerOn:
		return bmc.PowerActionOn
	case task.PowerOff:
		return bmc.PowerActionOff
	case task.PowerSoftOff:
		return bmc.PowerActionSoftOff
	case task.PowerCycle:
		return bmc.PowerActionCycle
	case task.PowerReset:
		return bmc.PowerActionReset
	}
	return bmc.PowerAction(k.a.Op)
}

func (k powerKind) send(ctx context.Context, r *stepRun, drv bmc.Driver) error {
	if k.settles(r) {
		// The driver's SetPower would find the target already there and
		// send nothing; read first, so that the settle window applies.
		st, err := drv.PowerState(ctx)
		if err != nil {
			return err
		}
		if st == k.action().Target() {
			held, err := k.settle(ctx, r, drv)
			if err != nil {
				return err
			}
			if held {
				// Nothing to send; the read-back that follows sees the target.
				return nil
			}
		}
	}
	if k.a.Op != task.PowerOff && k.a.Op != task.PowerSoftOff {
		send, release, err := r.gatePower(ctx, r.j.Status.CurrentTask)
		if err != nil {
			return err
		}
		defer release(ctx) // after the request's call
		return drv.SetPower(send, k.action())
	}
	return drv.SetPower(ctx, k.action())
}

// gatePower asks the PowerGate, if any, for the power action of task i,
// one that can power a server on (only those draw inrush current): the
// power task's send and the wait-for-boot retry's cycle both go through it.
// It returns the context to send the request under and the release to call
// once the request's call returned (admitPower, powergate.go); a *gated
// while the gate holds the action back, and a transient error when the gate
// cannot be asked.
func (r *stepRun) gatePower(ctx context.Context, i int) (send context.Context, release func(context.Context), err error) {
	gate := r.s.cfg.PowerGate
	if gate == nil {
		return ctx, func(context.Context) {}, nil
	}
	send, release, wait, err := admitPower(ctx, gate, r.ep.SystemKey(), r.j.Name, i)
	if err != nil {
		return nil, nil, bmc.Transient(fmt.Errorf("asking the power gate: %w", err))
	}
	if wait > 0 {
		return nil, nil, &gated{wait: wait}
	}
	return send, release, nil
}

// gated is returned when the PowerGate holds a power action back.
type gated struct{ wait time.Duration }

func (g *gated) Error() string { return fmt.Sprintf("held back by the power gate for %s", g.wait) }

func (k powerKind) check(ctx context.Context, r *stepRun, drv bmc.Driver, afterSend bool) (bool, string, error) {
	st, err := drv.PowerState(ctx)
	if err != nil {
		return false, "", err
	}
	// st == target: PoweringOn is never On, PoweringOff never Off.
	ok := st == k.action().Target()
	if ok && !afterSend && k.settles(r) {
		// The recheck of a resumed or retried task: already present only if
		// it holds for the settle window; otherwise act sends the action.
		held, err := k.settle(ctx, r, drv)
		if err != nil {
			return false, "", err
		}
		if !held {
			return false, string(st) + " (changed during the settle window)", nil
		}
	}
	return ok, string(st), nil
}

// settles says whether the PowerSettle window applies: it is set, and the
// action has a state to find already there (not cycle or reset).
func (k powerKind) settles(r *stepRun) bool {
	return r.s.cfg.PowerSettle > 0 && k.recheckable()
}

// settle is called when the target state was just read and nothing was sent
// for this attempt. It keeps reading the power state every PollInterval for
// PowerSettle (the last read at the window's end) and reports whether every
// read showed the target: a BMC may report the old state, with no
// transitional state, while another client's change is still landing. On the
// first read that differs it returns false at once, and the caller sends the
// action as for a state that was not there. The window is waited out within
// the current Step (bounded by the task's deadline); a crash during it leaves
// the task in phase Started, whose recheck settles again from the start.
func (k powerKind) settle(ctx context.Context, r *stepRun, drv bmc.Driver) (bool, error) {
	// The step waited: what it stamps next (the request, the completion)
	// happened after the window, not when the step began.
	defer r.tick()
	clk := r.s.cfg.Clock
	target := k.action().Target()
	end := clk.Now().Add(r.s.cfg.PowerSettle)
	for {
		left := end.Sub(clk.Now())
		if left <= 0 {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, bmc.Transient(fmt.Errorf("waiting out the power settle window: %w", ctx.Err()))
		case <-clk.After(min(r.s.cfg.PollInterval, left)):
		}
		st, err := drv.PowerState(ctx)
		if err != nil {
			return false, err
		}
		if st != target {
			r.log.Info("power state changed during the settle window; sending the action", "target", string(target), "observed", string(st))
			return false, nil
		}
	}
}

func (k powerKind) notYet(ctx context.Context, r *stepRun, i int, observed string) (StepResult, error) {
	since := r.now.Sub(r.j.Status.Tasks[i].RequestTime.Time)
	if since >= r.s.cfg.ResendAfter && !bmc.PowerState(observed).Transitional() {
		return r.resend(ctx, i, fmt.Sprintf("power still %s %s after the request", observed, since.Round(time.Second)))
	}
	return r.powerPoll(ctx, i, k.action()), nil
}
