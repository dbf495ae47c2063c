package bmc

import (
	"context"
	"strings"
)

// Need is one thing a task will ask of a BMC, checked before a job sends
// its first state-changing request (docs/preflight.md): a job that cannot
// finish does not start. Exactly one field is set.
type Need struct {
	// Power: SetPower with this action.
	Power PowerAction `json:"power,omitempty"`
	// Boot: SetBootOverride with this override (device, mode, persistence).
	Boot *BootOverride `json:"boot,omitempty"`
	// Media: a virtual media device of this kind (InsertMedia, EjectMedia).
	Media MediaKind `json:"media,omitempty"`
	// BMCReset: ResetBMC with this type.
	BMCReset BMCResetType `json:"bmcReset,omitempty"`
	// ClearLog: ClearLog of this log (an EventLogClearer, and a log the
	// BMC offers to clear).
	ClearLog *LogRef `json:"clearLog,omitempty"`
	// LocatorLED: SetLocatorLED with this state (a locator at all, and
	// one that can blink for LEDBlinking).
	LocatorLED LEDState `json:"locatorLED,omitempty"`
	// NMI: SendNMI.
	NMI bool `json:"nmi,omitempty"`
	// SecureBoot: the SecureBootManager calls (secureboot.go).
	SecureBoot *SecureBootNeed `json:"secureBoot,omitempty"`
	// BootOrder: the BootOrderManager calls (bootorder.go).
	BootOrder *BootOrderNeed `json:"bootOrder,omitempty"`
}

// String names the need for errors and logs ("power cycle", "boot pxe
// mode uefi once").
func (n Need) String() string {
	switch {
	case n.Power != "":
		return "power " + string(n.Power)
	case n.Boot != nil:
		var b strings.Builder
		b.WriteString("boot override " + string(n.Boot.Device))
		if n.Boot.Mode != "" && n.Boot.Mode != BootModeUnchanged {
			b.WriteString(" mode " + string(n.Boot.Mode))
		}
		if n.Boot.Persistent {
			b.WriteString(" persistent")
		} else {
			b.WriteString(" once")
		}
		return b.String()
	case n.Media != "":
		return "virtual media " + string(n.Media)
	case n.BMCReset != "":
		return "BMC reset " + string(n.BMCReset)
	case n.ClearLog != nil:
		return "clear log " + n.ClearLog.String()
	case n.LocatorLED != "":
		return "locator LED " + string(n.LocatorLED)
	case n.NMI:
		return "NMI"
	case n.SecureBoot != nil:
		return n.SecureBoot.String()
	case n.BootOrder != nil:
		return n.BootOrder.String()
	}
	return "nothing"
}

// NeedChecker is implemented by drivers that can tell, with reads only,
// whether the BMC advertises what a task needs: the system's Boot
// properties and their allowable values, an action's ActionInfo, the
// virtual media devices there are. The job package asks it for every task
// of a job before the job's first state-changing request.
//
// CheckNeed returns nil when the BMC advertises n, or advertises nothing
// either way (the task then proceeds and finds out by trying, as it
// would without the check); an error wrapping [ErrNotSupported] that
// names what is missing ("boot: the system's Boot has no
// BootSourceOverrideMode") when the BMC shows that it lacks it; any other
// error as a read's (transient ones are retried). Drivers cache what they
// read for the life of the driver (a job's connection), so checking every
// task of a job costs the reads of one. Safe for concurrent use.
type NeedChecker interface {
	CheckNeed(ctx context.Context, n Need) error
}
