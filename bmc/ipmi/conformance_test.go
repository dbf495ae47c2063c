package ipmi_test

import (
	"context"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// dialer returns a Dialer for opts or fails the test.
func dialer(t testing.TB, opts ipmi.Options) *ipmi.Dialer {
	t.Helper()
	d, err := ipmi.NewDialer(opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// factory opens a driver per subtest on one shared peer.
func factory(d *ipmi.Dialer, ep bmc.Endpoint, creds bmc.Credentials) func(t *testing.T) bmctest.Target {
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

// TestConformanceGoIPMISimulator runs the suite against go-ipmi's
// in-process BMC (package ipmitest), default options (suite 17 then 3)
// except the request budget: the suite polls every 20 ms on several
// sessions at once, which the default 50/s would slow down (the SlowPower
// run has a budget).
func TestConformanceGoIPMISimulator(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	bmctest.Run(t, bmctest.Options{Unsupported: noHTTPBoot, SettleTimeout: 20 * time.Second, PollInterval: 20 * time.Millisecond},
		factory(dialer(t, ipmi.Options{RequestsPerSecond: -1}), sim.Endpoint, sim.Credentials))
}

// TestConformanceSubstitutingBMC runs the suite with the default Options
// (suites 17 then 3, the default request budget) against a BMC that answers
// suite 17 with suite 3's algorithms, as pyghmi's BMC and older firmwares
// do: the driver reaches it on suite 3.
func TestConformanceSubstitutingBMC(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{DowngradeCipherSuite: true})
	bmctest.Run(t, bmctest.Options{Unsupported: noHTTPBoot, SettleTimeout: 20 * time.Second},
		factory(dialer(t, ipmi.Options{}), sim.Endpoint, sim.Credentials))
}

// TestConformanceGoIPMISimulatorSlowPower runs the suite against a
// simulator whose power changes land 150ms after the BMC accepted them,
// under a request budget (shared by the subtests' sessions) that the suite's
// polls reach: 200/s, because the default 50/s makes the suite take 10 s
// instead of 1.
func TestConformanceGoIPMISimulatorSlowPower(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{PowerDelay: 150 * time.Millisecond})
	bmctest.Run(t, bmctest.Options{Unsupported: noHTTPBoot, SettleTimeout: 20 * time.Second, PollInterval: 20 * time.Millisecond},
		factory(dialer(t, ipmi.Options{RequestsPerSecond: 200}), sim.Endpoint, sim.Credentials))
}

// TestConformanceOpenIPMI runs the suite against OpenIPMI's ipmi_sim, a
// BMC implementation independent of go-ipmi, with the cipher suite named
// explicitly (ipmi_sim ignores the suite query and lacks 17).
func TestConformanceOpenIPMI(t *testing.T) {
	t.Parallel()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{FRU: testFRU})
	bmctest.Run(t, bmctest.Options{
		Unsupported:   []bmctest.Capability{bmc.CapabilityBootHTTP, bmc.CapabilityBMCReset, bmc.CapabilityBootOverrideReadBack, bmc.CapabilityBIOS},
		SettleTimeout: 20 * time.Second,
		PollInterval:  50 * time.Millisecond,
	}, factory(dialer(t, unlimited(sim.DialOptions())), sim.Endpoint, sim.Credentials))
}

// noHTTPBoot: IPMI has no UEFI HTTP boot; Unsupported/boot-http checks
// that SetBootOverride(uefi-http) is refused with bmc.ErrNotSupported. Nor
// a standard firmware update: the driver does not implement
// bmc.FirmwareUpdater, so Unsupported/firmware-update skips. IPMI has no
// BIOS settings either (Unsupported/bios).
var noHTTPBoot = []bmctest.Capability{bmc.CapabilityBootHTTP, bmc.CapabilityFirmwareUpdate, bmc.CapabilityBIOS}

// unlimited turns the request budget off: the suites poll faster than a
// real job does.
func unlimited(o ipmi.Options) ipmi.Options {
	o.RequestsPerSecond = -1
	return o
}
