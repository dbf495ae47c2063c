package fake

import (
	"context"
	"fmt"
	"slices"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.NeedChecker = (*Driver)(nil)

// CheckNeed implements [bmc.NeedChecker] from the capabilities the BMC
// lacks (Options.Unsupported): it refuses what the fake's own calls would
// refuse with bmc.ErrNotSupported, changing nothing. A power action is
// checked as on a server that is on, where it needs its capability (on a
// server that is off, cycle and reset mean "power on").
func (d *Driver) CheckNeed(ctx context.Context, n bmc.Need) error {
	return d.do(ctx, MethodCheckNeed, []any{n}, func() error { return d.bmc.checkNeed(n) })
}

// checkNeed runs under b.mu.
func (b *BMC) checkNeed(n bmc.Need) error {
	lacks := func(c bmc.Capability) error {
		if b.lacks[c] {
			return fmt.Errorf("%s: the BMC lacks %s: %w", n, c, bmc.ErrNotSupported)
		}
		return nil
	}
	switch {
	case n.Power == bmc.PowerActionSoftOff:
		return lacks(bmc.CapabilityPowerSoftOff)
	case n.Power == bmc.PowerActionCycle:
		return lacks(bmc.CapabilityPowerCycle)
	case n.Power == bmc.PowerActionReset:
		return lacks(bmc.CapabilityPowerReset)
	case n.SecureBoot != nil:
		if err := lacks(bmc.CapabilitySecureBoot); err != nil || n.SecureBoot.ResetKeys == "" {
			return err
		}
		if err := lacks(bmc.CapabilitySecureBootResetKeys); err != nil {
			return err
		}
		if !slices.Contains(b.secureBootState().ResetKeys, n.SecureBoot.ResetKeys) {
			return fmt.Errorf("%s: the BMC does not offer it: %w", n, bmc.ErrNotSupported)
		}
	case n.BootOrder != nil:
		if err := lacks(bmc.CapabilityBootOrder); err != nil || !n.BootOrder.HTTPBootURI {
			return err
		}
		return lacks(bmc.CapabilityBootHTTP)
	case n.Boot != nil:
		if err := lacks(bmc.CapabilityBootOverride); err != nil {
			return err
		}
		if n.Boot.Device == bmc.BootDeviceUEFIHTTP {
			if err := lacks(bmc.CapabilityBootHTTP); err != nil {
				return err
			}
		}
		if n.Boot.Mode != bmc.BootModeUnchanged {
			return lacks(bmc.CapabilityBootMode)
		}
	case n.Media != "":
		if !b.hasMedia(n.Media) {
			return fmt.Errorf("%s: the BMC has no such device: %w", n, bmc.ErrNotSupported)
		}
	case n.BMCReset != "":
		if err := lacks(bmc.CapabilityBMCReset); err != nil {
			return err
		}
		if n.BMCReset == bmc.BMCResetWarm {
			return lacks(bmc.CapabilityBMCResetWarm)
		}
		return lacks(bmc.CapabilityBMCResetCold)
	case n.ClearLog != nil:
		if err := lacks(bmc.CapabilityEventLogs); err != nil {
			return err
		}
		if err := lacks(bmc.CapabilityEventLogClear); err != nil {
			return err
		}
		l, err := b.log(*n.ClearLog)
		if err != nil {
			return err
		}
		if !l.Clearable {
			return fmt.Errorf("%s: the BMC does not offer to clear it: %w", n, bmc.ErrNotSupported)
		}
	case n.LocatorLED != "":
		if err := lacks(bmc.CapabilityLocatorLED); err != nil {
			return err
		}
		if n.LocatorLED == bmc.LEDBlinking {
			return lacks(bmc.CapabilityLocatorLEDBlink)
		}
	case n.NMI:
		return lacks(bmc.CapabilityNMI)
	}
	return nil
}
