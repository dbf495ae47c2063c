package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/internal/bootoverride"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("bootDevice", func(s *task.Spec) kind { return bootDeviceKind{s.BootDevice} })
}

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

func (k bootDeviceKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k bootDeviceKind) usesBMC() bool                              { return true }
func (k bootDeviceKind) recheckable() bool                          { return true }

// preflight: the system's Boot takes the override this task will set (the
// persistent one where it emulates a one-time override).
func (k bootDeviceKind) preflight(ctx context.Context, t *taskView) error {
	if _, ok := t.BMC.(bmc.BootOverrideSetter); !ok {
		return notSupported(t.ep, "set the boot device")
	}
	o := k.override()
	if k.emulates(t.BMC) {
		o.Persistent = true
	}
	return checkNeed(ctx, t.BMC, bmc.Need{Boot: &o})
}

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

// want is the override the task sets: persistent when it emulates a
// one-time override (decided at its first change, and recorded).
func (k bootDeviceKind) want(t *taskView) bmc.BootOverride {
	o := k.override()
	if rec := t.status.BootRestore; rec != nil && rec.Emulated {
		o.Persistent = true
	}
	return o
}

// prepare reads the override before the task's first change and records
// it (task.Status.BootRestore, state Pending) for the job to put back; the
// Stepper stores it before the change is sent. Without a way to read it
// nothing is recorded (nothing could be restored), and an emulation, which
// cannot work without it, fails the task. A re-set keeps the first record.
//
// When the read was made before the task's intent was stored
// (readBeforeIntent), its outcome is used instead of reading again: a
// record found then went out with the intent, and an error or a BMC that
// cannot report its override is handled here as if read now.
func (k bootDeviceKind) prepare(ctx context.Context, t *taskView) (prep, error) {
	if _, ok := t.BMC.(bmc.BootOverrideSetter); !ok {
		return prep{}, notSupported(t.ep, "set the boot device")
	}
	if t.status.BootRestore != nil {
		return prep{}, nil
	}
	var rec *task.BootRestore
	err := t.early.err
	if !t.early.done {
		rec, err = k.previous(ctx, t.BMC)
	}
	if err != nil || rec == nil {
		return prep{}, err
	}
	t.status.BootRestore = rec
	return prep{store: true}, nil
}

func (k bootDeviceKind) send(ctx context.Context, t *taskView) error {
	if rb, ok := t.BMC.(bootReadBackSetter); ok {
		// The read-back is judged by check, which reads it again (from the
		// driver's last read, within this step).
		_, err := rb.SetBootOverrideReadBack(ctx, k.want(t))
		return err
	}
	setter, ok := t.BMC.(bmc.BootOverrideSetter)
	if !ok {
		return notSupported(t.ep, "set the boot device")
	}
	return setter.SetBootOverride(ctx, k.want(t))
}

const notReadBack = "set; this BMC cannot report the boot override, so it was not read back"

func (k bootDeviceKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	want := k.want(t)
	getter, ok := t.BMC.(bmc.BootOverrideGetter)
	if !ok {
		return t.Sent, notReadBack, nil
	}
	got, err := getter.BootOverride(ctx)
	if errors.Is(err, bmc.ErrNotSupported) {
		return t.Sent, notReadBack, nil
	}
	if err != nil {
		return false, "", err
	}
	observed := bootoverride.Describe(got)
	match := bootoverride.Matches(want, got)
	if rec := t.status.BootRestore; match && rec != nil && rec.Emulated {
		observed += "; one-time boot emulated with a persistent override, " + bootoverride.Describe(bootoverride.FromTask(rec.Previous)) + " is put back after the boot"
	}
	return match, observed, nil
}

// notYet: the read-back differs, so the BMC ignored or reverted the
// override: set it again, up to MaxVerifyResends times.
func (k bootDeviceKind) notYet(_ context.Context, t *taskView, observed string) (decision, error) {
	if t.status.Attempts <= t.cfg.maxVerifyResends {
		return resendBecause("boot override read back as " + observed), nil
	}
	hint := ""
	const emulate = "emulate one-time boot with the task's emulateOnce, the Redfish address option ?bootOnce=emulate, or the driver's EmulateBootOnce"
	if w := k.want(t); !w.Persistent && strings.HasPrefix(observed, string(w.Device)+" (persistent") {
		hint = " (it stores the one-time override as persistent: " + emulate + ")"
	} else if !w.Persistent && w.Device != bmc.BootDeviceNone {
		hint = " (it ignores or reverts one-time overrides: " + emulate + ")"
	}
	return failWith(conditions.ReasonVerificationFailed,
		fmt.Sprintf("the BMC did not keep the boot override after %d attempts: it reports %s%s", t.status.Attempts, observed, hint)), nil
}

// previous reads the override to put back after the boot: the record to
// store, or nil when the BMC cannot report it (nothing could be restored),
// or the task's failure when an emulation needs it.
func (k bootDeviceKind) previous(ctx context.Context, drv bmc.Driver) (*task.BootRestore, error) {
	emulate := k.emulates(drv)
	var prev bmc.BootOverride
	err := bmc.ErrNotSupported
	if getter, ok := drv.(bmc.BootOverrideGetter); ok {
		prev, err = getter.BootOverride(ctx)
	}
	if errors.Is(err, bmc.ErrNotSupported) {
		if emulate {
			return nil, &taskFailure{conditions.ReasonNotSupported, "emulating a one-time boot needs a BMC that reports its boot override (to verify it and put the previous one back); this one does not: set emulateOnce false"}
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &task.BootRestore{Emulated: emulate, Previous: bootoverride.ToTask(prev), State: task.BootRestorePending}, nil
}

// readBeforeIntent reads the boot override the task will have to put back
// before the task's intent is stored, on the connection the step already
// has open (the previous task's), so that the record goes out in the same
// write as the intent and the previous task's result: one job write less
// than storing it on its own before the change. A read has no effect on the
// server, so nothing needs storing before it; after a crash between the read
// and the write, the previous task is verified again and the read repeated.
// Without an open connection (the job's first BMC task) prepare reads and
// has it stored as before. What it returns goes to prepare either way, so
// the BMC is asked once.
func (k bootDeviceKind) readBeforeIntent(ctx context.Context, t *taskView) error {
	if t.status.BootRestore != nil {
		return nil
	}
	rec, err := k.previous(ctx, t.BMC)
	if err == nil && rec != nil {
		t.status.BootRestore = rec
	}
	return err
}
