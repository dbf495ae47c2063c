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
// of the step it stopped in. The kind makes no BMC call itself: the
// override and the cycle are follow-ups it asks for and the Stepper sends
// (followup.go), the cycle with the reads of the system's last reset time
// around it (lastreset.go), so a cycle that landed is not sent twice.
type waitForBootKind struct {
	a *task.WaitForBootAction
	// timeout is the task's Spec.Timeout: each try's boot deadline (zero:
	// the default).
	timeout time.Duration
}

const defaultBootTimeout = 30 * time.Minute

func (k waitForBootKind) defaultTimeout(*kindConfig) time.Duration { return defaultBootTimeout }

// grace covers, beyond the first try's deadline, every retry: its backoff,
// the BMC calls that trigger it, and its own deadline.
func (k waitForBootKind) grace(c *kindConfig) time.Duration {
	base := 2*c.bootPollInterval + 5*time.Second
	per := k.timeout
	if per <= 0 {
		per = defaultBootTimeout
	}
	g := base
	for try := 2; try <= k.a.Retries+1; try++ {
		g += k.a.BackoffBefore(try) + c.defaultTaskTimeout + per + base
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
func (k waitForBootKind) bootUnsupported(b BootTracker) string {
	if b == nil {
		return "no BootTracker configured for wait-for-boot tasks"
	}
	if _, ok := b.(BootPolicyStarter); !ok && k.a.TrackerPolicy() {
		return "the task carries a boot policy (signals, deadlines or allowed sources) but the BootTracker cannot take one: it does not implement job.BootPolicyStarter"
	}
	return ""
}

// openBoot opens (idempotently) boot attempt attemptID of the task, with
// the task's policy and timeout.
func (k waitForBootKind) openBoot(ctx context.Context, t *taskView, attemptID string) error {
	uuid, timeout := k.systemUUID(t.job), k.timeout
	if timeout <= 0 {
		timeout = k.defaultTimeout(t.cfg)
	}
	boot := t.cfg.boot
	if !k.a.TrackerPolicy() {
		return boot.StartBoot(ctx, uuid, attemptID, timeout)
	}
	ps, ok := boot.(BootPolicyStarter)
	if !ok {
		return &taskFailure{conditions.ReasonNotSupported, k.bootUnsupported(boot)}
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
// i of j, or -1.
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
func (k waitForBootKind) currentTry(t *taskView) *task.BootTry {
	ts := t.status
	if len(ts.BootTries) == 0 {
		ts.BootTries = []task.BootTry{{Try: 1, AttemptID: BootAttemptID(t.job, t.Task), Step: task.BootTryWaiting, StartTime: ts.StartTime}}
	}
	return &ts.BootTries[len(ts.BootTries)-1]
}

// send does nothing: the first attempt was opened before the tasks that
// power the server on (bootWaiter); retries act through notYet.
func (k waitForBootKind) send(context.Context, *taskView) error { return nil }

// check asks the tracker about the current try's attempt. A try that timed
// out with retries left ends, and the next try's backoff is recorded (its
// stages follow in notYet); the last try's failure fails the task.
func (k waitForBootKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	boot := t.cfg.boot
	if boot == nil {
		return false, "", &taskFailure{conditions.ReasonNotSupported, "no BootTracker configured"}
	}
	cur := k.currentTry(t)
	tries := k.a.Retries + 1
	if cur.Step != task.BootTryWaiting {
		return false, fmt.Sprintf("try %d of %d: %s", cur.Try, tries, cur.Step), nil
	}
	out, err := k.outcome(ctx, boot, k.systemUUID(t.job), cur.AttemptID)
	if err != nil {
		return false, "", bmc.Transient(fmt.Errorf("reading boot state: %w", err))
	}
	if !out.Done {
		return false, "waiting for boot signals", nil
	}
	reason := out.Reason
	if reason == "" {
		reason = string(out.Result)
	}
	if reason == "" {
		reason = conditions.ReasonFailed
	}
	cur.Step, cur.Result, cur.Stage, cur.Message, cur.EndTime = task.BootTryDone, out.Result, reason, out.Message, timestamp.Ptr(t.now)
	if out.Result == conditions.ResultSucceeded {
		if cur.Try > 1 {
			return true, fmt.Sprintf("booted on try %d of %d: %s", cur.Try, tries, out.Message), nil
		}
		return true, "booted: " + out.Message, nil
	}
	if out.Result == conditions.ResultTimedOut && cur.Try < tries {
		next := t.now.Add(k.a.BackoffBefore(cur.Try + 1))
		t.log.Info("boot try timed out; retrying", "task", t.Task+1, "try", cur.Try, "of", tries, "stage", reason, "retryAt", next)
		t.status.BootTries = append(t.status.BootTries, task.BootTry{Try: cur.Try + 1, AttemptID: BootTryAttemptID(t.job, t.Task, cur.Try+1), Step: task.BootTryBackoff, NotBefore: timestamp.Ptr(next)})
		return false, fmt.Sprintf("try %d of %d ended %s; retrying at %s", cur.Try, tries, reason, next.UTC().Format(time.RFC3339)), nil
	}
	msg := "boot " + string(out.Result) + ": " + out.Message
	if cur.Try > 1 {
		msg = fmt.Sprintf("boot %s on try %d of %d (%s): %s", out.Result, cur.Try, tries, triesSummary(t.status.BootTries), out.Message)
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

// lastTry is the task's current try.
func lastTry(t *taskView) *task.BootTry { return &t.status.BootTries[len(t.status.BootTries)-1] }

// notYet waits for the boot, or moves a retry on through its stages, each
// recorded in Status.BootTries and stored before its action (intent before
// action): after its backoff the try opens its attempt (backoff), sets the
// boot override of the most recent bootDevice task before this one again,
// if there is one, and power cycles (follow-ups the Stepper sends).
func (k waitForBootKind) notYet(ctx context.Context, t *taskView, _ string) (decision, error) {
	cur := lastTry(t)
	switch cur.Step {
	case task.BootTryBackoff:
		return k.backoff(ctx, t, cur)
	case task.BootTrySettingBootOverride:
		// The override is that task's action, sent again on this task's
		// behalf, and read back.
		return thenFollow(followUp{send: &t.job.Spec.Tasks[overrideTask(t.job, t.Task)], check: true}), nil
	case task.BootTryPowerCycling:
		return thenFollow(followUp{cycle: true}), nil
	}
	return pollAfter(t.cfg.bootPollInterval), nil
}

// backoff waits out the try's backoff, then opens its attempt before
// anything can power the server on, so a quick callback is not lost
// (idempotent, so safe to repeat), and moves on to the override or the
// cycle, whose intent goes out with this stage's end.
func (k waitForBootKind) backoff(ctx context.Context, t *taskView, cur *task.BootTry) (decision, error) {
	if t.now.Before(cur.NotBefore.Time) {
		// Stored when the previous try ended in this step: its outcome and
		// the retry's schedule.
		prev := t.status.BootTries[len(t.status.BootTries)-2]
		return decision{after: cur.NotBefore.Sub(t.now), store: prev.EndTime != nil && prev.EndTime.Equal(t.now)}, nil
	}
	if err := k.openBoot(ctx, t, cur.AttemptID); err != nil {
		return decision{}, asBootErr(fmt.Errorf("opening boot attempt %q: %w", cur.AttemptID, err))
	}
	cur.StartTime, cur.NotBefore = timestamp.Ptr(t.now), nil
	if overrideTask(t.job, t.Task) >= 0 {
		cur.Step = task.BootTrySettingBootOverride
		return storeThenAgain(), nil
	}
	cur.Step = task.BootTryPowerCycling
	return thenFollow(followUp{cycle: true, store: true}), nil
}

// followed records a follow-up: the override set again (the cycle comes
// next, its intent stored with it), or the cycle sent (or found landed):
// the try waits for its boot.
func (k waitForBootKind) followed(_ context.Context, t *taskView, f followUp, done bool, observed string) (decision, error) {
	cur := lastTry(t)
	if !f.cycle {
		if !done {
			return decision{}, bmc.Transient(fmt.Errorf("try %d: the boot override read back as %s after setting it again", cur.Try, observed))
		}
		cur.OverrideTime = timestamp.Ptr(t.now)
		cur.Step = task.BootTryPowerCycling
		return thenFollow(followUp{cycle: true, store: true}), nil
	}
	cur.PowerCycleTime = timestamp.Ptr(t.now)
	cur.Step = task.BootTryWaiting
	t.status.RequestTime = timestamp.Ptr(t.now)
	return storeThenPoll(t.cfg.bootPollInterval), nil
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
