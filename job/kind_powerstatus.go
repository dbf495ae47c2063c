package job

import (
	"context"
	"time"

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

func (k powerStatusKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k powerStatusKind) usesBMC() bool                              { return true }
func (k powerStatusKind) recheckable() bool                          { return false }

func (k powerStatusKind) send(context.Context, *taskView) error { return nil }

// check reads the state: any state read is the result.
func (k powerStatusKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	st, err := t.BMC.PowerState(ctx)
	if err != nil {
		return false, "", err
	}
	t.status.PowerState = string(st)
	return true, string(st), nil
}
