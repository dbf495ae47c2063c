package redfishtest_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// A Server is a simulated Redfish BMC on 127.0.0.1, the httptest way: dial
// it with the Redfish driver (or any Redfish client), then check what it
// saw.
func ExampleNewTLSServer() {
	ctx := context.Background()
	srv := redfishtest.NewTLSServer(redfishtest.Config{Systems: 2})
	defer srv.Close()
	srv.SetPower("2", "On")

	d := redfish.NewDialer(redfish.Options{CACertPEM: srv.CACertPEM()})
	drv, err := d.Dial(ctx, srv.Endpoint("2"), srv.Credentials())
	if err != nil {
		panic(err)
	}
	defer drv.Close(ctx)
	st, err := drv.PowerState(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("system 2:", st)
	fmt.Println("system 1:", srv.System("1").Power)
	fmt.Println("logins:", srv.Logins())
	// Output:
	// system 2: On
	// system 1: Off
	// logins: 1
}

// A BMC whose BIOS settings apply only at the next boot: the pending
// values show in the settings object until the system boots.
func ExampleServer_BIOSAttributes() {
	srv := redfishtest.NewServer(redfishtest.Config{BIOS: redfishtest.BIOSOnReset})
	defer srv.Close()
	cur, pending := srv.BIOSAttributes("1")
	fmt.Println(cur["BootMode"], len(pending))
	// Output: Uefi 0
}
