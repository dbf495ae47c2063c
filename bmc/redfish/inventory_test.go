package redfish_test

import (
	"context"
	"reflect"
	"slices"
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
				want += 2 + int64(len(fw))
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
