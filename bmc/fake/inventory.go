package fake

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.InventoryReader = (*Driver)(nil)

// DefaultInventory is the inventory a fake BMC reports when
// Options.Inventory is not set: a small two-socket server.
func DefaultInventory() bmc.Inventory {
	return bmc.Inventory{
		System: bmc.SystemInfo{Manufacturer: "bmckit", Model: "fake", SerialNumber: "FAKE-0001", BIOSVersion: "1.0.0"},
		Processors: []bmc.Processor{
			{ID: "CPU0", Manufacturer: "Intel(R) Corporation", Model: "Xeon Gold 6430", Architecture: "x86", Cores: 32, Threads: 64, MaxSpeedMHz: 3400},
			{ID: "CPU1", Manufacturer: "Intel(R) Corporation", Model: "Xeon Gold 6430", Architecture: "x86", Cores: 32, Threads: 64, MaxSpeedMHz: 3400},
		},
		Memory: []bmc.MemoryModule{
			{ID: "DIMM0", Manufacturer: "Samsung", PartNumber: "M321R4GA3BB6-CQK", SerialNumber: "F0000001", Type: "DDR5", CapacityMiB: 32768, SpeedMHz: 4800},
			{ID: "DIMM1", Manufacturer: "Samsung", PartNumber: "M321R4GA3BB6-CQK", SerialNumber: "F0000002", Type: "DDR5", CapacityMiB: 32768, SpeedMHz: 4800},
		},
		StorageControllers: []bmc.StorageController{{ID: "RAID0", Storage: "RAID", Name: "RAID controller", Manufacturer: "Broadcom", Model: "MegaRAID 9560", FirmwareVersion: "52.24.0"}},
		Drives: []bmc.Drive{
			{ID: "Disk0", Storage: "RAID", Name: "Disk 0", Manufacturer: "Micron", Model: "7450 PRO", SerialNumber: "D0000001", MediaType: "SSD", Protocol: "NVMe", CapacityBytes: 960197124096},
		},
		NetworkInterfaces: []bmc.NetworkInterface{
			{ID: "NIC1", Name: "Ethernet 1", MACAddress: "0c:c4:7a:00:00:01", SpeedMbps: 25000, LinkStatus: "LinkUp"},
			{ID: "NIC2", Name: "Ethernet 2", MACAddress: "0c:c4:7a:00:00:02", SpeedMbps: 25000, LinkStatus: "LinkDown"},
		},
		Firmware: []bmc.FirmwareComponent{
			{ID: "BMC", Name: "BMC firmware", Version: "1.0.0", Updateable: true},
			{ID: "BIOS", Name: "BIOS", Version: "1.0.0", Updateable: true},
		},
	}
}

// Inventory implements [bmc.InventoryReader]: Options.Inventory (or
// [DefaultInventory]), bounded ([bmc.Inventory.Bound]), a deep copy. Without
// [bmc.CapabilityInventory] it fails with an error wrapping
// [bmc.ErrNotSupported].
func (d *Driver) Inventory(ctx context.Context) (bmc.Inventory, error) {
	var inv bmc.Inventory
	err := d.do(ctx, MethodInventory, nil, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityInventory] {
			return fmt.Errorf("reading the inventory: %w", bmc.ErrNotSupported)
		}
		inv = *b.inventory.DeepCopy()
		return nil
	})
	if err != nil {
		return bmc.Inventory{}, err
	}
	inv.Bound()
	return inv, nil
}
