package bmclib_test

import (
	"context"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmclib"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// ipmitoolDialer returns a dialer for the real ipmitool, skipping (failing
// under CI=true) when it is missing.
func ipmitoolDialer(t testing.TB, opts bmclib.IPMIToolOptions) *bmclib.IPMIToolDialer {
	t.Helper()
	opts.Path = ipmitest.RequireProgram(t, "ipmitool", "ipmitool")
	d, err := bmclib.NewIPMIToolDialer(opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func factory(d bmc.Dialer, ep bmc.Endpoint, creds bmc.Credentials) func(t *testing.T) bmctest.Target {
	return func(t *testing.T) bmctest.Target {
		drv, err := d.Dial(t.Context(), ep, creds)
		if err != nil {
			t.Fatalf("dial %s: %v", ep, err)
		}
		return bmctest.Target{
			Driver:      drv,
			Credentials: creds,
			Dial: func(ctx context.Context, c bmc.Credentials) (bmc.Driver, error) {
				return d.Dial(ctx, ep, c)
			},
		}
	}
}

// noHTTPBoot: bmclib has no UEFI HTTP boot; Unsupported/boot-http checks
// that SetBootOverride(uefi-http) is refused with bmc.ErrNotSupported.
var noHTTPBoot = []bmctest.Capability{bmc.CapabilityBootHTTP}

// TestConformanceIPMIToolGoIPMISimulator runs the suite through bmclib's
// ipmitool provider (the real ipmitool) against go-ipmi's simulator.
func TestConformanceIPMIToolGoIPMISimulator(t *testing.T) {
	t.Parallel()
	d := ipmitoolDialer(t, bmclib.IPMIToolOptions{CipherSuite: 3})
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	bmctest.Run(t, bmctest.Options{Unsupported: noHTTPBoot, SettleTimeout: 30 * time.Second, PollInterval: 20 * time.Millisecond},
		factory(d, sim.Endpoint, sim.Credentials))
}

// TestConformanceIPMIToolOpenIPMI runs the suite through bmclib's ipmitool
// provider against OpenIPMI's ipmi_sim.
func TestConformanceIPMIToolOpenIPMI(t *testing.T) {
	t.Parallel()
	d := ipmitoolDialer(t, bmclib.IPMIToolOptions{CipherSuite: 3})
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	bmctest.Run(t, bmctest.Options{
		Unsupported:   []bmctest.Capability{bmc.CapabilityBootHTTP, bmc.CapabilityBMCReset},
		SettleTimeout: 30 * time.Second,
		PollInterval:  50 * time.Millisecond,
	}, factory(d, sim.Endpoint, sim.Credentials))
}
