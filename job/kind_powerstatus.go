package job

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("powerStatus", func(s *task.Spec) kind { return powerStatusKind{s.PowerStatus} })
}

// powerStatusKind reads the power state and records it in the task's
// Status.PowerState (and Message), changing nothing: Rufio's "status". It
// costs the job's session and one read. send does nothing and the read-back
// is the task's result, so it is never "already done": a task resumed after
// a crash reads again (still one read), and its message is the state read,
// not "effect already present".
type powerStatusKind struct{ a *task.PowerStatusAction }

func (k powerStatusKind) defaultTimeout(cfg *StepperConfig) time.Duration {
	return cfg.DefaultTaskTimeout
}
func (k powerStatusKind) grace(*StepperConfig) time.Duration { return 0 }
func (k powerStatusKind) usesBMC() bool                      { return true }
func (k powerStatusKind) recheckable() bool                  { return false }

func (k powerStatusKind) send(context.Context, *stepRun, bmc.Driver) error { return nil }

func (k powerStatusKind) check(ctx context.Context, r *stepRun, drv bmc.Driver, _ bool) (bool, string, error) {
	st, err := drv.PowerState(ctx)
	if err != nil {
		return false, "", err
	}
	r.recordPower(st)
	return true, string(st), nil
}

// notYet is never reached: any state read is the result.
func (k powerStatusKind) notYet(_ context.Context, r *stepRun, i int, _ string) (StepResult, error) {
	return r.pollAfterAction(i), nil
}

// recordPower stores the power state the current task read in its status.
func (r *stepRun) recordPower(st bmc.PowerState) {
	r.j.Status.Tasks[r.j.Status.CurrentTask].PowerState = string(st)
}
