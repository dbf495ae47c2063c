package job

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/task"
)

func init() { registerKind("reachable", func(s *task.Spec) kind { return reachableKind{s.Reachable} }) }

// reachableKind checks that the BMC answers and accepts the job's
// credentials: a session (the job's pooled connection: an existing session
// opened with the same credentials counts, as its login verified them; the
// task never opens a second one) and one read of the power state, recorded
// in Status.PowerState. It changes nothing.
//
// Failures are the job's usual ones: rejected credentials fail at once with
// reason Unauthorized; an unreachable BMC (refused, reset, timed out) is
// retried with backoff until the task's timeout, which defaults to at most a
// minute (DefaultTaskTimeout when that is shorter), and then fails with
// reason TimedOut and the last error.
type reachableKind struct{ a *task.ReachableAction }

// reachableTimeout caps the default timeout of a reachable task: a
// diagnostic should answer within a minute.
const reachableTimeout = time.Minute

func (k reachableKind) defaultTimeout(c *kindConfig) time.Duration {
	return min(c.defaultTaskTimeout, reachableTimeout)
}
func (k reachableKind) usesBMC() bool { return true }

// Not recheckable, for the same reason as powerStatusKind: the read is the
// result (send does nothing, so this costs nothing).
func (k reachableKind) recheckable() bool { return false }

func (k reachableKind) send(context.Context, *taskView) error { return nil }

// check reads the state once: a successful read is the result.
func (k reachableKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	st, err := t.BMC.PowerState(ctx)
	if err != nil {
		return false, "", err
	}
	t.status.PowerState = string(st)
	return true, "the BMC answers with these credentials (power " + string(st) + ")", nil
}
