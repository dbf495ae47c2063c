package bmctest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func (s *suite) unsupported(t *testing.T, path string) {
	for _, c := range bmc.Capabilities() {
		s.run(t, path, string(c), func(tc *tcase) {
			// Listed explicitly: bmc-reset implies bmc-reset-warm and
			// -cold for the other subtests, but is checked as itself.
			if !slices.Contains(tc.opts.Unsupported, c) {
				tc.Skipf("the peer has %s (not in Options.Unsupported)", c)
			}
			tc.checkUnsupported(c)
		})
	}
}

func (tc *tcase) checkUnsupported(c Capability) {
	tc.Helper()
	ctx := tc.ctx()
	switch c {
	case bmc.CapabilityBootOverride:
		setter, ok := tc.drv.(bmc.BootOverrideSetter)
		if !ok {
			tc.Skipf("%T does not implement bmc.BootOverrideSetter", tc.drv)
		}
		tc.requireNotSupported("SetBootOverride(pxe)", setter.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}))
		if getter, ok := tc.drv.(bmc.BootOverrideGetter); ok {
			_, err := getter.BootOverride(ctx)
			tc.requireNotSupported("BootOverride", err)
		}
	case bmc.CapabilityBootOverrideReadBack:
		getter, ok := tc.drv.(bmc.BootOverrideGetter)
		if !ok {
			tc.Skipf("%T does not implement bmc.BootOverrideGetter (which already says it cannot read back)", tc.drv)
		}
		_, err := getter.BootOverride(ctx)
		tc.requireNotSupported("BootOverride", err)
	case bmc.CapabilityBootMode:
		setter, ok := tc.drv.(bmc.BootOverrideSetter)
		if !ok {
			tc.Skipf("%T does not implement bmc.BootOverrideSetter", tc.drv)
		}
		for _, m := range []bmc.BootMode{bmc.BootModeUEFI, bmc.BootModeLegacy} {
			o := bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: m}
			tc.requireNotSupported(fmt.Sprintf("SetBootOverride(%+v)", o), setter.SetBootOverride(ctx, o))
		}
	case bmc.CapabilityBootHTTP:
		setter, ok := tc.drv.(bmc.BootOverrideSetter)
		if !ok {
			tc.Skipf("%T does not implement bmc.BootOverrideSetter", tc.drv)
		}
		for _, persistent := range []bool{false, true} {
			o := bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: tc.opts.HTTPBootURIs[0], Persistent: persistent}
			tc.requireNotSupported(fmt.Sprintf("SetBootOverride(%+v)", o), setter.SetBootOverride(ctx, o))
		}
	case bmc.CapabilityVirtualMediaCD, bmc.CapabilityVirtualMediaUSB:
		vm, ok := tc.drv.(bmc.VirtualMedia)
		if !ok {
			tc.Skipf("%T does not implement bmc.VirtualMedia", tc.drv)
		}
		kind := bmc.MediaCD
		if c == bmc.CapabilityVirtualMediaUSB {
			kind = bmc.MediaUSB
		}
		tc.requireNotSupported(fmt.Sprintf("InsertMedia(%s)", kind), vm.InsertMedia(ctx, kind, tc.opts.MediaImages[0]))
		tc.requireNotSupported(fmt.Sprintf("EjectMedia(%s)", kind), vm.EjectMedia(ctx, kind))
		_, err := vm.MediaStatus(ctx, kind)
		tc.requireNotSupported(fmt.Sprintf("MediaStatus(%s)", kind), err)
	case bmc.CapabilityBMCReset, bmc.CapabilityBMCResetWarm, bmc.CapabilityBMCResetCold:
		// CapabilityBMCReset is checked with a warm reset.
		r, ok := tc.drv.(bmc.BMCResetter)
		if !ok {
			tc.Skipf("%T does not implement bmc.BMCResetter", tc.drv)
		}
		rt := bmc.BMCResetWarm
		if c == bmc.CapabilityBMCResetCold {
			rt = bmc.BMCResetCold
		}
		tc.requireNotSupported(fmt.Sprintf("ResetBMC(%s)", rt), r.ResetBMC(ctx, rt))
	case bmc.CapabilityPowerSoftOff, bmc.CapabilityPowerCycle, bmc.CapabilityPowerReset:
		action := map[Capability]bmc.PowerAction{
			bmc.CapabilityPowerSoftOff: bmc.PowerActionSoftOff,
			bmc.CapabilityPowerCycle:   bmc.PowerActionCycle,
			bmc.CapabilityPowerReset:   bmc.PowerActionReset,
		}[c]
		// On a server that is off these are no-ops or mean "on", so ask
		// with the server on.
		tc.ensurePower(bmc.PowerOn)
		tc.requireNotSupported(fmt.Sprintf("SetPower(%s) on a server that is on", action), tc.drv.SetPower(ctx, action))
	case bmc.CapabilityLastResetTime:
		r, ok := tc.drv.(bmc.LastResetReader)
		if !ok {
			tc.Skipf("%T does not implement bmc.LastResetReader", tc.drv)
		}
		_, err := r.LastResetTime(ctx)
		tc.requireNotSupported("LastResetTime", err)
	case bmc.CapabilityFirmwareUpdate:
		tc.checkFirmwareUnsupported()
	case bmc.CapabilityInventory, bmc.CapabilityBIOS:
		tc.checkUnsupportedInventoryBIOS(c)
	case bmc.CapabilityHealth:
		tc.checkHealthUnsupported()
	case bmc.CapabilityEventLogs, bmc.CapabilityEventLogClear:
		tc.checkLogsUnsupported(c)
	case bmc.CapabilityLocatorLED, bmc.CapabilityLocatorLEDBlink, bmc.CapabilityLocatorLEDReadBack:
		tc.checkLocatorUnsupported(c)
	case bmc.CapabilityNMI:
		tc.checkNMIUnsupported()
	case bmc.CapabilityAccounts:
		tc.checkAccountsUnsupported()
	case bmc.CapabilitySecureBoot, bmc.CapabilitySecureBootResetKeys:
		tc.checkSecureBootUnsupported(c)
	case bmc.CapabilityBootOrder:
		tc.checkBootOrderUnsupported()
	default:
		tc.Fatalf("bmctest: no check for capability %q", c)
	}
}
