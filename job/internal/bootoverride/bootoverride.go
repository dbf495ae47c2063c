// Package bootoverride is the boot override as a job stores, compares and
// describes it, for package job: the bootDevice kind, which sets it and
// records the one it found, and the restore that puts that one back. Pure
// functions between bmc.BootOverride (what a driver reads and sets) and
// task.BootOverride (what a task's status stores).
package bootoverride

import (
	"strings"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

// ToTask is o as a task's status stores it.
func ToTask(o bmc.BootOverride) task.BootOverride {
	t := task.BootOverride{Device: string(o.Device), Persistent: o.Persistent, Mode: string(o.Mode), URI: o.URI}
	if strings.Contains(t.URI, "@") {
		t.URI = "" // never store credentials; see task.BootOverride.URI
	}
	if o.Device == bmc.BootDeviceNone {
		t.Persistent = false
	}
	return t
}

// FromTask is the override a task's status stored.
func FromTask(t task.BootOverride) bmc.BootOverride {
	return bmc.BootOverride{Device: bmc.BootDevice(t.Device), Persistent: t.Persistent, Mode: bmc.BootMode(t.Mode), URI: t.URI}
}

// Matches reports whether got (read back) shows want: the same
// device and persistence, the same mode where both say, the same URI where
// want names one. No override matches no override whatever else is read.
func Matches(want, got bmc.BootOverride) bool {
	if want.Device == bmc.BootDeviceNone || got.Device == bmc.BootDeviceNone {
		return want.Device == got.Device
	}
	return got.Device == want.Device && got.Persistent == want.Persistent &&
		(want.Mode == bmc.BootModeUnchanged || got.Mode == bmc.BootModeUnchanged || got.Mode == want.Mode) &&
		(want.URI == "" || got.URI == want.URI)
}

// Describe says what o sets, for messages.
func Describe(o bmc.BootOverride) string {
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
		uri := o.URI
		if len(uri) > 200 {
			uri = uri[:200] + "..."
		}
		s += " from " + uri
	}
	return s
}
