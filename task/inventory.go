package task

// InventoryAction reads the system's hardware inventory through the BMC
// (bmc.InventoryReader): processors, memory, storage controllers and
// drives, network interfaces with their MACs, and the firmware inventory
// (Redfish); the FRU and the BMC's firmware (IPMI). It changes nothing. The
// result lands in the task's Status.Inventory, bounded (bmc.Inventory.Bound:
// at most 64 entries per list and 128-byte strings, about 280 KiB of JSON at
// the very most; Truncated says when something was cut). It has no fields.
type InventoryAction struct{}

func (*InventoryAction) describe() string      { return "read inventory" }
func (*InventoryAction) validate(string) error { return nil }
