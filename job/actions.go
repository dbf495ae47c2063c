package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// This file maps task specs to BMC calls: send performs a task's action,
// check reads its effect back.

func powerAction(op task.PowerOp) bmc.PowerAction {
	switch op {
	case task.PowerOn:
		return bmc.PowerActionOn
	case task.PowerOff:
		return bmc.PowerActionOff
	case task.PowerSoftOff:
		return bmc.PowerActionSoftOff
	case task.PowerCycle:
		return bmc.PowerActionCycle
	case task.PowerReset:
		return bmc.PowerActionReset
	}
	return bmc.PowerAction(op)
}

func bootOverride(a *task.BootDeviceAction) bmc.BootOverride {
	o := bmc.BootOverride{Persistent: a.Persistent}
	switch a.Device {
	case task.BootPXE:
		o.Device = bmc.BootDevicePXE
	case task.BootDisk:
		o.Device = bmc.BootDeviceDisk
	case task.BootCDROM:
		o.Device = bmc.BootDeviceCDROM
	case task.BootBIOS:
		o.Device = bmc.BootDeviceBIOS
	}
	switch a.Mode {
	case task.BootModeUEFI:
		o.Mode = bmc.BootModeUEFI
	case task.BootModeLegacy:
		o.Mode = bmc.BootModeLegacy
	}
	return o
}

func mediaKind(k task.MediaKind) bmc.MediaKind {
	if k == task.MediaUSB {
		return bmc.MediaUSB
	}
	return bmc.MediaCD
}

func notSupported(ep bmc.Endpoint, what string) error {
	return &bmc.OpError{Op: what, Endpoint: ep.String(), Err: fmt.Errorf("the driver for this BMC cannot %s: %w", what, bmc.ErrNotSupported)}
}

// send performs task i's action.
func (r *stepRun) send(ctx context.Context, drv bmc.Driver, i int) error {
	spec := &r.j.Spec.Tasks[i]
	switch {
	case spec.Power != nil:
		return drv.SetPower(ctx, powerAction(spec.Power.Op))
	case spec.BootDevice != nil:
		setter, ok := drv.(bmc.BootOverrideSetter)
		if !ok {
			return notSupported(r.ep, "set the boot device")
		}
		return setter.SetBootOverride(ctx, bootOverride(spec.BootDevice))
	case spec.VirtualMedia != nil:
		vm, ok := drv.(bmc.VirtualMedia)
		if !ok {
			return notSupported(r.ep, "attach virtual media")
		}
		if spec.VirtualMedia.Eject {
			return vm.EjectMedia(ctx, mediaKind(spec.VirtualMedia.Kind))
		}
		return vm.InsertMedia(ctx, mediaKind(spec.VirtualMedia.Kind), spec.VirtualMedia.ImageURL)
	}
	return nil
}

// check reads task i's effect back. afterSend says whether this step or an
// earlier one sent the action (as opposed to a recheck after a crash); it
// matters only where the BMC cannot report the effect. observed describes
// what was read, for messages.
func (r *stepRun) check(ctx context.Context, drv bmc.Driver, i int, afterSend bool) (ok bool, observed string, err error) {
	spec := &r.j.Spec.Tasks[i]
	switch {
	case spec.Power != nil:
		st, err := drv.PowerState(ctx)
		if err != nil {
			return false, "", err
		}
		return st == powerAction(spec.Power.Op).Target(), string(st), nil

	case spec.BootDevice != nil:
		want := bootOverride(spec.BootDevice)
		getter, ok := drv.(bmc.BootOverrideGetter)
		if !ok {
			return afterSend, "set; this BMC cannot report the boot override, so it was not read back", nil
		}
		got, err := getter.BootOverride(ctx)
		if errors.Is(err, bmc.ErrNotSupported) {
			return afterSend, "set; this BMC cannot report the boot override, so it was not read back", nil
		}
		if err != nil {
			return false, "", err
		}
		match := got.Device == want.Device && got.Persistent == want.Persistent &&
			(want.Mode == bmc.BootModeUnchanged || got.Mode == bmc.BootModeUnchanged || got.Mode == want.Mode)
		return match, describeOverride(got), nil

	case spec.VirtualMedia != nil:
		vm, ok := drv.(bmc.VirtualMedia)
		if !ok {
			return false, "", notSupported(r.ep, "attach virtual media")
		}
		ms, err := vm.MediaStatus(ctx, mediaKind(spec.VirtualMedia.Kind))
		if err != nil {
			return false, "", err
		}
		if spec.VirtualMedia.Eject {
			return !ms.Inserted, fmt.Sprintf("inserted=%t", ms.Inserted), nil
		}
		return ms.Inserted && ms.Image == spec.VirtualMedia.ImageURL, fmt.Sprintf("inserted=%t image=%q", ms.Inserted, ms.Image), nil

	case spec.WaitForBoot != nil:
		if r.s.cfg.Boot == nil {
			return false, "", &taskFailure{conditions.ReasonNotSupported, "no BootTracker configured"}
		}
		done, result, msg, err := r.s.cfg.Boot.BootResult(ctx, r.systemUUID(i), BootAttemptID(r.j, i))
		if err != nil {
			return false, "", bmc.Transient(fmt.Errorf("reading boot state: %w", err))
		}
		if !done {
			return false, "waiting for boot signals", nil
		}
		if result == conditions.ResultSucceeded {
			return true, "booted: " + msg, nil
		}
		reason := string(result)
		if reason == "" {
			reason = conditions.ReasonFailed
		}
		return false, "", &taskFailure{reason, "boot " + string(result) + ": " + msg}
	}
	return false, "", &taskFailure{conditions.ReasonInvalidSpec, "task has no action"}
}

func describeOverride(o bmc.BootOverride) string {
	when := "once"
	if o.Persistent {
		when = "persistent"
	}
	s := string(o.Device) + " (" + when
	if o.Mode != bmc.BootModeUnchanged {
		s += ", " + string(o.Mode)
	}
	return s + ")"
}
