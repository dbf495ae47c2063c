package ipmi

import (
	"testing"
	"unicode/utf8"

	"github.com/bmckit/bmckit/bmc"
)

// Replies as ipmi_sim sends them (captured with ipmitool raw, see
// docs/accounts.md): user 2, an administrator with IPMI messaging and the
// enable state unspecified; the same user disabled (messaging cleared);
// and as ipmitest sends them, with errata 4's enable bits.
func TestDecodeUserAccess(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want userAccess
		role bmc.Role
	}{
		{"ipmi_sim admin", []byte{0x3f, 0x01, 0x00, 0x14}, userAccess{maxUsers: 63, enabled: true, priv: 4, msg: true}, bmc.RoleAdministrator},
		{"ipmi_sim disabled", []byte{0x3f, 0x01, 0x00, 0x24}, userAccess{maxUsers: 63, priv: 4, link: true}, bmc.RoleAdministrator},
		{"ipmi_sim empty slot", []byte{0x3f, 0x01, 0x00, 0x00}, userAccess{maxUsers: 63}, bmc.RoleNoAccess},
		{"errata 4 enabled operator", []byte{0x0a, 0x42, 0x01, 0x33}, userAccess{maxUsers: 10, enabled: true, priv: 3, msg: true, link: true}, bmc.RoleOperator},
		{"errata 4 disabled despite messaging", []byte{0x0a, 0x81, 0x01, 0x32}, userAccess{maxUsers: 10, priv: 2, msg: true, link: true}, bmc.RoleReadOnly},
	} {
		got, err := decodeUserAccess(tc.b)
		if err != nil || got != tc.want || roleOfPriv(got.priv) != tc.role {
			t.Errorf("%s: %+v (%s), %v; want %+v (%s)", tc.name, got, roleOfPriv(got.priv), err, tc.want, tc.role)
		}
	}
	if _, err := decodeUserAccess([]byte{0x3f, 0x01}); err == nil || bmc.IsTransient(err) {
		t.Errorf("a truncated reply: %v; want a permanent error", err)
	}
}

func FuzzDecodeUserAccess(f *testing.F) {
	for _, seed := range [][]byte{{0x3f, 0x01, 0x00, 0x14}, {0x0a, 0x81, 0x01, 0x32}, {0xff, 0xff, 0xff, 0xff}, {}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeUserAccess(b)
		if err != nil {
			return
		}
		if a.maxUsers < 0 || a.maxUsers > 63 || a.priv > 0x0f {
			t.Fatalf("decoded %+v: out of IPMI's ranges", a)
		}
		if r := roleOfPriv(a.priv); r == "" {
			t.Fatalf("privilege %#x has no role", a.priv)
		}
	})
}

func FuzzDecodeUserName(f *testing.F) {
	for _, seed := range [][]byte{[]byte("admin\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), make([]byte, 16), []byte("\xff\xfe-not-utf8-\x00\x00\x00\x00"), []byte("short")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		name, err := decodeUserName(b)
		if err != nil {
			return
		}
		if len(name) > 16*3 || !utf8.ValidString(name) {
			t.Fatalf("decoded name %q: not valid UTF-8 or too long", name)
		}
	})
}
