package bmc

import "time"

// PowerState is the power state a BMC reports, including transitional states.
type PowerState string

// Power states. Drivers map their protocol's strings to these; anything they
// cannot map is PowerUnknown.
const (
	PowerOn          PowerState = "On"
	PowerOff         PowerState = "Off"
	PowerPoweringOn  PowerState = "PoweringOn"
	PowerPoweringOff PowerState = "PoweringOff"
	PowerUnknown     PowerState = "Unknown"
)

// Transitional reports whether the state is on its way somewhere else.
func (s PowerState) Transitional() bool { return s == PowerPoweringOn || s == PowerPoweringOff }

// PowerAction is a power change a driver can request.
type PowerAction string

// Power actions. Their semantics are fixed here, whatever the protocol calls
// them, and every driver must implement them this way:
//
//   - PowerActionOn: turn on. On a server already on (or powering on): no-op success.
//   - PowerActionOff: immediate (hard) off. On a server already off: no-op success.
//   - PowerActionSoftOff: ask the OS to shut down (ACPI). Already off: no-op success.
//   - PowerActionCycle: off, then on. On a server that is off: power it on.
//   - PowerActionReset: warm reset without removing power. On a server that is off: power it on.
//
// The final state is PowerOn for On, Cycle and Reset and PowerOff for Off and
// SoftOff; [PowerAction.Target] returns it.
const (
	PowerActionOn      PowerAction = "on"
	PowerActionOff     PowerAction = "off"
	PowerActionSoftOff PowerAction = "soft-off"
	PowerActionCycle   PowerAction = "cycle"
	PowerActionReset   PowerAction = "reset"
)

// Target is the power state the action ends in.
func (a PowerAction) Target() PowerState {
	switch a {
	case PowerActionOff, PowerActionSoftOff:
		return PowerOff
	case PowerActionOn, PowerActionCycle, PowerActionReset:
		return PowerOn
	}
	return PowerUnknown
}

// Valid reports whether a is one of the defined actions.
func (a PowerAction) Valid() bool { return a.Target() != PowerUnknown }

// BootDevice is a boot source for a boot override.
type BootDevice string

// Boot devices.
const (
	BootDeviceNone  BootDevice = "none" // no override
	BootDevicePXE   BootDevice = "pxe"
	BootDeviceDisk  BootDevice = "disk"
	BootDeviceCDROM BootDevice = "cdrom"
	BootDeviceBIOS  BootDevice = "bios" // firmware setup

	// BootDeviceUEFIHTTP is UEFI HTTP boot (Redfish UefiHttp) from
	// BootOverride.URI; with an empty URI the BMC's URI is left as it is
	// (firmware without one uses the URI the network's DHCP offers).
	// Drivers and BMCs without it return an error wrapping
	// [ErrNotSupported] (see [CapabilityBootHTTP]).
	BootDeviceUEFIHTTP BootDevice = "uefi-http"
)

// BootMode is the firmware boot mode for a boot override.
type BootMode string

// Boot modes. BootModeUnchanged leaves the BMC's current mode alone.
const (
	BootModeUnchanged BootMode = ""
	BootModeUEFI      BootMode = "uefi"
	BootModeLegacy    BootMode = "legacy"
)

// BootOverride is a boot device override as set or read back.
type BootOverride struct {
	Device BootDevice
	// Persistent keeps the override for every boot; false means next boot only.
	Persistent bool
	// Mode is the firmware mode; BootModeUnchanged when setting leaves it, and
	// when reading means the BMC did not say.
	Mode BootMode
	// URI is what BootDeviceUEFIHTTP boots (Redfish HttpBootUri). Setting a
	// URI with any other device is a permanent error, and so is UEFI HTTP
	// boot with BootModeLegacy. Read back, it is the URI the BMC holds for
	// an HTTP boot override, "" with any other device.
	URI string
}

// MediaKind is the kind of virtual media device.
type MediaKind string

// Media kinds.
const (
	MediaCD  MediaKind = "cd"
	MediaUSB MediaKind = "usb"
)

// MediaStatus is the read-back state of a virtual media device.
type MediaStatus struct {
	Inserted bool
	Image    string
}

// Stats counts what a connection cost on the wire, for reporting per job
// (job.Status.Wire). Its JSON keys are camelCase; ThrottleWait is a
// time.Duration, so JSON carries it as integer nanoseconds (kept so for
// stored records). It has kubebuilder markers and a generated DeepCopy
// (zz_generated.deepcopy.go) for hosts that embed job.Status in a CRD.
//
// +kubebuilder:object:generate=true
type Stats struct {
	Requests    int64 `json:"requests"`    // protocol requests sent (HTTP requests, IPMI commands)
	Connections int64 `json:"connections"` // transport connections opened (TCP connects, UDP sessions)
	Logins      int64 `json:"logins"`      // sessions created
	// Throttled counts requests that waited for their endpoint's request
	// budget (the redfish and ipmi drivers' Options.RequestsPerSecond), and
	// ThrottleWait is the total time they waited. Zero for drivers without a
	// budget.
	Throttled    int64         `json:"throttled,omitempty"`
	ThrottleWait time.Duration `json:"throttleWait,omitempty"`
}

// Add returns s plus o, field by field.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Requests: s.Requests + o.Requests, Connections: s.Connections + o.Connections,
		Logins: s.Logins + o.Logins, Throttled: s.Throttled + o.Throttled,
		ThrottleWait: s.ThrottleWait + o.ThrottleWait,
	}
}

// Since returns what s (a running total) counted since the earlier total
// seen, field by field, never below zero.
func (s Stats) Since(seen Stats) Stats {
	pos := func(a, b int64) int64 { return max(a-b, 0) }
	return Stats{
		Requests: pos(s.Requests, seen.Requests), Connections: pos(s.Connections, seen.Connections),
		Logins: pos(s.Logins, seen.Logins), Throttled: pos(s.Throttled, seen.Throttled),
		ThrottleWait: max(s.ThrottleWait-seen.ThrottleWait, 0),
	}
}

// Max returns the larger of s and o, field by field.
func (s Stats) Max(o Stats) Stats {
	return Stats{
		Requests: max(s.Requests, o.Requests), Connections: max(s.Connections, o.Connections),
		Logins: max(s.Logins, o.Logins), Throttled: max(s.Throttled, o.Throttled),
		ThrottleWait: max(s.ThrottleWait, o.ThrottleWait),
	}
}
