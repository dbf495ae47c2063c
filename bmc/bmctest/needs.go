package bmctest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// needsOf lists the bmc.Needs that capability c stands for: what a
// bmc.NeedChecker is asked before a job that uses c starts.
func (o Options) needsOf(c Capability) []bmc.Need {
	boot := func(b bmc.BootOverride) bmc.Need { return bmc.Need{Boot: &b} }
	switch c {
	case bmc.CapabilityBootOverride:
		return []bmc.Need{boot(bmc.BootOverride{Device: bmc.BootDevicePXE}), boot(bmc.BootOverride{Device: bmc.BootDevicePXE, Persistent: true})}
	case bmc.CapabilityBootMode:
		return []bmc.Need{boot(bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeUEFI}), boot(bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeLegacy})}
	case bmc.CapabilityBootHTTP:
		return []bmc.Need{boot(bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: o.HTTPBootURIs[0]})}
	case bmc.CapabilityVirtualMediaCD:
		return []bmc.Need{{Media: bmc.MediaCD}}
	case bmc.CapabilityVirtualMediaUSB:
		return []bmc.Need{{Media: bmc.MediaUSB}}
	case bmc.CapabilityBMCResetWarm:
		return []bmc.Need{{BMCReset: bmc.BMCResetWarm}}
	case bmc.CapabilityBMCResetCold:
		return []bmc.Need{{BMCReset: bmc.BMCResetCold}}
	case bmc.CapabilityPowerSoftOff:
		return []bmc.Need{{Power: bmc.PowerActionSoftOff}}
	case bmc.CapabilityPowerCycle:
		return []bmc.Need{{Power: bmc.PowerActionCycle}}
	case bmc.CapabilityPowerReset:
		return []bmc.Need{{Power: bmc.PowerActionReset}}
	case bmc.CapabilityLocatorLED:
		return []bmc.Need{{LocatorLED: bmc.LEDOn}, {LocatorLED: bmc.LEDOff}}
	case bmc.CapabilityLocatorLEDBlink:
		return []bmc.Need{{LocatorLED: bmc.LEDBlinking}}
	case bmc.CapabilityNMI:
		return []bmc.Need{{NMI: true}}
	case bmc.CapabilitySecureBoot:
		return []bmc.Need{{SecureBoot: &bmc.SecureBootNeed{}}}
	case bmc.CapabilitySecureBootResetKeys:
		return []bmc.Need{{SecureBoot: &bmc.SecureBootNeed{ResetKeys: bmc.SecureBootResetAllKeysToDefault}}}
	case bmc.CapabilityBootOrder:
		return []bmc.Need{{BootOrder: &bmc.BootOrderNeed{}}}
	}
	return nil
}

// needsLacking says whether the peer lacks what c's needs ask for,
// through c or a capability they also need.
func (o Options) needsLacking(c Capability) bool {
	switch c {
	case bmc.CapabilityBootMode, bmc.CapabilityBootHTTP:
		return o.lacks(c) || o.lacks(bmc.CapabilityBootOverride)
	case bmc.CapabilityLocatorLEDBlink:
		return o.lacks(c) || o.lacks(bmc.CapabilityLocatorLED)
	case bmc.CapabilitySecureBootResetKeys:
		return o.lacks(c) || o.lacks(bmc.CapabilitySecureBoot)
	}
	return o.lacks(c)
}

// needs checks a bmc.NeedChecker against Options.Unsupported:
//
//   - Needs/Advertised: every need of a capability the peer has passes (a
//     checker that refused one would keep jobs the peer can run from
//     starting);
//   - Needs/Lacking: a need of a capability the peer lacks is refused with
//     an error wrapping bmc.ErrNotSupported, or passes where the driver
//     cannot tell (the job then finds out by trying); no other error.
func (s *suite) needs(t *testing.T, path string) {
	s.run(t, path, "Advertised", func(tc *tcase) {
		nc := tc.needChecker()
		for _, c := range bmc.Capabilities() {
			if tc.opts.needsLacking(c) {
				continue
			}
			for _, n := range tc.opts.needsOf(c) {
				if err := nc.CheckNeed(tc.ctx(), n); err != nil {
					tc.noSecret("CheckNeed", err)
					tc.Errorf("CheckNeed(%s): %v; the peer has %s (not in Options.Unsupported)", n, err, c)
				}
			}
		}
	})
	s.run(t, path, "Lacking", func(tc *tcase) {
		nc := tc.needChecker()
		checked := 0
		for _, c := range bmc.Capabilities() {
			if !tc.opts.needsLacking(c) {
				continue
			}
			for _, n := range tc.opts.needsOf(c) {
				checked++
				err := nc.CheckNeed(tc.ctx(), n)
				switch {
				case err == nil:
					tc.Logf("CheckNeed(%s) passed: the driver cannot tell that the peer lacks %s", n, c)
				case !errors.Is(err, bmc.ErrNotSupported):
					tc.Errorf("CheckNeed(%s): %v; want bmc.ErrNotSupported (or nil where the driver cannot tell)", n, err)
				default:
					tc.requireNotSupported(fmt.Sprintf("CheckNeed(%s)", n), err)
				}
			}
		}
		if checked == 0 {
			tc.Skip("the peer lacks no capability a need stands for")
		}
	})
}

func (tc *tcase) needChecker() bmc.NeedChecker {
	nc, ok := tc.drv.(bmc.NeedChecker)
	if !ok {
		tc.Skipf("%T does not implement bmc.NeedChecker", tc.drv)
	}
	return nc
}
