package ipmi_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

var (
	testBoard   = bmc.BoardInfo{Manufacturer: "Supermicro", Product: "X12DPi-NT6", SerialNumber: "OM21AS000123", PartNumber: "X12DPI-NT6-P"}
	testProduct = bmc.SystemInfo{Manufacturer: "Supermicro", Model: "SYS-620P-TRT", PartNumber: "SYS-620P-TRT-PN", SerialNumber: "S123456X1"}
	testFRU     = ipmitest.EncodeFRU(testBoard, testProduct)
)

// TestInventoryFRU reads the FRU of go-ipmi's simulator and of OpenIPMI's
// ipmi_sim (an independent implementation): board and product areas, the
// BMC's firmware, the rest listed as unsupported.
func TestInventoryFRU(t *testing.T) {
	t.Parallel()
	wantUnsupported := []bmc.InventorySection{bmc.InventoryProcessors, bmc.InventoryMemory, bmc.InventoryStorage, bmc.InventoryNetwork}
	check := func(t *testing.T, inv bmc.Inventory) {
		t.Helper()
		if inv.Board != testBoard || inv.System != testProduct {
			t.Errorf("board %+v, system %+v; want %+v, %+v", inv.Board, inv.System, testBoard, testProduct)
		}
		if !reflect.DeepEqual(inv.Unsupported, wantUnsupported) {
			t.Errorf("Unsupported = %v, want %v", inv.Unsupported, wantUnsupported)
		}
		if len(inv.Firmware) != 1 || inv.Firmware[0].ID != "BMC" || inv.Firmware[0].Version == "" {
			t.Errorf("Firmware = %+v; want the BMC's revision", inv.Firmware)
		}
	}
	t.Run("GoIPMISimulator", func(t *testing.T) {
		t.Parallel()
		sim := ipmitest.NewServer(t, ipmitest.Options{FRU: testFRU})
		drv, err := dialer(t, unlimited(ipmi.Options{})).Open(t.Context(), sim.Endpoint, sim.Credentials)
		if err != nil {
			t.Fatal(err)
		}
		defer drv.Close(context.Background())
		before := drv.Stats().Requests
		inv, err := drv.Inventory(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		check(t, inv)
		// Get Device ID, area info, and ceil(len/32) reads.
		if got, want := drv.Stats().Requests-before, int64(2+(len(testFRU)+31)/32); got != want {
			t.Errorf("Inventory took %d requests, want %d", got, want)
		}
	})
	t.Run("OpenIPMI", func(t *testing.T) {
		t.Parallel()
		sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{FRU: testFRU})
		drv, err := dialer(t, unlimited(sim.DialOptions())).Open(t.Context(), sim.Endpoint, sim.Credentials)
		if err != nil {
			t.Fatal(err)
		}
		defer drv.Close(context.Background())
		inv, err := drv.Inventory(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		check(t, inv)
	})
	t.Run("NoFRU", func(t *testing.T) {
		t.Parallel()
		sim := ipmitest.NewServer(t, ipmitest.Options{})
		drv, err := dialer(t, unlimited(ipmi.Options{})).Open(t.Context(), sim.Endpoint, sim.Credentials)
		if err != nil {
			t.Fatal(err)
		}
		defer drv.Close(context.Background())
		inv, err := drv.Inventory(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := append(append([]bmc.InventorySection{}, wantUnsupported...), bmc.InventoryBoard, bmc.InventorySystem)
		if !reflect.DeepEqual(inv.Unsupported, want) || len(inv.Firmware) != 1 {
			t.Fatalf("Inventory without FRU = %+v; want the firmware, Unsupported %v", inv, want)
		}
		_, err = drv.SetBIOSAttributes(t.Context(), bmc.BIOSAttributes{"BootMode": "Uefi"})
		var oe *bmc.OpError
		if !errors.Is(err, bmc.ErrNotSupported) || !errors.As(err, &oe) {
			t.Fatalf("SetBIOSAttributes: %v; want an OpError wrapping ErrNotSupported", err)
		}
	})
}
