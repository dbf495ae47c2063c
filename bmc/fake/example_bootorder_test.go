package fake_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
)

// An installed server stops netbooting: the disk first in the persistent
// boot order, PXE on its NIC disabled, Secure Boot on. All of it waits for
// the next boot, which the caller does (a job's next task), then reads back
// applied.
func Example_bootOrderAndSecureBoot() {
	ctx := context.Background()
	srv := fake.New(fake.Options{})
	ep, _ := bmc.ParseEndpoint("redfish://10.0.0.1/redfish/v1/Systems/1")
	drv, err := srv.Dial(ctx, ep, bmc.Credentials{Username: "admin", Password: "password"})
	if err != nil {
		panic(err)
	}
	defer drv.Close(ctx)
	boot, sb := drv.(bmc.BootOrderManager), drv.(bmc.SecureBootManager)

	cur, _ := boot.BootOrder(ctx)
	var disk string
	for _, o := range cur.Options {
		if o.Alias == "Hdd" {
			disk = o.Reference
		}
	}
	pxe := cur.NetworkOptions("0C-C4-7A-00-01-01", "Pxe")
	change := bmc.BootOrderChange{Order: []string{disk}, Enabled: map[string]bool{pxe[0]: false}}
	got, _ := boot.SetBootOrder(ctx, change)
	fmt.Println("pending order:", got.PendingOrder, "reboot required:", got.RebootRequired())

	if _, err := sb.SetSecureBoot(ctx, true); err != nil {
		panic(err)
	}
	_ = drv.SetPower(ctx, bmc.PowerActionCycle)

	after, _ := boot.BootOrder(ctx)
	fmt.Println("order after the boot:", after.Order, "differing:", len(change.Differing(after)))
	s, _ := sb.SecureBoot(ctx)
	fmt.Println("secure boot:", s, "applied:", s.Applied(true))
	// Output:
	// pending order: [Boot0002 Boot0001 Boot0003 Boot0004] reboot required: true
	// order after the boot: [Boot0002 Boot0001 Boot0003 Boot0004] differing: 0
	// secure boot: enabled, current boot Enabled, mode UserMode applied: true
}
