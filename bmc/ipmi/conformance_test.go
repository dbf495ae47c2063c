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
// in-process BMC (package ipmitest), default options: suite 17 then 3.
func TestConformanceGoIPMISimulator(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	bmctest.Run(t, bmctest.Options{SettleTimeout: 20 * time.Second, PollInterval: 20 * time.Millisecond},
		factory(dialer(t, ipmi.Options{}), sim.Endpoint, sim.Credentials))
}

// TestConformanceGoIPMISimulatorSlowPower runs the suite against a
// simulator whose power changes land 150ms after the BMC accepted them.
func TestConformanceGoIPMISimulatorSlowPower(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{PowerDelay: 150 * time.Millisecond})
	bmctest.Run(t, bmctest.Options{SettleTimeout: 20 * time.Second, PollInterval: 20 * time.Millisecond},
		factory(dialer(t, ipmi.Options{}), sim.Endpoint, sim.Credentials))
}

// TestConformanceOpenIPMI runs the suite against OpenIPMI's ipmi_sim, a
// BMC implementation independent of go-ipmi, with the cipher suite named
// explicitly (ipmi_sim ignores the suite query and lacks 17).
func TestConformanceOpenIPMI(t *testing.T) {
	t.Parallel()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	bmctest.Run(t, bmctest.Options{
		Unsupported:   []bmctest.Capability{bmc.CapabilityBMCReset, bmc.CapabilityBootOverrideReadBack},
		SettleTimeout: 20 * time.Second,
		PollInterval:  50 * time.Millisecond,
	}, factory(dialer(t, sim.DialOptions()), sim.Endpoint, sim.Credentials))
}
