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
