package job

import (
	"context"
	"errors"
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

func (k bmcResetKind) defaultTimeout(cfg *StepperConfig) time.Duration {
	return max(cfg.DefaultTaskTimeout, bmcResetTimeout)
}
func (k bmcResetKind) grace(*StepperConfig) time.Duration { return 0 }
func (k bmcResetKind) usesBMC() bool                      { return true }
func (k bmcResetKind) recheckable() bool                  { return false }

// preflight: the BMC's manager offers the reset type.
func (k bmcResetKind) preflight(ctx context.Context, r *stepRun, drv bmc.Driver, _ int) error {
	if _, ok := drv.(bmc.BMCResetter); !ok {
		return notSupported(r.ep, "reset the BMC")
	}
	return checkNeed(ctx, drv, bmc.Need{BMCReset: k.resetType()})
}

func (k bmcResetKind) resetType() bmc.BMCResetType {
	if k.a.Type == task.BMCResetCold {
		return bmc.BMCResetCold
	}
	return bmc.BMCResetWarm
}

func (k bmcResetKind) send(ctx context.Context, r *stepRun, drv bmc.Driver) error {
	return r.resetBMC(ctx, drv, k.resetType())
}

// resetBMC sends a reset of the BMC itself (a bmcReset task's, a firmware
// update's activation). A transient error from the request is taken as a
// reset under way (BMCs drop the connection as they restart), and the
// pooled session is dropped: the BMC forgets its sessions.
func (r *stepRun) resetBMC(ctx context.Context, drv bmc.Driver, t bmc.BMCResetType) error {
	rs, ok := drv.(bmc.BMCResetter)
	if !ok {
		return notSupported(r.ep, "reset the BMC")
	}
	err := rs.ResetBMC(ctx, t)
	if err != nil && (!bmc.IsTransient(err) || ctx.Err() != nil) {
		return err
	}
	if err != nil {
		r.log.Info("the BMC reset request ended with a transient error; taking the reset as under way", "error", err.Error())
	}
	// The BMC forgets its sessions as it restarts: the next read dials.
	r.s.pool.Invalidate(ctx, r.ep)
	return nil
}

// check dials (through the pool) and reads the power state; drv, the
// session the reset was sent on, is spent.
func (k bmcResetKind) check(ctx context.Context, r *stepRun, _ bmc.Driver, _ bool) (bool, string, error) {
	drv, err := r.driver(ctx)
	if err != nil {
		return r.notAnswering(ctx, err, "the BMC is not answering yet: ")
	}
	st, err := drv.PowerState(ctx)
	if err != nil {
		return r.notAnswering(ctx, err, "the BMC is not answering yet: ")
	}
	r.recordPower(st)
	return true, fmt.Sprintf("the BMC answers again after a %s reset (power %s)", k.a.Type, st), nil
}

func (k bmcResetKind) notYet(_ context.Context, r *stepRun, i int, _ string) (StepResult, error) {
	return r.pollAfterAction(i), nil
}

// notAnswering reads err, from a BMC that restarts (after a reset a task
// sent), as "not yet": a transient error is the observed state (prefix and
// the error), an expired session drops the pooled one; any other error, or
// ctx ending, is the error.
func (r *stepRun) notAnswering(ctx context.Context, err error, prefix string) (bool, string, error) {
	if !bmc.IsTransient(err) || ctx.Err() != nil {
		return false, "", err
	}
	if errors.Is(err, bmc.ErrSessionExpired) {
		r.s.pool.Invalidate(ctx, r.ep)
	}
	return false, prefix + err.Error(), nil
}
