package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// kind is one task kind's rules: how to act, how to read the effect back,
// what to do when the effect is not there yet, and its timeout. The Stepper's
// state machine (phases, intent before action, retries, completion) is the
// same for every kind; everything that differs between kinds lives behind
// this interface, one file per kind (kind_*.go) that registers itself
// (registerKind), so a new kind is one new file here beside the action's
// type in package task (docs/jobs.md, "Adding a task kind"). What
// only some kinds do is an optional interface below, found by type
// assertion: the generic code never names a concrete kind
// (TestNoConcreteKindOutsideItsFile).
type kind interface {
	// defaultTimeout is the timeout of a task whose Spec has none.
	defaultTimeout(cfg *StepperConfig) time.Duration

	// grace is how long past its timeout the task's own timer waits, for
	// kinds whose deadline belongs to someone else (the BootTracker).
	grace(cfg *StepperConfig) time.Duration

	// usesBMC says whether the kind talks to the BMC at all; if not, act and
	// check get a nil driver.
	usesBMC() bool

	// recheckable says whether a task resumed in phase Started may be taken
	// as done when its effect is already there. Actions that end where they
	// started (power cycle, reset) are not: they are sent again.
	recheckable() bool

	// send performs the action.
	send(ctx context.Context, r *stepRun, drv bmc.Driver) error

	// check reads the effect back. afterSend says whether the action was
	// sent (as opposed to a recheck after a crash); it matters where the BMC
	// cannot report the effect. observed describes what was read.
	check(ctx context.Context, r *stepRun, drv bmc.Driver, afterSend bool) (ok bool, observed string, err error)

	// notYet decides what happens after a read-back that did not show the
	// effect: keep polling, send again, or fail.
	notYet(ctx context.Context, r *stepRun, i int, observed string) (StepResult, error)
}

// bootWaiter is implemented by kinds that wait for a boot (one attempt each,
// opened before the tasks that power the server on).
type bootWaiter interface {
	// openBoot opens (idempotently) boot attempt attemptID of task i.
	openBoot(ctx context.Context, r *stepRun, i int, attemptID string) error
	// bootUnsupported says why tracker b cannot serve the task, or "".
	bootUnsupported(b BootTracker) string
}

// powerChanger is implemented by kinds that change the power state: the
// Stepper tells them before it sends and after each read-back, for the
// power-change watch and the adaptive polling (powerwatch.go).
type powerChanger interface {
	// boots says whether the action starts the server: its success is the
	// boot an emulated one-time override was for (bootrestore.go).
	boots() bool
	// beforeSend runs just before task i's action is sent.
	beforeSend(ctx context.Context, r *stepRun, i int)
	// afterRead records a read-back of task i at readAt that did (ok) or
	// did not show the effect; sent: this step sent the action.
	afterRead(r *stepRun, i int, ok bool, readAt time.Time, sent bool)
}

// intentReader is implemented by kinds that read the BMC before their
// intent is stored, on the previous task's connection, so the read goes
// out in the same write as that task's result (bootrestore.go).
type intentReader interface {
	readBeforeIntent(ctx context.Context, r *stepRun, i int)
}

// kinds maps a task action's JSON name (task.Spec.Action: "power",
// "bootDevice", ...) to its kind's constructor. Each kind file registers its
// own in an init func (registerKind), so a new kind is its file and the
// action's field in task.Spec (docs/jobs.md, "Adding a task kind"). Written
// only by those init funcs, before main runs; read-only afterwards.
var kinds = map[string]func(*task.Spec) kind{}

// registerKind registers the kind of the task action named action; called
// from init funcs only.
func registerKind(action string, mk func(*task.Spec) kind) {
	if _, dup := kinds[action]; dup {
		panic("job: task kind " + action + " registered twice")
	}
	kinds[action] = mk
}

// kindOf is the kind of the action s sets.
func kindOf(s *task.Spec) kind {
	if mk := kinds[s.Action()]; mk != nil {
		return mk(s)
	}
	return invalidKind{}
}

// invalidKind is a spec with no action; validation refuses it, so only a
// record written around Submit can hold one.
type invalidKind struct{}

func (invalidKind) defaultTimeout(cfg *StepperConfig) time.Duration { return cfg.DefaultTaskTimeout }
func (invalidKind) grace(*StepperConfig) time.Duration              { return 0 }
func (invalidKind) usesBMC() bool                                   { return false }
func (invalidKind) recheckable() bool                               { return false }
func (invalidKind) send(context.Context, *stepRun, bmc.Driver) error {
	return &taskFailure{conditions.ReasonInvalidSpec, "task has no action"}
}
func (invalidKind) check(context.Context, *stepRun, bmc.Driver, bool) (bool, string, error) {
	return false, "", &taskFailure{conditions.ReasonInvalidSpec, "task has no action"}
}
func (invalidKind) notYet(context.Context, *stepRun, int, string) (StepResult, error) {
	return StepResult{}, nil
}

// pollAfterAction is the common "keep polling" answer: fast right after the
// action, slower after SlowPollAfter.
func (r *stepRun) pollAfterAction(i int) StepResult {
	since := r.now.Sub(r.j.Status.Tasks[i].RequestTime.Time)
	if since < r.s.cfg.SlowPollAfter {
		return StepResult{RequeueAfter: r.s.cfg.PollInterval}
	}
	return StepResult{RequeueAfter: r.s.cfg.SlowPollInterval}
}

func notSupported(ep bmc.Endpoint, what string) error {
	return &bmc.OpError{Op: what, Endpoint: ep.String(), Err: fmt.Errorf("the driver for this BMC cannot %s: %w", what, bmc.ErrNotSupported)}
}
