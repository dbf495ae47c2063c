package bmctest

import (
	"slices"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Capability is [bmc.Capability]: the names of features a BMC may lack,
// shared by packages fake and bmctest.
type Capability = bmc.Capability

// Options describes the peer the driver talks to. The zero value describes a
// peer with every capability, whose power changes land within a minute.
type Options struct {
	// Unsupported lists the capabilities the peer lacks. Defaults to none.
	Unsupported []Capability

	// SettleTimeout is how long a power change may take to land (and how
	// long the suite waits for anything to appear). Defaults to 1 minute.
	SettleTimeout time.Duration

	// PollInterval is the pause between read-backs while waiting for a
	// state. Defaults to 100ms.
	PollInterval time.Duration

	// SoftOffNeverCompletes says the peer accepts a soft-off but the server
	// never shuts down (a simulator without an OS): Power/SoftOff then only
	// checks that the request is accepted. Defaults to false.
	SoftOffNeverCompletes bool

	// BootDevices are the devices BootOverride/... sets and reads back.
	// Defaults to pxe, disk, cdrom and bios.
	BootDevices []bmc.BootDevice

	// BootModes are the modes BootOverride/... sets. Defaults to
	// unchanged, uefi and legacy (only unchanged when the peer lacks
	// bmc.CapabilityBootMode).
	BootModes []bmc.BootMode

	// MediaImages are two image URLs VirtualMedia/... inserts. The peer
	// need not fetch them. Defaults to http://127.0.0.1:8080/bmctest-1.iso
	// and http://127.0.0.1:8080/bmctest-2.iso.
	MediaImages [2]string

	// HTTPBootURIs are two URIs BootHTTP/... sets with
	// bmc.BootDeviceUEFIHTTP. The peer need not fetch them. Defaults to
	// http://127.0.0.1:8080/bmctest-1.efi and
	// https://127.0.0.1:8443/bmctest-2.efi.
	HTTPBootURIs [2]string

	// CallTimeout bounds a single call whose ctx is already cancelled or
	// expired: a driver that has not returned by then fails the
	// Context/... subtests as hung. It guards against hangs; it is not a
	// speed requirement. Defaults to 30 seconds.
	CallTimeout time.Duration

	// MaxUsername and MaxPassword are the longest user name and password,
	// in bytes, the peer's protocol carries. The unknown user name and the
	// wrong password Dial/WrongUser and Dial/WrongPassword try stay within
	// them, so that the peer's refusal on the wire is what is tested, not
	// the driver's own length check. Default to 16 and 20, IPMI v2.0's
	// limits (the tightest of the protocols bmckit drives).
	MaxUsername, MaxPassword int

	// Inventory, when set, is the inventory the peer must report
	// (Inventory/Read compares it field for field). Defaults to nil: only
	// the shape is checked.
	Inventory *bmc.Inventory

	// Skip lists subtests to skip, by name below Run: "ResetBMC" skips
	// ResetBMC and everything under it, "Power/Cycle" only that one. For
	// peers where a subtest is unsafe or pointless (resetting a shared
	// BMC). Defaults to none.
	Skip []string
}

func (o Options) withDefaults() Options {
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if len(o.BootDevices) == 0 {
		o.BootDevices = []bmc.BootDevice{bmc.BootDevicePXE, bmc.BootDeviceDisk, bmc.BootDeviceCDROM, bmc.BootDeviceBIOS}
	}
	if len(o.BootModes) == 0 {
		o.BootModes = []bmc.BootMode{bmc.BootModeUnchanged, bmc.BootModeUEFI, bmc.BootModeLegacy}
		if o.lacks(bmc.CapabilityBootMode) {
			o.BootModes = o.BootModes[:1]
		}
	}
	if o.MediaImages[0] == "" {
		o.MediaImages[0] = "http://127.0.0.1:8080/bmctest-1.iso"
	}
	if o.MediaImages[1] == "" {
		o.MediaImages[1] = "http://127.0.0.1:8080/bmctest-2.iso"
	}
	if o.HTTPBootURIs[0] == "" {
		o.HTTPBootURIs[0] = "http://127.0.0.1:8080/bmctest-1.efi"
	}
	if o.HTTPBootURIs[1] == "" {
		o.HTTPBootURIs[1] = "https://127.0.0.1:8443/bmctest-2.efi"
	}
	if o.MaxUsername <= 0 {
		o.MaxUsername = 16
	}
	if o.MaxPassword <= 0 {
		o.MaxPassword = 20
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	return o
}

func (o Options) lacks(c Capability) bool {
	if (c == bmc.CapabilityBMCResetWarm || c == bmc.CapabilityBMCResetCold) && slices.Contains(o.Unsupported, bmc.CapabilityBMCReset) {
		return true
	}
	if c == bmc.CapabilityEventLogClear && slices.Contains(o.Unsupported, bmc.CapabilityEventLogs) {
		return true
	}
	if (c == bmc.CapabilityLocatorLEDBlink || c == bmc.CapabilityLocatorLEDReadBack) && slices.Contains(o.Unsupported, bmc.CapabilityLocatorLED) {
		return true
	}
	if c == bmc.CapabilitySecureBootResetKeys && slices.Contains(o.Unsupported, bmc.CapabilitySecureBoot) {
		return true
	}
	return slices.Contains(o.Unsupported, c)
}

// resetCapability is the capability ResetBMC(t) needs.
func resetCapability(t bmc.BMCResetType) Capability {
	if t == bmc.BMCResetCold {
		return bmc.CapabilityBMCResetCold
	}
	return bmc.CapabilityBMCResetWarm
}

// skipped reports whether the subtest at path (relative to Run) is listed in
// Skip, itself or through a parent.
func (o Options) skipped(path string) bool {
	for _, s := range o.Skip {
		s = strings.Trim(s, "/")
		if path == s || strings.HasPrefix(path, s+"/") {
			return true
		}
	}
	return false
}
