package bootoverride

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func TestMatches(t *testing.T) {
	pxe := bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeUEFI}
	for _, c := range []struct {
		want, got bmc.BootOverride
		match     bool
	}{
		{pxe, pxe, true},
		{pxe, bmc.BootOverride{Device: bmc.BootDevicePXE}, true}, // the BMC does not say the mode
		{pxe, bmc.BootOverride{Device: bmc.BootDevicePXE, Persistent: true, Mode: bmc.BootModeUEFI}, false},
		{pxe, bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeLegacy}, false},
		{bmc.BootOverride{Device: bmc.BootDeviceNone}, bmc.BootOverride{Device: bmc.BootDeviceNone, Persistent: true}, true},
		{bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: "http://a/x.efi"}, bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: "http://b/x.efi"}, false},
	} {
		if got := Matches(c.want, c.got); got != c.match {
			t.Errorf("Matches(%s, %s) = %t, want %t", Describe(c.want), Describe(c.got), got, c.match)
		}
	}
}

// A URI with credentials is never stored; a stored override converts back.
func TestToTaskDropsCredentials(t *testing.T) {
	o := bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: "http://u:pw@host/x.efi", Persistent: true}
	st := ToTask(o)
	if st.URI != "" {
		t.Errorf("stored URI %q, want none", st.URI)
	}
	back := FromTask(ToTask(bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeUEFI}))
	if back.Device != bmc.BootDevicePXE || back.Mode != bmc.BootModeUEFI {
		t.Errorf("round trip gave %+v", back)
	}
	if d := Describe(bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: "http://h/" + strings.Repeat("x", 300)}); len(d) > 250 {
		t.Errorf("a long URI is not cut: %d bytes", len(d))
	}
}
