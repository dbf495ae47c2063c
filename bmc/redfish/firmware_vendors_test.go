package redfish_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
)

// simpleUpdateBodies are the bodies of the SimpleUpdate requests srv saw.
func simpleUpdateBodies(srv *redfishtest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "SimpleUpdate") {
			out = append(out, r.Body)
		}
	}
	return out
}

// firmwareByID maps an inventory's firmware section by ID.
func firmwareByID(t *testing.T, inv bmc.Inventory) map[string]bmc.FirmwareComponent {
	t.Helper()
	if slices.Contains(inv.Unsupported, bmc.InventoryFirmware) {
		t.Fatalf("the inventory's firmware section is unsupported: %+v", inv.Unsupported)
	}
	out := map[string]bmc.FirmwareComponent{}
	for _, c := range inv.Firmware {
		out[c.ID] = c
	}
	return out
}

// Intel: firmware under UpdateService.SoftwareInventory, no
// FirmwareInventory. The inventory lists it, FirmwareVersion reads it,
// an unknown component is a permanent error naming it and the components
// there are (not a 404 of a guessed path), Targets names the member the
// BMC listed, and no request ever goes to a FirmwareInventory path the
// BMC never named.
func TestFirmwareSoftwareInventory(t *testing.T) {
	images := imageServer(t)
	ctx := t.Context()
	srv, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorIntel), testOptions(), "", false)
	inv, err := drv.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fw := firmwareByID(t, inv)
	if got := slices.Sorted(maps.Keys(fw)); !slices.Equal(got, []string{"BIOS", "BMC"}) || fw["BIOS"].Version != "1.0.0" || fw["BIOS"].Shared {
		t.Fatalf("firmware section %+v; want BIOS and BMC at 1.0.0, not shared", inv.Firmware)
	}
	if v, err := drv.FirmwareVersion(ctx, "BIOS"); err != nil || v != "1.0.0" {
		t.Fatalf("FirmwareVersion(BIOS) = %q, %v; want 1.0.0", v, err)
	}
	_, err = drv.FirmwareVersion(ctx, "CPLD")
	if err == nil || bmc.IsTransient(err) || errors.Is(err, bmc.ErrNotSupported) ||
		!strings.Contains(err.Error(), `"CPLD"`) || !strings.Contains(err.Error(), `"BIOS", "BMC"`) ||
		!strings.Contains(err.Error(), "SoftwareInventory") || strings.Contains(err.Error(), "404") {
		t.Fatalf("unknown component: %v; want a permanent error naming it, the SoftwareInventory and its components", err)
	}
	if _, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "CPLD", "2.0.0")); err == nil || !strings.Contains(err.Error(), `"CPLD"`) {
		t.Fatalf("Start for an unknown component: %v; want it refused, naming it", err)
	}
	if b := simpleUpdateBodies(srv); len(b) != 0 {
		t.Fatalf("SimpleUpdate sent for an unknown component: %v", b)
	}
	ref, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "BIOS", "2.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	b := simpleUpdateBodies(srv)
	if len(b) != 1 || !strings.Contains(b[0], `"Targets":["/redfish/v1/UpdateService/SoftwareInventory/BIOS"]`) {
		t.Fatalf("SimpleUpdate bodies %v; want one whose Targets is the listed member", b)
	}
	// No TaskService: the ref names the UpdateService, whose status says
	// only the version tells.
	if ref.MonitorURI != "/redfish/v1/UpdateService" || ref.TaskURI != "" {
		t.Fatalf("ref %+v; want the UpdateService", ref)
	}
	if st, err := drv.FirmwareUpdateStatus(ctx, ref); err != nil || st.State != bmc.FirmwareTaskGone {
		t.Fatalf("status %+v, %v; want Gone", st, err)
	}
	if v, err := drv.FirmwareVersion(ctx, "BIOS"); err != nil || v != "2.0.0" {
		t.Fatalf("FirmwareVersion(BIOS) after the update = %q, %v; want 2.0.0", v, err)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "FirmwareInventory") || strings.Contains(r.Path, "TaskService") {
			t.Errorf("%s %s: a path the BMC never named", r.Method, r.Path)
		}
	}
}

// A BMC without a TaskService (Intel, sushy-tools) has no task to find:
// FindFirmwareUpdate answers found=false, not ErrNotSupported, before and
// after an update it started.
func TestFirmwareFindWithoutTaskService(t *testing.T) {
	images := imageServer(t)
	ctx := t.Context()
	_, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorIntel), testOptions(), "", false)
	img := imageOf(images, "BIOS", "2.0.0")
	for _, when := range []string{"before", "after"} {
		ref, found, err := drv.FindFirmwareUpdate(ctx, img)
		if err != nil || found || !ref.IsZero() {
			t.Fatalf("%s the start: %+v found=%t err=%v; want nothing found, no error", when, ref, found, err)
		}
		if when == "before" {
			if _, err := drv.StartFirmwareUpdate(ctx, img); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A BMC without an UpdateService is still NotSupported.
	_, drv = dialSim(t, redfishtest.Config{Firmware: redfishtest.FirmwareConfig{Push: redfishtest.FirmwareNone}}, testOptions(), "", false)
	if _, _, err := drv.FindFirmwareUpdate(ctx, img); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("no UpdateService: %v; want ErrNotSupported", err)
	}
}

// ListsFirmwareTasks: true where the BMC has a TaskService with Tasks and
// is not an HPE iLO; false on Intel (no TaskService) and on iLO (a
// TaskService that lists no update); learned from starts: a start
// answered without a task makes it false, one answered with a task true,
// for the rest of the driver's life (a new driver starts from the rule).
func TestListsFirmwareTasks(t *testing.T) {
	images := imageServer(t)
	ctx := t.Context()
	lists := func(t *testing.T, drv *redfish.Driver, want bool, when string) {
		t.Helper()
		got, err := drv.ListsFirmwareTasks(ctx)
		if err != nil || got != want {
			t.Fatalf("%s: ListsFirmwareTasks = %t, %v; want %t", when, got, err, want)
		}
	}
	for _, c := range []struct {
		name               string
		cfg                redfishtest.Config
		before, afterStart bool
	}{
		{"TaskService", redfishtest.Config{}, true, true},
		{"Intel", redfishtest.VendorConfig(redfishtest.VendorIntel), false, false},
		{"ILO5", redfishtest.VendorConfig(redfishtest.VendorILO5Apollo), false, false},
		// A TaskService, no HPE marks, and a start answered with no task.
		{"StartAnsweredWithoutTask", redfishtest.Config{Firmware: redfishtest.FirmwareConfig{UntrackedUpdates: true}}, true, false},
		// HPE marks, and a start answered with a task.
		{"HPEStartAnsweredWithTask", redfishtest.Config{Firmware: redfishtest.FirmwareConfig{OemHpe: true}}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, drv := dialSim(t, c.cfg, testOptions(), "", false)
			lists(t, drv, c.before, "before a start")
			if _, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "BIOS", "2.0.0")); err != nil {
				t.Fatal(err)
			}
			lists(t, drv, c.afterStart, "after a start")
			other, err := redfish.NewDialer(testOptions()).DialDriver(ctx, srv.Endpoint(""), srv.Credentials())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close(ctx)
			lists(t, other, c.before, "on a new driver")
		})
	}
	t.Run("NoUpdateService", func(t *testing.T) {
		_, drv := dialSim(t, redfishtest.Config{Firmware: redfishtest.FirmwareConfig{Push: redfishtest.FirmwareNone}}, testOptions(), "", false)
		if _, err := drv.ListsFirmwareTasks(ctx); !errors.Is(err, bmc.ErrNotSupported) {
			t.Fatalf("no UpdateService: %v; want ErrNotSupported", err)
		}
	})
}

// An HPE Cray EX4252 blade: one BMC, 4 nodes, one inventory listing every
// node's BIOS. Node 2 (system 2) sees its own BIOS and the blade's shared
// components, not the other nodes' BIOS; it cannot read or target them;
// its update names its own member and leaves the others alone.
func TestFirmwareMultiNode(t *testing.T) {
	images := imageServer(t)
	ctx := t.Context()
	srv, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorCrayEX4252), testOptions(), "2", false)
	inv, err := drv.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fw := firmwareByID(t, inv)
	want := map[string]bool{"BMC": true, "FPGA0": true, "Recovery": true, "Node1.BIOS": false} // ID: Shared
	if len(fw) != len(want) {
		t.Fatalf("system 2's firmware: %+v; want %v", inv.Firmware, want)
	}
	for id, shared := range want {
		if c, ok := fw[id]; !ok || c.Shared != shared {
			t.Fatalf("system 2's firmware: %+v; want %s with Shared=%t", inv.Firmware, id, shared)
		}
	}
	_, err = drv.FirmwareVersion(ctx, "Node0.BIOS")
	if err == nil || bmc.IsTransient(err) || !strings.Contains(err.Error(), `"Node0.BIOS"`) ||
		!strings.Contains(err.Error(), `"Node1.BIOS"`) || strings.Contains(err.Error(), `"Node2.BIOS"`) {
		t.Fatalf("another node's BIOS: %v; want a permanent error naming it and this node's components only", err)
	}
	if _, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "Node0.BIOS", "2.0.0")); err == nil {
		t.Fatal("an update targeting another node's BIOS was started")
	}
	if b := simpleUpdateBodies(srv); len(b) != 0 {
		t.Fatalf("SimpleUpdate sent for another node's BIOS: %v", b)
	}
	ref, err := drv.StartFirmwareUpdate(ctx, imageOf(images, "Node1.BIOS", "2.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if b := simpleUpdateBodies(srv); len(b) != 1 || !strings.Contains(b[0], `"Targets":["/redfish/v1/UpdateService/FirmwareInventory/Node1.BIOS"]`) {
		t.Fatalf("SimpleUpdate bodies %v; want Targets naming Node1.BIOS's member", b)
	}
	if st, err := drv.FirmwareUpdateStatus(ctx, ref); err != nil || st.State != bmc.FirmwareTaskCompleted {
		t.Fatalf("status %+v, %v", st, err)
	}
	if v, err := drv.FirmwareVersion(ctx, "Node1.BIOS"); err != nil || v != "2.0.0" {
		t.Fatalf("Node1.BIOS = %q, %v; want 2.0.0", v, err)
	}
	if v := srv.FirmwareVersion("Node0.BIOS"); v != "ex4252.bios-1.4.2" {
		t.Fatalf("Node0.BIOS changed to %s", v)
	}

	// One system: nothing is shared. Several systems and no RelatedItem:
	// everything is.
	for _, c := range []struct {
		systems int
		shared  bool
	}{{1, false}, {3, true}} {
		_, d := dialSim(t, redfishtest.Config{Systems: c.systems}, testOptions(), "1", false)
		inv, err := d.Inventory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, fc := range firmwareByID(t, inv) {
			if fc.Shared != c.shared {
				t.Errorf("%d systems, no RelatedItem: %+v; want Shared=%t", c.systems, fc, c.shared)
			}
		}
	}
}

// HPE iLO 5: SimpleUpdate answers 200 with no task. The ref names the
// UpdateService; its status follows Oem.Hpe.State (Running with
// FlashProgressPercent, then Completed), and a new driver finds the
// running flash.
func TestFirmwareILOUpdateState(t *testing.T) {
	images := imageServer(t)
	ctx := t.Context()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := redfishtest.VendorConfig(redfishtest.VendorILO5Apollo)
	cfg.Clock, cfg.Firmware.Duration = clk, 20*time.Minute
	srv, dialer := startSim(t, cfg, testOptions(), false)
	drv, err := dialer.DialDriver(ctx, srv.Endpoint(""), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(ctx)
	img := imageOf(images, "BIOS", "2.5.0")
	ref, err := drv.StartFirmwareUpdate(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if ref.MonitorURI != "/redfish/v1/UpdateService" || ref.TaskURI != "" {
		t.Fatalf("ref %+v; want the UpdateService", ref)
	}
	if tasks := srv.FirmwareTasks(); len(tasks) != 1 || !tasks[0].Untracked {
		t.Fatalf("tasks %+v; want one untracked update", tasks)
	}
	clk.Advance(5 * time.Minute)
	st, err := drv.FirmwareUpdateStatus(ctx, ref)
	if err != nil || st.State != bmc.FirmwareTaskRunning || st.Percent != 25 {
		t.Fatalf("status at 5 of 20 minutes: %+v, %v; want Running at 25%%", st, err)
	}
	d2, err := dialer.DialDriver(ctx, srv.Endpoint(""), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close(ctx)
	found, ok, err := d2.FindFirmwareUpdate(ctx, img)
	if err != nil || !ok || found != ref {
		t.Fatalf("FindFirmwareUpdate on a new driver: %+v %t %v; want %+v", found, ok, err, ref)
	}
	clk.Advance(15 * time.Minute)
	st, err = d2.FirmwareUpdateStatus(ctx, found)
	if err != nil || st.State != bmc.FirmwareTaskCompleted {
		t.Fatalf("status at 20 minutes: %+v, %v; want Completed", st, err)
	}
	if v, err := d2.FirmwareVersion(ctx, "BIOS"); err != nil || v != "2.5.0" {
		t.Fatalf("FirmwareVersion = %q, %v", v, err)
	}
	if _, ok, err := d2.FindFirmwareUpdate(ctx, img); err != nil || ok {
		t.Fatalf("FindFirmwareUpdate once the flash completed: %t %v; want nothing running", ok, err)
	}
}

// The SimpleUpdate POST fails after the BMC took it (a 503, a timeout, a
// reset connection: the update runs) or before (a 503: nothing started).
// Start fails transiently either way. Where the BMC lists its tasks, a new
// driver finds the one that started and finds nothing for the one that did
// not, which ListsFirmwareTasks says may then be sent again. On iLO the
// running flash is found, and ListsFirmwareTasks says nothing found would
// not show that nothing started.
func TestFirmwareStartAnswerLost(t *testing.T) {
	images := imageServer(t)
	ilo := redfishtest.VendorConfig(redfishtest.VendorILO5Apollo)
	for _, c := range []struct {
		name    string
		cfg     redfishtest.Config
		fault   redfishtest.Fault
		started bool
		lists   bool
	}{
		{"503BeforeTaken", redfishtest.Config{}, redfishtest.Fault503, false, true},
		{"503AfterTaken", redfishtest.Config{}, redfishtest.FaultLostAnswer503, true, true},
		{"TimeoutAfterTaken", redfishtest.Config{}, redfishtest.FaultLostAnswerSlow, true, true},
		{"ResetAfterTaken", redfishtest.Config{}, redfishtest.FaultLostAnswer, true, true},
		{"ILO503AfterTaken", ilo, redfishtest.FaultLostAnswer503, true, false},
		{"ILOTimeoutAfterTaken", ilo, redfishtest.FaultLostAnswerSlow, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			cfg := c.cfg
			cfg.Clock, cfg.Firmware.Duration = clk, 30*time.Minute
			opts := testOptions()
			opts.RequestTimeout = 300 * time.Millisecond
			srv, dialer := startSim(t, cfg, opts, false)
			srv.SetFaults(0, func(method, path string) redfishtest.Fault {
				if method == "POST" && strings.HasSuffix(path, "SimpleUpdate") {
					return c.fault
				}
				return redfishtest.FaultNone
			})
			img := imageOf(images, "BIOS", "3.0.0")
			d1, err := dialer.DialDriver(ctx, srv.Endpoint(""), srv.Credentials())
			if err != nil {
				t.Fatal(err)
			}
			_, err = d1.StartFirmwareUpdate(ctx, img)
			if err == nil || !bmc.IsTransient(err) {
				t.Fatalf("Start: %v; want a transient error", err)
			}
			noSecret(t, "the error", err.Error())
			_ = d1.Close(ctx)
			if n := len(srv.FirmwareTasks()); (n == 1) != c.started || n > 1 {
				t.Fatalf("%d updates started; want started=%t", n, c.started)
			}
			srv.SetFaults(0, nil)
			d2, err := dialer.DialDriver(ctx, srv.Endpoint(""), srv.Credentials())
			if err != nil {
				t.Fatal(err)
			}
			defer d2.Close(ctx)
			ref, found, err := d2.FindFirmwareUpdate(ctx, img)
			if err != nil || found != c.started {
				t.Fatalf("FindFirmwareUpdate: %+v found=%t err=%v; want found=%t", ref, found, err, c.started)
			}
			lists, err := d2.ListsFirmwareTasks(ctx)
			if err != nil || lists != c.lists {
				t.Fatalf("ListsFirmwareTasks = %t, %v; want %t", lists, err, c.lists)
			}
			if !found && lists {
				// Nothing started and the BMC lists every update: starting
				// again starts the only one.
				if ref, err = d2.StartFirmwareUpdate(ctx, img); err != nil {
					t.Fatal(err)
				}
				if n := len(srv.FirmwareTasks()); n != 1 {
					t.Fatalf("%d updates after starting again; want 1", n)
				}
			}
			clk.Advance(30 * time.Minute)
			if st, err := d2.FirmwareUpdateStatus(ctx, ref); err != nil || st.State != bmc.FirmwareTaskCompleted {
				t.Fatalf("status at the end: %+v, %v; want Completed", st, err)
			}
			if v := srv.FirmwareVersion("BIOS"); v != "3.0.0" {
				t.Fatalf("BIOS at %s; want 3.0.0", v)
			}
		})
	}
}

// firmwareVendorSuite is what each vendor personality cannot do in the
// FirmwareUpdate checks, and the component it updates.
var firmwareVendorSuite = map[redfishtest.Vendor]struct {
	skip      []string
	system    string
	component string
}{
	// No TaskService: nothing lists a started update.
	redfishtest.VendorIntel: {skip: []string{"FirmwareUpdate/FindAfterStart"}},
	// Node 2 of the blade, its own BIOS.
	redfishtest.VendorCrayEX4252: {system: "2", component: "Node1.BIOS"},
}

// TestConformanceFirmwareVendors runs bmctest's firmware checks (and the
// inventory's) on every vendor personality, with updates that take 5
// minutes on a clock the suite advances.
func TestConformanceFirmwareVendors(t *testing.T) {
	images := imageServer(t)
	for _, v := range redfishtest.Vendors() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			p := firmwareVendorSuite[v]
			component := p.component
			if component == "" {
				component = "BIOS"
			}
			skip := append([]string{"Power", "BootOverride", "BootHTTP", "VirtualMedia", "ResetBMC", "LastResetTime", "BIOS",
				"Needs", "Context", "Dial", "Concurrency", "Close", "Stats", "LocatorLED", "NMI"}, p.skip...)
			bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, SettleTimeout: 20 * time.Second, Skip: skip}, func(t *testing.T) bmctest.Target {
				cfg := redfishtest.VendorConfig(v)
				cfg.Firmware.Duration = 5 * time.Minute
				return firmwareSuiteTarget(t, cfg, p.system, imageOf(images, component, "2.0.0"))
			})
		})
	}
}
