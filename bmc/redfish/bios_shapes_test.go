package redfish_test

// BIOS on vendors' shapes of the Bios resource, over HTTP against
// redfishtest: Cray EX's object-valued attributes, OpenBMC's Bios without
// attributes, a registry whose Location answers 404, and the BIOS error
// messages (one line, bounded, the same on every run).

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// redfishDial opens another connection to srv's system 1, closed at the
// end of the test.
func redfishDial(t *testing.T, srv *redfishtest.Server) (*redfish.Driver, error) {
	t.Helper()
	d, err := redfish.NewDialer(testOptions()).DialDriver(t.Context(), srv.Endpoint("1"), srv.Credentials())
	if err == nil {
		t.Cleanup(func() { _ = d.Close(context.Background()) })
	}
	return d, err
}

// requireOneLine fails unless err's message is one line of at most max
// bytes.
func requireOneLine(t *testing.T, what string, err error, max int) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") || len(msg) > max {
		t.Fatalf("%s: the error is not one line of at most %d bytes (%d bytes): %q", what, max, len(msg), msg)
	}
}

// noPatch fails when srv saw a state-changing request.
func noPatch(t *testing.T, srv *redfishtest.Server) {
	t.Helper()
	for _, r := range srv.Requests() {
		if r.Method != "GET" && r.Method != "POST" {
			t.Fatalf("a change reached the BMC: %s %s %s", r.Method, r.Path, r.Body)
		}
		if r.Method == "POST" && !strings.HasSuffix(r.Path, "/Sessions") {
			t.Fatalf("an action reached the BMC: %s %s", r.Method, r.Path)
		}
	}
}

// Cray EX: every attribute value is an object (the scalar current_value
// is the value, AllowableValues make an Enumeration), some are structured
// (kept as compact JSON, their type unknown: refused before any request,
// naming the attribute), and the Bios names no registry. Reading works on
// every fresh connection; a change is pending, then applied by the boot.
func TestBIOSCrayEXObjectValues(t *testing.T) {
	ctx := t.Context()
	srv, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorCrayEX), testOptions(), "1", false)
	want := bmc.BIOSAttributes{
		"BootMode": "Uefi", "ProcVirtualization": "Enabled", "SriovEnable": "false", "PxeRetryCount": "3",
		"AssetTag": "", "SystemModelName": "redfishtest",
		"BootOrder": `["Pxe","Hdd","Cd"]`, "MemoryTopology": `{"Channels":8,"Interleave":"Auto"}`,
	}
	set, err := drv.BIOSSettings(ctx)
	if err != nil {
		t.Fatalf("BIOSSettings: %v", err)
	}
	if !reflect.DeepEqual(set.Attributes, want) || len(set.Pending) != 0 {
		t.Fatalf("BIOSSettings = %+v;\nwant attributes %v, nothing pending", set, want)
	}
	// The read does not depend on map order: fresh connections read the same.
	for range 5 {
		d, err := redfishDial(t, srv)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := d.BIOSSettings(ctx); err != nil || !reflect.DeepEqual(again, set) {
			t.Fatalf("BIOSSettings on another connection = %+v, %v; want %+v", again, err, set)
		}
	}

	reg, err := drv.BIOSRegistry(ctx)
	if err != nil {
		t.Fatalf("BIOSRegistry: %v", err)
	}
	for name, typ := range map[string]bmc.BIOSAttributeType{
		"BootMode": bmc.BIOSEnumeration, "SriovEnable": bmc.BIOSBoolean, "PxeRetryCount": bmc.BIOSInteger,
		"AssetTag": bmc.BIOSString, "BootOrder": "", "MemoryTopology": "",
	} {
		def, ok := reg.Lookup(name)
		if !ok || def.Type != typ {
			t.Errorf("registry %s = %+v (%v); want type %q", name, def, ok, typ)
		}
	}
	if def, _ := reg.Lookup("BootMode"); !reflect.DeepEqual(def.Values, []string{"Uefi", "Bios"}) {
		t.Errorf("BootMode values %v, want the AllowableValues [Uefi Bios]", def.Values)
	}

	// Structured attributes: refused before any request, naming them.
	for _, name := range []string{"BootOrder", "MemoryTopology"} {
		srv.ClearRequests()
		_, err := drv.SetBIOSAttributes(ctx, bmc.BIOSAttributes{name: `["Hdd"]`})
		var ae *bmc.BIOSAttributeError
		if !errors.As(err, &ae) || ae.Attribute != name || bmc.IsTransient(err) || !strings.Contains(err.Error(), "no type is known") {
			t.Fatalf("SetBIOSAttributes(%s): %v; want a permanent BIOSAttributeError naming it, type unknown", name, err)
		}
		requireOneLine(t, "SetBIOSAttributes("+name+")", err, 400)
		if reqs := srv.Requests(); len(reqs) != 0 {
			t.Fatalf("SetBIOSAttributes(%s) sent %d requests; want none", name, len(reqs))
		}
	}

	// A typed one: sent as a plain value, pending until the boot.
	srv.SetPower("1", "On")
	srv.ClearRequests()
	res, err := drv.SetBIOSAttributes(ctx, bmc.BIOSAttributes{"BootMode": "Bios", "SriovEnable": "true"})
	if err != nil || !res.RebootRequired {
		t.Fatalf("SetBIOSAttributes = %+v, %v; want RebootRequired", res, err)
	}
	var patches []string
	for _, r := range srv.Requests() {
		if r.Method == "PATCH" {
			patches = append(patches, r.Body)
		}
	}
	if len(patches) != 1 || !strings.Contains(patches[0], `"BootMode":"Bios"`) || !strings.Contains(patches[0], `"SriovEnable":true`) {
		t.Fatalf("PATCH bodies %q: want one with plain values", patches)
	}
	if err := drv.SetPower(ctx, bmc.PowerActionCycle); err != nil {
		t.Fatal(err)
	}
	set, err = drv.BIOSSettings(ctx)
	if err != nil || set.Attributes["BootMode"] != "Bios" || set.Attributes["SriovEnable"] != "true" || len(set.Pending) != 0 {
		t.Fatalf("after the boot: %+v, %v; want BootMode Bios, SriovEnable true, nothing pending", set, err)
	}
}

// OpenBMC: a Bios without attributes (and no registry) is no BIOS: every
// call fails with bmc.ErrNotSupported, permanently, and nothing is sent.
func TestBIOSNoAttributesNotSupported(t *testing.T) {
	ctx := t.Context()
	srv, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorOpenBMC), testOptions(), "1", false)
	_, err := drv.BIOSSettings(ctx)
	requireNotSupportedBIOS(t, "BIOSSettings", err)
	_, err = drv.BIOSRegistry(ctx)
	requireNotSupportedBIOS(t, "BIOSRegistry", err)
	_, err = drv.SetBIOSAttributes(ctx, bmc.BIOSAttributes{"BootMode": "Uefi"})
	requireNotSupportedBIOS(t, "SetBIOSAttributes", err)
	noPatch(t, srv)
}

func requireNotSupportedBIOS(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, bmc.ErrNotSupported) || bmc.IsTransient(err) || !strings.Contains(err.Error(), "no attributes") {
		t.Fatalf("%s: %v; want a permanent bmc.ErrNotSupported saying the Bios has no attributes", what, err)
	}
	requireOneLine(t, what, err, 300)
}

// A registry file whose Location answers 404 falls back to the registry
// made from the current attributes: read once (the 404 is not asked
// again), unknown attributes and wrong types still refused before any
// request, and a change sent typed as the current value.
func TestBIOSRegistryLocation404FallsBack(t *testing.T) {
	ctx := t.Context()
	srv, drv := dialSim(t, redfishtest.Config{BIOSRegistryNotFound: true}, testOptions(), "1", false)
	reg, err := drv.BIOSRegistry(ctx)
	if err != nil {
		t.Fatalf("BIOSRegistry: %v; want the registry made from the attributes", err)
	}
	notFound := 0
	for _, r := range srv.Requests() {
		if r.Status == 404 {
			notFound++
		}
	}
	if notFound != 1 {
		t.Fatalf("%d answers 404; want one (the registry's Location): %v", notFound, summary(srv.Requests()))
	}
	if reg.ID != "BiosAttributeRegistry.v1_0_0" || len(reg.Attributes) != 6 {
		t.Fatalf("registry %+v; want the 6 current attributes under the name the Bios gives", reg)
	}
	if def, _ := reg.Lookup("PxeRetryCount"); def.Type != bmc.BIOSInteger {
		t.Fatalf("PxeRetryCount: %+v; want Integer (its JSON type)", def)
	}
	srv.ClearRequests()
	if _, err := drv.BIOSRegistry(ctx); err != nil || len(srv.Requests()) != 0 {
		t.Fatalf("BIOSRegistry again: %v, %d requests; want it cached", err, len(srv.Requests()))
	}
	for _, bad := range []bmc.BIOSAttributes{{"NoSuchKnob": "1"}, {"PxeRetryCount": "seven"}} {
		_, err := drv.SetBIOSAttributes(ctx, bad)
		if !errors.Is(err, bmc.ErrInvalidBIOSAttribute) {
			t.Fatalf("SetBIOSAttributes(%v): %v; want it refused", bad, err)
		}
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Fatalf("refused attributes sent %v", summary(reqs))
	}
	if _, err := drv.SetBIOSAttributes(ctx, bmc.BIOSAttributes{"PxeRetryCount": "7"}); err != nil {
		t.Fatal(err)
	}
	if _, pending := srv.BIOSAttributes("1"); pending["PxeRetryCount"] != int64(7) {
		t.Fatalf("pending %v; want PxeRetryCount 7 (sent as a number)", pending)
	}
}

// BIOS error messages are one line, bounded, and the same on every run:
// several invalid attributes (the refusal names them sorted, on one line),
// a long multi-line value (quoted and cut), and a Cray EX structured
// attribute among them.
func TestBIOSErrorMessagesOneLineBoundedStable(t *testing.T) {
	ctx := t.Context()
	long := strings.Repeat("rack 7\nrow 3 ", 1000) + "TAIL"
	for _, c := range []struct {
		name   string
		cfg    redfishtest.Config
		attrs  bmc.BIOSAttributes
		first  string
		names  []string
		max    int
		absent string
	}{
		{"several", redfishtest.Config{}, bmc.BIOSAttributes{"Zeta": "1", "BootMode": "Legacy", "Alpha": "x", "PxeRetryCount": "99", "SriovEnable": "on", "AssetTag": "a", "Mu": "2"},
			"Alpha", []string{"Alpha", "BootMode", "Mu", "PxeRetryCount", "SriovEnable"}, 1200, "Zeta"},
		{"long value", redfishtest.Config{}, bmc.BIOSAttributes{"AssetTag": long}, "AssetTag", []string{"AssetTag"}, 400, "TAIL"},
		{"cray-ex", redfishtest.VendorConfig(redfishtest.VendorCrayEX), bmc.BIOSAttributes{"MemoryTopology": long, "BootOrder": "[]", "BootMode": "Legacy"},
			"BootMode", []string{"BootMode", "BootOrder", "MemoryTopology"}, 1000, "TAIL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redfishtest.NewServer(c.cfg)
			t.Cleanup(srv.Close)
			var first string
			for i := range 10 {
				// A fresh connection each time: nothing cached, maps
				// walked afresh.
				d, err := redfishDial(t, srv)
				if err != nil {
					t.Fatal(err)
				}
				_, err = d.SetBIOSAttributes(ctx, c.attrs)
				var ae *bmc.BIOSAttributeError
				if !errors.As(err, &ae) || ae.Attribute != c.first {
					t.Fatalf("SetBIOSAttributes: %v; want a BIOSAttributeError naming %s first", err, c.first)
				}
				requireOneLine(t, "SetBIOSAttributes", err, c.max)
				msg := err.Error()
				if i == 0 {
					first = msg
					t.Logf("%d bytes: %s", len(msg), msg)
				} else if msg != first {
					t.Fatalf("run %d: %q\nrun 0: %q", i, msg, first)
				}
				last := -1
				for _, n := range c.names {
					k := strings.Index(msg, "attribute "+n)
					if k < last {
						t.Fatalf("error %q: %s missing or out of order (want %v)", msg, n, c.names)
					}
					last = k
				}
				if strings.Contains(msg, c.absent) {
					t.Fatalf("error %q contains %q", msg, c.absent)
				}
			}
			noPatch(t, srv)
		})
	}
}
