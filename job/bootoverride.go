package job

import (
	"context"
	"strings"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

// The boot override as a job stores, compares and describes it: shared by
// the bootDevice kind, which sets it and records the one it found, and the
// restore that puts that one back (bootrestore.go).

// bootOnceEmulator is implemented by drivers configured to have one-time
// overrides emulated (the Redfish driver's Options.EmulateBootOnce).
type bootOnceEmulator interface {
	EmulateBootOnce() bool
}

// bootReadBackSetter is implemented by drivers whose SetBootOverride reads
// the override back itself and fails when it differs (the Redfish driver):
// this variant leaves the judgement to the task, which reads the override
// (served from that read-back within the step, see bmc.ReadScope), sets it
// again and fails with VerificationFailed only after MaxVerifyResends.
type bootReadBackSetter interface {
	SetBootOverrideReadBack(ctx context.Context, o bmc.BootOverride) (bmc.BootOverride, error)
}

func toTaskOverride(o bmc.BootOverride) task.BootOverride {
	t := task.BootOverride{Device: string(o.Device), Persistent: o.Persistent, Mode: string(o.Mode), URI: o.URI}
	if strings.Contains(t.URI, "@") {
		t.URI = "" // never store credentials; see task.BootOverride.URI
	}
	if o.Device == bmc.BootDeviceNone {
		t.Persistent = false
	}
	return t
}

func fromTaskOverride(t task.BootOverride) bmc.BootOverride {
	return bmc.BootOverride{Device: bmc.BootDevice(t.Device), Persistent: t.Persistent, Mode: bmc.BootMode(t.Mode), URI: t.URI}
}

// overrideMatches reports whether got (read back) shows want: the same
// device and persistence, the same mode where both say, the same URI where
// want names one. No override matches no override whatever else is read.
func overrideMatches(want, got bmc.BootOverride) bool {
	if want.Device == bmc.BootDeviceNone || got.Device == bmc.BootDeviceNone {
		return want.Device == got.Device
	}
	return got.Device == want.Device && got.Persistent == want.Persistent &&
		(want.Mode == bmc.BootModeUnchanged || got.Mode == bmc.BootModeUnchanged || got.Mode == want.Mode) &&
		(want.URI == "" || got.URI == want.URI)
}

// describeOverride says what o sets, for messages.
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
