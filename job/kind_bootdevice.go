package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// bootDeviceKind sets the boot override. It is read back where the driver
// implements bmc.BootOverrideGetter; an ignored or reverted override is set
// again up to MaxVerifyResends times, then the task fails with
// VerificationFailed. Without a getter the override counts as set once the
// BMC accepted it, and the task message says it was not read back.
//
// Before its first change the task reads the override and stores it
// (task.Status.BootRestore) for the job to put back: after the boot, when
// it emulates a one-time override (BootDeviceAction.EmulateOnce, else the
// driver's EmulateBootOnce, else not), and when the job fails or is
// canceled (see bootrestore.go). An emulated one-time override is set and
// verified as persistent.
//
// Device http is UEFI HTTP boot (bmc.BootDeviceUEFIHTTP) from the action's
// URI, read back with the device: a BMC reporting another URI did not keep
// the override. Drivers and BMCs without it answer bmc.ErrNotSupported, and
// the task fails at once with reason NotSupported.
type bootDeviceKind struct{ a *task.BootDeviceAction }

func (k bootDeviceKind) defaultTimeout(cfg *StepperConfig) time.Duration {
	return cfg.DefaultTaskTimeout
}
func (k bootDeviceKind) grace(*StepperConfig) time.Duration { return 0 }
func (k bootDeviceKind) usesBMC() bool                      { return true }
func (k bootDeviceKind) recheckable() bool                  { return true }

func (k bootDeviceKind) override() bmc.BootOverride {
	o := bmc.BootOverride{Persistent: k.a.Persistent}
	switch k.a.Device {
	case task.BootPXE:
		o.Device = bmc.BootDevicePXE
	case task.BootDisk:
		o.Device = bmc.BootDeviceDisk
	case task.BootCDROM:
		o.Device = bmc.BootDeviceCDROM
	case task.BootBIOS:
		o.Device = bmc.BootDeviceBIOS
	case task.BootHTTP:
		o.Device = bmc.BootDeviceUEFIHTTP
		o.URI = k.a.URI
	}
	switch k.a.Mode {
	case task.BootModeUEFI:
		o.Mode = bmc.BootModeUEFI
	case task.BootModeLegacy:
		o.Mode = bmc.BootModeLegacy
	}
	return o
}

// emulates says whether a new change by this task emulates a one-time
// override: the task's EmulateOnce, else the driver's configuration.
func (k bootDeviceKind) emulates(drv bmc.Driver) bool {
	if k.a.Persistent {
		return false
	}
	if k.a.EmulateOnce != nil {
		return *k.a.EmulateOnce
	}
	e, ok := drv.(bootOnceEmulator)
	return ok && e.EmulateBootOnce()
}

// want is the override the current task sets: persistent when it emulates
// a one-time override (decided at its first change, and recorded).
func (k bootDeviceKind) want(r *stepRun) bmc.BootOverride {
	o := k.override()
	if rec := r.j.Status.Tasks[r.j.Status.CurrentTask].BootRestore; rec != nil && rec.Emulated {
		o.Persistent = true
	}
	return o
}

func (k bootDeviceKind) send(ctx context.Context, r *stepRun, drv bmc.Driver) error {
	setter, ok := drv.(bmc.BootOverrideSetter)
	if !ok {
		return notSupported(r.ep, "set the boot device")
	}
	if err := k.recordPrevious(ctx, r, drv, r.j.Status.CurrentTask); err != nil {
		return err
	}
	if rb, ok := drv.(bootReadBackSetter); ok {
		// The read-back is judged by check, which reads it again (from the
		// driver's last read, within this step).
		_, err := rb.SetBootOverrideReadBack(ctx, k.want(r))
		return err
	}
	return setter.SetBootOverride(ctx, k.want(r))
}

const notReadBack = "set; this BMC cannot report the boot override, so it was not read back"

func (k bootDeviceKind) check(ctx context.Context, r *stepRun, drv bmc.Driver, afterSend bool) (bool, string, error) {
	want := k.want(r)
	getter, ok := drv.(bmc.BootOverrideGetter)
	if !ok {
		return afterSend, notReadBack, nil
	}
	got, err := getter.BootOverride(ctx)
	if errors.Is(err, bmc.ErrNotSupported) {
		return afterSend, notReadBack, nil
	}
	if err != nil {
		return false, "", err
	}
	observed := describeOverride(got)
	match := overrideMatches(want, got)
	if rec := r.j.Status.Tasks[r.j.Status.CurrentTask].BootRestore; match && rec != nil && rec.Emulated {
		observed += "; one-time boot emulated with a persistent override, " + describeOverride(fromTaskOverride(rec.Previous)) + " is put back after the boot"
	}
	return match, observed, nil
}

// notYet: the read-back differs, so the BMC ignored or reverted the override.
func (k bootDeviceKind) notYet(ctx context.Context, r *stepRun, i int, observed string) (StepResult, error) {
	ts := &r.j.Status.Tasks[i]
	if ts.Attempts > r.s.cfg.MaxVerifyResends {
		hint := ""
		const emulate = "emulate one-time boot with the task's emulateOnce, the Redfish address option ?bootOnce=emulate, or the driver's EmulateBootOnce"
		if w := k.want(r); !w.Persistent && strings.HasPrefix(observed, string(w.Device)+" (persistent") {
			hint = " (it stores the one-time override as persistent: " + emulate + ")"
		} else if !w.Persistent && w.Device != bmc.BootDeviceNone {
			hint = " (it ignores or reverts one-time overrides: " + emulate + ")"
		}
		return r.failTask(ctx, i, conditions.ReasonVerificationFailed,
			fmt.Sprintf("the BMC did not keep the boot override after %d attempts: it reports %s%s", ts.Attempts, observed, hint))
	}
	return r.resend(ctx, i, "boot override read back as "+observed)
}

func describeOverride(o bmc.BootOverride) string {
	if o.Device == bmc.BootDeviceNone {
		return "no override"
	}
	when := "once"
	if o.Persistent {
		when = "persistent"
	}
	s := string(o.Device) + " (" + when
	if o.Mode != bmc.BootModeUnchanged {
		s += ", " + string(o.Mode)
	}
	s += ")"
	if o.URI != "" {
		s += " from " + truncate(o.URI, 200)
	}
	return s
}
