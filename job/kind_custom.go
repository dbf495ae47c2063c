package job

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// Kind is a task kind the program adds: one type, registered in
// [StepperConfig].Kinds under a domain-qualified name, run by the tasks
// whose spec is task.Spec.Custom with that name (docs/custom-kinds.md).
//
// The Stepper runs it as it runs the built-in kinds: the task's intent is
// stored before Send; after Send, Check is polled until it reports done or
// the task's timeout passes; a task resumed after a crash calls Check first
// and sends again only if it reports not done. Errors are classified as BMC
// errors are ([bmc.IsTransient]: transient ones are retried with backoff;
// [bmc.ErrNotSupported] and [bmc.ErrUnauthorized] fail the task with their
// reasons, anything else with BMCError); [Fail] fails the task with a reason
// of the kind's choosing. Methods are called from many goroutines at once.
type Kind interface {
	// Validate checks a task's params (nil when the task has none). A
	// *task.FieldError's Path is taken as relative to params, so the
	// error reads "tasks[2].custom.params.<Path>: <Msg>".
	Validate(params json.RawMessage) error
	// Send performs the action.
	Send(ctx context.Context, t *KindTask) error
	// Check reads the effect back: done, and what it observed (the task's
	// Message). It should change nothing.
	Check(ctx context.Context, t *KindTask) (done bool, observed string, err error)
}

// Kinds maps domain-qualified names ("example.com/raid-reset") to the kinds
// a program adds.
type Kinds map[string]Kind

// KindTask is one task of a custom kind, as its Send and Check see it.
type KindTask struct {
	// Params is the task's params, as Validate accepted them.
	Params json.RawMessage
	// BMC is the job's connection to its system's BMC; each request is
	// fenced by the system's lock. Capabilities beyond bmc.Driver are
	// reached by type assertion. Requests sent by other means are not
	// fenced (docs/custom-kinds.md).
	BMC bmc.Driver
	// Job is the job's name, Task the task's index in it.
	Job  string
	Task int
	// Sent, for Check: the action was sent in this step. False for the
	// check of a task resumed after a crash, when the action may or may
	// not have been sent.
	Sent bool
}

// Fail is an error that fails a custom kind's task at once, with
// condition reason reason (e.g. conditions.ReasonVerificationFailed, or
// a CamelCase reason of the kind's own) and message msg.
func Fail(reason, msg string) error { return &taskFailure{reason, msg} }

// Prechecker is implemented by a [Kind] that can tell, with reads only,
// whether a task of it can run on the BMC. The Stepper calls Precheck for
// every task of a job before the job's first action (docs/preflight.md):
// an error wrapping [bmc.ErrNotSupported], or [Fail], ends the job there,
// naming the task, before anything was sent; nil lets it start (return nil
// where the BMC shows nothing either way); other errors are classified as
// Send's. t.Task is the task's index; t.Sent is false.
type Prechecker interface {
	Precheck(ctx context.Context, t *KindTask) error
}

func init() {
	registerKind("custom", func(s *task.Spec) kind { return customKind{s.Custom} })
}

// check validates kinds' names (NewStepper).
func (ks Kinds) check() error {
	for name, k := range ks {
		if msg := task.ValidCustomKindName(name); msg != "" {
			return fmt.Errorf("job: StepperConfig.Kinds: %s", msg)
		}
		if k == nil {
			return fmt.Errorf("job: StepperConfig.Kinds: %q is nil", name)
		}
	}
	return nil
}

// validate checks the custom tasks of spec s against the registered kinds:
// each names a kind here, and the kind takes its params. (Spec.validate,
// which has no configuration, checked their shape.)
func (ks Kinds) validate(s *Spec) error {
	for i := range s.Tasks {
		c := s.Tasks[i].Custom
		if c == nil {
			continue
		}
		k := ks[c.Kind]
		if k == nil {
			return fmt.Errorf("%w: tasks[%d].custom.kind: %q is not a kind this program registered (StepperConfig.Kinds)", ErrInvalidSpec, i, truncate(c.Kind, 80))
		}
		if err := k.Validate(json.RawMessage(c.Params)); err != nil {
			return invalidAt(fmt.Sprintf("tasks[%d].custom.params", i), err)
		}
	}
	return nil
}

// customKind runs a task.CustomAction with the Kind the Stepper's config
// registered under its name (validated at the job's start).
type customKind struct{ a *task.CustomAction }

func (k customKind) defaultTimeout(cfg *StepperConfig) time.Duration {
	if d, ok := cfg.Kinds[k.a.Kind].(interface{ DefaultTimeout() time.Duration }); ok {
		if t := d.DefaultTimeout(); t > 0 {
			return t
		}
	}
	return cfg.DefaultTaskTimeout
}
func (customKind) grace(*StepperConfig) time.Duration { return 0 }
func (customKind) usesBMC() bool                      { return true }
func (customKind) recheckable() bool                  { return true }

// preflight asks the program's kind, where it implements Prechecker.
func (k customKind) preflight(ctx context.Context, r *stepRun, drv bmc.Driver, i int) error {
	impl := r.s.cfg.Kinds[k.a.Kind]
	if impl == nil {
		return &taskFailure{conditions.ReasonInvalidSpec, fmt.Sprintf("custom kind %q is not registered", k.a.Kind)}
	}
	p, ok := impl.(Prechecker)
	if !ok {
		return nil
	}
	return p.Precheck(ctx, &KindTask{Params: json.RawMessage(k.a.Params), BMC: drv, Job: r.j.Name, Task: i})
}

func (k customKind) task(r *stepRun, drv bmc.Driver, sent bool) (Kind, *KindTask, error) {
	impl := r.s.cfg.Kinds[k.a.Kind]
	if impl == nil {
		return nil, nil, &taskFailure{conditions.ReasonInvalidSpec, fmt.Sprintf("custom kind %q is not registered", k.a.Kind)}
	}
	return impl, &KindTask{Params: json.RawMessage(k.a.Params), BMC: drv, Job: r.j.Name, Task: r.j.Status.CurrentTask, Sent: sent}, nil
}

func (k customKind) send(ctx context.Context, r *stepRun, drv bmc.Driver) error {
	impl, t, err := k.task(r, drv, true)
	if err != nil {
		return err
	}
	return impl.Send(ctx, t)
}

func (k customKind) check(ctx context.Context, r *stepRun, drv bmc.Driver, afterSend bool) (bool, string, error) {
	impl, t, err := k.task(r, drv, afterSend)
	if err != nil {
		return false, "", err
	}
	return impl.Check(ctx, t)
}

// notYet keeps polling: a custom kind's action is not sent again while its
// task waits (docs/custom-kinds.md).
func (customKind) notYet(_ context.Context, r *stepRun, i int, _ string) (StepResult, error) {
	return r.pollAfterAction(i), nil
}
