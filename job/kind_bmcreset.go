package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

func init() { registerKind("bmcReset", func(s *task.Spec) kind { return bmcResetKind{s.BMCReset} }) }

// bmcResetKind resets the BMC itself (bmc.BMCResetter), warm or cold, then
// waits until it answers again: the task succeeds at the first power-state
// read through a new session after the reset was accepted. The server's
// power is not touched (the read is recorded in Status.PowerState).
//
//   - The pooled session is invalidated as soon as the reset was sent (a
//     rebooting BMC forgets its sessions), for every system sharing it: a
//     reset of a chassis manager restarts it for all of them.
//   - While the BMC restarts, its transient errors (refused, reset, timed
//     out, an expired session) mean "not yet": a failed dial is retried
//     with the Retry backoff (500ms doubling to 15s by default), a failed
//     read after a dial polls every PollInterval, until the task's timeout,
//     which defaults to 10 minutes (DefaultTaskTimeout if longer). A
//     permanent error (the BMC came back with other credentials) fails it.
//   - A transient error from the reset request itself is taken as a reset
//     under way (BMCs drop the connection as they restart; an IPMI Cold
//     Reset may not be answered at all), so the request is not sent again
//     after the BMC came back: that would reset it twice.
//   - Like power cycle and reset, its effect cannot be read back after the
//     fact (the BMC answers before and after), so it is not recheckable: a
//     task interrupted in phase Started (the runner crashed between storing
//     the intent and storing the result of sending) sends the reset again.
//   - A BMC that keeps answering for a moment after accepting the reset may
//     be read before it goes down; the task then succeeds early, and the
//     next task's calls ride over the restart as transient errors, retried
//     within that task's timeout.
type bmcResetKind struct{ a *task.BMCResetAction }

// bmcResetTimeout is the default timeout of a BMC reset: BMCs take one to
// five minutes to boot.
const bmcResetTimeout = 10 * time.Minute

func (k bmcResetKind) defaultTimeout(c *kindConfig) time.Duration {
	return max(c.defaultTaskTimeout, bmcResetTimeout)
}
func (k bmcResetKind) usesBMC() bool     { return true }
func (k bmcResetKind) recheckable() bool { return false }

// restartsBMC: the Stepper drops the pooled session once the reset is sent,
// and reads back through a new one (bmcRestarter).
func (k bmcResetKind) restartsBMC() {}

// preflight: the BMC's manager offers the reset type.
func (k bmcResetKind) preflight(ctx context.Context, t *taskView) error {
	if _, ok := t.BMC.(bmc.BMCResetter); !ok {
		return notSupported(t.ep, "reset the BMC")
	}
	return checkNeed(ctx, t.BMC, bmc.Need{BMCReset: k.resetType()})
}

func (k bmcResetKind) resetType() bmc.BMCResetType {
	if k.a.Type == task.BMCResetCold {
		return bmc.BMCResetCold
	}
	return bmc.BMCResetWarm
}

// send resets the BMC (a bmcReset task's, a firmware update's activation,
// sent as a follow-up). A transient error from the request is taken as a
// reset under way: BMCs drop the connection as they restart.
func (k bmcResetKind) send(ctx context.Context, t *taskView) error {
	rs, ok := t.BMC.(bmc.BMCResetter)
	if !ok {
		return notSupported(t.ep, "reset the BMC")
	}
	err := rs.ResetBMC(ctx, k.resetType())
	if err != nil && (!bmc.IsTransient(err) || ctx.Err() != nil) {
		return err
	}
	if err != nil {
		t.log.Info("the BMC reset request ended with a transient error; taking the reset as under way", "error", err.Error())
	}
	return nil
}

// check reads the power state through the connection the Stepper gives it
// (after the reset, a new session): an answer is the effect; a transient
// error means the BMC is not answering yet.
func (k bmcResetKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	st, err := t.BMC.PowerState(ctx)
	if err != nil {
		return false, "", &notAnswering{bmcRestarting, err}
	}
	t.status.PowerState = string(st)
	return true, fmt.Sprintf("the BMC answers again after a %s reset (power %s)", k.a.Type, st), nil
}
