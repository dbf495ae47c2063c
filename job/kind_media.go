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

func (k mediaKind) defaultTimeout(cfg *StepperConfig) time.Duration { return cfg.DefaultTaskTimeout }
func (k mediaKind) grace(*StepperConfig) time.Duration              { return 0 }
func (k mediaKind) usesBMC() bool                                   { return true }
func (k mediaKind) recheckable() bool                               { return true }

// preflight: the BMC has a virtual media device of the task's kind.
func (k mediaKind) preflight(ctx context.Context, r *stepRun, drv bmc.Driver, _ int) error {
	if _, ok := drv.(bmc.VirtualMedia); !ok {
		return notSupported(r.ep, "attach virtual media")
	}
	return checkNeed(ctx, drv, bmc.Need{Media: k.kind()})
}

func (k mediaKind) kind() bmc.MediaKind {
	if k.a.Kind == task.MediaUSB {
		return bmc.MediaUSB
	}
	return bmc.MediaCD
}

func (k mediaKind) send(ctx context.Context, r *stepRun, drv bmc.Driver) error {
	vm, ok := drv.(bmc.VirtualMedia)
	if !ok {
		return notSupported(r.ep, "attach virtual media")
	}
	if k.a.Eject {
		return vm.EjectMedia(ctx, k.kind())
	}
	return vm.InsertMedia(ctx, k.kind(), k.a.ImageURL)
}

func (k mediaKind) check(ctx context.Context, r *stepRun, drv bmc.Driver, _ bool) (bool, string, error) {
	vm, ok := drv.(bmc.VirtualMedia)
	if !ok {
		return false, "", notSupported(r.ep, "attach virtual media")
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

func (k mediaKind) notYet(ctx context.Context, r *stepRun, i int, observed string) (StepResult, error) {
	if r.now.Sub(r.j.Status.Tasks[i].RequestTime.Time) >= r.s.cfg.ResendAfter {
		return r.resend(ctx, i, "media read back as "+observed)
	}
	return r.pollAfterAction(i), nil
}
