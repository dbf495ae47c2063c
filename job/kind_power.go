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

func (k powerKind) send(ctx context.Context, _ *stepRun, drv bmc.Driver) error {
	return drv.SetPower(ctx, k.action())
}

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
