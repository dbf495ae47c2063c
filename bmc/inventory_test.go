package bmc_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bmckit/bmckit/bmc"
)

func TestInventoryBound(t *testing.T) {
	var inv bmc.Inventory
	for i := 0; i < bmc.MaxInventoryEntries+5; i++ {
		inv.Memory = append(inv.Memory, bmc.MemoryModule{ID: "DIMM"})
	}
	inv.Bound()
	if len(inv.Memory) != bmc.MaxInventoryEntries || !inv.Truncated {
		t.Fatalf("after Bound: %d memory modules, Truncated=%t; want %d, true", len(inv.Memory), inv.Truncated, bmc.MaxInventoryEntries)
	}

	inv = bmc.Inventory{System: bmc.SystemInfo{Model: strings.Repeat("é", bmc.MaxInventoryString)}, Firmware: []bmc.FirmwareComponent{{ID: "x", Version: "bad\xffutf8"}}}
	inv.Bound()
	if len(inv.System.Model) > bmc.MaxInventoryString || !utf8.ValidString(inv.System.Model) || !inv.Truncated {
		t.Fatalf("Model cut to %d bytes (valid UTF-8 %t), Truncated=%t", len(inv.System.Model), utf8.ValidString(inv.System.Model), inv.Truncated)
	}
	if !utf8.ValidString(inv.Firmware[0].Version) {
		t.Fatalf("invalid UTF-8 kept: %q", inv.Firmware[0].Version)
	}

	small := bmc.Inventory{Processors: []bmc.Processor{{ID: "CPU0", Cores: 8}}}
	small.Bound()
	if small.Truncated {
		t.Fatal("a small inventory was marked truncated")
	}
}

// TestInventoryWorstCaseSize checks the bound documented in
// docs/inventory-bios.md: a fully truncated inventory stays under 600 KiB
// of JSON.
func TestInventoryWorstCaseSize(t *testing.T) {
	long := strings.Repeat("x", 4*bmc.MaxInventoryString)
	var inv bmc.Inventory
	for i := 0; i < 2*bmc.MaxInventoryEntries; i++ {
		inv.Processors = append(inv.Processors, bmc.Processor{ID: long, Manufacturer: long, Model: long, Architecture: long, Cores: 1 << 30, Threads: 1 << 30, MaxSpeedMHz: 1 << 30})
		inv.Memory = append(inv.Memory, bmc.MemoryModule{ID: long, Manufacturer: long, PartNumber: long, SerialNumber: long, Type: long, CapacityMiB: 1 << 60, SpeedMHz: 1 << 30})
		inv.StorageControllers = append(inv.StorageControllers, bmc.StorageController{ID: long, Storage: long, Name: long, Manufacturer: long, Model: long, FirmwareVersion: long})
		inv.Drives = append(inv.Drives, bmc.Drive{ID: long, Storage: long, Name: long, Manufacturer: long, Model: long, SerialNumber: long, MediaType: long, Protocol: long, CapacityBytes: 1 << 60})
		inv.NetworkInterfaces = append(inv.NetworkInterfaces, bmc.NetworkInterface{ID: long, Name: long, MACAddress: long, LinkStatus: long, SpeedMbps: 1 << 30})
		inv.Firmware = append(inv.Firmware, bmc.FirmwareComponent{ID: long, Name: long, Version: long, Updateable: true})
	}
	inv.Bound()
	b, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 600<<10 {
		t.Fatalf("worst-case inventory is %d bytes of JSON, over the documented 600 KiB", len(b))
	}
	t.Logf("worst-case inventory: %d bytes of JSON", len(b))
}

func TestNormalizeMAC(t *testing.T) {
	for in, want := range map[string]string{
		"0C:C4:7A:00:00:01": "0c:c4:7a:00:00:01",
		"0c-c4-7a-00-00-01": "0c:c4:7a:00:00:01",
		"0cc4.7a00.0001":    "0c:c4:7a:00:00:01",
		"0cc47a000001":      "0c:c4:7a:00:00:01",
		"not a mac":         "not a mac",
		"0c:c4:7a:00:00":    "0c:c4:7a:00:00",
	} {
		if got := bmc.NormalizeMAC(in); got != want {
			t.Errorf("NormalizeMAC(%q) = %q, want %q", in, got, want)
		}
	}
}
