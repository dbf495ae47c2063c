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
//
// As a powerChanger it leaves to the Stepper the PowerGate (on, cycle and
// reset are admitted before they are sent), the power-change watch and the
// adaptive polling of its read-backs.
type powerKind struct{ a *task.PowerAction }

func (k powerKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k powerKind) usesBMC() bool                              { return true }

// preflight: the BMC offers a reset type for the action (preflight.go).
func (k powerKind) preflight(ctx context.Context, t *taskView) error {
	return checkNeed(ctx, t.BMC, bmc.Need{Power: k.powerAction()})
}

// A cycle or reset ends where it started (On), so reading the state cannot
// tell whether it happened.
func (k powerKind) recheckable() bool {
	return k.a.Op != task.PowerCycle && k.a.Op != task.PowerReset
}

// boots says whether the action starts the server (on, cycle, reset): the
// PowerGate admits it, and its success is the boot an emulated one-time
// override was for (bootrestore.go).
func (k powerKind) boots() bool {
	return k.a.Op == task.PowerOn || k.a.Op == task.PowerCycle || k.a.Op == task.PowerReset
}

func (k powerKind) powerAction() bmc.PowerAction {
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

// prepare applies the settle window: the driver's SetPower would find the
// target already there and send nothing, so the state is read first, and a
// target that holds for the window is taken as there (nothing sent; the
// read-back that follows sees it).
func (k powerKind) prepare(ctx context.Context, t *taskView) (prep, error) {
	if !k.settles(t) {
		return prep{}, nil
	}
	st, err := t.BMC.PowerState(ctx)
	if err != nil || st != k.powerAction().Target() {
		return prep{}, err
	}
	held, err := k.settle(ctx, t)
	return prep{skip: held}, err
}

func (k powerKind) send(ctx context.Context, t *taskView) error {
	return t.BMC.SetPower(ctx, k.powerAction())
}

func (k powerKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	st, err := t.BMC.PowerState(ctx)
	if err != nil {
		return false, "", err
	}
	// st == target: PoweringOn is never On, PoweringOff never Off.
	ok := st == k.powerAction().Target()
	if ok && !t.Sent && k.settles(t) {
		// The recheck of a resumed or retried task: already present only if
		// it holds for the settle window; otherwise the action is sent.
		held, err := k.settle(ctx, t)
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
func (k powerKind) settles(t *taskView) bool {
	return t.cfg.powerSettle > 0 && k.recheckable()
}

// settle is called when the target state was just read and nothing was sent
// for this attempt. It keeps reading the power state every PollInterval for
// PowerSettle (the last read at the window's end) and reports whether every
// read showed the target: a BMC may report the old state, with no
// transitional state, while another client's change is still landing. On the
// first read that differs it returns false at once, and the action is sent
// as for a state that was not there. The window is waited out within the
// current Step (bounded by the task's deadline); a crash during it leaves
// the task in phase Started, whose recheck settles again from the start.
func (k powerKind) settle(ctx context.Context, t *taskView) (bool, error) {
	// The step waited: what it stamps next (the request, the completion)
	// happened after the window, not when the step began.
	t.waited = true
	clk := t.cfg.clock
	target := k.powerAction().Target()
	end := clk.Now().Add(t.cfg.powerSettle)
	for {
		left := end.Sub(clk.Now())
		if left <= 0 {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, bmc.Transient(fmt.Errorf("waiting out the power settle window: %w", ctx.Err()))
		case <-clk.After(min(t.cfg.pollInterval, left)):
		}
		st, err := t.BMC.PowerState(ctx)
		if err != nil {
			return false, err
		}
		if st != target {
			t.log.Info("power state changed during the settle window; sending the action", "target", string(target), "observed", string(st))
			return false, nil
		}
	}
}

// notYet sends the action again when nothing changed for ResendAfter (no
// transition either: the BMC dropped the request); otherwise it keeps
// polling on the Stepper's (adaptive) schedule.
func (k powerKind) notYet(_ context.Context, t *taskView, observed string) (decision, error) {
	since := t.now.Sub(t.status.RequestTime.Time)
	if since >= t.cfg.resendAfter && !bmc.PowerState(observed).Transitional() {
		return resendBecause(fmt.Sprintf("power still %s %s after the request", observed, since.Round(time.Second))), nil
	}
	return pollAfter(0), nil
}
