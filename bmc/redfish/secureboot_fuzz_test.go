package redfish

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// FuzzDecodeSecureBoot: any SecureBoot document (and settings object)
// decodes or is refused, never panics, and a decoded one gives a state
// whose reset kinds are valid and listed once, and whose Pending differs
// from Enabled only as PendingSecureBoot allows.
func FuzzDecodeSecureBoot(f *testing.F) {
	f.Add([]byte(`{"SecureBootEnable":false,"SecureBootCurrentBoot":"Disabled","SecureBootMode":"UserMode","Actions":{"#SecureBoot.ResetKeys":{"target":"/t","ResetKeysType@Redfish.AllowableValues":["ResetAllKeysToDefault","DeletePK","DeletePK","Bogus"]}}}`),
		[]byte(`{"SecureBootEnable":true}`))
	f.Add([]byte(`{"SecureBootEnable":true,"SecureBootCurrentBoot":"Enabled","@Redfish.Settings":{"SettingsObject":{"@odata.id":"/s"},"SupportedApplyTimes":["OnReset"]}}`),
		[]byte(`{"SecureBootEnable":null}`))
	f.Add([]byte(`{"SecureBootEnable":"x"}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, doc, settings []byte) {
		d, err := decodeSecureBoot(doc)
		if err != nil {
			return
		}
		held, err := decodeSecureBootSettings(settings)
		if err != nil {
			held = nil
		}
		s := d.state(held)
		seen := map[bmc.SecureBootResetKeys]bool{}
		for _, k := range s.ResetKeys {
			if !k.Valid() || seen[k] {
				t.Fatalf("reset kinds %v: invalid or repeated %q", s.ResetKeys, k)
			}
			seen[k] = true
		}
		if s.Pending != nil && *s.Pending == s.Enabled && s.CurrentBoot != bmc.SecureBootCurrentUnknown && (s.CurrentBoot == bmc.SecureBootCurrentEnabled) == s.Enabled {
			t.Fatalf("state %v: pending though the current boot runs with the setting", s)
		}
		if len(s.ResetKeys) > 0 && d.resetTarget == "" {
			t.Fatalf("reset kinds %v without a ResetKeys target", s.ResetKeys)
		}
	})
}

// FuzzDecodeBootOrder: BootOption documents and the settings objects of a
// system and of an option decode or are refused, never panic; a decoded
// option has a reference without surrounding space.
func FuzzDecodeBootOrder(f *testing.F) {
	f.Add([]byte(`{"@odata.id":"/o/1","Id":"1","BootOptionReference":"Boot0015","DisplayName":" x ","Alias":"Pxe","UefiDevicePath":"MAC(6805CAE1367C,0x1)","BootOptionEnabled":false}`),
		[]byte(`{"Boot":{"BootOrder":["Boot0002","Boot0001"],"HttpBootUri":"http://h/x"}}`))
	f.Add([]byte(`{"BootOptionReference":" ","@Redfish.Settings":{"SettingsObject":{"@odata.id":"/o/1/SD"}}}`), []byte(`{"BootOptionEnabled":true}`))
	f.Add([]byte(`{"BootOptionReference":"Boot0001","BootOptionEnabled":null}`), []byte(`{"Boot":{"BootOrder":"x"}}`))
	f.Fuzz(func(t *testing.T, option, settings []byte) {
		if d, err := decodeBootOption(option); err == nil {
			if d.opt.Reference == "" || d.opt.Reference != strings.TrimSpace(d.opt.Reference) {
				t.Fatalf("decoded reference %q", d.opt.Reference)
			}
			_ = d.opt.MAC()
		}
		_, _ = decodeBootSettings(settings)
		_, _ = decodeOptionSettings(settings)
	})
}
