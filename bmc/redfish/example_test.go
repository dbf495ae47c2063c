package redfish_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// Power a simulated server on, one-time PXE boot it, and see what it cost.
func Example() {
	srv := redfishtest.NewServer(redfishtest.Config{})
	defer srv.Close()
	ctx := context.Background()

	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(redfish.Options{}))
	ep, err := bmc.ParseEndpoint(srv.Address("1")) // redfish+http://127.0.0.1:port/redfish/v1/Systems/1
	if err != nil {
		panic(err)
	}
	drv, err := dialer.Dial(ctx, ep, srv.Credentials()) // admin / redfishtest-secret
	if err != nil {
		panic(err)
	}
	defer drv.Close(ctx)

	if err := drv.(bmc.BootOverrideSetter).SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
		panic(err)
	}
	if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
		panic(err)
	}
	st, err := drv.PowerState(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("power:", st)
	ws := drv.(bmc.StatsReporter).Stats()
	// Throttled and ThrottleWait say how often and how long requests waited
	// for the endpoint's request budget (Options.RequestsPerSecond).
	fmt.Printf("requests %d, connections %d, logins %d\n", ws.Requests, ws.Connections, ws.Logins)
	// Output:
	// power: On
	// requests 8, connections 1, logins 1
}

// Read a simulated server's inventory, then change a BIOS attribute: it is
// pending until the next boot, which the caller does.
func ExampleDriver_SetBIOSAttributes() {
	srv := redfishtest.NewServer(redfishtest.Config{})
	defer srv.Close()
	ctx := context.Background()
	drv, err := redfish.NewDialer(redfish.Options{}).DialDriver(ctx, srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		panic(err)
	}
	defer drv.Close(ctx)

	inv, err := drv.Inventory(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(inv.System.Model, len(inv.Processors), "CPUs,", inv.NetworkInterfaces[0].MACAddress)

	reg, err := drv.BIOSRegistry(ctx)
	if err != nil {
		panic(err)
	}
	want := bmc.BIOSAttributes{"BootMode": "Bios"}
	if err := bmc.ValidateBIOSAttributes(reg, want); err != nil {
		panic(err)
	}
	res, err := drv.SetBIOSAttributes(ctx, want)
	if err != nil {
		panic(err)
	}
	fmt.Println("reboot required:", res.RebootRequired)
	if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil { // the boot applies it
		panic(err)
	}
	set, err := drv.BIOSSettings(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("BootMode:", set.Attributes["BootMode"], "pending:", len(set.Pending))
	// Output:
	// redfishtest 2 CPUs, 0c:c4:7a:00:01:01
	// reboot required: true
	// BootMode: Bios pending: 0
}
