package ipmi_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// Power a server on and set a one-time PXE boot over IPMI, against the
// in-process simulator.
func ExampleDialer() {
	sim, err := ipmitest.Start(ipmitest.Options{})
	if err != nil {
		panic(err)
	}
	defer sim.Close()

	d, err := ipmi.NewDialer(ipmi.Options{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	drv, err := d.Dial(ctx, sim.Endpoint, sim.Credentials)
	if err != nil {
		panic(err)
	}
	defer drv.Close(ctx)

	boot := drv.(bmc.BootOverrideSetter)
	if err := boot.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeUEFI}); err != nil {
		panic(err)
	}
	o, err := drv.(bmc.BootOverrideGetter).BootOverride(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("set:", o.Device, o.Persistent, o.Mode)
	if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
		panic(err)
	}
	state, err := drv.PowerState(ctx)
	if err != nil {
		panic(err)
	}
	// The boot consumed the one-time override, as on a real BMC.
	o, err = drv.(bmc.BootOverrideGetter).BootOverride(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("after power on:", state, o.Device)
	// Output:
	// set: pxe false uefi
	// after power on: On none
}
