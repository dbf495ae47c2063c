package redfish

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// TestSecureBootRealPayloads reads published SecureBoot payloads
// (testdata/secureboot/README.md names their sources).
func TestSecureBootRealPayloads(t *testing.T) {
	all := []bmc.SecureBootResetKeys{bmc.SecureBootResetAllKeysToDefault, bmc.SecureBootDeleteAllKeys, bmc.SecureBootDeletePK}
	cases := []struct {
		file string
		want bmc.SecureBootState
	}{
		{"dmtf-secureboot-437XR1138R2.json", bmc.SecureBootState{CurrentBoot: bmc.SecureBootCurrentDisabled, Mode: bmc.SecureBootUserMode, ResetKeys: all}},
		{"ilo5-secureboot.json", bmc.SecureBootState{CurrentBoot: bmc.SecureBootCurrentDisabled, Mode: bmc.SecureBootUserMode, ResetKeys: all}},
		// No AllowableValues: the three of SecureBoot v1_0 are taken as offered.
		{"gofish-secureboot-noallowable.json", bmc.SecureBootState{Enabled: true, CurrentBoot: bmc.SecureBootCurrentEnabled, Mode: bmc.SecureBootUserMode, ResetKeys: all}},
	}
	for _, c := range cases {
		b, err := os.ReadFile("testdata/secureboot/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := decodeSecureBoot(b)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if got := doc.state(nil); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: state %+v, want %+v", c.file, got, c.want)
		}
		if doc.resetTarget == "" || doc.settings.object != "" {
			t.Errorf("%s: reset target %q, settings object %q; want a target and no settings object", c.file, doc.resetTarget, doc.settings.object)
		}
	}
}

// TestBootOptionRealPayload reads an iLO BootOption of an HTTP boot URL
// (gofish's test payload): Id differs from the reference, no
// BootOptionEnabled (it boots), no MAC in its device path.
func TestBootOptionRealPayload(t *testing.T) {
	b, err := os.ReadFile("testdata/secureboot/ilo-bootoption-httpboot.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := decodeBootOption(b)
	if err != nil {
		t.Fatal(err)
	}
	want := bmc.BootOption{Reference: "Boot0015", ID: "1", DisplayName: "URL File : http://assets.example.com/ipxe.efi (IPv4)", Alias: "None",
		Enabled: true, UefiDevicePath: "IPv4(0.0.0.0)/Uri(http://assets.example.com/ipxe.efi)"}
	if !reflect.DeepEqual(doc.opt, want) || doc.uri != "/redfish/v1/Systems/1/BootOptions/1/" {
		t.Errorf("decoded %+v at %q, want %+v", doc.opt, doc.uri, want)
	}
	if doc.opt.MAC() != "" {
		t.Errorf("MAC() = %q, want none", doc.opt.MAC())
	}
}

// TestDecodeShapesRefused: documents that say nothing are refused with the
// field named.
func TestDecodeShapesRefused(t *testing.T) {
	for in, want := range map[string]string{
		`{"SecureBootMode":"UserMode"}`: "no SecureBootEnable",
		`{"SecureBootEnable":null}`:     "no SecureBootEnable",
		`{"SecureBootEnable":"yes"}`:    "invalid SecureBoot",
		`[]`:                            "invalid SecureBoot",
	} {
		if _, err := decodeSecureBoot([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("decodeSecureBoot(%s) = %v, want an error with %q", in, err, want)
		}
	}
	for in, want := range map[string]string{
		`{"@odata.id":"/x/1","DisplayName":"d"}`: `invalid BootOption "/x/1": no BootOptionReference`,
		`{"BootOptionReference":7}`:              "invalid BootOption",
	} {
		if _, err := decodeBootOption([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("decodeBootOption(%s) = %v, want an error with %q", in, err, want)
		}
	}
}

// TestILO5SystemBootShapes reads two iLO 5 systems: an older one with a
// SecureBoot link and no boot order (NotSupported for the boot order), and
// one with Boot.BootOrder and BootOptions and no @Redfish.Settings (the
// order applies on the system itself).
func TestILO5SystemBootShapes(t *testing.T) {
	read := func(name string) systemDoc {
		b, err := os.ReadFile("testdata/secureboot/" + name)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := parseSystem(b, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return doc
	}
	old := read("ilo5-dl180-system.json")
	if old.Sub[subSecureBoot] != "/redfish/v1/Systems/1/SecureBoot/" || old.BootHas[propBootOrder] || old.Sub[subBootOptions] != "" {
		t.Errorf("DL180: SecureBoot %q, BootOrder %t, BootOptions %q", old.Sub[subSecureBoot], old.BootHas[propBootOrder], old.Sub[subBootOptions])
	}
	d := &Driver{sys: old}
	if err := d.checkBootOrder(t.Context(), bmc.BootOrderNeed{}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("DL180 boot order need: %v; want ErrNotSupported", err)
	}
	if err := d.checkSecureBoot(t.Context(), bmc.SecureBootNeed{}); err != nil {
		t.Errorf("DL180 Secure Boot need: %v", err)
	}
	plus := read("ilo5-dl360-system-boot.json")
	if !plus.BootHas[propBootOrder] || plus.Sub[subBootOptions] != "/redfish/v1/Systems/1/BootOptions" || plus.Settings.object != "" ||
		len(plus.Boot.BootOrder) != 10 || plus.Boot.BootOrder[0] != "Boot0019" || plus.BootHas[propHTTPURI] {
		t.Errorf("DL360 Gen10 Plus: BootOrder %t %v, BootOptions %q, settings %q, HttpBootUri %t",
			plus.BootHas[propBootOrder], plus.Boot.BootOrder, plus.Sub[subBootOptions], plus.Settings.object, plus.BootHas[propHTTPURI])
	}
	d = &Driver{sys: plus}
	if err := d.checkBootOrder(t.Context(), bmc.BootOrderNeed{}); err != nil {
		t.Errorf("DL360 boot order need: %v", err)
	}
	if err := d.checkBootOrder(t.Context(), bmc.BootOrderNeed{HTTPBootURI: true}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("DL360 HTTP boot URI need (no HttpBootUri in its Boot): %v; want ErrNotSupported", err)
	}
}
