package redfish_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// TestBIOSInvalidSendsNothing: an unknown attribute or a value outside
// the registry is refused naming the attribute, and nothing is sent (not
// even a read, once the registry was read).
func TestBIOSInvalidSendsNothing(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
	if _, err := drv.BIOSRegistry(ctx); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		attrs bmc.BIOSAttributes
		name  string
	}{
		{bmc.BIOSAttributes{"BootMode": "Bios", "NoSuchKnob": "1"}, "NoSuchKnob"},
		{bmc.BIOSAttributes{"BootMode": "Legacy"}, "BootMode"},
		{bmc.BIOSAttributes{"PxeRetryCount": "11"}, "PxeRetryCount"},
		{bmc.BIOSAttributes{"SriovEnable": "1"}, "SriovEnable"},
		{bmc.BIOSAttributes{"SystemModelName": "x"}, "SystemModelName"},
	} {
		srv.ClearRequests()
		_, err := drv.SetBIOSAttributes(ctx, bad.attrs)
		var ae *bmc.BIOSAttributeError
		if !errors.As(err, &ae) || ae.Attribute != bad.name || bmc.IsTransient(err) {
			t.Errorf("SetBIOSAttributes(%v): error %v; want a permanent BIOSAttributeError naming %s", bad.attrs, err, bad.name)
		}
		if reqs := srv.Requests(); len(reqs) != 0 {
			t.Errorf("SetBIOSAttributes(%v) sent %d requests, first %s %s; want none", bad.attrs, len(reqs), reqs[0].Method, reqs[0].Path)
		}
	}
}

// TestBIOSPendingUntilBoot: a PATCH to the settings object is pending
// (with ApplyTime OnReset), survives a power off, and reads back after the
// next boot; setting it again is idempotent (no PATCH). Both settings
// object shapes (Dell's requested-only, iLO's full copy).
func TestBIOSPendingUntilBoot(t *testing.T) {
	for _, mode := range []redfishtest.BIOSMode{redfishtest.BIOSOnReset, redfishtest.BIOSFullSettingsCopy} {
		t.Run(map[redfishtest.BIOSMode]string{redfishtest.BIOSOnReset: "OnReset", redfishtest.BIOSFullSettingsCopy: "FullSettingsCopy"}[mode], func(t *testing.T) {
			ctx := context.Background()
			srv, drv := dialSim(t, redfishtest.Config{BIOS: mode}, testOptions(), "", false)
			srv.SetPower("1", "On")
			want := bmc.BIOSAttributes{"BootMode": "Bios", "PxeRetryCount": "7", "SriovEnable": "true", "AssetTag": "rack-7"}
			srv.ClearRequests()
			res, err := drv.SetBIOSAttributes(ctx, want)
			if err != nil {
				t.Fatal(err)
			}
			if !res.RebootRequired || !reflect.DeepEqual(res.Pending, want) {
				t.Fatalf("SetBIOSAttributes = %+v; want RebootRequired, Pending %v", res, want)
			}
			var patch *redfishtest.Request
			for _, r := range srv.Requests() {
				if r.Method == "PATCH" {
					patch = &r
				}
			}
			if patch == nil || !strings.HasSuffix(patch.Path, "/Bios/Settings") {
				t.Fatalf("no PATCH of the settings object: %+v", srv.Requests())
			}
			// Typed as the registry says; ApplyTime where listed.
			for _, s := range []string{`"PxeRetryCount":7`, `"SriovEnable":true`, `"BootMode":"Bios"`} {
				if !strings.Contains(patch.Body, s) {
					t.Errorf("PATCH body %s lacks %s", patch.Body, s)
				}
			}
			if hasApply := strings.Contains(patch.Body, `"ApplyTime":"OnReset"`); hasApply != (mode == redfishtest.BIOSOnReset) {
				t.Errorf("PATCH body %s: ApplyTime sent=%t, want it only where SupportedApplyTimes lists OnReset", patch.Body, hasApply)
			}
			cur, pending := srv.BIOSAttributes("1")
			if cur["BootMode"] != "Uefi" || pending["BootMode"] != "Bios" {
				t.Fatalf("before the boot: current %v, pending %v", cur, pending)
			}
			set, err := drv.BIOSSettings(ctx)
			if err != nil || !reflect.DeepEqual(set.Pending, want) {
				t.Fatalf("BIOSSettings = %+v, %v; want Pending %v", set, err, want)
			}
			// Idempotent while pending: no PATCH.
			srv.ClearRequests()
			res, err = drv.SetBIOSAttributes(ctx, want)
			if err != nil || !res.RebootRequired {
				t.Fatalf("SetBIOSAttributes again = %+v, %v", res, err)
			}
			for _, r := range srv.Requests() {
				if r.Method != "GET" {
					t.Errorf("SetBIOSAttributes of pending values sent %s %s", r.Method, r.Path)
				}
			}
			// Off does not apply it; the boot does.
			if err := drv.SetPower(ctx, bmc.PowerActionOff); err != nil {
				t.Fatal(err)
			}
			if _, p := srv.BIOSAttributes("1"); len(p) == 0 {
				t.Fatal("a power off applied the pending settings; only a boot does")
			}
			if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
				t.Fatal(err)
			}
			set, err = drv.BIOSSettings(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := want.Differing(set.Attributes); len(d) > 0 || len(set.Pending) > 0 {
				t.Fatalf("after the boot: %+v; want %v applied, nothing pending", set, want)
			}
		})
	}
}

// TestBIOSRequests counts what each call costs.
func TestBIOSRequests(t *testing.T) {
	ctx := context.Background()
	_, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
	count := func(what string, want int64, f func() error) {
		t.Helper()
		before := drv.Stats().Requests
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := drv.Stats().Requests - before; got != want {
			t.Errorf("%s took %d requests, want %d", what, got, want)
		}
	}
	ctxScope := bmc.WithReadScope(ctx)
	count("BIOSSettings", 2, func() error { _, err := drv.BIOSSettings(ctxScope); return err })
	count("BIOSRegistry (first)", 3, func() error { _, err := drv.BIOSRegistry(ctxScope); return err })
	count("BIOSRegistry (cached)", 0, func() error { _, err := drv.BIOSRegistry(ctxScope); return err })
	// Read Bios and settings, PATCH, read both back.
	count("SetBIOSAttributes", 5, func() error {
		_, err := drv.SetBIOSAttributes(ctxScope, bmc.BIOSAttributes{"BootMode": "Bios"})
		return err
	})
}
