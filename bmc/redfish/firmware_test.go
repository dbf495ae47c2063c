package redfish_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
)

const imageSecret = "Zq7-presigned-secret"

// imageServer serves redfishtest firmware images over loopback: the
// version is in the path, /BIOS/2.0.0.bin, and the query must carry the
// pre-signed secret (401 otherwise), as an object store's URL does.
func imageServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("sig") != imageSecret {
			http.Error(w, "no signature", http.StatusUnauthorized)
			return
		}
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if len(parts) != 2 {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(redfishtest.FirmwareImage(parts[0], strings.TrimSuffix(parts[1], ".bin")))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func imageOf(srv *httptest.Server, component, version string) bmc.FirmwareImage {
	return bmc.FirmwareImage{URI: srv.URL + "/" + component + "/" + version + ".bin?sig=" + imageSecret, Component: component}
}

func TestConformanceFirmware(t *testing.T) {
	images := imageServer(t)
	for _, p := range []struct {
		name      string
		fw        redfishtest.FirmwareConfig
		component string
	}{
		{name: "SimpleUpdate", fw: redfishtest.FirmwareConfig{}},
		{name: "SimpleUpdateTransferProtocolRequired", fw: redfishtest.FirmwareConfig{RequireTransferProtocol: true}},
		// A pushed image is matched only while its task runs (docs/firmware.md).
		{name: "MultipartPushOnly", fw: redfishtest.FirmwareConfig{Push: redfishtest.FirmwareMultipartPush, Duration: 5 * time.Minute}},
		{name: "FortyMinutesFakeClock", fw: redfishtest.FirmwareConfig{Duration: 40 * time.Minute}},
		{name: "ActivateOnSystemReset", fw: redfishtest.FirmwareConfig{ActivateOnReset: true, Duration: 5 * time.Minute}},
		{name: "ActivateOnBMCReset", fw: redfishtest.FirmwareConfig{ActivateOnReset: true}, component: "BMC"},
	} {
		t.Run(p.name, func(t *testing.T) {
			component := p.component
			if component == "" {
				component = "BIOS"
			}
			skip := []string{"Power", "BootOverride", "BootHTTP", "VirtualMedia", "Concurrency", "Dial"}
			bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, SettleTimeout: 20 * time.Second, Skip: skip}, func(t *testing.T) bmctest.Target {
				return firmwareSuiteTarget(t, redfishtest.Config{Firmware: p.fw}, "", imageOf(images, component, "2.0.0"))
			})
		})
	}
	t.Run("NoUpdateService", func(t *testing.T) {
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Unsupported: []bmc.Capability{bmc.CapabilityFirmwareUpdate},
			Skip: []string{"Power", "BootOverride", "BootHTTP", "VirtualMedia", "Concurrency", "Dial"}}, func(t *testing.T) bmctest.Target {
			_, drv := dialSim(t, redfishtest.Config{Firmware: redfishtest.FirmwareConfig{Push: redfishtest.FirmwareNone}}, testOptions(), "", false)
			return bmctest.Target{Driver: drv}
		})
	})
}

// noSecret fails when err or any status message shows the image's
// pre-signed query.
func noSecret(t *testing.T, what string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, imageSecret) {
			t.Errorf("%s shows the image URL's secret: %s", what, s)
		}
	}
}

// A request the BMC handled but whose answer was lost: Start fails
// transiently, and a restarted client (a new session) finds the task
// instead of starting a second update.
func TestFirmwareLostAnswerFoundByNewSession(t *testing.T) {
	images := imageServer(t)
	for _, push := range []redfishtest.FirmwarePush{redfishtest.FirmwareSimpleUpdate, redfishtest.FirmwareMultipartPush} {
		t.Run(map[redfishtest.FirmwarePush]string{0: "SimpleUpdate", 1: "MultipartPush"}[push], func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			srv, dialer := startSim(t, redfishtest.Config{Clock: clk, Firmware: redfishtest.FirmwareConfig{Push: push, Duration: 30 * time.Minute}}, testOptions(), false)
			srv.SetFaults(0, func(method, path string) redfishtest.Fault {
				if method == "POST" && strings.Contains(path, "UpdateService") {
					return redfishtest.FaultLostAnswer
				}
				return redfishtest.FaultNone
			})
			img := imageOf(images, "BIOS", "3.1.0")
			ctx := context.Background()
			d1, err := dialer.DialDriver(ctx, srv.Endpoint(""), srv.Credentials())
			if err != nil {
				t.Fatal(err)
			}
			_, err = d1.StartFirmwareUpdate(ctx, img)
			if err == nil || !bmc.IsTransient(err) {
				t.Fatalf("Start with the answer lost: %v, want a transient error", err)
			}
			noSecret(t, "the error", err.Error())
			_ = d1.Close(ctx) // the client "crashes"
			if n := len(srv.FirmwareTasks()); n != 1 {
				t.Fatalf("the BMC has %d tasks, want the 1 the lost request started", n)
			}
			d2, err := dialer.DialDriver(ctx, srv.Endpoint(""), srv.Credentials())
			if err != nil {
				t.Fatal(err)
			}
			defer d2.Close(ctx)
			ref, found, err := d2.FindFirmwareUpdate(ctx, img)
			if err != nil || !found {
				t.Fatalf("FindFirmwareUpdate on a new session: found=%t err=%v", found, err)
			}
			if want := srv.FirmwareTasks()[0].URI; ref.TaskURI != want {
				t.Fatalf("found %s, want %s", ref, want)
			}
			clk.Advance(10 * time.Minute)
			st, err := d2.FirmwareUpdateStatus(ctx, ref)
			if err != nil || st.State != bmc.FirmwareTaskRunning || st.Percent != 33 {
				t.Fatalf("status at 10 of 30 minutes: %+v, %v; want Running at 33%%", st, err)
			}
			clk.Advance(20 * time.Minute)
			st, err = d2.FirmwareUpdateStatus(ctx, ref)
			if err != nil || st.State != bmc.FirmwareTaskCompleted {
				t.Fatalf("status at 30 minutes: %+v, %v; want Completed", st, err)
			}
			noSecret(t, "the status messages", st.Messages...)
			if v, err := d2.FirmwareVersion(ctx, "BIOS"); err != nil || v != "3.1.0" {
				t.Fatalf("FirmwareVersion: %q, %v; want 3.1.0", v, err)
			}
			if n := len(srv.FirmwareTasks()); n != 1 {
				t.Fatalf("the BMC has %d tasks, want 1: a second update was started", n)
			}
		})
	}
}

func TestFirmwareRequests(t *testing.T) {
	images := imageServer(t)
	ctx := context.Background()
	t.Run("SimpleUpdateBody", func(t *testing.T) {
		srv, drv := dialSim(t, redfishtest.Config{Firmware: redfishtest.FirmwareConfig{RequireTransferProtocol: true}}, testOptions(), "", false)
		if _, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "BIOS", "2.0.0")); err != nil {
			t.Fatal(err)
		}
		var body string
		for _, r := range srv.Requests() {
			if r.Method == "POST" && strings.HasSuffix(r.Path, "SimpleUpdate") {
				body = r.Body
			}
		}
		for _, want := range []string{`"TransferProtocol":"HTTP"`, `"Targets":["/redfish/v1/UpdateService/FirmwareInventory/BIOS"]`, `"ImageURI":"http://`} {
			if !strings.Contains(body, want) {
				t.Errorf("SimpleUpdate body %s lacks %s", body, want)
			}
		}
	})
	t.Run("InvalidImageSendsNothing", func(t *testing.T) {
		srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
		before := len(srv.Requests())
		_, err := drv.StartFirmwareUpdate(ctx, bmc.FirmwareImage{URI: "ftp://images.example/bios.bin?sig=" + imageSecret})
		if err == nil || !strings.Contains(err.Error(), "firmware image URI") || !strings.Contains(err.Error(), `"ftp"`) {
			t.Fatalf("ftp image: %v; want an error naming the field and the scheme", err)
		}
		noSecret(t, "the error", err.Error())
		if after := len(srv.Requests()); after != before {
			t.Fatalf("%d requests sent for an invalid image", after-before)
		}
	})
	t.Run("PushImageTooLarge", func(t *testing.T) {
		opts := testOptions()
		opts.MaxFirmwareImage = 100
		srv, drv := dialSim(t, redfishtest.Config{Firmware: redfishtest.FirmwareConfig{Push: redfishtest.FirmwareMultipartPush}}, opts, "", false)
		_, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "BIOS", "2.0.0"))
		if err == nil || !strings.Contains(err.Error(), "MaxFirmwareImage") || bmc.IsTransient(err) {
			t.Fatalf("image over the limit: %v; want a permanent error naming Options.MaxFirmwareImage", err)
		}
		noSecret(t, "the error", err.Error())
		if n := len(srv.FirmwareTasks()); n != 0 {
			t.Fatalf("%d tasks started", n)
		}
	})
	t.Run("PushImageServerRefuses", func(t *testing.T) {
		_, drv := dialSim(t, redfishtest.Config{Firmware: redfishtest.FirmwareConfig{Push: redfishtest.FirmwareMultipartPush}}, testOptions(), "", false)
		img := imageOf(images, "BIOS", "2.0.0")
		img.URI = strings.Replace(img.URI, "sig=", "sig=wrong-", 1)
		_, err := drv.StartFirmwareUpdate(ctx, img)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("image fetch refused: %v", err)
		}
		if strings.Contains(err.Error(), "wrong-") {
			t.Errorf("the error shows the image URL's query: %v", err)
		}
	})
	t.Run("FailedTask", func(t *testing.T) {
		_, drv := dialSim(t, redfishtest.Config{Firmware: redfishtest.FirmwareConfig{Fail: true}}, testOptions(), "", false)
		ref, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "BIOS", "2.0.0"))
		if err != nil {
			t.Fatal(err)
		}
		st, err := drv.FirmwareUpdateStatus(ctx, ref)
		if err != nil || st.State != bmc.FirmwareTaskFailed || !strings.Contains(strings.Join(st.Messages, ";"), "Update.1.0.ApplyFailed") {
			t.Fatalf("failed task: %+v, %v", st, err)
		}
		if v, _ := drv.FirmwareVersion(ctx, "BIOS"); v != "1.0.0" {
			t.Fatalf("version after a failed update: %s, want 1.0.0", v)
		}
	})
	t.Run("UnreadableImageFailsTask", func(t *testing.T) {
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("not firmware")) }))
		defer bad.Close()
		_, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
		ref, err := drv.StartFirmwareUpdate(ctx, bmc.FirmwareImage{URI: bad.URL + "/x.bin", Component: "BIOS"})
		if err != nil {
			t.Fatal(err)
		}
		st, err := drv.FirmwareUpdateStatus(ctx, ref)
		if err != nil || st.State != bmc.FirmwareTaskFailed || !strings.Contains(strings.Join(st.Messages, ";"), "TransferFailed") {
			t.Fatalf("task of an unreadable image: %+v, %v", st, err)
		}
	})
	t.Run("NeedsResetNamesTarget", func(t *testing.T) {
		srv, drv := dialSim(t, redfishtest.Config{Firmware: redfishtest.FirmwareConfig{ActivateOnReset: true}}, testOptions(), "", false)
		for comp, want := range map[string]bmc.FirmwareResetTarget{"BIOS": bmc.FirmwareResetSystem, "BMC": bmc.FirmwareResetBMC} {
			ref, err := drv.StartFirmwareUpdate(ctx, imageOf(images, comp, "9.0.0"))
			if err != nil {
				t.Fatal(err)
			}
			st, err := drv.FirmwareUpdateStatus(ctx, ref)
			if err != nil || st.State != bmc.FirmwareTaskCompleted || !st.NeedsReset || st.Reset != want {
				t.Fatalf("%s: %+v, %v; want Completed, NeedsReset, Reset %s", comp, st, err, want)
			}
			if v := srv.FirmwareVersion(comp); v != "1.0.0" {
				t.Fatalf("%s activated before the reset: %s", comp, v)
			}
		}
		if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
			t.Fatal(err)
		}
		if a, b := srv.FirmwareVersion("BIOS"), srv.FirmwareVersion("BMC"); a != "9.0.0" || b != "1.0.0" {
			t.Fatalf("after the system booted: BIOS %s (want 9.0.0), BMC %s (want 1.0.0: only a BMC reset activates it)", a, b)
		}
		if err := drv.ResetBMC(ctx, bmc.BMCResetWarm); err != nil {
			t.Fatal(err)
		}
		if v := srv.FirmwareVersion("BMC"); v != "9.0.0" {
			t.Fatalf("BMC after its reset: %s, want 9.0.0", v)
		}
	})
	t.Run("MonitorOnlyRefAndGone", func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		srv, drv := dialSim(t, redfishtest.Config{Clock: clk, Firmware: redfishtest.FirmwareConfig{Duration: time.Hour}}, testOptions(), "", false)
		ref, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "BIOS", "2.0.0"))
		if err != nil {
			t.Fatal(err)
		}
		task := srv.FirmwareTasks()[0]
		if ref.TaskURI != task.URI || ref.MonitorURI != task.Monitor || ref.TaskID != task.ID {
			t.Fatalf("ref %+v, want task %s monitor %s id %s", ref, task.URI, task.Monitor, task.ID)
		}
		mon := bmc.FirmwareTaskRef{MonitorURI: ref.MonitorURI}
		if st, err := drv.FirmwareUpdateStatus(ctx, mon); err != nil || st.State != bmc.FirmwareTaskRunning {
			t.Fatalf("monitor while running: %+v, %v", st, err)
		}
		clk.Advance(time.Hour)
		if st, err := drv.FirmwareUpdateStatus(ctx, mon); err != nil || st.State != bmc.FirmwareTaskCompleted {
			t.Fatalf("monitor once done: %+v, %v", st, err)
		}
		gone := bmc.FirmwareTaskRef{TaskURI: "/redfish/v1/TaskService/Tasks/999"}
		if st, err := drv.FirmwareUpdateStatus(ctx, gone); err != nil || st.State != bmc.FirmwareTaskGone {
			t.Fatalf("unknown task: %+v, %v; want Gone", st, err)
		}
	})
	t.Run("UnknownComponent", func(t *testing.T) {
		_, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
		_, err := drv.FirmwareVersion(ctx, "CPLD")
		if err == nil || !strings.Contains(err.Error(), `"CPLD"`) || !strings.Contains(err.Error(), "BIOS") || bmc.IsTransient(err) {
			t.Fatalf("unknown component: %v; want a permanent error naming it and the components there are", err)
		}
	})
	t.Run("NotSupported", func(t *testing.T) {
		_, drv := dialSim(t, redfishtest.Config{Firmware: redfishtest.FirmwareConfig{Push: redfishtest.FirmwareNone}}, testOptions(), "", false)
		_, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "BIOS", "2.0.0"))
		if !errors.Is(err, bmc.ErrNotSupported) {
			t.Fatalf("no UpdateService: %v", err)
		}
	})
}

// A multipart push that finished and waits for a reset (a staged update)
// is found for its component: a job resumed after the push's answer was
// lost follows it to the reset instead of pushing again. A finished push
// that needs no reset, or one for another component, is not.
func TestFirmwareFindsAStagedPush(t *testing.T) {
	images := imageServer(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv, dialer := startSim(t, redfishtest.Config{Clock: clk, Firmware: redfishtest.FirmwareConfig{
		Push: redfishtest.FirmwareMultipartPush, Duration: time.Minute, ActivateOnReset: true}}, testOptions(), false)
	ctx := context.Background()
	d, err := dialer.DialDriver(ctx, srv.Endpoint(""), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	img := imageOf(images, "BIOS", "3.1.0")
	ref, err := d.StartFirmwareUpdate(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if st, err := d.FirmwareUpdateStatus(ctx, ref); err != nil || st.State != bmc.FirmwareTaskCompleted || !st.NeedsReset {
		t.Fatalf("status %+v %v: want a completed push waiting for a reset", st, err)
	}
	found, ok, err := d.FindFirmwareUpdate(ctx, img)
	if err != nil || !ok || found.TaskURI != ref.TaskURI {
		t.Fatalf("FindFirmwareUpdate: %v %v %v, want %s", found, ok, err, ref)
	}
	other := imageOf(images, "BMC", "3.1.0")
	if _, ok, err := d.FindFirmwareUpdate(ctx, other); err != nil || ok {
		t.Fatalf("a staged BIOS push was found for component BMC: %v %v", ok, err)
	}
}

// firmwareSuiteTarget is a bmctest target on a simulator with cfg on a fake
// clock (a minute passes at each Advance), installing img at 2.0.0.
func firmwareSuiteTarget(t *testing.T, cfg redfishtest.Config, system string, img bmc.FirmwareImage) bmctest.Target {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg.Clock = clk
	srv, dialer := startSim(t, cfg, testOptions(), false)
	ep := srv.Endpoint(system)
	drv, err := dialer.Dial(t.Context(), ep, srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	return bmctest.Target{Driver: drv, Credentials: srv.Credentials(),
		Firmware: &bmctest.FirmwareTarget{Image: img, Version: "2.0.0"},
		Dial: func(ctx context.Context, c bmc.Credentials) (bmc.Driver, error) {
			return dialer.Dial(ctx, ep, c)
		},
		Advance: func() { clk.Advance(time.Minute) },
	}
}
