package ipmi_test

import (
	"context"
	"fmt"
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

// factory opens a driver per subtest on one shared peer, whose health and
// SEL the suite compares with the driver's reads through peers (nil: not
// compared).
func factory(d *ipmi.Dialer, ep bmc.Endpoint, creds bmc.Credentials, peers ...func(*bmctest.Target)) func(t *testing.T) bmctest.Target {
	return func(t *testing.T) bmctest.Target {
		drv, err := d.Dial(t.Context(), ep, creds)
		if err != nil {
			t.Fatalf("dial %s: %v", ep, err)
		}
		tg := bmctest.Target{
			Driver:      drv,
			Credentials: creds,
			Dial: func(ctx context.Context, c bmc.Credentials) (bmc.Driver, error) {
				return d.Dial(ctx, ep, c)
			},
		}
		for _, p := range peers {
			p(&tg)
		}
		return tg
	}
}

// simPeers are the bmctest views of an ipmitest.Server's chassis status
// and SEL. The SEL's records are decoded with the driver's decoder (its
// own tests check it against ipmitool's reading of ipmi_sim's records):
// what the suite checks here is the walk, the order and the paging.
func simPeers(sim *ipmitest.Server) func(*bmctest.Target) {
	return func(tg *bmctest.Target) {
		tg.LocatorLED = sim.Chassis().LocatorLED
		tg.NMIs = func() int { return sim.Chassis().Counts().NMIs }
		tg.Health = &bmctest.HealthPeer{
			Want: func() bmc.HealthReport {
				return bmc.HealthReport{System: faultsHealth(sim.Chassis().Faults()), Sensors: sim.Sensors().Readings()}
			},
			SetSensor: func(name string, h bmc.Health) { setSensorHealth(sim.Sensors(), name, h) },
			Set: func(h bmc.Health) {
				switch h {
				case bmc.HealthCritical:
					sim.Chassis().SetFaults(ipmitest.ChassisFaults{PowerFault: true, CoolingFault: true})
				case bmc.HealthWarning:
					sim.Chassis().SetFaults(ipmitest.ChassisFaults{DriveFault: true})
				default:
					sim.Chassis().SetFaults(ipmitest.ChassisFaults{})
				}
			},
		}
		tg.Logs = &bmctest.LogPeer{
			Entries: func(ref bmc.LogRef) []bmc.LogEntry {
				var es []bmc.LogEntry
				for _, r := range sim.SEL().Records() {
					es = append(es, ipmi.DecodeSELRecord(r.Bytes()))
				}
				return es
			},
			Add: func(_ bmc.LogRef, n int) { addEvents(sim.SEL(), n) },
		}
	}
}

// setSensorHealth sets the raw reading of the sensor named name to the
// first value the simulator rates h.
func setSensorHealth(s *ipmitest.Sensors, name string, h bmc.Health) {
	for _, x := range s.List() {
		if x.Name != name {
			continue
		}
		for raw := range 256 {
			x.Raw = uint8(raw)
			if x.Reading().Health == h {
				s.SetRaw(x.Number, x.Raw)
				return
			}
		}
		panic(fmt.Sprintf("no reading of sensor %q is rated %s", name, h))
	}
	panic(fmt.Sprintf("the simulator has no sensor %q", name))
}

// faultsHealth is the health the driver must read for the fault bits f.
func faultsHealth(f ipmitest.ChassisFaults) bmc.ResourceHealth {
	h := bmc.ResourceHealth{ID: "chassis", Health: bmc.HealthOK}
	for _, b := range []struct {
		set    bool
		health bmc.Health
		name   string
	}{
		{f.PowerOverload, bmc.HealthCritical, "power overload"},
		{f.PowerFault, bmc.HealthCritical, "main power fault"},
		{f.PowerControlFault, bmc.HealthCritical, "power control fault"},
		{f.Interlock, bmc.HealthWarning, "power interlock active"},
		{f.CoolingFault, bmc.HealthWarning, "cooling/fan fault"},
		{f.DriveFault, bmc.HealthWarning, "drive fault"},
		{f.FrontPanelLockout, bmc.HealthWarning, "front panel lockout active"},
		{f.Intrusion, bmc.HealthWarning, "chassis intrusion"},
	} {
		if b.set {
			h.Faults = append(h.Faults, b.name)
			if h.Health != bmc.HealthCritical {
				h.Health = b.health
			}
		}
	}
	h.Rollup = h.Health
	return h
}

// addEvents records n events of several kinds in sim's SEL: threshold and
// sensor-specific events, asserted and deasserted, an OEM record with and
// one without a timestamp.
func addEvents(sel *ipmitest.SEL, n int) {
	for i := range n {
		switch i % 5 {
		case 0:
			sel.AddEvent(ipmitest.SELEvent{SensorType: 0x01, SensorNumber: 0x30, EventType: 0x01, EventData: [3]byte{0x52 | 0x09, 0x60, 0x55}})
		case 1:
			sel.AddEvent(ipmitest.SELEvent{Generator: 0x0041, SensorType: 0x08, SensorNumber: 0x02, EventType: 0x6f, EventData: [3]byte{0x01, 0xff, 0xff}})
		case 2:
			sel.AddEvent(ipmitest.SELEvent{SensorType: 0x04, SensorNumber: 0x41, EventType: 0x01, Deassertion: true, EventData: [3]byte{0x02}})
		case 3:
			sel.Add(0xc1, [13]byte{4: 0x57, 5: 0x01, 7: byte(i), 8: 0xaa})
		case 4:
			sel.Add(0xe0, [13]byte{0: 0xde, 1: 0xad, 12: byte(i)})
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
	sim := ipmitest.NewServer(t, ipmitest.Options{SELErasePolls: 2, Sensors: testSensors(), SDRReadLimit: 16})
	addEvents(sim.SEL(), 7)
	bmctest.Run(t, bmctest.Options{Unsupported: noHTTPBoot, SettleTimeout: 20 * time.Second, PollInterval: 20 * time.Millisecond},
		factory(dialer(t, ipmi.Options{RequestsPerSecond: -1}), sim.Endpoint, sim.Credentials, simPeers(sim)))
}

// TestConformanceSubstitutingBMC runs the suite with the default Options
// (suites 17 then 3, the default request budget) against a BMC that answers
// suite 17 with suite 3's algorithms, as pyghmi's BMC and older firmwares
// do: the driver reaches it on suite 3.
func TestConformanceSubstitutingBMC(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{DowngradeCipherSuite: true})
	addEvents(sim.SEL(), 3)
	bmctest.Run(t, bmctest.Options{Unsupported: noHTTPBoot, SettleTimeout: 20 * time.Second},
		factory(dialer(t, ipmi.Options{}), sim.Endpoint, sim.Credentials, simPeers(sim)))
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
	sensors := openIPMISensors()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{FRU: testFRU, Sensors: sensors})
	bmctest.Run(t, bmctest.Options{
		Unsupported: []bmctest.Capability{bmc.CapabilityBootHTTP, bmc.CapabilityBMCReset, bmc.CapabilityBootOverrideReadBack, bmc.CapabilityBIOS,
			bmc.CapabilityLocatorLEDBlink, bmc.CapabilityLocatorLEDReadBack, bmc.CapabilityNMI,
			bmc.CapabilitySecureBoot, bmc.CapabilityBootOrder},
		SettleTimeout: 20 * time.Second,
		PollInterval:  50 * time.Millisecond,
	}, factory(dialer(t, unlimited(sim.DialOptions())), sim.Endpoint, sim.Credentials, func(tg *bmctest.Target) {
		// ipmi_sim reports no fault bits: the chassis is OK. Its
		// sensors read as ipmitest rates them (TestSensorsMatchIpmitool
		// checks that against ipmitool).
		tg.Health = &bmctest.HealthPeer{Want: func() bmc.HealthReport {
			r := bmc.HealthReport{System: faultsHealth(ipmitest.ChassisFaults{})}
			for _, s := range sensors {
				r.Sensors = append(r.Sensors, s.Reading())
			}
			return r
		}}
		// Nor the identify state: the locator is checked in what its
		// chassis program got.
		tg.LocatorLED = func() bmc.LEDState {
			interval, force, ok, err := sim.ChassisIdentify()
			if err != nil || !ok || !force && interval == 0 {
				return bmc.LEDOff
			}
			return bmc.LEDOn
		}
	}))
}

// noHTTPBoot: IPMI has no UEFI HTTP boot; Unsupported/boot-http checks
// that SetBootOverride(uefi-http) is refused with bmc.ErrNotSupported. Nor
// a standard firmware update: the driver does not implement
// bmc.FirmwareUpdater, so Unsupported/firmware-update skips. IPMI has no
// BIOS settings either (Unsupported/bios), no Secure Boot and no
// persistent boot order (Unsupported/secure-boot, Unsupported/boot-order),
// and its Chassis Identify cannot ask for blinking
// (Unsupported/locator-led-blink).
var noHTTPBoot = []bmctest.Capability{bmc.CapabilityBootHTTP, bmc.CapabilityFirmwareUpdate, bmc.CapabilityBIOS,
	bmc.CapabilitySecureBoot, bmc.CapabilityBootOrder, bmc.CapabilityLocatorLEDBlink}

// unlimited turns the request budget off: the suites poll faster than a
// real job does.
func unlimited(o ipmi.Options) ipmi.Options {
	o.RequestsPerSecond = -1
	return o
}
