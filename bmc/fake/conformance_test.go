package fake_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// dialTarget creates a fake with opts and dials it.
func dialTarget(t *testing.T, opts fake.Options) (*fake.BMC, bmc.Driver) {
	t.Helper()
	srv := fake.New(opts)
	drv, err := srv.Dial(context.Background(), bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "127.0.0.1"}, bmc.Credentials{Username: opts.Username, Password: opts.Password})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	return srv, drv
}

func TestConformance(t *testing.T) {
	t.Run("Instant", func(t *testing.T) {
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond}, func(t *testing.T) bmctest.Target {
			creds := bmc.Credentials{Username: "admin", Password: "pw-Instant-secret"}
			srv, drv := dialTarget(t, fake.Options{Username: creds.Username, Password: creds.Password})
			return bmctest.Target{
				Driver:      drv,
				Credentials: creds,
				Dial: func(ctx context.Context, c bmc.Credentials) (bmc.Driver, error) {
					return srv.Dial(ctx, bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "127.0.0.1"}, c)
				},
				Events:     &bmctest.EventPeer{Subscriptions: srv.Subscriptions, TestEvents: func() int { return len(srv.TestEvents()) }},
				LocatorLED: func() bmc.LEDState { return srv.State().LocatorLED },
				NMIs:       func() int { return srv.State().NMIs },
			}
		})
	})

	// A locator that cannot blink nor be read back (as on IPMI): the LED
	// is checked at the peer.
	t.Run("LocatorWithoutReadBack", func(t *testing.T) {
		lacks := []bmc.Capability{bmc.CapabilityLocatorLEDReadBack, bmc.CapabilityLocatorLEDBlink}
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Unsupported: lacks}, func(t *testing.T) bmctest.Target {
			srv, drv := dialTarget(t, fake.Options{Unsupported: lacks})
			return bmctest.Target{Driver: drv, LocatorLED: func() bmc.LEDState { return srv.State().LocatorLED }, NMIs: func() int { return srv.State().NMIs }}
		})
	})

	// Transitions of several seconds on a fake clock the suite advances
	// between polls.
	t.Run("DelayedFakeClock", func(t *testing.T) {
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond}, func(t *testing.T) bmctest.Target {
			clk := clock.NewFake(epoch)
			_, drv := dialTarget(t, fake.Options{PowerTransition: 5 * time.Second, SoftOffDelay: 30 * time.Second, BMCResetDowntime: 20 * time.Second, Clock: clk})
			return bmctest.Target{Driver: drv, Advance: func() { clk.Advance(time.Second) }}
		})
	})

	// Short real delays and latency on the wall clock, with requests during
	// a pending change dropped as some BMCs do.
	t.Run("DelayedWallClock", func(t *testing.T) {
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond}, func(t *testing.T) bmctest.Target {
			_, drv := dialTarget(t, fake.Options{
				PowerTransition: 5 * time.Millisecond, Latency: 100 * time.Microsecond, BMCResetDowntime: 5 * time.Millisecond,
				DropDuringTransition: true, Power: bmc.PowerOn,
			})
			return bmctest.Target{Driver: drv}
		})
	})

	t.Run("NothingSupported", func(t *testing.T) {
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Unsupported: bmc.Capabilities()}, func(t *testing.T) bmctest.Target {
			_, drv := dialTarget(t, fake.Options{Unsupported: bmc.Capabilities()})
			return bmctest.Target{Driver: drv}
		})
	})

	t.Run("PartlySupported", func(t *testing.T) {
		lacks := []bmc.Capability{bmc.CapabilityBootOverrideReadBack, bmc.CapabilityBootMode, bmc.CapabilityVirtualMediaUSB, bmc.CapabilityPowerCycle}
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Unsupported: lacks}, func(t *testing.T) bmctest.Target {
			_, drv := dialTarget(t, fake.Options{Unsupported: lacks})
			return bmctest.Target{Driver: drv}
		})
	})

	// A BMC that drops one-time overrides fails the once subtests (see
	// bmctest's own tests); with them skipped the rest passes.
	t.Run("OnceOverrideIgnored", func(t *testing.T) {
		skip := []string{"BootHTTP/once"}
		for _, dev := range []string{"pxe", "disk", "cdrom", "bios"} {
			for _, mode := range []string{"unchanged", "uefi", "legacy"} {
				skip = append(skip, "BootOverride/"+dev+"-once-"+mode)
			}
		}
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Skip: skip}, func(t *testing.T) bmctest.Target {
			_, drv := dialTarget(t, fake.Options{IgnoreOnceOverride: true})
			return bmctest.Target{Driver: drv}
		})
	})

	// A BMC without UEFI HTTP boot: SetBootOverride(uefi-http) is refused
	// with bmc.ErrNotSupported (Unsupported/boot-http), the rest works.
	t.Run("NoHTTPBoot", func(t *testing.T) {
		lacks := []bmc.Capability{bmc.CapabilityBootHTTP}
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Unsupported: lacks}, func(t *testing.T) bmctest.Target {
			_, drv := dialTarget(t, fake.Options{Unsupported: lacks})
			return bmctest.Target{Driver: drv}
		})
	})

	// BIOS settings applied at once (no pending state), and a seeded
	// inventory that Inventory/Read compares field for field.
	t.Run("BIOSImmediateSeededInventory", func(t *testing.T) {
		inv := bmc.Inventory{
			System:            bmc.SystemInfo{Manufacturer: "Acme", Model: "R1", SerialNumber: "S-1"},
			NetworkInterfaces: []bmc.NetworkInterface{{ID: "eth0", MACAddress: "52:54:00:12:34:56"}},
			Unsupported:       []bmc.InventorySection{bmc.InventoryProcessors},
		}
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Inventory: &inv}, func(t *testing.T) bmctest.Target {
			_, drv := dialTarget(t, fake.Options{BIOSImmediate: true, Inventory: &inv})
			return bmctest.Target{Driver: drv}
		})
	})

	t.Run("SoftOffIgnored", func(t *testing.T) {
		bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, SoftOffNeverCompletes: true}, func(t *testing.T) bmctest.Target {
			_, drv := dialTarget(t, fake.Options{SoftOffIgnored: true})
			return bmctest.Target{Driver: drv}
		})
	})
}

// Firmware updates on the fake: at once, over minutes on a fake clock,
// needing a reset, and missing.
func TestConformanceFirmware(t *testing.T) {
	const uri = "https://images.example/bios-2.0.0.bin?sig=Zq7-fake-secret"
	fw := &bmctest.FirmwareTarget{Image: bmc.FirmwareImage{URI: uri, Component: "BIOS"}, Version: "2.0.0"}
	images := map[string]fake.FirmwareImageInfo{uri: {Component: "BIOS", Version: "2.0.0"}}
	for _, c := range []struct {
		name string
		opts fake.FirmwareOptions
	}{
		{"Instant", fake.FirmwareOptions{Images: images}},
		{"FortyMinutesFakeClock", fake.FirmwareOptions{Images: images, Duration: 40 * time.Minute}},
		{"ActivateOnReset", fake.FirmwareOptions{Images: images, ActivateOnReset: true, Duration: time.Minute}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Skip: []string{"Power", "BootOverride", "BootHTTP", "VirtualMedia"}}, func(t *testing.T) bmctest.Target {
				clk := clock.NewFake(epoch)
				srv, drv := dialTarget(t, fake.Options{Firmware: c.opts, Clock: clk})
				return bmctest.Target{Driver: drv, Firmware: fw, Advance: func() { clk.Advance(time.Minute) },
					Dial: func(ctx context.Context, cr bmc.Credentials) (bmc.Driver, error) {
						return srv.Dial(ctx, bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "127.0.0.1"}, cr)
					}}
			})
		})
	}
}

// Health and event logs on the fake: what the suite reads must be what
// the BMC holds, through changes, added entries and clears.
func TestConformanceHealthLogs(t *testing.T) {
	skip := []string{"Power", "BootOverride", "BootHTTP", "VirtualMedia", "ResetBMC", "FirmwareUpdate", "BIOS"}
	for _, c := range []struct {
		name  string
		opts  fake.Options
		lacks []bmc.Capability
	}{
		{name: "Defaults"},
		{name: "Sensors", opts: fake.Options{Health: withSensors(fake.DefaultHealth())}},
		{name: "ManyEntriesNoTimes", opts: fake.Options{Logs: []fake.Log{manyEntries(250)}}},
		{name: "NotClearable", opts: fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityEventLogClear}}},
		{name: "NoHealthNoLogs", opts: fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityHealth, bmc.CapabilityEventLogs}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Unsupported: c.opts.Unsupported, Skip: skip}, func(t *testing.T) bmctest.Target {
				clk := clock.NewFake(epoch)
				opts := c.opts
				opts.Clock = clk
				srv, drv := dialTarget(t, opts)
				return bmctest.Target{Driver: drv, Advance: func() { clk.Advance(time.Second) },
					Health: &bmctest.HealthPeer{Want: srv.HealthReport, Set: func(h bmc.Health) {
						r := srv.HealthReport()
						r.System.Health, r.System.Rollup = h, h
						for i := range r.Chassis {
							r.Chassis[i].Health, r.Chassis[i].Rollup = h, h
						}
						for i := range r.Managers {
							r.Managers[i].Health, r.Managers[i].Rollup = h, h
						}
						srv.SetHealth(r)
					}, SetSensor: func(name string, h bmc.Health) {
						r := srv.HealthReport()
						for i := range r.Sensors {
							if r.Sensors[i].Name == name {
								r.Sensors[i].Health = h
							}
						}
						srv.SetHealth(r)
					}},
					Logs: &bmctest.LogPeer{
						Entries: func(ref bmc.LogRef) []bmc.LogEntry {
							for _, l := range srv.Logs() {
								if l.LogRef == ref {
									return l.Entries
								}
							}
							t.Fatalf("the fake has no log %s", ref)
							return nil
						},
						Add: func(ref bmc.LogRef, n int) {
							for range n {
								clk.Advance(time.Second)
								srv.AddLogEntry(ref, bmc.LogEntry{Severity: bmc.SeverityWarning, Message: "added by bmctest", MessageID: "Test.1.0.Added"})
							}
						},
					}}
			})
		})
	}
}

// manyEntries is a SEL of n entries without times, listed oldest first.
func manyEntries(n int) fake.Log {
	l := fake.Log{LogService: bmc.LogService{LogRef: bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}, Clearable: true}}
	for i := 1; i <= n; i++ {
		l.Entries = append(l.Entries, bmc.LogEntry{ID: fmt.Sprint(i), Severity: bmc.SeverityOK, Message: fmt.Sprintf("entry %d", i)})
	}
	return l
}

// withSensors is r with sensors of several kinds: with and without a
// reading and thresholds, one of unknown health.
func withSensors(r bmc.HealthReport) *bmc.HealthReport {
	v := func(f float64) *float64 { return &f }
	r.Sensors = []bmc.SensorReading{
		{Name: "CPU1 Temp", Kind: bmc.SensorTemperature, Reading: v(45), Unit: bmc.UnitCelsius, Health: bmc.HealthOK,
			Thresholds: &bmc.SensorThresholds{UpperWarning: v(80), UpperCritical: v(90)}},
		{Name: "FAN1", Kind: bmc.SensorFan, Reading: v(0), Unit: bmc.UnitRPM, Health: bmc.HealthCritical},
		{Name: "PS1 Status", Kind: bmc.SensorOther},
	}
	return &r
}
