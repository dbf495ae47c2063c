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

func (k bootDeviceKind) defaultTimeout(cfg *StepperConfig) time.Duration {
	return cfg.DefaultTaskTimeout
}
func (k bootDeviceKind) grace(*StepperConfig) time.Duration { return 0 }
func (k bootDeviceKind) usesBMC() bool                      { return true }
func (k bootDeviceKind) recheckable() bool                  { return true }

// preflight: the system's Boot takes the override this task will set (the
// persistent one where it emulates a one-time override).
func (k bootDeviceKind) preflight(ctx context.Context, r *stepRun, drv bmc.Driver, _ int) error {
	if _, ok := drv.(bmc.BootOverrideSetter); !ok {
		return notSupported(r.ep, "set the boot device")
	}
	o := k.override()
	if k.emulates(drv) {
		o.Persistent = true
	}
	return checkNeed(ctx, drv, bmc.Need{Boot: &o})
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

// recordPrevious reads the override before task i's first change and stores
// it (Pending) before the change is sent. Without a way to read it nothing
// is recorded (nothing could be restored), and an emulation, which cannot
// work without it, fails the task.
//
// When the read was made before the task's intent was stored
// (readBeforeIntent), its outcome is used instead of reading again: a
// record found then went out with the intent, and an error or a BMC that
// cannot report its override is handled here as if read now.
func (k bootDeviceKind) recordPrevious(ctx context.Context, r *stepRun, drv bmc.Driver, i int) error {
	ts := &r.j.Status.Tasks[i]
	if ts.BootRestore != nil {
		return nil // read before the first change; a re-set keeps it
	}
	var rec *task.BootRestore
	var err error
	if pr := r.prevRead; pr.task == i+1 {
		r.prevRead = previousRead{}
		rec, err = pr.rec, pr.err
	} else {
		rec, err = k.previous(ctx, r, drv)
	}
	if err != nil || rec == nil {
		return err
	}
	ts.BootRestore = rec
	if err := r.persist(ctx, r.j); err != nil {
		// Nothing was sent; the retry stores the record again first.
		return bmc.Transient(fmt.Errorf("storing the boot override to restore: %w", err))
	}
	return nil
}

// previous reads the override to put back after the boot: the record to
// store, or nil when the BMC cannot report it (nothing could be restored),
// or the task's failure when an emulation needs it.
func (k bootDeviceKind) previous(ctx context.Context, r *stepRun, drv bmc.Driver) (*task.BootRestore, error) {
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
	return &task.BootRestore{Emulated: emulate, Previous: toTaskOverride(prev), State: task.BootRestorePending}, nil
}

// readBeforeIntent reads the boot override task i will have to put back
// before the task's intent is stored, on the connection this step already
// has open (the previous task's), so that the record goes out in the same
// write as the intent and the previous task's result: one job write less
// than storing it on its own before the change. A read has no effect on the
// server, so nothing needs storing before it; after a crash between the read
// and the write, the previous task is verified again and the read repeated.
// Without an open connection (the job's first BMC task) recordPrevious reads
// and stores it as before. The outcome is kept for recordPrevious either
// way, so the BMC is asked once.
func (k bootDeviceKind) readBeforeIntent(ctx context.Context, r *stepRun, i int) {
	if r.drv == nil || r.j.Status.Tasks[i].BootRestore != nil {
		return
	}
	rec, err := k.previous(r.callCtx(ctx, i), r, r.drv)
	if err == nil && rec != nil {
		r.j.Status.Tasks[i].BootRestore = rec
		return
	}
	r.prevRead = previousRead{task: i + 1, rec: rec, err: err}
}
