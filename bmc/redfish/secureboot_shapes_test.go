package redfish

import (
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
