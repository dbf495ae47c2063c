package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("virtualMedia", func(s *task.Spec) kind { return mediaKind{s.VirtualMedia} })
}

// mediaKind inserts or ejects virtual media, read back as inserted with the
// requested image (or as empty); an action with no visible effect after
// ResendAfter is sent again.
type mediaKind struct{ a *task.VirtualMediaAction }

func (k mediaKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k mediaKind) usesBMC() bool                              { return true }
func (k mediaKind) recheckable() bool                          { return true }

// preflight: the BMC has a virtual media device of the task's kind.
func (k mediaKind) preflight(ctx context.Context, t *taskView) error {
	if _, ok := t.BMC.(bmc.VirtualMedia); !ok {
		return notSupported(t.ep, "attach virtual media")
	}
	return checkNeed(ctx, t.BMC, bmc.Need{Media: k.kind()})
}

func (k mediaKind) kind() bmc.MediaKind {
	if k.a.Kind == task.MediaUSB {
		return bmc.MediaUSB
	}
	return bmc.MediaCD
}

func (k mediaKind) send(ctx context.Context, t *taskView) error {
	vm, ok := t.BMC.(bmc.VirtualMedia)
	if !ok {
		return notSupported(t.ep, "attach virtual media")
	}
	if k.a.Eject {
		return vm.EjectMedia(ctx, k.kind())
	}
	return vm.InsertMedia(ctx, k.kind(), k.a.ImageURL)
}

func (k mediaKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	vm, ok := t.BMC.(bmc.VirtualMedia)
	if !ok {
		return false, "", notSupported(t.ep, "attach virtual media")
	}
	ms, err := vm.MediaStatus(ctx, k.kind())
	if err != nil {
		return false, "", err
	}
	if k.a.Eject {
		return !ms.Inserted, fmt.Sprintf("inserted=%t", ms.Inserted), nil
	}
	return ms.Inserted && ms.Image == k.a.ImageURL, fmt.Sprintf("inserted=%t image=%q", ms.Inserted, ms.Image), nil
}

// notYet sends the action again once ResendAfter passed with no visible
// effect; until then it keeps polling.
func (k mediaKind) notYet(_ context.Context, t *taskView, observed string) (decision, error) {
	if t.now.Sub(t.status.RequestTime.Time) >= t.cfg.resendAfter {
		return resendBecause("media read back as " + observed), nil
	}
	return pollAfter(0), nil
}
