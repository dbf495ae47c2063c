package bmctest

import (
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func modeName(m bmc.BootMode) string {
	if m == bmc.BootModeUnchanged {
		return "unchanged"
	}
	return string(m)
}

func (s *suite) bootOverride(t *testing.T, path string) {
	for _, dev := range s.opts.BootDevices {
		for _, persistent := range []bool{false, true} {
			for _, mode := range s.opts.BootModes {
				when := "once"
				if persistent {
					when = "persistent"
				}
				name := fmt.Sprintf("%s-%s-%s", dev, when, modeName(mode))
				want := bmc.BootOverride{Device: dev, Persistent: persistent, Mode: mode}
				s.run(t, path, name, func(tc *tcase) { tc.setBootOverride(want) })
			}
		}
	}
	s.run(t, path, "InvalidDevice", func(tc *tcase) {
		setter := tc.bootSetter()
		o := bmc.BootOverride{Device: bmc.BootDevice("floppy-of-doom")}
		err := setter.SetBootOverride(tc.ctx(), o)
		if err == nil {
			tc.Fatalf("SetBootOverride(%+v) succeeded; want an error for an undefined device", o)
		}
		tc.requireOpError("SetBootOverride(invalid device)", err)
		if bmc.IsTransient(err) {
			tc.Errorf("SetBootOverride(invalid device): error %q is transient; want permanent", err)
		}
	})
}

// bootSetter returns the driver's BootOverrideSetter or skips.
func (tc *tcase) bootSetter() bmc.BootOverrideSetter {
	tc.Helper()
	setter, ok := tc.drv.(bmc.BootOverrideSetter)
	if !ok {
		tc.Skipf("%T does not implement bmc.BootOverrideSetter", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityBootOverride) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityBootOverride, bmc.CapabilityBootOverride)
	}
	return setter
}

// setBootOverride sets want twice (idempotence) and reads it back where the
// driver and the peer can.
func (tc *tcase) setBootOverride(want bmc.BootOverride) {
	setter := tc.bootSetter()
	if want.Mode != bmc.BootModeUnchanged && tc.opts.lacks(bmc.CapabilityBootMode) {
		tc.Skipf("the peer lacks %s (Options.Unsupported)", bmc.CapabilityBootMode)
	}
	for i := 1; i <= 2; i++ {
		tc.noErr(fmt.Sprintf("SetBootOverride(%+v) #%d", want, i), setter.SetBootOverride(tc.ctx(), want))
	}
	getter, ok := tc.drv.(bmc.BootOverrideGetter)
	if !ok {
		tc.Logf("%T does not implement bmc.BootOverrideGetter: set without read-back", tc.drv)
		return
	}
	if tc.opts.lacks(bmc.CapabilityBootOverrideReadBack) {
		tc.Logf("the peer lacks %s: set without read-back", bmc.CapabilityBootOverrideReadBack)
		return
	}
	got, err := getter.BootOverride(tc.ctx())
	if err != nil {
		tc.requireOpError("BootOverride", err)
		tc.Fatalf("BootOverride after setting %+v: %v", want, err)
	}
	if got.Device != want.Device || got.Persistent != want.Persistent || got.URI != want.URI {
		tc.Errorf("BootOverride read back %+v after setting %+v", got, want)
	}
	// BootModeUnchanged on read means the BMC did not say.
	if want.Mode != bmc.BootModeUnchanged && got.Mode != bmc.BootModeUnchanged && got.Mode != want.Mode {
		tc.Errorf("BootOverride read back mode %q after setting %q", got.Mode, want.Mode)
	}
}
