package fake_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
)

func ExampleFleet() {
	ctx := context.Background()
	fleet := fake.NewFleet()
	srv, err := fleet.AddNew("redfish://10.0.0.1/redfish/v1/Systems/1", fake.Options{
		Username: "admin", Password: "s3cret",
	})
	if err != nil {
		panic(err)
	}

	ep, _ := bmc.ParseEndpoint("redfish://10.0.0.1/redfish/v1/Systems/1")
	drv, err := fleet.Dial(ctx, ep, bmc.Credentials{Username: "admin", Password: "s3cret"})
	if err != nil {
		panic(err)
	}
	defer drv.Close(ctx)

	_ = drv.(bmc.BootOverrideSetter).SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE})
	_ = drv.SetPower(ctx, bmc.PowerActionOn)
	st, _ := drv.PowerState(ctx)
	fmt.Println("power:", st)
	fmt.Println("booted from:", srv.State().LastBootDevice)
	fmt.Println("logins:", srv.Sessions().Logins)

	_, err = fleet.Dial(ctx, ep, bmc.Credentials{Username: "admin", Password: "wrong"})
	fmt.Println("unauthorized:", errors.Is(err, bmc.ErrUnauthorized))
	// Output:
	// power: On
	// booted from: pxe
	// logins: 1
	// unauthorized: true
}

func ExampleBMC_FailNext() {
	ctx := context.Background()
	srv := fake.New(fake.Options{})
	// The next two power reads fail as a flaky BMC's would.
	srv.FailNext(fake.MethodPowerState, 2, bmc.Transient(errors.New("503 Service Unavailable")))

	drv, _ := srv.Dial(ctx, bmc.Endpoint{Protocol: "redfish", Host: "10.0.0.1"}, bmc.Credentials{})
	defer drv.Close(ctx)
	for range 3 {
		st, err := drv.PowerState(ctx)
		fmt.Println(st, err, bmc.IsTransient(err))
	}
	// Output:
	// Unknown bmc power state on redfish://10.0.0.1: 503 Service Unavailable true
	// Unknown bmc power state on redfish://10.0.0.1: 503 Service Unavailable true
	// Off <nil> false
}

func ExampleBMC_SetHook() {
	ctx := context.Background()
	srv := fake.New(fake.Options{Power: bmc.PowerOn})
	// Refuse power cycles the way some BMCs do after advertising them.
	srv.SetHook(fake.MethodSetPower, func(_ context.Context, c fake.Call) error {
		if c.Args[0] == bmc.PowerActionCycle {
			return fmt.Errorf("501 Not Implemented: %w", bmc.ErrNotSupported)
		}
		return nil
	})
	drv, _ := srv.Dial(ctx, bmc.Endpoint{Protocol: "ipmi", Host: "10.0.0.2"}, bmc.Credentials{})
	defer drv.Close(ctx)

	err := drv.SetPower(ctx, bmc.PowerActionCycle)
	fmt.Println(errors.Is(err, bmc.ErrNotSupported))
	fmt.Println(drv.SetPower(ctx, bmc.PowerActionReset))
	for _, c := range srv.CallsTo(fake.MethodSetPower) {
		fmt.Println(c)
	}
	// Output:
	// true
	// <nil>
	// #1 SetPower(cycle): bmc set power on ipmi://10.0.0.2: 501 Not Implemented: not supported by this BMC
	// #1 SetPower(reset)
}

func ExampleOptions_powerTransition() {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := fake.New(fake.Options{PowerTransition: 10 * time.Second, Clock: clk})
	drv, _ := srv.Dial(ctx, bmc.Endpoint{Protocol: "redfish", Host: "10.0.0.3"}, bmc.Credentials{})
	defer drv.Close(ctx)

	_ = drv.SetPower(ctx, bmc.PowerActionOn)
	st, _ := drv.PowerState(ctx)
	fmt.Println(st)
	clk.Advance(10 * time.Second)
	st, _ = drv.PowerState(ctx)
	fmt.Println(st)
	// Output:
	// PoweringOn
	// On
}

// A BIOS change on a BMC that applies it at the next boot: it is pending
// until the server boots, then reads back.
func ExampleDriver_SetBIOSAttributes() {
	ctx := context.Background()
	srv := fake.New(fake.Options{Power: bmc.PowerOn})
	drv, _ := srv.Dial(ctx, bmc.Endpoint{Protocol: "redfish", Host: "10.0.0.5"}, bmc.Credentials{})
	bios := drv.(bmc.BIOSConfigurer)

	reg, _ := bios.BIOSRegistry(ctx)
	fmt.Println(bmc.ValidateBIOSAttributes(reg, bmc.BIOSAttributes{"BootMode": "Legacy"}))

	res, _ := bios.SetBIOSAttributes(ctx, bmc.BIOSAttributes{"BootMode": "Bios"})
	fmt.Println("reboot required:", res.RebootRequired, "pending:", res.Pending)

	_ = drv.SetPower(ctx, bmc.PowerActionCycle)
	set, _ := bios.BIOSSettings(ctx)
	fmt.Println("after the boot:", set.Attributes["BootMode"], "pending:", len(set.Pending))
	// Output:
	// BIOS attribute BootMode="Legacy": not an allowed value; want one of "Uefi", "Bios"
	// reboot required: true pending: map[BootMode:Bios]
	// after the boot: Bios pending: 0
}

// Inventory of a fake BMC seeded with one network interface.
func ExampleDriver_Inventory() {
	ctx := context.Background()
	srv := fake.New(fake.Options{Inventory: &bmc.Inventory{
		NetworkInterfaces: []bmc.NetworkInterface{{ID: "eth0", MACAddress: "52:54:00:12:34:56"}},
	}})
	drv, _ := srv.Dial(ctx, bmc.Endpoint{Protocol: "redfish", Host: "10.0.0.5"}, bmc.Credentials{})
	inv, _ := drv.(bmc.InventoryReader).Inventory(ctx)
	for _, n := range inv.NetworkInterfaces {
		fmt.Println(n.ID, n.MACAddress)
	}
	// Output: eth0 52:54:00:12:34:56
}
