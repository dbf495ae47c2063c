package redfish_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
)

// testOptions are the options of most tests: short back-off, and no request
// budget, because the simulator answers in microseconds and the suite polls
// every 5 ms; the budget has its own tests (budget_test.go) and one
// conformance personality runs with the default budget.
func testOptions() redfish.Options {
	return redfish.Options{RetryDelay: time.Millisecond, RequestTimeout: 5 * time.Second, RequestsPerSecond: -1}
}

// dialSim starts a simulator with cfg and dials it.
func dialSim(t *testing.T, cfg redfishtest.Config, opts redfish.Options, systemID string, tlsServer bool) (*redfishtest.Server, *redfish.Driver) {
	t.Helper()
	srv, dialer := startSim(t, cfg, opts, tlsServer)
	drv, err := dialer.DialDriver(context.Background(), srv.Endpoint(systemID), srv.Credentials())
	if err != nil {
		t.Fatalf("Dial %s: %v", srv.Address(systemID), err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	return srv, drv
}

// startSim starts a simulator with cfg and returns a dialer that trusts it.
func startSim(t *testing.T, cfg redfishtest.Config, opts redfish.Options, tlsServer bool) (*redfishtest.Server, *redfish.Dialer) {
	t.Helper()
	var srv *redfishtest.Server
	if tlsServer {
		srv = redfishtest.NewTLSServer(cfg)
		opts.CACertPEM = srv.CACertPEM()
	} else {
		srv = redfishtest.NewServer(cfg)
	}
	t.Cleanup(srv.Close)
	return srv, redfish.NewDialer(opts)
}

// onceSubtests are the suite's one-time boot override subtests, for
// personalities that ignore Once (TestBootOnce checks the error there).
func onceSubtests() []string {
	out := []string{"BootHTTP/once"}
	for _, d := range []string{"pxe", "disk", "cdrom", "bios"} {
		for _, m := range []string{"unchanged", "uefi", "legacy"} {
			out = append(out, fmt.Sprintf("BootOverride/%s-once-%s", d, m))
		}
	}
	return out
}

// everyNth returns a fault func that faults every nth GET, cycling kinds.
func everyNth(n int64, kinds ...redfishtest.Fault) func(method, path string) redfishtest.Fault {
	var count atomic.Int64
	return func(method, _ string) redfishtest.Fault {
		if method != "GET" {
			return redfishtest.FaultNone
		}
		c := count.Add(1)
		if c%n != 0 {
			return redfishtest.FaultNone
		}
		return kinds[(c/n)%int64(len(kinds))]
	}
}

func TestConformance(t *testing.T) {
	const delay = 20 * time.Millisecond
	personalities := []struct {
		name     string
		cfg      redfishtest.Config
		opts     func(*redfish.Options)
		suite    bmctest.Options
		systemID string
		tls      bool
		// fakeClock runs the simulator on a clock the suite advances.
		fakeClock bool
		// setup runs after the server started (e.g. to install faults that
		// need the server).
		setup func(srv *redfishtest.Server)
	}{
		{name: "SessionCreatedWithBody", cfg: redfishtest.Config{}},
		// The default request budget (50/s per endpoint): the suite polls
		// faster than that, so its requests wait their turn.
		{name: "DefaultRequestBudget", cfg: redfishtest.Config{PowerDelay: delay},
			opts: func(o *redfish.Options) { o.RequestsPerSecond = 0 }},
		{name: "SessionNoContent", cfg: redfishtest.Config{Sessions: redfishtest.SessionsNoContent}},
		{name: "NoSessionService", cfg: redfishtest.Config{Sessions: redfishtest.SessionsNone}},
		// Sessions expire every 5th request, except right after a login
		// (a BMC that kills a fresh session twice is TestSessionExpiry's).
		{name: "SessionExpiry", setup: func(srv *redfishtest.Server) {
			var n atomic.Int64
			var afterLogin atomic.Bool
			srv.SetFaults(0, func(method, path string) redfishtest.Fault {
				login := method == "POST" && strings.HasSuffix(path, "/Sessions")
				if n.Add(1)%5 == 0 && !afterLogin.Load() && !login {
					srv.ExpireSessions()
				}
				afterLogin.Store(login)
				return redfishtest.FaultNone
			})
		}},
		{name: "TLSWithCABundle", tls: true},
		{name: "IfMatchRequired", cfg: redfishtest.Config{ETags: redfishtest.ETagsRequired}},
		{name: "IfMatchRejected", cfg: redfishtest.Config{ETags: redfishtest.ETagsRejected}},
		{name: "DelayedPower", cfg: redfishtest.Config{PowerDelay: delay}},
		// Changes landing 8 s late on a clock the suite advances 1 s per poll.
		{name: "DelayedPowerSecondsFakeClock", fakeClock: true, cfg: redfishtest.Config{PowerDelay: 8 * time.Second, DropDuringTransition: true}},
		{name: "DroppedSecondRequest", cfg: redfishtest.Config{PowerDelay: delay, DropDuringTransition: true}},
		{name: "PowerCycleRefused", cfg: redfishtest.Config{PowerDelay: delay, DropDuringTransition: true, RefusedResetTypes: []string{"PowerCycle"}}},
		{name: "AllRestartsRefused", cfg: redfishtest.Config{PowerDelay: delay, DropDuringTransition: true,
			RefusedResetTypes: []string{"PowerCycle", "ForceRestart", "GracefulRestart"}}},
		{name: "ResetTypesInActionInfo", cfg: redfishtest.Config{ResetTypesInActionInfo: true,
			ResetTypes: []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart"}},
			suite: bmctest.Options{Unsupported: []bmctest.Capability{bmc.CapabilityNMI}}},
		// A BMC offering only On and ForceOff and no virtual media: soft-off
		// and media are ErrNotSupported, cycle and reset use ForceOff+On.
		{name: "MinimalBMC", cfg: redfishtest.Config{ResetTypes: []string{"On", "ForceOff"}, Media: redfishtest.MediaNone},
			suite: bmctest.Options{Unsupported: []bmctest.Capability{
				bmc.CapabilityPowerSoftOff, bmc.CapabilityVirtualMediaCD, bmc.CapabilityVirtualMediaUSB, bmc.CapabilityNMI}}},
		{name: "BootOnceIgnored", cfg: redfishtest.Config{BootOnce: redfishtest.BootOnceIgnored},
			suite: bmctest.Options{Skip: onceSubtests()}},
		{name: "BootOnceRevertedAtOnce", cfg: redfishtest.Config{BootOnce: redfishtest.BootOnceReverted},
			suite: bmctest.Options{Skip: onceSubtests()}},
		{name: "BootOnceRevertedLater", cfg: redfishtest.Config{BootOnce: redfishtest.BootOnceReverted, BootOnceRevertAfter: time.Hour}},
		// UEFI HTTP boot refused with bmc.ErrNotSupported, without a PATCH:
		// a Boot without HttpBootUri (an older schema), and a BMC that
		// does not list UefiHttp among the allowed targets.
		{name: "NoHTTPBootURI", cfg: redfishtest.Config{NoHTTPBootURI: true},
			suite: bmctest.Options{Unsupported: []bmctest.Capability{bmc.CapabilityBootHTTP}}},
		{name: "NoUefiHttpTarget", cfg: redfishtest.Config{BootTargets: []string{"None", "Pxe", "Hdd", "Cd", "BiosSetup"}},
			suite: bmctest.Options{Unsupported: []bmctest.Capability{bmc.CapabilityBootHTTP}}},
		// A system without LastResetTime (many BMCs): bmc.ErrNotSupported.
		{name: "NoLastResetTime", cfg: redfishtest.Config{NoLastResetTime: true},
			suite: bmctest.Options{Unsupported: []bmctest.Capability{bmc.CapabilityLastResetTime}}},
		// The BMC drops every request for 5 s (on a clock the suite
		// advances 1 s per poll) after a Manager.Reset.
		{name: "BMCResetDowntimeFakeClock", fakeClock: true, cfg: redfishtest.Config{BMCResetDowntime: 5 * time.Second}},
		// BIOS settings: applied at once (no settings object), and iLO's
		// settings object that copies every attribute. Inventory through
		// $expand.
		{name: "BIOSImmediate", cfg: redfishtest.Config{BIOS: redfishtest.BIOSImmediate}},
		{name: "BIOSFullSettingsCopyExpandQuery", cfg: redfishtest.Config{BIOS: redfishtest.BIOSFullSettingsCopy, ExpandQuery: true}},
		// A registry file whose Location answers 404: the registry made from
		// the current attributes (no enumerations, no read-only ones).
		{name: "BIOSRegistryNotFound", cfg: redfishtest.Config{BIOSRegistryNotFound: true}},
		// A BMC with neither inventory nor BIOS: bmc.ErrNotSupported.
		{name: "NoInventoryNoBIOS", cfg: redfishtest.Config{BIOS: redfishtest.BIOSNone, Hardware: redfishtest.Hardware{None: true}},
			suite: bmctest.Options{Unsupported: []bmctest.Capability{bmc.CapabilityBIOS}}},
		// Health and logs: a BMC whose resources have no Status and that
		// has no LogServices; entry collections one entry a page.
		{name: "NoHealthNoLogs", cfg: redfishtest.Config{NoHealth: true, Logs: redfishtest.LogsNone},
			suite: bmctest.Options{Unsupported: []bmctest.Capability{bmc.CapabilityHealth, bmc.CapabilityEventLogs}}},
		{name: "LogsPagedByOne", cfg: redfishtest.Config{LogPageSize: 1}},
		// The locator in each shape, and NMIs left out or refused.
		{name: "LocatorActiveOnly", cfg: redfishtest.Config{Locator: redfishtest.LocatorActive},
			suite: locatorOnly(bmc.CapabilityLocatorLEDBlink)},
		{name: "LocatorIndicatorOnly", cfg: redfishtest.Config{Locator: redfishtest.LocatorIndicator},
			suite: locatorOnly(bmc.CapabilityLocatorLEDBlink)},
		{name: "LocatorOnChassis", cfg: redfishtest.Config{Locator: redfishtest.LocatorChassis},
			suite: locatorOnly(bmc.CapabilityLocatorLEDBlink)},
		{name: "NoLocatorNoNmi", cfg: redfishtest.Config{Locator: redfishtest.LocatorNone, ResetTypes: []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart"}},
			suite: locatorOnly(bmc.CapabilityLocatorLED, bmc.CapabilityNMI)},
		{name: "NmiRefused", cfg: redfishtest.Config{RefusedResetTypes: []string{"Nmi"}}, suite: locatorOnly(bmc.CapabilityNMI)},
		// Sensors in the chassis' Thermal and Power (Health/Sensors).
		{name: "Sensors", cfg: redfishtest.Config{Sensors: simSensors()}},
		// Secure Boot and the boot order held in settings objects until the
		// next boot (Dell's shape), applied at once, and absent.
		{name: "SecureBootBootOrderSettingsObjects", cfg: redfishtest.Config{SecureBoot: redfishtest.SecureBootSettingsObject, BootOrder: redfishtest.BootOrderOnReset}},
		{name: "SecureBootBootOrderImmediate", cfg: redfishtest.Config{SecureBoot: redfishtest.SecureBootImmediate, BootOrder: redfishtest.BootOrderImmediate}},
		{name: "NoSecureBootNoBootOrder", cfg: redfishtest.Config{SecureBoot: redfishtest.SecureBootNone, BootOrder: redfishtest.BootOrderNone},
			suite: bmctest.Options{Unsupported: []bmctest.Capability{bmc.CapabilitySecureBoot, bmc.CapabilityBootOrder}}},
		// Event subscriptions (Events/...), in the three shapes; the rest
		// of the suite is the DMTF personality's.
		{name: "SubscriptionsDMTF", cfg: redfishtest.Config{Subscriptions: redfishtest.SubscriptionsDMTF}, suite: eventsOnly},
		{name: "SubscriptionsILO5", cfg: redfishtest.Config{Subscriptions: redfishtest.SubscriptionsILO5}, suite: eventsOnly},
		{name: "SubscriptionsOpenBMC", cfg: redfishtest.Config{Subscriptions: redfishtest.SubscriptionsOpenBMC}, suite: eventsOnly},
		{name: "MediaUnderManager", cfg: redfishtest.Config{Media: redfishtest.MediaUnderManager}},
		{name: "MediaUnderSystem", cfg: redfishtest.Config{Media: redfishtest.MediaUnderSystem}},
		{name: "SeveralSystemsByID", cfg: redfishtest.Config{Systems: 3}, systemID: "2"},
		{name: "SeveralSystemsByUUID", cfg: redfishtest.Config{Systems: 3}, systemID: redfishtest.SystemUUID(3)},
		{name: "IntermittentFaults", opts: func(o *redfish.Options) {
			o.Retries = 3
			o.RequestTimeout = 100 * time.Millisecond
		}, setup: func(srv *redfishtest.Server) {
			srv.SetFaults(0, everyNth(3, redfishtest.Fault500, redfishtest.Fault503, redfishtest.FaultReset, redfishtest.FaultSlow))
		}, cfg: redfishtest.Config{Faults: redfishtest.Faults{SlowDelay: 300 * time.Millisecond}}},
	}
	for _, p := range personalities {
		t.Run(p.name, func(t *testing.T) {
			suite := p.suite
			suite.PollInterval = 5 * time.Millisecond
			suite.SettleTimeout = 20 * time.Second
			bmctest.Run(t, suite, func(t *testing.T) bmctest.Target {
				opts := testOptions()
				if p.opts != nil {
					p.opts(&opts)
				}
				cfg := p.cfg
				var clk *clock.Fake
				if p.fakeClock {
					clk = clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
					cfg.Clock = clk
				}
				srv, dialer := startSim(t, cfg, opts, p.tls)
				ep := srv.Endpoint(p.systemID)
				drv, err := dialer.Dial(t.Context(), ep, srv.Credentials())
				if err != nil {
					t.Fatalf("Dial %s: %v", ep, err)
				}
				if p.setup != nil {
					p.setup(srv)
				}
				target := bmctest.Target{
					Driver:      drv,
					Credentials: srv.Credentials(),
					Dial: func(ctx context.Context, creds bmc.Credentials) (bmc.Driver, error) {
						return dialer.Dial(ctx, ep, creds)
					},
				}
				if clk != nil {
					target.Advance = func() { clk.Advance(time.Second) }
				}
				target.Health, target.Logs = simPeers(srv, p.systemID)
				target.LocatorLED, target.NMIs = locatorPeers(srv, simID(p.systemID))
				if p.cfg.Subscriptions != redfishtest.SubscriptionsNone {
					target.Events = subscriptionPeer(srv)
				}
				return target
			})
		})
	}
}

// The suite reads power through the driver; this checks the simulator saw
// what the driver was asked for.
func TestConformanceSimulatorAgrees(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{Systems: 2}, testOptions(), "2", false)
	ctx := context.Background()
	if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	if got := srv.System("2").Power; got != "On" {
		t.Fatalf("system 2 power = %s, want On", got)
	}
	if got := srv.System("1").Power; got != "Off" {
		t.Fatalf("system 1 power = %s, want Off (untouched)", got)
	}
}

// eventsOnly runs only Events/... (the personalities that differ from
// the default in their subscriptions alone).
var eventsOnly = bmctest.Options{Skip: []string{"Power", "BootOverride", "BootHTTP", "VirtualMedia", "ResetBMC",
	"LastResetTime", "FirmwareUpdate", "Inventory", "BIOS", "Health", "Logs", "Unsupported", "Needs", "Context",
	"Dial", "Concurrency", "Close", "Stats", "LocatorLED", "NMI", "SecureBoot", "BootOrder"}}

// subscriptionPeer shows bmctest the subscriptions the simulator holds;
// it pushes events to their destinations.
func subscriptionPeer(srv *redfishtest.Server) *bmctest.EventPeer {
	return &bmctest.EventPeer{Delivers: true, Subscriptions: func() []bmc.EventSubscription {
		var out []bmc.EventSubscription
		for _, s := range srv.Subscriptions() {
			out = append(out, bmc.EventSubscription{ID: s.ID, Destination: s.Destination, Context: s.Context,
				Protocol: s.Protocol, EventTypes: s.EventTypes, RegistryPrefixes: s.RegistryPrefixes})
		}
		return out
	}}
}
