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

	inv = bmc.Inventory{}
	for i := 0; i < bmc.MaxInventoryEntries+1; i++ {
		inv.Unreadable = append(inv.Unreadable, bmc.InventoryGap{Section: bmc.InventoryStorage, Path: "/" + strings.Repeat("d", 2*bmc.MaxInventoryString), Reason: "HTTP 404 Not Found"})
		inv.Accelerators = append(inv.Accelerators, bmc.Accelerator{ID: "GPU", Model: strings.Repeat("m", 2*bmc.MaxInventoryString)})
	}
	inv.Bound()
	if len(inv.Unreadable) != bmc.MaxInventoryEntries || len(inv.Accelerators) != bmc.MaxInventoryEntries ||
		len(inv.Unreadable[0].Path) != bmc.MaxInventoryString || len(inv.Accelerators[0].Model) != bmc.MaxInventoryString || !inv.Truncated {
		t.Fatalf("after Bound: %d unreadable (path %d bytes), %d accelerators (model %d bytes), Truncated=%t; want %d, %d, true",
			len(inv.Unreadable), len(inv.Unreadable[0].Path), len(inv.Accelerators), len(inv.Accelerators[0].Model), inv.Truncated, bmc.MaxInventoryEntries, bmc.MaxInventoryString)
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
		inv.Accelerators = append(inv.Accelerators, bmc.Accelerator{ID: long, Type: long, Manufacturer: long, Model: long, SerialNumber: long, PartNumber: long})
		inv.Unreadable = append(inv.Unreadable, bmc.InventoryGap{Section: bmc.InventorySection(long), Path: long, Reason: long})
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

// TestIsPlaceholder: what BMCs send for "no value" (HPE Cray EX's "Not
// Available", AMI's "To Be Filled By O.E.M.", all-zero MACs and serials),
// padded or not, is a placeholder; real values, zeros among them, are not.
func TestIsPlaceholder(t *testing.T) {
	for _, s := range []string{"", "   ", "Not Available", "not available", "N/A", " n/a ", "NA", "Unknown", "None",
		"Not Specified", "To Be Filled By O.E.M.", "Default string", "00:00:00:00:00:00", "000000000000", "0000.0000.0000",
		"00-00-00-00-00-00", "0", "00000000-0000-0000-0000-000000000000"} {
		if !bmc.IsPlaceholder(s) {
			t.Errorf("IsPlaceholder(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"0c:c4:7a:00:00:01", "00:00:00:00:00:01", "AMD EPYC 7763 64-Core Processor    ", "S0001DIMM1",
		"NAND", "Nano", "10", "-", ":", "N/A2", "AMD Instinct MI200"} {
		if bmc.IsPlaceholder(s) {
			t.Errorf("IsPlaceholder(%q) = true, want false", s)
		}
	}
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
