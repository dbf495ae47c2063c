package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("inventory", func(*task.Spec) kind { return inventoryKind{} })
}

// inventoryKind reads the hardware inventory (bmc.InventoryReader) into the
// task's Status.Inventory, bounded (bmc.Inventory.Bound), changing nothing.
// Like powerStatus, the read is the task's result: it is never "already
// done", and a task resumed after a crash reads again.
type inventoryKind struct{}

func (inventoryKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (inventoryKind) usesBMC() bool                              { return true }
func (inventoryKind) recheckable() bool                          { return false }

// preflight: the driver reads inventories.
func (inventoryKind) preflight(_ context.Context, t *taskView) error {
	if _, ok := t.BMC.(bmc.InventoryReader); !ok {
		return notSupported(t.ep, "read the inventory")
	}
	return nil
}

func (inventoryKind) send(context.Context, *taskView) error { return nil }

// check reads the inventory: any read is the result.
func (inventoryKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	ir, ok := t.BMC.(bmc.InventoryReader)
	if !ok {
		return false, "", notSupported(t.ep, "read the inventory")
	}
	inv, err := ir.Inventory(ctx)
	if err != nil {
		return false, "", err
	}
	inv.Bound()
	t.status.Inventory = &inv
	msg := fmt.Sprintf("%d processors, %d memory modules, %d drives, %d network interfaces, %d firmware components",
		len(inv.Processors), len(inv.Memory), len(inv.Drives), len(inv.NetworkInterfaces), len(inv.Firmware))
	if n := len(inv.Accelerators); n > 0 {
		msg += fmt.Sprintf(", %d accelerators", n)
	}
	if n := len(inv.Unreadable); n > 0 {
		// A partial inventory says so: the rest was read (Status.Inventory.Unreadable).
		msg += fmt.Sprintf("; %d members unreadable", n)
	}
	if inv.Truncated {
		msg += " (truncated)"
	}
	return true, msg, nil
}
