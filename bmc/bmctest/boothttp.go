package bmctest

import (
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// bootHTTP checks UEFI HTTP boot (bmc.BootDeviceUEFIHTTP with a URI): set
// twice and read back with its URI, once and persistent; a second URI
// replaces the first; a URI with another device is a permanent error.
func (s *suite) bootHTTP(t *testing.T, path string) {
	uri1, uri2 := s.opts.HTTPBootURIs[0], s.opts.HTTPBootURIs[1]
	for _, persistent := range []bool{false, true} {
		name := "once"
		if persistent {
			name = "persistent"
		}
		s.run(t, path, name, func(tc *tcase) {
			tc.httpBootSetter()
			tc.setBootOverride(bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: uri1, Persistent: persistent})
		})
	}
	s.run(t, path, "uefi", func(tc *tcase) {
		tc.httpBootSetter()
		if tc.opts.lacks(bmc.CapabilityBootMode) {
			tc.Skipf("the peer lacks %s (Options.Unsupported)", bmc.CapabilityBootMode)
		}
		tc.setBootOverride(bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: uri1, Mode: bmc.BootModeUEFI, Persistent: true})
	})
	s.run(t, path, "ReplacesURI", func(tc *tcase) {
		setter := tc.httpBootSetter()
		first := bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: uri1, Persistent: true}
		tc.noErr(fmt.Sprintf("SetBootOverride(%+v)", first), setter.SetBootOverride(tc.ctx(), first))
		tc.setBootOverride(bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: uri2, Persistent: true})
	})
	s.run(t, path, "ThenPXE", func(tc *tcase) {
		// Another device after an HTTP boot override reads back without
		// a URI (a BMC may keep HttpBootUri; the driver reports it only
		// for UEFI HTTP boot).
		setter := tc.httpBootSetter()
		first := bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: uri1, Persistent: true}
		tc.noErr(fmt.Sprintf("SetBootOverride(%+v)", first), setter.SetBootOverride(tc.ctx(), first))
		tc.setBootOverride(bmc.BootOverride{Device: bmc.BootDevicePXE, Persistent: true})
	})
	s.run(t, path, "URIWithOtherDevice", func(tc *tcase) {
		setter := tc.bootSetter()
		o := bmc.BootOverride{Device: bmc.BootDevicePXE, URI: uri1}
		err := setter.SetBootOverride(tc.ctx(), o)
		if err == nil {
			tc.Fatalf("SetBootOverride(%+v) succeeded; want a permanent error: only uefi-http boots from a URI", o)
		}
		tc.requireOpError("SetBootOverride(pxe with a URI)", err)
		if bmc.IsTransient(err) {
			tc.Errorf("SetBootOverride(pxe with a URI): error %q is transient; want permanent", err)
		}
	})
}

// httpBootSetter returns the driver's BootOverrideSetter or skips when the
// peer cannot boot over UEFI HTTP.
func (tc *tcase) httpBootSetter() bmc.BootOverrideSetter {
	tc.Helper()
	setter := tc.bootSetter()
	if tc.opts.lacks(bmc.CapabilityBootHTTP) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityBootHTTP, bmc.CapabilityBootHTTP)
	}
	return setter
}
