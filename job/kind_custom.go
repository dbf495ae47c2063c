package job

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("custom", func(s *task.Spec) kind { return customKind{s.Custom} })
}

// customKind runs a task.CustomAction with the Kind the Stepper's config
// registered under its name (validated at the job's start): the built-in
// contract's send and check are the program's Send and Check, over a copy
// of the task's KindTask with the task's params. It declares nothing else:
// a custom task keeps polling while it waits, and is never sent again by
// the Stepper (docs/custom-kinds.md).
type customKind struct{ a *task.CustomAction }

func (k customKind) defaultTimeout(c *kindConfig) time.Duration {
	if d, ok := c.kinds[k.a.Kind].(interface{ DefaultTimeout() time.Duration }); ok {
		if t := d.DefaultTimeout(); t > 0 {
			return t
		}
	}
	return c.defaultTaskTimeout
}
func (customKind) usesBMC() bool     { return true }
func (customKind) recheckable() bool { return true }

// preflight asks the program's kind, where it implements Prechecker.
func (k customKind) preflight(ctx context.Context, t *taskView) error {
	impl, kt, err := k.task(t)
	if err != nil {
		return err
	}
	p, ok := impl.(Prechecker)
	if !ok {
		return nil
	}
	return p.Precheck(ctx, kt)
}

// task is the program's kind and the KindTask it gets: a copy of its own,
// so a kind that keeps it sees no later step's changes.
func (k customKind) task(t *taskView) (Kind, *KindTask, error) {
	impl := t.cfg.kinds[k.a.Kind]
	if impl == nil {
		return nil, nil, &taskFailure{conditions.ReasonInvalidSpec, fmt.Sprintf("custom kind %q is not registered", k.a.Kind)}
	}
	kt := t.KindTask
	kt.Params = json.RawMessage(k.a.Params)
	return impl, &kt, nil
}

func (k customKind) send(ctx context.Context, t *taskView) error {
	impl, kt, err := k.task(t)
	if err != nil {
		return err
	}
	return impl.Send(ctx, kt)
}

func (k customKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	impl, kt, err := k.task(t)
	if err != nil {
		return false, "", err
	}
	return impl.Check(ctx, kt)
}
