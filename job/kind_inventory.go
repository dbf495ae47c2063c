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

func (inventoryKind) defaultTimeout(cfg *StepperConfig) time.Duration { return cfg.DefaultTaskTimeout }
func (inventoryKind) grace(*StepperConfig) time.Duration              { return 0 }
func (inventoryKind) usesBMC() bool                                   { return true }
func (inventoryKind) recheckable() bool                               { return false }

// preflight: the driver reads inventories.
func (inventoryKind) preflight(_ context.Context, r *stepRun, drv bmc.Driver, _ int) error {
	if _, ok := drv.(bmc.InventoryReader); !ok {
		return notSupported(r.ep, "read the inventory")
	}
	return nil
}
func (inventoryKind) send(context.Context, *stepRun, bmc.Driver) error {
	return nil
}

func (inventoryKind) check(ctx context.Context, r *stepRun, drv bmc.Driver, _ bool) (bool, string, error) {
	ir, ok := drv.(bmc.InventoryReader)
	if !ok {
		return false, "", notSupported(r.ep, "read the inventory")
	}
	inv, err := ir.Inventory(ctx)
	if err != nil {
		return false, "", err
	}
	inv.Bound()
	r.j.Status.Tasks[r.j.Status.CurrentTask].Inventory = &inv
	msg := fmt.Sprintf("%d processors, %d memory modules, %d drives, %d network interfaces, %d firmware components",
		len(inv.Processors), len(inv.Memory), len(inv.Drives), len(inv.NetworkInterfaces), len(inv.Firmware))
	if inv.Truncated {
		msg += " (truncated)"
	}
	return true, msg, nil
}

// notYet is never reached: any inventory read is the result.
func (inventoryKind) notYet(_ context.Context, r *stepRun, i int, _ string) (StepResult, error) {
	return r.pollAfterAction(i), nil
}
