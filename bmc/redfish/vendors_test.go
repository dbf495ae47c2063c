package redfish_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/jobtest"
)

// vendorSuite is what each vendor's Redfish tree lacks, as bmctest
// declares it.
var vendorSuite = map[redfishtest.Vendor]bmctest.Options{
	// No BootSourceOverrideMode (so no mode can be set) and no UEFI HTTP
	// boot.
	redfishtest.VendorILO5Apollo: {Unsupported: []bmctest.Capability{bmc.CapabilityBootMode, bmc.CapabilityBootHTTP, bmc.CapabilityLocatorLEDBlink}},
	// No boot override at all; the BMC offers only a forced restart of
	// itself.
	redfishtest.VendorCrayEX: {Unsupported: []bmctest.Capability{bmc.CapabilityBootOverride, bmc.CapabilityBootOverrideReadBack,
		bmc.CapabilityBootMode, bmc.CapabilityBootHTTP, bmc.CapabilityBMCResetWarm}},
	// Only ForceRestart, listed behind the action's ActionInfo.
	redfishtest.VendorAMIMegaRAC: {Unsupported: []bmctest.Capability{bmc.CapabilityBMCResetWarm}},
	// A Bios without attributes: no BIOS settings.
	redfishtest.VendorOpenBMC: {Unsupported: []bmctest.Capability{bmc.CapabilityBIOS}},
	// A node of the blade: as VendorCrayEX.
	redfishtest.VendorCrayEX4252: {Unsupported: []bmctest.Capability{bmc.CapabilityBootOverride, bmc.CapabilityBootOverrideReadBack,
		bmc.CapabilityBootMode, bmc.CapabilityBootHTTP, bmc.CapabilityBMCResetWarm}},
}

// TestConformanceVendors runs the suite on every vendor personality.
func TestConformanceVendors(t *testing.T) {
	for _, v := range redfishtest.Vendors() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			suite := vendorSuite[v]
			suite.PollInterval = 5 * time.Millisecond
			suite.SettleTimeout = 20 * time.Second
			bmctest.Run(t, suite, func(t *testing.T) bmctest.Target {
				cfg := redfishtest.VendorConfig(v)
				cfg.PowerDelay = 20 * time.Millisecond
				srv, dialer := startSim(t, cfg, testOptions(), false)
				ep := srv.Endpoint("1")
				drv, err := dialer.Dial(t.Context(), ep, srv.Credentials())
				if err != nil {
					t.Fatalf("Dial %s: %v", ep, err)
				}
				health, logs := simPeers(srv, "1")
				return bmctest.Target{Driver: drv, Credentials: srv.Credentials(), Health: health, Logs: logs,
					Dial: func(ctx context.Context, c bmc.Credentials) (bmc.Driver, error) { return dialer.Dial(ctx, ep, c) }}
			})
		})
	}
}

// TestNetbootJobVendors runs a netboot job (power off, PXE once with the
// mode unchanged, power on) through job.Runner on every vendor
// personality. Where the Boot has an override it succeeds; on Cray EX,
// whose Boot has none, the job fails as NotSupported at the boot task,
// and no PATCH reached the BMC.
func TestNetbootJobVendors(t *testing.T) {
	for _, v := range redfishtest.Vendors() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			cfg := redfishtest.VendorConfig(v)
			cfg.PowerDelay = 20 * time.Millisecond
			cfg.DropDuringTransition = true
			srv := redfishtest.NewServer(cfg)
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runJob(t, jobtest.Netboot(srv.Address("1"), "", 20*time.Second), srv.Credentials(), testOptions())
			st := srv.System("1")
			if v == redfishtest.VendorCrayEX || v == redfishtest.VendorCrayEX4252 {
				if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonNotSupported ||
					!strings.Contains(j.Status.Message, "no boot override") {
					t.Fatalf("job %s (%s): %s; want Failed NotSupported saying the BMC offers no boot override", j.Status.Result, j.Status.Reason, j.Status.Message)
				}
				for _, r := range srv.Requests() {
					if r.Method == "PATCH" {
						t.Fatalf("a PATCH reached the BMC: %+v", r)
					}
				}
				return
			}
			if j.Status.Result != conditions.ResultSucceeded {
				t.Fatalf("job %s (%s): %s", j.Status.Result, j.Status.Reason, j.Status.Message)
			}
			if st.Power != "On" || st.Boots != 1 {
				t.Fatalf("server after netboot: %+v; want On, booted once", st)
			}
		})
	}
}

// notSupportedBeforePatch checks err wraps bmc.ErrNotSupported, says
// want, and that srv saw no PATCH.
func notSupportedBeforePatch(t *testing.T, srv *redfishtest.Server, err error, want string) {
	t.Helper()
	if !errors.Is(err, bmc.ErrNotSupported) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v: want bmc.ErrNotSupported saying %q", err, want)
	}
	for _, r := range srv.Requests() {
		if r.Method == "PATCH" {
			t.Fatalf("a PATCH reached the BMC: %+v", r)
		}
	}
}

// iLO 5 (Apollo): a mode is refused before any PATCH, naming the missing
// property; mode unchanged sends only target and enabled; UEFI HTTP boot
// is refused with the reason read (no HttpBootUri in a v1_10 system), not
// a schema version the system does not have.
func TestVendorILO5ApolloBoot(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorILO5Apollo), testOptions(), "1", false)
	err := drv.SetBootOverride(t.Context(), bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeUEFI})
	notSupportedBeforePatch(t, srv, err, "no BootSourceOverrideMode")
	err = drv.SetBootOverride(t.Context(), bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: "http://10.0.0.1/x.efi"})
	notSupportedBeforePatch(t, srv, err, "allows only")
	if strings.Contains(err.Error(), "before v1_9") {
		t.Errorf("error %q blames a schema version the system does not have", err)
	}
	if err := drv.SetBootOverride(t.Context(), bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
		t.Fatal(err)
	}
	var patches []string
	for _, r := range srv.Requests() {
		if r.Method == "PATCH" {
			patches = append(patches, r.Body)
		}
	}
	if len(patches) != 1 || strings.Contains(patches[0], "Mode") || !strings.Contains(patches[0], "BootSourceOverrideTarget") {
		t.Fatalf("PATCH bodies %q: want one, with the target and without a mode", patches)
	}
}

// A Boot with HttpBootUri missing on a v1_20 schema names what was read.
func TestHTTPBootReasonNamesSchemaRead(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{NoHTTPBootURI: true, SchemaVersion: "v1_10_0"}, testOptions(), "1", false)
	err := drv.SetBootOverride(t.Context(), bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: "http://10.0.0.1/x.efi"})
	notSupportedBeforePatch(t, srv, err, "no HttpBootUri (ComputerSystem.v1_10_0)")
}

// Cray EX: the Boot has no override, so reading one is not supported
// either (not "none"); BMC reset finds Managers/BMC through
// ManagerForServers although the auxiliary controller is listed first.
func TestVendorCrayEX(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorCrayEX), testOptions(), "1", false)
	_, err := drv.BootOverride(t.Context())
	if !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("BootOverride: %v, want bmc.ErrNotSupported", err)
	}
	err = drv.SetBootOverride(t.Context(), bmc.BootOverride{Device: bmc.BootDevicePXE})
	notSupportedBeforePatch(t, srv, err, "no boot override")
	err = drv.ResetBMC(t.Context(), bmc.BMCResetWarm)
	if !errors.Is(err, bmc.ErrNotSupported) || !strings.Contains(err.Error(), "Managers/BMC") || !strings.Contains(err.Error(), "ForceRestart") {
		t.Fatalf("warm reset: %v; want NotSupported naming Managers/BMC and what it offers", err)
	}
	if err := drv.ResetBMC(t.Context(), bmc.BMCResetCold); err != nil {
		t.Fatal(err)
	}
	if srv.BMCResets() != 1 {
		t.Fatalf("BMC resets %d, want 1", srv.BMCResets())
	}
}

// AMI MegaRAC: the manager's reset types behind ActionInfo are read (warm
// is refused before any POST, cold works); empty media reads as no image.
func TestVendorAMIMegaRAC(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorAMIMegaRAC), testOptions(), "1", false)
	st, err := drv.MediaStatus(t.Context(), bmc.MediaCD)
	if err != nil || st.Inserted || st.Image != "" {
		t.Fatalf("empty media: %+v, %v; want not inserted, no image (AMI reads Image \"None\")", st, err)
	}
	err = drv.ResetBMC(t.Context(), bmc.BMCResetWarm)
	if !errors.Is(err, bmc.ErrNotSupported) || !strings.Contains(err.Error(), "advertised: ForceRestart") {
		t.Fatalf("warm reset: %v; want NotSupported, advertised ForceRestart", err)
	}
	for _, r := range srv.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "Manager.Reset") {
			t.Fatalf("a warm reset was POSTed: %+v", r)
		}
	}
	if err := drv.ResetBMC(t.Context(), bmc.BMCResetCold); err != nil {
		t.Fatal(err)
	}
}

// A chassis controller that manages no systems: the dial says so, with
// or without a system in the address.
func TestVendorChassisController(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.VendorConfig(redfishtest.VendorChassisController))
	t.Cleanup(srv.Close)
	d := redfish.NewDialer(testOptions())
	for _, id := range []string{"", "1"} {
		_, err := d.Dial(t.Context(), srv.Endpoint(id), srv.Credentials())
		if err == nil || bmc.IsTransient(err) || !strings.Contains(err.Error(), "lists no computer systems") {
			t.Fatalf("system %q: %v; want a permanent error saying the service manages no systems", id, err)
		}
	}
}
