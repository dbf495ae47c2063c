package redfish_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// changing returns the state-changing requests (anything but GET) the
// simulator logged.
func changing(srv *redfishtest.Server) []redfishtest.Request {
	var out []redfishtest.Request
	for _, r := range srv.Requests() {
		if r.Method != "GET" && r.Method != "HEAD" && !strings.HasSuffix(r.Path, "/Sessions") {
			out = append(out, r)
		}
	}
	return out
}

// boot powers the system off and on through the driver: the boot that
// applies pending changes.
func boot(t *testing.T, drv *redfish.Driver) {
	t.Helper()
	ctx := context.Background()
	for _, a := range []bmc.PowerAction{bmc.PowerActionOff, bmc.PowerActionOn} {
		if err := drv.SetPower(ctx, a); err != nil {
			t.Fatalf("SetPower(%s): %v", a, err)
		}
	}
}

// TestSecureBootPendingUntilBoot: enabling Secure Boot is pending until the
// next boot on the DMTF shape (SecureBootEnable at once, CurrentBoot after)
// and on Dell's (a settings object, OnReset), reads back applied after the
// boot, and a second request sends nothing; on an immediate BMC it applies
// at once.
func TestSecureBootPendingUntilBoot(t *testing.T) {
	for _, c := range []struct {
		name    string
		mode    redfishtest.SecureBootApply
		patched string // suffix of the PATCHed path
		pending bool
	}{
		{"NextBoot", redfishtest.SecureBootNextBoot, "/SecureBoot", true},
		{"SettingsObject", redfishtest.SecureBootSettingsObject, "/SecureBoot/Settings", true},
		{"Immediate", redfishtest.SecureBootImmediate, "/SecureBoot", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			srv, drv := dialSim(t, redfishtest.Config{SecureBoot: c.mode}, testOptions(), "", false)
			if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
				t.Fatal(err)
			}
			before, err := drv.SecureBoot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if before.Enabled || before.Pending != nil || before.Mode != bmc.SecureBootUserMode || len(before.ResetKeys) != 3 {
				t.Fatalf("initial state %v (reset keys %v); want disabled, nothing pending, UserMode, 3 resets", before, before.ResetKeys)
			}
			srv.ClearRequests()
			got, err := drv.SetSecureBoot(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			reqs := changing(srv)
			if len(reqs) != 1 || reqs[0].Method != "PATCH" || !strings.HasSuffix(reqs[0].Path, c.patched) || !strings.Contains(reqs[0].Body, `"SecureBootEnable":true`) {
				t.Fatalf("requests %+v; want one PATCH of ...%s with SecureBootEnable true", reqs, c.patched)
			}
			if hasApply := strings.Contains(reqs[0].Body, `"ApplyTime":"OnReset"`); hasApply != (c.mode == redfishtest.SecureBootSettingsObject) {
				t.Errorf("PATCH body %s: ApplyTime sent=%t, want it only to the settings object", reqs[0].Body, hasApply)
			}
			if c.pending {
				if got.Pending == nil || !*got.Pending || got.Applied(true) || !got.NextBoot() {
					t.Fatalf("after SetSecureBoot(true): %v; want pending on, not applied", got)
				}
				srv.ClearRequests()
				if again, err := drv.SetSecureBoot(ctx, true); err != nil || !again.NextBoot() {
					t.Fatalf("SetSecureBoot(true) again: %v, %v", again, err)
				}
				if reqs := changing(srv); len(reqs) != 0 {
					t.Errorf("SetSecureBoot(true) while pending sent %+v; want nothing", reqs)
				}
				boot(t, drv)
			}
			after, err := drv.SecureBoot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !after.Applied(true) || after.CurrentBoot != bmc.SecureBootCurrentEnabled {
				t.Fatalf("after the boot: %v; want enabled, current boot Enabled, nothing pending", after)
			}
			if en, cur, _, held := srv.SecureBoot("1"); !en || !cur || held != nil {
				t.Errorf("simulator holds enabled=%t current=%t held=%v", en, cur, held)
			}
			// And back off the same way.
			if got, err = drv.SetSecureBoot(ctx, false); err != nil || got.NextBoot() {
				t.Fatalf("SetSecureBoot(false): %v, %v", got, err)
			}
			if c.pending {
				boot(t, drv)
			}
			if after, err = drv.SecureBoot(ctx); err != nil || !after.Applied(false) {
				t.Fatalf("after turning it off: %v, %v", after, err)
			}
		})
	}
}

// TestSecureBootSetupModeAndKeys: deleting the platform key enters
// SetupMode, where enabling is refused before any PATCH; a reset the BMC
// does not list is NotSupported with nothing sent; ResetAllKeysToDefault
// leaves SetupMode.
func TestSecureBootSetupModeAndKeys(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
	srv.ClearRequests()
	s, err := drv.ResetSecureBootKeys(ctx, bmc.SecureBootDeletePK)
	if err != nil || s.Mode != bmc.SecureBootSetupMode {
		t.Fatalf("ResetSecureBootKeys(DeletePK) = %v, %v; want SetupMode", s, err)
	}
	if reqs := changing(srv); len(reqs) != 1 || reqs[0].Method != "POST" || !strings.Contains(reqs[0].Body, `"ResetKeysType":"DeletePK"`) {
		t.Fatalf("requests %+v; want one POST of ResetKeys DeletePK", reqs)
	}
	srv.ClearRequests()
	_, err = drv.SetSecureBoot(ctx, true)
	var oe *bmc.OpError
	if !errors.Is(err, bmc.ErrSecureBootSetupMode) || !errors.As(err, &oe) || bmc.IsTransient(err) {
		t.Fatalf("SetSecureBoot(true) in SetupMode: %v; want a permanent OpError wrapping ErrSecureBootSetupMode", err)
	}
	for _, kind := range []bmc.SecureBootResetKeys{bmc.SecureBootResetDBX, "NoSuchReset"} {
		if _, err := drv.ResetSecureBootKeys(ctx, kind); err == nil || (kind.Valid() && !errors.Is(err, bmc.ErrNotSupported)) {
			t.Errorf("ResetSecureBootKeys(%s): %v; want it refused", kind, err)
		}
	}
	if reqs := changing(srv); len(reqs) != 0 {
		t.Fatalf("refused calls sent %+v; want nothing", reqs)
	}
	if s, err = drv.ResetSecureBootKeys(ctx, bmc.SecureBootResetAllKeysToDefault); err != nil || s.Mode != bmc.SecureBootUserMode {
		t.Fatalf("ResetSecureBootKeys(ResetAllKeysToDefault) = %v, %v; want UserMode", s, err)
	}
}

// TestSecureBootNotSupported: a system without SecureBoot answers
// NotSupported to every call, with no request that changes state.
func TestSecureBootNotSupported(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialSim(t, redfishtest.Config{SecureBoot: redfishtest.SecureBootNone}, testOptions(), "", false)
	srv.ClearRequests()
	_, err1 := drv.SecureBoot(ctx)
	_, err2 := drv.SetSecureBoot(ctx, true)
	_, err3 := drv.ResetSecureBootKeys(ctx, bmc.SecureBootResetAllKeysToDefault)
	for i, err := range []error{err1, err2, err3} {
		var oe *bmc.OpError
		if !errors.Is(err, bmc.ErrNotSupported) || !errors.As(err, &oe) {
			t.Errorf("call %d: %v; want an OpError wrapping ErrNotSupported", i, err)
		}
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("sent %+v; want nothing (the system links no SecureBoot)", reqs)
	}
}

// TestSecureBootRequests pins the request counts of docs/secure-boot-boot-order.md.
func TestSecureBootRequests(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		mode            redfishtest.SecureBootApply
		read, set, noop int64
	}{
		{redfishtest.SecureBootNextBoot, 1, 3, 1},
		{redfishtest.SecureBootSettingsObject, 2, 5, 2},
	} {
		_, drv := dialSim(t, redfishtest.Config{SecureBoot: c.mode}, testOptions(), "", false)
		for _, step := range []struct {
			what string
			want int64
			f    func() error
		}{
			{"SecureBoot", c.read, func() error { _, err := drv.SecureBoot(ctx); return err }},
			{"SetSecureBoot", c.set, func() error { _, err := drv.SetSecureBoot(ctx, true); return err }},
			{"SetSecureBoot again", c.noop, func() error { _, err := drv.SetSecureBoot(ctx, true); return err }},
		} {
			before := drv.Stats().Requests
			if err := step.f(); err != nil {
				t.Fatal(err)
			}
			if got := drv.Stats().Requests - before; got != step.want {
				t.Errorf("mode %d: %s took %d requests, want %d", c.mode, step.what, got, step.want)
			}
		}
	}
}

// TestSecureBootBootOrderNeeds: the preflight refuses what the system does
// not offer, with reads only, and passes what it does.
func TestSecureBootBootOrderNeeds(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialSim(t, redfishtest.Config{SecureBoot: redfishtest.SecureBootNone, BootOrder: redfishtest.BootOrderNone, NoHTTPBootURI: true}, testOptions(), "", false)
	srv.ClearRequests()
	for _, n := range []bmc.Need{{SecureBoot: &bmc.SecureBootNeed{}}, {SecureBoot: &bmc.SecureBootNeed{ResetKeys: bmc.SecureBootDeletePK}}, {BootOrder: &bmc.BootOrderNeed{}}} {
		if err := drv.CheckNeed(ctx, n); !errors.Is(err, bmc.ErrNotSupported) {
			t.Errorf("CheckNeed(%s) without the resource: %v; want ErrNotSupported", n, err)
		}
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("the checks sent %+v; want none (the system read at dial says it all)", reqs)
	}
	_, drv = dialSim(t, redfishtest.Config{NoHTTPBootURI: true}, testOptions(), "", false)
	for _, c := range []struct {
		n    bmc.Need
		want bool
	}{
		{bmc.Need{SecureBoot: &bmc.SecureBootNeed{}}, true},
		{bmc.Need{SecureBoot: &bmc.SecureBootNeed{ResetKeys: bmc.SecureBootDeletePK}}, true},
		{bmc.Need{SecureBoot: &bmc.SecureBootNeed{ResetKeys: bmc.SecureBootResetDBX}}, false},
		{bmc.Need{BootOrder: &bmc.BootOrderNeed{}}, true},
		{bmc.Need{BootOrder: &bmc.BootOrderNeed{HTTPBootURI: true}}, false},
	} {
		n, want := c.n, c.want
		if err := drv.CheckNeed(ctx, n); (err == nil) != want || (err != nil && !errors.Is(err, bmc.ErrNotSupported)) {
			t.Errorf("CheckNeed(%s) = %v; want passed=%t", n, err, want)
		}
	}
}
