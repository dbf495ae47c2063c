package bmclib

import (
	"strings"

	"github.com/bmckit/bmckit/bmc"
)

// NormalizePowerState maps a bmclib provider's power state string to a
// [bmc.PowerState]: ipmitool's "Chassis Power is on/off" output, the
// lower-case "on"/"off" of several providers, and Redfish's "On", "Off",
// "PoweringOn", "PoweringOff" (any case, surrounding space ignored).
// Anything else is [bmc.PowerUnknown].
func NormalizePowerState(s string) bmc.PowerState {
	s = strings.ToLower(strings.TrimSpace(s))
	// ipmitool prints one line; other output (warnings) may precede it.
	if i := strings.LastIndex(s, "chassis power is "); i >= 0 {
		s = strings.TrimSpace(s[i+len("chassis power is "):])
		if j := strings.IndexAny(s, " \t\r\n"); j >= 0 {
			s = s[:j]
		}
	}
	switch s {
	case "on":
		return bmc.PowerOn
	case "off":
		return bmc.PowerOff
	case "poweringon", "powering on":
		return bmc.PowerPoweringOn
	case "poweringoff", "powering off":
		return bmc.PowerPoweringOff
	}
	return bmc.PowerUnknown
}
