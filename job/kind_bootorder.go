package job

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("bootOrder", func(s *task.Spec) kind { return bootOrderKind{s.BootOrder} })
}

// bootOrderKind sets the persistent boot order, boot options' enabled
// flags and the HTTP boot URI, verified by read-back (pending for the next
// boot is done, with RebootRequired); task.BootOrderAction,
// docs/secure-boot-boot-order.md.
type bootOrderKind struct{ a *task.BootOrderAction }

// maxBootOrderStatus bounds the references a bootOrder task stores.
const maxBootOrderStatus = 64

func (k bootOrderKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k bootOrderKind) usesBMC() bool                              { return true }
func (k bootOrderKind) recheckable() bool                          { return true }

// preflight: the BMC has a boot order (and an HTTP boot URI when asked),
// and knows every reference the task names: an unknown one fails with
// reason InvalidSpec, nothing sent.
func (k bootOrderKind) preflight(ctx context.Context, t *taskView) error {
	m, err := k.manager(t)
	if err != nil {
		return err
	}
	if err := checkNeed(ctx, t.BMC, bmc.Need{BootOrder: &bmc.BootOrderNeed{HTTPBootURI: k.a.HTTPBootURI != ""}}); err != nil {
		return err
	}
	cur, err := m.BootOrder(ctx)
	if err != nil {
		return err
	}
	return k.invalid(cur)
}

func (k bootOrderKind) invalid(cur bmc.BootOrder) error {
	err := bmc.ValidateBootOrderChange(cur, k.a.Change())
	if errors.Is(err, bmc.ErrInvalidBootOrder) {
		return &taskFailure{conditions.ReasonInvalidSpec, err.Error()}
	}
	return err
}

func (k bootOrderKind) manager(t *taskView) (bmc.BootOrderManager, error) {
	if m, ok := t.BMC.(bmc.BootOrderManager); ok {
		return m, nil
	}
	return nil, notSupported(t.ep, "set the boot order")
}

func (k bootOrderKind) send(ctx context.Context, t *taskView) error {
	m, err := k.manager(t)
	if err != nil || k.a.VerifyOnly {
		return err
	}
	got, err := m.SetBootOrder(ctx, k.a.Change())
	if err == nil {
		k.record(t, got).RebootRequired = got.RebootRequired()
	}
	return err
}

func (k bootOrderKind) record(t *taskView, b bmc.BootOrder) *task.BootOrderStatus {
	st := &task.BootOrderStatus{Order: b.Order, PendingOrder: b.PendingOrder}
	st.Order = st.Order[:min(len(st.Order), maxBootOrderStatus)]
	st.PendingOrder = st.PendingOrder[:min(len(st.PendingOrder), maxBootOrderStatus)]
	t.status.BootOrder = st
	return st
}

func (k bootOrderKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	m, err := k.manager(t)
	if err != nil {
		return false, "", err
	}
	cur, err := m.BootOrder(ctx)
	if err != nil {
		return false, "", err
	}
	st := k.record(t, cur)
	c := k.a.Change()
	differ := c.Differing(cur)
	switch {
	case len(differ) == 0:
		return true, "boot order set", nil
	case k.a.VerifyOnly:
		return false, "", &taskFailure{conditions.ReasonVerificationFailed, "boot order differs: " + strings.Join(differ, ", ")}
	case len(c.Differing(cur.Next())) == 0:
		st.RebootRequired = true
		return true, "boot order pending until the next boot: " + strings.Join(differ, ", ") + " (reboot, then verify with a bootOrder task with verifyOnly)", nil
	}
	return false, "boot order not applied yet: " + strings.Join(differ, ", "), nil
}
