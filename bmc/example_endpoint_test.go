package bmc_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
)

// ParseEndpoint reads the Metal3-style URLs; credentials in a URL are
// refused, and the error does not repeat them.
func ExampleParseEndpoint() {
	ep, err := bmc.ParseEndpoint("redfish://10.0.0.5/redfish/v1/Systems/1")
	if err != nil {
		panic(err)
	}
	fmt.Println(ep.Protocol, ep.Transport, ep.HostPort(), ep.SystemID())

	ep, _ = bmc.ParseEndpoint("ipmi://10.0.0.6")
	fmt.Println(ep.Protocol, ep.HostPort())

	_, err = bmc.ParseEndpoint("redfish://admin:hunter2@10.0.0.5")
	fmt.Println(err)
	// Output:
	// redfish https 10.0.0.5:443 1
	// ipmi 10.0.0.6:623
	// bmc: invalid BMC address: credentials in the URL are not accepted ('@' found); supply them as bmc.Credentials
}

// A SchemeDialer routes each address to the Dialer registered for its
// protocol; here redfish:// goes to an in-memory fake BMC.
func ExampleSchemeDialer() {
	ctx := context.Background()
	fleet := fake.NewFleet()
	if _, err := fleet.AddNew("redfish://10.0.0.5/redfish/v1/Systems/1", fake.Options{Username: "admin", Password: "pw-123", Power: bmc.PowerOff}); err != nil {
		panic(err)
	}
	var d bmc.SchemeDialer
	d.Register("redfish", fleet)

	ep, _ := bmc.ParseEndpoint("redfish://10.0.0.5/redfish/v1/Systems/1")
	drv, err := d.Dial(ctx, ep, bmc.Credentials{Username: "admin", Password: "pw-123"})
	if err != nil {
		panic(err)
	}
	defer drv.Close(ctx)
	st, _ := drv.PowerState(ctx)
	fmt.Println("power:", st)

	ipmi, _ := bmc.ParseEndpoint("ipmi://10.0.0.6")
	_, err = d.Dial(ctx, ipmi, bmc.Credentials{})
	fmt.Println("ipmi refused (no dialer registered):", err != nil)

	_, err = d.Dial(ctx, ep, bmc.Credentials{Username: "admin", Password: "wrong"})
	fmt.Println("unauthorized:", errors.Is(err, bmc.ErrUnauthorized))
	// Output:
	// power: Off
	// ipmi refused (no dialer registered): true
	// unauthorized: true
}

// Check requested BIOS attributes against the registry before any request.
func ExampleValidateBIOSAttributes() {
	reg := bmc.BIOSRegistry{ID: "BiosAttributeRegistry.v1_0_0", Attributes: []bmc.BIOSAttributeDef{
		{Name: "BootMode", Type: bmc.BIOSEnumeration, Values: []string{"Uefi", "Bios"}},
	}}
	err := bmc.ValidateBIOSAttributes(reg, bmc.BIOSAttributes{"BootMode": "Legacy", "Turbo": "on"})
	fmt.Println(err)
	// Output:
	// BIOS attribute BootMode="Legacy": not an allowed value; want one of "Uefi", "Bios"; BIOS attribute Turbo="on": unknown attribute: not in the attribute registry BiosAttributeRegistry.v1_0_0
}
