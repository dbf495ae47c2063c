package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

func init() {
	registerKind("waitForBoot", func(s *task.Spec) kind { return waitForBootKind{s.WaitForBoot, s.Timeout.Duration} })
}

// waitForBootKind completes when the host's BootTracker reports the task's
// boot attempt done. Its deadline belongs to the tracker (whose record says
// which signals did arrive); the task's own timer is a backstop that fires a
// little later.
//
// With WaitForBootPolicy.Retries, a try whose attempt timed out is followed
// by another: after a backoff, a new attempt is opened (BootTryAttemptID),
// the boot override of the most recent bootDevice task before this one is
// set again (if there is one) and the server is power cycled (powered on if
// it is off), each step stored in Status.BootTries before its action is
// sent (intent before action), so a resumed job repeats at most the action
// of the step it stopped in. These are the only BMC calls the kind makes,
// with the reads of the system's last reset time around the cycle (see
// markReset and cycleLanded, lastreset.go).
type waitForBootKind struct {
	a *task.WaitForBootAction
	// timeout is the task's Spec.Timeout: each try's boot deadline (zero:
	// the default).
	timeout time.Duration
}

const defaultBootTimeout = 30 * time.Minute

func (k waitForBootKind) defaultTimeout(*StepperConfig) time.Duration {
	return defaultBootTimeout
}

// grace covers, beyond the first try's deadline, every retry: its backoff,
// the BMC calls that trigger it, and its own deadline.
func (k waitForBootKind) grace(cfg *StepperConfig) time.Duration {
	base := 2*cfg.BootPollInterval + 5*time.Second
	per := k.timeout
	if per <= 0 {
		per = defaultBootTimeout
	}
	g := base
	for try := 2; try <= k.a.Retries+1; try++ {
		g += k.a.BackoffBefore(try) + cfg.DefaultTaskTimeout + per + base
	}
	return g
}
func (k waitForBootKind) usesBMC() bool     { return false }
func (k waitForBootKind) recheckable() bool { return true }

func (k waitForBootKind) systemUUID(j *Job) string {
	if k.a.SystemUUID != "" {
		return k.a.SystemUUID
	}
	return j.Spec.SystemUUID
}

// attemptPolicy is what the tracker gets for each attempt of the task.
func (k waitForBootKind) attemptPolicy(timeout time.Duration) BootAttemptPolicy {
	p := BootAttemptPolicy{Timeout: timeout, Mode: string(k.a.Mode), Signals: k.a.Signals, AllowedSources: k.a.AllowedSources}
	for _, d := range k.a.Deadlines {
		p.Deadlines = append(p.Deadlines, BootSignalDeadline{Signal: d.Signal, Within: d.Within.Duration, FromPreviousSignal: d.From == task.DeadlineFromPreviousSignal})
	}
	return p
}

// bootUnsupported says why tracker b cannot serve the task, or "".
func (w waitForBootKind) bootUnsupported(b BootTracker) string {
	if b == nil {
		return "no BootTracker configured for wait-for-boot tasks"
	}
	if _, ok := b.(BootPolicyStarter); !ok && w.a.TrackerPolicy() {
		return "the task carries a boot policy (signals, deadlines or allowed sources) but the BootTracker cannot take one: it does not implement job.BootPolicyStarter"
	}
	return ""
}

// openBoot opens (idempotently) boot attempt attemptID of task i, with the
// task's policy and timeout.
func (k waitForBootKind) openBoot(ctx context.Context, r *stepRun, i int, attemptID string) error {
	uuid, timeout := k.systemUUID(r.j), r.taskTimeout(i)
	if !k.a.TrackerPolicy() {
		return r.s.cfg.Boot.StartBoot(ctx, uuid, attemptID, timeout)
	}
	ps, ok := r.s.cfg.Boot.(BootPolicyStarter)
	if !ok {
		return &taskFailure{conditions.ReasonNotSupported, k.bootUnsupported(r.s.cfg.Boot)}
	}
	return ps.StartBootWithPolicy(ctx, uuid, attemptID, k.attemptPolicy(timeout))
}

// outcome asks the tracker about an attempt, with the reason when it can
// tell it.
func (k waitForBootKind) outcome(ctx context.Context, boot BootTracker, uuid, attemptID string) (BootOutcome, error) {
	if rep, ok := boot.(BootOutcomeReporter); ok {
		return rep.BootOutcome(ctx, uuid, attemptID)
	}
	done, result, msg, err := boot.BootResult(ctx, uuid, attemptID)
	return BootOutcome{Done: done, Result: result, Reason: string(result), Message: msg}, err
}

// overrideTask is the index of the most recent bootDevice task before task
// i, or -1.
func overrideTask(j *Job, i int) int {
	for b := i - 1; b >= 0; b-- {
		if j.Spec.Tasks[b].BootDevice != nil {
			return b
		}
	}
	return -1
}

// currentTry returns the task's current try, recording try 1 (the boot the
// job's earlier tasks triggered) on first use.
func (k waitForBootKind) currentTry(r *stepRun, i int) *task.BootTry {
	ts := &r.j.Status.Tasks[i]
	if len(ts.BootTries) == 0 {
		ts.BootTries = []task.BootTry{{Try: 1, AttemptID: BootAttemptID(r.j, i), Step: task.BootTryWaiting, StartTime: ts.StartTime}}
	}
	return &ts.BootTries[len(ts.BootTries)-1]
}

// send does nothing: the first attempt was opened before the tasks that
// power the server on (see openNextBoot); retries act in notYet.
func (k waitForBootKind) send(context.Context, *stepRun, bmc.Driver) error { return nil }

func (k waitForBootKind) check(ctx context.Context, r *stepRun, _ bmc.Driver, _ bool) (bool, string, error) {
	boot := r.s.cfg.Boot
	if boot == nil {
		return false, "", &taskFailure{conditions.ReasonNotSupported, "no BootTracker configured"}
	}
	i := r.j.Status.CurrentTask
	ts := &r.j.Status.Tasks[i]
	cur := k.currentTry(r, i)
	tries := k.a.Retries + 1
	if cur.Step != task.BootTryWaiting {
		return false, fmt.Sprintf("try %d of %d: %s", cur.Try, tries, cur.Step), nil
	}
	out, err := k.outcome(ctx, boot, k.systemUUID(r.j), cur.AttemptID)
	if err != nil {
		return false, "", bmc.Transient(fmt.Errorf("reading boot state: %w", err))
	}
	if !out.Done {
		return false, "waiting for boot signals", nil
	}
	now := r.now
	reason := out.Reason
	if reason == "" {
		reason = string(out.Result)
	}
	if reason == "" {
		reason = conditions.ReasonFailed
	}
	cur.Step, cur.Result, cur.Stage, cur.Message, cur.EndTime = task.BootTryDone, out.Result, reason, out.Message, timestamp.Ptr(now)
	if out.Result == conditions.ResultSucceeded {
		if cur.Try > 1 {
			return true, fmt.Sprintf("booted on try %d of %d: %s", cur.Try, tries, out.Message), nil
		}
		return true, "booted: " + out.Message, nil
	}
	if out.Result == conditions.ResultTimedOut && cur.Try < tries {
		next := now.Add(k.a.BackoffBefore(cur.Try + 1))
		r.log.Info("boot try timed out; retrying", "task", i+1, "try", cur.Try, "of", tries, "stage", reason, "retryAt", next)
		ts.BootTries = append(ts.BootTries, task.BootTry{Try: cur.Try + 1, AttemptID: BootTryAttemptID(r.j, i, cur.Try+1), Step: task.BootTryBackoff, NotBefore: timestamp.Ptr(next)})
		return false, fmt.Sprintf("try %d of %d ended %s; retrying at %s", cur.Try, tries, reason, next.UTC().Format(time.RFC3339)), nil
	}
	msg := "boot " + string(out.Result) + ": " + out.Message
	if cur.Try > 1 {
		msg = fmt.Sprintf("boot %s on try %d of %d (%s): %s", out.Result, cur.Try, tries, triesSummary(ts.BootTries), out.Message)
	}
	return false, "", &taskFailure{reason, msg}
}

func triesSummary(ts []task.BootTry) string {
	s := ""
	for n, t := range ts {
		if n > 0 {
			s += ", "
		}
		s += fmt.Sprintf("try %d %s", t.Try, t.Stage)
	}
	return s
}

// notYet waits for the boot, or moves a retry on: after its backoff it
// opens the new attempt, sets the boot override again and power cycles,
// storing each step before its action.
func (k waitForBootKind) notYet(ctx context.Context, r *stepRun, i int, _ string) (StepResult, error) {
	ts := &r.j.Status.Tasks[i]
	cur := &ts.BootTries[len(ts.BootTries)-1]
	now := r.now
	switch cur.Step {
	case task.BootTryBackoff:
		if now.Before(cur.NotBefore.Time) {
			if prev := ts.BootTries[len(ts.BootTries)-2]; prev.EndTime != nil && prev.EndTime.Equal(now) {
				// The previous try ended in this step: store its outcome
				// and the retry's schedule.
				if err := r.persist(ctx, r.j); err != nil {
					return StepResult{}, err
				}
			}
			return StepResult{RequeueAfter: cur.NotBefore.Sub(now)}, nil
		}
		// Open the attempt before anything can power the server on, so a
		// quick callback is not lost (idempotent, so safe to repeat).
		if err := k.openBoot(ctx, r, i, cur.AttemptID); err != nil {
			return r.handleErr(ctx, i, asBootErr(fmt.Errorf("opening boot attempt %q: %w", cur.AttemptID, err)), false)
		}
		cur.StartTime, cur.NotBefore = timestamp.Ptr(now), nil
		cur.Step = task.BootTryPowerCycling
		if overrideTask(r.j, i) >= 0 {
			cur.Step = task.BootTrySettingBootOverride
		} else {
			// The last reset time goes out with the cycle's intent. A
			// failed dial stores the intent without it (handleErr writes
			// the status), and the cycle is retried.
			drv, err := r.driver(ctx)
			if err != nil {
				return r.handleErr(ctx, i, err, true)
			}
			r.markReset(r.callCtx(ctx, i), drv, i)
		}
		if err := r.persist(ctx, r.j); err != nil { // intent before action
			return StepResult{}, err
		}
		return k.notYet(ctx, r, i, "")
	case task.BootTrySettingBootOverride:
		bk := kindOf(&r.j.Spec.Tasks[overrideTask(r.j, i)]) // the override is that task's action, sent again
		// A resumed or retried try: prove the copy current first.
		if err := r.confirm(ctx); err != nil {
			return StepResult{}, err
		}
		drv, err := r.driver(ctx)
		if err != nil {
			return r.handleErr(ctx, i, err, true)
		}
		cctx := r.callCtx(ctx, i)
		if err := bk.send(cctx, r, drv); err != nil {
			return r.handleErr(ctx, i, err, false)
		}
		ok, observed, err := bk.check(cctx, r, drv, true)
		if err != nil {
			return r.handleErr(ctx, i, err, false)
		}
		if !ok {
			return r.handleErr(ctx, i, bmc.Transient(fmt.Errorf("try %d: the boot override read back as %s after setting it again", cur.Try, observed)), false)
		}
		cur.OverrideTime = timestamp.Ptr(now)
		cur.Step = task.BootTryPowerCycling
		// The last reset time goes out with the cycle's intent.
		r.markReset(cctx, drv, i)
		if err := r.persist(ctx, r.j); err != nil { // intent before the cycle
			return StepResult{}, err
		}
		return k.notYet(ctx, r, i, "")
	case task.BootTryPowerCycling:
		cctx := r.callCtx(ctx, i)
		send, release, err := r.gatePower(cctx, i) // as a power task's cycle
		if err != nil {
			var g *gated
			if errors.As(err, &g) {
				return StepResult{RequeueAfter: g.wait}, nil
			}
			return r.handleErr(ctx, i, err, false)
		}
		defer release(ctx) // after the request's call, whichever way this step ends
		if err := r.confirm(ctx); err != nil {
			return StepResult{}, err
		}
		drv, err := r.driver(ctx)
		if err != nil {
			return r.handleErr(ctx, i, err, true)
		}
		landed, err := r.cycleLanded(cctx, drv, i)
		if err != nil {
			return r.handleErr(ctx, i, err, false)
		}
		if !landed {
			act := bmc.PowerActionCycle
			if st, err := drv.PowerState(cctx); err == nil && st == bmc.PowerOff {
				act = bmc.PowerActionOn
			}
			if err := drv.SetPower(send, act); err != nil {
				return r.handleErr(ctx, i, err, false)
			}
		}
		cur.PowerCycleTime = timestamp.Ptr(now)
		cur.Step = task.BootTryWaiting
		ts.RequestTime = timestamp.Ptr(now)
		ts.LastResetBefore = nil // the result of sending is stored: done with
		r.recordWire()
		if err := r.persist(ctx, r.j); err != nil {
			return StepResult{}, err
		}
	}
	return StepResult{RequeueAfter: r.s.cfg.BootPollInterval}, nil
}

// asBootErr keeps a task failure (a tracker that cannot take the policy)
// and makes every other tracker error transient.
func asBootErr(err error) error {
	var tf *taskFailure
	if errors.As(err, &tf) {
		return tf
	}
	return bmc.Transient(err)
}
