package fake_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
)

// A firmware update the crash-safe way: look for the update before
// starting it, follow the task, do the reset it asks for, verify the
// version.
func ExampleDriver_StartFirmwareUpdate() {
	ctx := context.Background()
	img := bmc.FirmwareImage{URI: "https://images.example/bios-2.1.bin?sig=secret", Component: "BIOS"}
	b := fake.New(fake.Options{Power: bmc.PowerOn, Firmware: fake.FirmwareOptions{
		Images:          map[string]fake.FirmwareImageInfo{img.URI: {Component: "BIOS", Version: "2.1"}},
		ActivateOnReset: true,
	}})
	drv, _ := b.Dial(ctx, bmc.Endpoint{Protocol: "redfish", Host: "bmc.example"}, bmc.Credentials{})
	defer drv.Close(ctx)
	fu := drv.(bmc.FirmwareUpdater)

	// After a crash the job would find its update here instead of
	// starting a second one.
	ref, found, _ := fu.FindFirmwareUpdate(ctx, img)
	if !found {
		ref, _ = fu.StartFirmwareUpdate(ctx, img)
	}
	st, _ := fu.FirmwareUpdateStatus(ctx, ref)
	fmt.Println(st.State, st.NeedsReset, st.Reset)
	if st.NeedsReset && st.Reset != bmc.FirmwareResetBMC {
		_ = drv.SetPower(ctx, bmc.PowerActionCycle)
	}
	v, _ := fu.FirmwareVersion(ctx, "BIOS")
	fmt.Println("BIOS", v)
	// Output:
	// Completed true system
	// BIOS 2.1
}
