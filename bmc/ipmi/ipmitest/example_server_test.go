package ipmitest_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// Start runs an in-process IPMI BMC (RMCP+ over UDP on 127.0.0.1) that the
// IPMI driver, or ipmitool, talks to.
func ExampleStart() {
	ctx := context.Background()
	srv, err := ipmitest.Start(ipmitest.Options{Username: "admin", Password: "tK4v9"})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	d, err := ipmi.NewDialer(ipmi.Options{})
	if err != nil {
		panic(err)
	}
	ep, err := bmc.ParseEndpoint(srv.URL())
	if err != nil {
		panic(err)
	}
	drv, err := d.Dial(ctx, ep, bmc.Credentials{Username: "admin", Password: "tK4v9"})
	if err != nil {
		panic(err)
	}
	defer drv.Close(ctx)
	before, _ := drv.PowerState(ctx)
	if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
		panic(err)
	}
	after, _ := drv.PowerState(ctx)
	fmt.Println(before, "->", after)
	// Output:
	// Off -> On
}
