package redfish_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// wantInventory is what redfishtest's system i reports with the default
// Hardware, without a firmware inventory.
func wantInventory(i int) bmc.Inventory {
	cpu := bmc.Processor{Manufacturer: "Intel(R) Corporation", Model: "Intel(R) Xeon(R) Gold 6430", Architecture: "x86", Cores: 32, Threads: 64, MaxSpeedMHz: 3400}
	inv := bmc.Inventory{
		System:             bmc.SystemInfo{Manufacturer: "bmckit", Model: "redfishtest", SKU: "RT-1", SerialNumber: redfishtest.SystemSerial(i), BIOSVersion: "1.0.0", UUID: redfishtest.SystemUUID(i)},
		StorageControllers: []bmc.StorageController{{ID: "0", Storage: "1", Name: "RAID controller", Manufacturer: "Broadcom", Model: "MegaRAID 9560-8i", FirmwareVersion: "52.24.0-4763"}},
	}
	for _, id := range []string{"CPU1", "CPU2"} {
		c := cpu
		c.ID = id
		inv.Processors = append(inv.Processors, c)
	}
	for _, id := range []string{"DIMM1", "DIMM2", "DIMM3", "DIMM4"} {
		inv.Memory = append(inv.Memory, bmc.MemoryModule{ID: id, Manufacturer: "Samsung", PartNumber: "M321R4GA3BB6-CQK", SerialNumber: "S000" + string(rune('0'+i)) + id, Type: "DDR5", CapacityMiB: 32768, SpeedMHz: 4800})
	}
	for n := 1; n <= 2; n++ {
		inv.Drives = append(inv.Drives, bmc.Drive{ID: "Disk" + string(rune('0'+n)), Storage: "1", Name: "Disk " + string(rune('0'+n)), Manufacturer: "Micron", Model: "MTFDKCC960TFR",
			SerialNumber: "D000" + string(rune('0'+i)) + "0" + string(rune('0'+n)), MediaType: "SSD", Protocol: "NVMe", CapacityBytes: 960197124096})
	}
	inv.NetworkInterfaces = []bmc.NetworkInterface{
		{ID: "NIC1", Name: "Ethernet NIC1", MACAddress: strings.ToLower(redfishtest.SystemMAC(i, 1)), SpeedMbps: 25000, LinkStatus: "LinkUp"},
		{ID: "NIC2", Name: "Ethernet NIC2", MACAddress: strings.ToLower(redfishtest.SystemMAC(i, 2)), SpeedMbps: 25000, LinkStatus: "LinkDown"},
	}
	return inv
}

// inventoryFirmware drops the firmware section (served by the simulator's
// UpdateService when it has one), returning it.
func inventoryFirmware(inv *bmc.Inventory) []bmc.FirmwareComponent {
	fw := inv.Firmware
	inv.Firmware = nil
	inv.Unsupported = slices.DeleteFunc(inv.Unsupported, func(s bmc.InventorySection) bool { return s == bmc.InventoryFirmware })
	if len(inv.Unsupported) == 0 {
		inv.Unsupported = nil
	}
	return fw
}

// TestInventoryRequests reads system 2's inventory, checks it field for
// field and counts its requests, with and without $expand.
func TestInventoryRequests(t *testing.T) {
	for _, expand := range []bool{false, true} {
		name := map[bool]string{false: "PerMember", true: "ExpandQuery"}[expand]
		t.Run(name, func(t *testing.T) {
			srv, drv := dialSim(t, redfishtest.Config{Systems: 3, ExpandQuery: expand}, testOptions(), "2", false)
			srv.ClearRequests()
			before := drv.Stats().Requests
			inv, err := drv.Inventory(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			reqs := drv.Stats().Requests - before
			fw := inventoryFirmware(&inv)
			if want := wantInventory(2); !reflect.DeepEqual(inv, want) {
				t.Fatalf("Inventory =\n%+v\nwant\n%+v", inv, want)
			}
			var paths []string
			for _, r := range srv.Requests() {
				if r.Method != "GET" {
					t.Errorf("Inventory sent %s %s; it must only read", r.Method, r.Path)
				}
				paths = append(paths, r.Path)
			}
			// The system, 4 collections, the drives; per member without
			// $expand; the firmware inventory when served.
			want := int64(1 + 4 + 2)
			if !expand {
				want += 2 + 4 + 1 + 2
			}
			if len(fw) > 0 {
				// UpdateService, the collection and each member: the
				// simulator's FirmwareInventory does not expand, and the
				// driver reads members that come as links one by one.
				// Plus the Systems collection, once per driver: no member
				// has a RelatedItem, so only the number of systems tells
				// whether they are shared (docs/firmware.md).
				want += 3 + int64(len(fw))
			}
			if reqs != want {
				t.Errorf("Inventory took %d requests, want %d: %v", reqs, want, paths)
			}
			t.Logf("%s: %d requests per inventory (%d firmware components)", name, reqs, len(fw))
		})
	}
}

// TestInventoryBoundedAndUnsupported: a system with more DIMMs than
// bmc.MaxInventoryEntries is cut and marked Truncated, reading no more
// members than needed; a system without inventory lists every section as
// unsupported and still reports its identity.
func TestInventoryBoundedAndUnsupported(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{Hardware: redfishtest.Hardware{MemoryModules: bmc.MaxInventoryEntries + 10}}, testOptions(), "", false)
	srv.ClearRequests()
	inv, err := drv.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Memory) != bmc.MaxInventoryEntries || !inv.Truncated {
		t.Fatalf("%d DIMMs, Truncated=%t; want %d, true", len(inv.Memory), inv.Truncated, bmc.MaxInventoryEntries)
	}
	dimms := 0
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "/Memory/") {
			dimms++
		}
	}
	if dimms != bmc.MaxInventoryEntries+1 {
		t.Errorf("read %d DIMMs; want %d (the limit plus one, to know it was cut)", dimms, bmc.MaxInventoryEntries+1)
	}

	_, drv = dialSim(t, redfishtest.Config{Hardware: redfishtest.Hardware{None: true}}, testOptions(), "", false)
	inv, err = drv.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	inventoryFirmware(&inv)
	want := []bmc.InventorySection{bmc.InventoryProcessors, bmc.InventoryMemory, bmc.InventoryStorage, bmc.InventoryNetwork}
	if !reflect.DeepEqual(inv.Unsupported, want) || inv.System.SerialNumber == "" || len(inv.Processors) > 0 {
		t.Fatalf("Inventory of a system without inventory = %+v; want identity only, Unsupported %v", inv, want)
	}
}

// checkGaps checks inv.Unreadable against want (section, path and the
// start of the reason, in order) and that every entry is one line and
// names no host, scheme or credentials.
func checkGaps(t *testing.T, srv *redfishtest.Server, inv bmc.Inventory, want []bmc.InventoryGap) {
	t.Helper()
	if len(inv.Unreadable) != len(want) {
		t.Fatalf("Unreadable = %+v\nwant %+v", inv.Unreadable, want)
	}
	host := strings.TrimPrefix(strings.TrimPrefix(srv.URL(), "https://"), "http://")
	for i, g := range inv.Unreadable {
		w := want[i]
		if g.Section != w.Section || g.Path != w.Path || !strings.HasPrefix(g.Reason, w.Reason) {
			t.Errorf("Unreadable[%d] = %+v, want section %s, path %s, reason %q...", i, g, w.Section, w.Path, w.Reason)
		}
		for _, bad := range []string{"://", host, srv.Credentials().Password, "\n", "\r"} {
			if strings.Contains(g.Path, bad) || strings.Contains(g.Reason, bad) {
				t.Errorf("Unreadable[%d] = %+v carries %q", i, g, bad)
			}
		}
	}
}

// TestInventoryUnreadable: a drive that answers 404 (hot-removed), one
// that answers 500 after every retry, a DIMM whose document does not fit
// its schema and a whole collection (EthernetInterfaces) answering 500 do
// not fail the inventory: everything else is read, and each of them is
// listed in Inventory.Unreadable with its section, its path and a one-line
// reason; the network section is unreadable, not unsupported. Per member
// and with $expand (where the DIMM comes inline and the stale drive as a
// link).
func TestInventoryUnreadable(t *testing.T) {
	for _, expand := range []bool{false, true} {
		name := map[bool]string{false: "PerMember", true: "ExpandQuery"}[expand]
		t.Run(name, func(t *testing.T) {
			const sys = "/redfish/v1/Systems/2"
			cfg := redfishtest.Config{Systems: 3, ExpandQuery: expand, Hardware: redfishtest.Hardware{
				Drives: 3, StaleMembers: []string{"Storage/1/Drives/Disk2"}, InvalidMembers: []string{"Memory/DIMM3"}}}
			cfg.Faults.Func = func(method, path string) redfishtest.Fault {
				if path == sys+"/Storage/1/Drives/Disk3" || path == sys+"/EthernetInterfaces" {
					return redfishtest.Fault500
				}
				return redfishtest.FaultNone
			}
			srv, drv := dialSim(t, cfg, testOptions(), "2", false)
			inv, err := drv.Inventory(t.Context())
			if err != nil {
				t.Fatalf("Inventory: %v; want the rest of the inventory, the unreadable resources listed", err)
			}
			inventoryFirmware(&inv)
			gaps := inv.Unreadable
			inv.Unreadable = nil
			want := wantInventory(2)
			want.Memory = slices.Delete(want.Memory, 2, 3)
			want.Drives = want.Drives[:1]
			want.NetworkInterfaces = nil
			if !reflect.DeepEqual(inv, want) {
				t.Fatalf("Inventory =\n%+v\nwant\n%+v", inv, want)
			}
			inv.Unreadable = gaps
			checkGaps(t, srv, inv, []bmc.InventoryGap{
				{Section: bmc.InventoryMemory, Path: sys + "/Memory/DIMM3", Reason: "invalid Memory: json: cannot unmarshal number"},
				{Section: bmc.InventoryStorage, Path: sys + "/Storage/1/Drives/Disk2", Reason: "HTTP 404 Not Found: Base.1.8.ResourceMissingAtURI"},
				{Section: bmc.InventoryStorage, Path: sys + "/Storage/1/Drives/Disk3", Reason: "HTTP 500 Internal Server Error"},
				{Section: bmc.InventoryNetwork, Path: sys + "/EthernetInterfaces", Reason: "HTTP 500 Internal Server Error"},
			})
		})
	}
}

// TestInventoryFailsWhole: what is not one resource's failure still fails
// the whole call, with nothing partial returned: the system itself
// answering 503 (transient), a drive whose connection is reset on every
// try (transient: the BMC did not answer), a member answering 401 even
// after a new login (bmc.ErrUnauthorized), and a ctx cancelled while
// members are read.
func TestInventoryFailsWhole(t *testing.T) {
	const sys = "/redfish/v1/Systems/1"
	for _, tc := range []struct {
		name  string
		fault func(srv *redfishtest.Server, cancel context.CancelFunc) func(method, path string) redfishtest.Fault
		check func(error) bool
	}{
		{"System503", func(*redfishtest.Server, context.CancelFunc) func(string, string) redfishtest.Fault {
			return func(_, path string) redfishtest.Fault {
				if path == sys {
					return redfishtest.Fault503
				}
				return redfishtest.FaultNone
			}
		}, bmc.IsTransient},
		{"DriveConnectionReset", func(*redfishtest.Server, context.CancelFunc) func(string, string) redfishtest.Fault {
			return func(_, path string) redfishtest.Fault {
				if path == sys+"/Storage/1/Drives/Disk1" {
					return redfishtest.FaultReset
				}
				return redfishtest.FaultNone
			}
		}, bmc.IsTransient},
		{"Member401", func(srv *redfishtest.Server, _ context.CancelFunc) func(string, string) redfishtest.Fault {
			return func(_, path string) redfishtest.Fault {
				if path == sys+"/Memory/DIMM2" {
					srv.ExpireSessions()
				}
				return redfishtest.FaultNone
			}
		}, func(err error) bool { return errors.Is(err, bmc.ErrUnauthorized) }},
		{"CancelledWhileReadingMembers", func(_ *redfishtest.Server, cancel context.CancelFunc) func(string, string) redfishtest.Fault {
			return func(_, path string) redfishtest.Fault {
				if path == sys+"/Processors/CPU2" {
					cancel()
				}
				return redfishtest.FaultNone
			}
		}, func(err error) bool { return errors.Is(err, context.Canceled) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			srv.SetFaults(0, tc.fault(srv, cancel))
			inv, err := drv.Inventory(ctx)
			if err == nil || !tc.check(err) {
				t.Fatalf("Inventory: %+v, %v; want the whole call to fail as before", inv, err)
			}
			if !reflect.DeepEqual(inv, bmc.Inventory{}) {
				t.Fatalf("a failed Inventory returned %+v", inv)
			}
			if s := err.Error(); strings.Contains(s, srv.Credentials().Password) || strings.Contains(s, "\n") {
				t.Fatalf("error %q: want one line, no password", s)
			}
		})
	}
}

// TestInventoryPlaceholders: placeholders are no values. MACs "Not
// Available" (HPE Cray EX), "00:00:00:00:00:00" and " N/A " read as no MAC
// (the permanent MAC when the BMC knows it), a space-padded processor
// model is trimmed; real values are kept. On the Cray EX personality too.
func TestInventoryPlaceholders(t *testing.T) {
	const padded = "AMD EPYC 7763 64-Core Processor                "
	cfg := redfishtest.Config{Hardware: redfishtest.Hardware{EthernetInterfaces: 4,
		MACAddresses: []string{"Not Available", "00:00:00:00:00:00", " N/A "},
		CPU:          redfishtest.ProcessorInfo{Manufacturer: "Advanced Micro Devices, Inc.", Model: padded}}}
	_, drv := dialSim(t, cfg, testOptions(), "", false)
	inv, err := drv.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var macs []string
	for _, n := range inv.NetworkInterfaces {
		macs = append(macs, n.MACAddress)
	}
	if want := []string{"", "", "", strings.ToLower(redfishtest.SystemMAC(1, 4))}; !reflect.DeepEqual(macs, want) {
		t.Errorf("MACs %q, want %q", macs, want)
	}
	for _, p := range inv.Processors {
		if p.Model != strings.TrimSpace(padded) || p.Manufacturer != "Advanced Micro Devices, Inc." {
			t.Errorf("processor %s: model %q by %q, want %q", p.ID, p.Model, p.Manufacturer, strings.TrimSpace(padded))
		}
	}

	_, drv = dialSim(t, redfishtest.VendorConfig(redfishtest.VendorCrayEX), testOptions(), "1", false)
	inv, err = drv.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.NetworkInterfaces) != 2 || inv.NetworkInterfaces[0].MACAddress != "" || inv.NetworkInterfaces[1].MACAddress != strings.ToLower(redfishtest.SystemMAC(1, 2)) {
		t.Errorf("Cray EX NICs %+v: want NIC1 without a MAC (\"Not Available\"), NIC2 %s", inv.NetworkInterfaces, strings.ToLower(redfishtest.SystemMAC(1, 2)))
	}
	if len(inv.Processors) == 0 || inv.Processors[0].Model != strings.TrimSpace(redfishtest.CrayEXCPUModel) {
		t.Errorf("Cray EX processors %+v: want the model %q, trimmed", inv.Processors, strings.TrimSpace(redfishtest.CrayEXCPUModel))
	}
}

// TestInventoryAccelerators: a Cray EX235a node's 8 GPUs, members of the
// system's Processors with ProcessorType GPU, are listed as accelerators,
// and the CPUs alone as processors (counting processors counts CPUs);
// per member and with $expand.
func TestInventoryAccelerators(t *testing.T) {
	for _, expand := range []bool{false, true} {
		name := map[bool]string{false: "PerMember", true: "ExpandQuery"}[expand]
		t.Run(name, func(t *testing.T) {
			cfg := redfishtest.VendorConfig(redfishtest.VendorCrayEX)
			cfg.ExpandQuery = expand
			_, drv := dialSim(t, cfg, testOptions(), "1", false)
			inv, err := drv.Inventory(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var cpus []string
			for _, p := range inv.Processors {
				cpus = append(cpus, p.ID)
			}
			if want := []string{"CPU1", "CPU2"}; !reflect.DeepEqual(cpus, want) {
				t.Errorf("processors %q, want the CPUs only, %q", cpus, want)
			}
			if len(inv.Accelerators) != 8 {
				t.Fatalf("%d accelerators %+v, want 8 GPUs", len(inv.Accelerators), inv.Accelerators)
			}
			for i, a := range inv.Accelerators {
				want := bmc.Accelerator{ID: "GPU" + strconv.Itoa(i+1), Type: "GPU", Manufacturer: "AMD", Model: "AMD Instinct MI200",
					SerialNumber: "G0001" + strconv.Itoa(i+1)}
				if a != want {
					t.Errorf("accelerator %d = %+v, want %+v", i, a, want)
				}
			}
			if len(inv.Unreadable) > 0 || slices.Contains(inv.Unsupported, bmc.InventoryProcessors) {
				t.Errorf("Unreadable %+v, Unsupported %v: want neither to name processors", inv.Unreadable, inv.Unsupported)
			}
		})
	}
}
