package redfish_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
)

// logBuffer collects every log line (all verbosity levels).
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) options(o redfish.Options) redfish.Options {
	o.Logger = funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = append(b.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
	return o
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// since returns the requests logged after the first n.
func since(srv *redfishtest.Server, n int) []redfishtest.Request {
	return srv.Requests()[n:]
}

func summary(reqs []redfishtest.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

func TestOneSessionOneConnection(t *testing.T) {
	for _, mode := range []struct {
		name string
		cfg  redfishtest.Config
	}{
		{"CreatedWithBody", redfishtest.Config{Sessions: redfishtest.SessionsCreatedWithBody}},
		{"NoContent", redfishtest.Config{Sessions: redfishtest.SessionsNoContent}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			srv, drv := dialSim(t, mode.cfg, testOptions(), "1", true)
			ctx := context.Background()
			for range 10 {
				if _, err := drv.PowerState(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
				t.Fatal(err)
			}
			st := drv.Stats()
			if st.Logins != 1 || st.Connections != 1 || srv.Logins() != 1 || srv.Connections() != 1 {
				t.Fatalf("driver stats %+v, server logins %d connections %d; want exactly one login and one connection", st, srv.Logins(), srv.Connections())
			}
			if int(st.Requests) != len(srv.Requests()) {
				t.Fatalf("driver counted %d requests, server logged %d", st.Requests, len(srv.Requests()))
			}
			if srv.ActiveSessions() != 1 {
				t.Fatalf("active sessions = %d, want 1", srv.ActiveSessions())
			}
			if err := drv.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if srv.ActiveSessions() != 0 {
				t.Fatalf("after Close: %d active sessions, want 0 (logged out)", srv.ActiveSessions())
			}
			if err := drv.Close(ctx); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if _, err := drv.PowerState(ctx); err == nil || bmc.IsTransient(err) {
				t.Fatalf("PowerState after Close = %v, want a permanent error", err)
			}
		})
	}
}

func TestBasicAuthWithoutSessionService(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{Sessions: redfishtest.SessionsNone}, testOptions(), "", false)
	if _, err := drv.PowerState(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "Session") {
			t.Fatalf("request %s %s on a BMC without SessionService", r.Method, r.Path)
		}
	}
	if st := drv.Stats(); st.Logins != 0 {
		t.Fatalf("Logins = %d with basic auth, want 0", st.Logins)
	}
}

func TestSessionExpiryLogsInAgainOnce(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "1", false)
	ctx := context.Background()
	srv.ExpireSessions()
	if _, err := drv.PowerState(ctx); err != nil {
		t.Fatalf("PowerState after the session expired: %v", err)
	}
	if got := drv.Stats().Logins; got != 2 {
		t.Fatalf("Logins = %d, want 2 (one re-login)", got)
	}

	// A BMC that rejects the new session as well: fail clearly, no loop.
	srv.SetFaults(0, func(method, path string) redfishtest.Fault {
		if method == "GET" {
			srv.ExpireSessions()
		}
		return redfishtest.FaultNone
	})
	n := len(srv.Requests())
	_, err := drv.PowerState(ctx)
	if !errors.Is(err, bmc.ErrUnauthorized) || bmc.IsTransient(err) {
		t.Fatalf("PowerState with every session rejected = %v, want permanent ErrUnauthorized", err)
	}
	if !strings.Contains(err.Error(), "logging in again") {
		t.Errorf("error %q does not say the re-login was tried", err)
	}
	if got := summary(since(srv, n)); len(got) != 3 {
		t.Fatalf("requests = %v, want GET, POST session, GET", got)
	}
}

func TestWrongCredentials(t *testing.T) {
	const password = "s3cret-Pa55word"
	for _, mode := range []redfishtest.SessionMode{redfishtest.SessionsCreatedWithBody, redfishtest.SessionsNone} {
		srv := redfishtest.NewServer(redfishtest.Config{Sessions: mode, Password: "right-password"})
		t.Cleanup(srv.Close)
		var logs logBuffer
		_, err := redfish.NewDialer(logs.options(testOptions())).Dial(context.Background(), srv.Endpoint("1"),
			bmc.Credentials{Username: "admin", Password: password})
		if err == nil {
			t.Fatal("Dial with a wrong password succeeded")
		}
		if !errors.Is(err, bmc.ErrUnauthorized) || bmc.IsTransient(err) {
			t.Fatalf("error %v: want permanent bmc.ErrUnauthorized", err)
		}
		var oe *bmc.OpError
		if !errors.As(err, &oe) || oe.Endpoint != srv.Endpoint("1").String() {
			t.Fatalf("error %#v does not name the BMC %s", err, srv.Endpoint("1"))
		}
		msg := err.Error()
		if !strings.Contains(msg, srv.Endpoint("1").String()) || !strings.Contains(msg, "rejected the credentials") || !strings.Contains(msg, "401") {
			t.Errorf("message %q should name the BMC, the cause and the status", msg)
		}
		if strings.Contains(msg, password) || strings.Contains(logs.String(), password) {
			t.Fatalf("password leaked: error %q, logs %q", msg, logs.String())
		}
		logins := 0
		for _, r := range srv.Requests() {
			if r.Method == "POST" {
				logins++
			}
		}
		if mode == redfishtest.SessionsCreatedWithBody && logins != 1 {
			t.Fatalf("%d session attempts; want 1 (bad credentials are not retried)", logins)
		}
		t.Logf("mode %d: %s", mode, msg)
	}
}

func TestTLSVerification(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	ctx := context.Background()
	ep := srv.Endpoint("1")
	_, err := redfish.NewDialer(testOptions()).Dial(ctx, ep, srv.Credentials())
	if err == nil || bmc.IsTransient(err) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Dial of a self-signed BMC without CA = %v; want a permanent certificate error", err)
	}
	o := testOptions()
	o.InsecureSkipVerify = true
	d, err := redfish.NewDialer(o).Dial(ctx, ep, srv.Credentials())
	if err != nil {
		t.Fatalf("InsecureSkipVerify: %v", err)
	}
	_ = d.Close(ctx)
	o = testOptions()
	o.CACertPEM = srv.CACertPEM()
	d, err = redfish.NewDialer(o).Dial(ctx, ep, srv.Credentials())
	if err != nil {
		t.Fatalf("CA bundle: %v", err)
	}
	_ = d.Close(ctx)
	o.CACertPEM = []byte("not a certificate")
	if _, err := redfish.NewDialer(o).Dial(ctx, ep, srv.Credentials()); err == nil || !strings.Contains(err.Error(), "CACertPEM") {
		t.Fatalf("bad CA bundle: %v, want an error naming CACertPEM", err)
	}
}

func TestSystemSelection(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 3})
	t.Cleanup(srv.Close)
	ctx := context.Background()
	dialer := redfish.NewDialer(testOptions())
	_, err := dialer.Dial(ctx, srv.Endpoint(""), srv.Credentials())
	if err == nil || !strings.Contains(err.Error(), "/redfish/v1/Systems/2") || bmc.IsTransient(err) {
		t.Fatalf("Dial without a system on a 3-system BMC = %v; want a permanent error listing the systems", err)
	}
	_, err = dialer.Dial(ctx, srv.Endpoint("7"), srv.Credentials())
	if err == nil || !strings.Contains(err.Error(), `no system "7"`) {
		t.Fatalf("Dial of system 7 = %v; want no system", err)
	}
	d, err := dialer.DialDriver(ctx, srv.Endpoint(redfishtest.SystemUUID(3)), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	if err := d.SetPower(ctx, bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	if srv.System("3").Power != "On" || srv.System("1").Power != "Off" {
		t.Fatal("selecting by UUID did not drive system 3")
	}
	if _, err := dialer.Dial(ctx, bmc.Endpoint{Protocol: "ipmi", Host: "127.0.0.1"}, srv.Credentials()); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("Dial of an ipmi endpoint = %v, want ErrNotSupported", err)
	}
}

func TestRequestsPerOperation(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "1", false)
	ctx := context.Background()
	sys := "/redfish/v1/Systems/1"
	check := func(what string, want []string, fn func() error) {
		t.Helper()
		n := len(srv.Requests())
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := summary(since(srv, n)); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s sent %v, want %v", what, got, want)
		}
	}
	check("PowerState", []string{"GET " + sys}, func() error { _, err := drv.PowerState(ctx); return err })
	check("off on an off server", []string{"GET " + sys}, func() error { return drv.SetPower(ctx, bmc.PowerActionOff) })
	check("on", []string{"GET " + sys, "POST " + sys + "/Actions/ComputerSystem.Reset"}, func() error { return drv.SetPower(ctx, bmc.PowerActionOn) })
	check("on on an on server", []string{"GET " + sys}, func() error { return drv.SetPower(ctx, bmc.PowerActionOn) })
	check("boot override", []string{"PATCH " + sys, "GET " + sys}, func() error {
		return drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeUEFI})
	})
}

func TestBootPatchBodyAndIfMatch(t *testing.T) {
	for _, c := range []struct {
		name       string
		mode       redfishtest.ETagMode
		wantPatch  int
		secondSent bool // If-Match on the second override
	}{
		{"Optional", redfishtest.ETagsOptional, 1, true},
		{"Required", redfishtest.ETagsRequired, 1, true},
		{"Rejected", redfishtest.ETagsRejected, 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, drv := dialSim(t, redfishtest.Config{ETags: c.mode}, testOptions(), "1", false)
			ctx := context.Background()
			n := len(srv.Requests())
			if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
				t.Fatal(err)
			}
			var patches []redfishtest.Request
			for _, r := range since(srv, n) {
				if r.Method == "PATCH" {
					patches = append(patches, r)
				}
			}
			if len(patches) != c.wantPatch {
				t.Fatalf("%d PATCH requests, want %d: %+v", len(patches), c.wantPatch, patches)
			}
			var body map[string]map[string]any
			if err := json.Unmarshal([]byte(patches[len(patches)-1].Body), &body); err != nil {
				t.Fatal(err)
			}
			if len(body) != 1 || len(body["Boot"]) != 2 || body["Boot"]["BootSourceOverrideTarget"] != "Pxe" || body["Boot"]["BootSourceOverrideEnabled"] != "Once" {
				t.Fatalf("PATCH body %s; want only Boot.BootSourceOverrideTarget=Pxe and Enabled=Once", patches[len(patches)-1].Body)
			}
			if c.mode == redfishtest.ETagsRejected && (patches[0].IfMatch == "" || patches[1].IfMatch != "") {
				t.Fatalf("want the first PATCH with If-Match, the retry without: %+v", patches)
			}
			n = len(srv.Requests())
			if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDeviceDisk, Persistent: true}); err != nil {
				t.Fatal(err)
			}
			for _, r := range since(srv, n) {
				if r.Method == "PATCH" && (r.IfMatch != "") != c.secondSent {
					t.Fatalf("second override: PATCH If-Match %q; want sent=%t", r.IfMatch, c.secondSent)
				}
			}
			if st := srv.System("1"); st.BootTarget != "Hdd" || st.BootEnabled != "Continuous" {
				t.Fatalf("BMC holds %s/%s, want Hdd/Continuous", st.BootTarget, st.BootEnabled)
			}
		})
	}
}

func TestBootOnceIgnoredOrReverted(t *testing.T) {
	ctx := context.Background()
	_, drv := dialSim(t, redfishtest.Config{BootOnce: redfishtest.BootOnceIgnored}, testOptions(), "1", false)
	err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE})
	if !errors.Is(err, redfish.ErrOverrideNotApplied) || bmc.IsTransient(err) {
		t.Fatalf("Once on a BMC that ignores it = %v; want permanent ErrOverrideNotApplied", err)
	}
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE, Persistent: true}); err != nil {
		t.Fatalf("Continuous on that BMC: %v", err)
	}

	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	_, drv = dialSim(t, redfishtest.Config{BootOnce: redfishtest.BootOnceReverted, BootOnceRevertAfter: 10 * time.Second, Clock: clk}, testOptions(), "1", false)
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
		t.Fatalf("Once before the revert: %v", err)
	}
	clk.Advance(11 * time.Second)
	got, err := drv.BootOverride(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Device != bmc.BootDeviceNone {
		t.Fatalf("read back after the BMC reverted: %+v, want device none", got)
	}
}

func TestPowerFallbacks(t *testing.T) {
	ctx := context.Background()
	t.Run("CycleRefused", func(t *testing.T) {
		srv, drv := dialSim(t, redfishtest.Config{RefusedResetTypes: []string{"PowerCycle"}}, testOptions(), "1", false)
		srv.SetPower("1", "On")
		if err := drv.SetPower(ctx, bmc.PowerActionCycle); err != nil {
			t.Fatal(err)
		}
		st := srv.System("1")
		if st.Power != "On" || st.Resets["ForceOff"] != 1 || st.Resets["On"] != 1 || st.Boots != 1 {
			t.Fatalf("after a refused PowerCycle: %+v; want ForceOff then On, one boot", st)
		}
		// The refusal is remembered: the next cycle does not ask again.
		n := len(srv.Requests())
		if err := drv.SetPower(ctx, bmc.PowerActionCycle); err != nil {
			t.Fatal(err)
		}
		for _, r := range since(srv, n) {
			if strings.Contains(r.Body, "PowerCycle") {
				t.Fatalf("PowerCycle requested again after the BMC refused it: %v", summary(since(srv, n)))
			}
		}
	})
	t.Run("PendingChange", func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		srv, drv := dialSim(t, redfishtest.Config{PowerDelay: 5 * time.Second, DropDuringTransition: true, Clock: clk}, testOptions(), "1", false)
		if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
			t.Fatal(err)
		}
		if st, _ := drv.PowerState(ctx); st != bmc.PowerPoweringOn {
			t.Fatalf("state = %s, want PoweringOn", st)
		}
		n := len(srv.Requests())
		err := drv.SetPower(ctx, bmc.PowerActionOff)
		if err == nil || !bmc.IsTransient(err) {
			t.Fatalf("off while powering on = %v; want a transient error", err)
		}
		if got := summary(since(srv, n)); len(got) != 1 {
			t.Fatalf("off while powering on sent %v; want only the GET", got)
		}
		if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
			t.Fatalf("on while powering on: %v, want no-op success", err)
		}
		clk.Advance(5 * time.Second)
		if err := drv.SetPower(ctx, bmc.PowerActionOff); err != nil {
			t.Fatal(err)
		}
		if st := srv.System("1"); st.Dropped != 0 || st.Pending != "Off" {
			t.Fatalf("simulator: %+v; want the off pending and nothing dropped", st)
		}
	})
	t.Run("ActionInfo", func(t *testing.T) {
		srv, drv := dialSim(t, redfishtest.Config{ResetTypesInActionInfo: true, ResetTypes: []string{"On", "ForceOff"}}, testOptions(), "1", false)
		srv.SetPower("1", "On")
		if err := drv.SetPower(ctx, bmc.PowerActionSoftOff); !errors.Is(err, bmc.ErrNotSupported) {
			t.Fatalf("soft-off without GracefulShutdown = %v, want ErrNotSupported", err)
		}
		if err := drv.SetPower(ctx, bmc.PowerActionReset); err != nil {
			t.Fatalf("reset via ForceOff+On: %v", err)
		}
		if st := srv.System("1"); st.Resets["ForceOff"] != 1 || st.Resets["On"] != 1 {
			t.Fatalf("resets %v; want ForceOff and On", st.Resets)
		}
	})
}

func TestTransientAndTimeouts(t *testing.T) {
	ctx := context.Background()
	o := testOptions()
	o.RequestTimeout = 50 * time.Millisecond
	o.Retries = -1
	srv, drv := dialSim(t, redfishtest.Config{Faults: redfishtest.Faults{SlowDelay: time.Second}}, o, "1", false)
	for _, f := range []redfishtest.Fault{redfishtest.Fault500, redfishtest.Fault503, redfishtest.FaultReset, redfishtest.FaultSlow} {
		srv.SetFaults(0, func(string, string) redfishtest.Fault { return f })
		_, err := drv.PowerState(ctx)
		if err == nil || !bmc.IsTransient(err) {
			t.Errorf("fault %d: PowerState = %v; want a transient error", f, err)
		}
		err = drv.SetPower(ctx, bmc.PowerActionOn)
		if err == nil || !bmc.IsTransient(err) {
			t.Errorf("fault %d: SetPower = %v; want a transient error", f, err)
		}
	}
	srv.SetFaults(0, nil)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := drv.PowerState(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	if _, err := drv.PowerState(ctx); err != nil {
		t.Fatalf("after faults stopped: %v", err)
	}
}

func TestMediaBothLocations(t *testing.T) {
	ctx := context.Background()
	for _, loc := range []redfishtest.MediaLocation{redfishtest.MediaUnderManager, redfishtest.MediaUnderSystem} {
		srv, drv := dialSim(t, redfishtest.Config{Media: loc}, testOptions(), "1", false)
		if err := drv.InsertMedia(ctx, bmc.MediaCD, "http://127.0.0.1/a.iso"); err != nil {
			t.Fatal(err)
		}
		if err := drv.InsertMedia(ctx, bmc.MediaCD, "http://127.0.0.1/b.iso"); err != nil {
			t.Fatal(err)
		}
		if m := srv.Media("1", "CD"); !m.Inserted || m.Image != "http://127.0.0.1/b.iso" {
			t.Fatalf("location %d: simulator media %+v", loc, m)
		}
		if err := drv.InsertMedia(ctx, bmc.MediaCD, "not a url"); err == nil || bmc.IsTransient(err) {
			t.Fatalf("bad image URL: %v", err)
		}
	}
	_, drv := dialSim(t, redfishtest.Config{Media: redfishtest.MediaNone}, testOptions(), "1", false)
	if _, err := drv.MediaStatus(ctx, bmc.MediaCD); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("no virtual media: %v, want ErrNotSupported", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	_, drv := dialSim(t, redfishtest.Config{}, testOptions(), "1", false)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 20 {
		wg.Add(2)
		go func() { defer wg.Done(); _, err := drv.PowerState(ctx); errs <- err }()
		go func() { defer wg.Done(); errs <- drv.SetPower(ctx, bmc.PowerActionOn) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := drv.Stats(); st.Connections != 1 {
		t.Fatalf("connections = %d under concurrent use, want 1", st.Connections)
	}
}
