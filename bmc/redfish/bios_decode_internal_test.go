package redfish

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// TestDecodeBIOSShapes pins how decodeBIOS reads each shape of attribute
// value vendors send, and that no value fails the read.
func TestDecodeBIOSShapes(t *testing.T) {
	r, err := decodeBIOS([]byte(`{"Attributes": {
		"Plain": "x", "N": 3, "F": 1.5, "B": false, "Pw": null,
		"BootMode": {"AllowableValues": ["Legacy", "UEFI"], "current_value": "UEFI"},
		"SMT": {"current_value": true}, "Cores": {"current_value": 64}, "Unset": {"current_value": null},
		"Order": ["Pxe",
			"Hdd"],
		"Topo": {"Channels": 8,
			"Interleave": "Auto"},
		"Nested": {"current_value": {"a": [1, 2]}},
		"OddAllowed": {"AllowableValues": [1, 2], "current_value": "a"}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := bmc.BIOSAttributes{
		"Plain": "x", "N": "3", "F": "1.5", "B": "false",
		"BootMode": "UEFI", "SMT": "true", "Cores": "64",
		"Order": `["Pxe","Hdd"]`, "Topo": `{"Channels":8,"Interleave":"Auto"}`, "Nested": `{"a":[1,2]}`,
		"OddAllowed": "a",
	}
	if !reflect.DeepEqual(r.attrs, want) || r.members != 13 {
		t.Fatalf("attrs %v (%d members)\nwant  %v (13)", r.attrs, r.members, want)
	}
	reg := registryFromAttributes(r)
	for name, typ := range map[string]bmc.BIOSAttributeType{
		"Plain": bmc.BIOSString, "N": bmc.BIOSInteger, "B": bmc.BIOSBoolean, "BootMode": bmc.BIOSEnumeration,
		"SMT": bmc.BIOSBoolean, "Cores": bmc.BIOSInteger, "Order": "", "Topo": "", "Nested": "", "OddAllowed": bmc.BIOSString,
	} {
		if def, ok := reg.Lookup(name); !ok || def.Type != typ {
			t.Errorf("%s: %+v, want type %q", name, def, typ)
		}
	}
	if def, _ := reg.Lookup("BootMode"); !reflect.DeepEqual(def.Values, []string{"Legacy", "UEFI"}) {
		t.Errorf("BootMode values %v", def.Values)
	}

	// No attributes at all: members 0 (the driver's NotSupported).
	for _, doc := range []string{`{}`, `{"Attributes": {}}`, `{"Attributes": null}`, `{"Id": "BIOS", "Actions": {}}`} {
		r, err := decodeBIOS([]byte(doc))
		if err != nil || r.members != 0 {
			t.Errorf("%s: %+v, %v; want 0 members", doc, r, err)
		}
	}
	// Attributes of the wrong kind: one line saying so, no JSON quoted.
	for doc, kind := range map[string]string{`{"Attributes": [{"a":\n1}]}`: "an array", `{"Attributes": "x"}`: "a string", `{"Attributes": 7}`: "a number"} {
		_, err := decodeBIOS([]byte(strings.ReplaceAll(doc, `\n`, "\n")))
		if err == nil || err.Error() != "invalid Bios: Attributes is "+kind+", not an object" {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

func TestQuoteClip(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("é", 300), strings.Repeat("\n", 300), strings.Repeat("\x00", 70), strings.Repeat("a", 198)} {
		q := quoteClip(s)
		if len(q) > maxQuoted || strings.ContainsAny(q, "\n\r") {
			t.Errorf("quoteClip(%.20q...) = %q (%d bytes)", s, q, len(q))
		}
	}
	if q := quoteClip("short"); q != `"short"` {
		t.Errorf("quoteClip(short) = %s", q)
	}
}
