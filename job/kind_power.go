package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

// powerKind: on, off, soft-off, cycle, reset. Verified by polling the power
// state until it is the action's target; a request with no visible effect
// and no transition after ResendAfter is sent again (BMCs drop requests that
// arrive during a pending change).
type powerKind struct{ a *task.PowerAction }

func (k powerKind) defaultTimeout(cfg *StepperConfig) time.Duration { return cfg.DefaultTaskTimeout }
func (k powerKind) grace(*StepperConfig) time.Duration              { return 0 }
func (k powerKind) usesBMC() bool                                   { return true }

// A cycle or reset ends where it started (On), so reading the state cannot
// tell whether it happened.
func (k powerKind) recheckable() bool {
	return k.a.Op != task.PowerCycle && k.a.Op != task.PowerReset
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
	if gate := r.s.cfg.PowerGate; gate != nil && k.a.Op != task.PowerOff && k.a.Op != task.PowerSoftOff {
		// Only actions that can power a server on draw inrush current.
		wait, err := gate.Admit(ctx, r.ep.SystemKey(), r.j.Name, r.j.Status.CurrentTask)
		if err != nil {
			return bmc.Transient(fmt.Errorf("asking the power gate: %w", err))
		}
		if wait > 0 {
			return &gated{wait: wait}
		}
	}
	return drv.SetPower(ctx, k.action())
}

// gated is returned by send when the PowerGate holds the action back.
type gated struct{ wait time.Duration }

func (g *gated) Error() string { return fmt.Sprintf("held back by the power gate for %s", g.wait) }

func (k powerKind) check(ctx context.Context, _ *stepRun, drv bmc.Driver, _ bool) (bool, string, error) {
	st, err := drv.PowerState(ctx)
	if err != nil {
		return false, "", err
	}
	return st == k.action().Target(), string(st), nil
}

func (k powerKind) notYet(ctx context.Context, r *stepRun, i int, observed string) (StepResult, error) {
	since := r.now.Sub(*r.j.Status.Tasks[i].RequestTime)
	if since >= r.s.cfg.ResendAfter && !bmc.PowerState(observed).Transitional() {
		return r.resend(ctx, i, fmt.Sprintf("power still %s %s after the request", observed, since.Round(time.Second)))
	}
	return r.pollAfterAction(i), nil
}
