package redfish_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// locatorPeers show bmctest the locator LED and the NMIs of the
// simulator's system id.
func locatorPeers(srv *redfishtest.Server, id string) (func() bmc.LEDState, func() int) {
	led := func() bmc.LEDState {
		return map[string]bmc.LEDState{"Off": bmc.LEDOff, "Lit": bmc.LEDOn, "Blinking": bmc.LEDBlinking}[srv.LocatorLED(id)]
	}
	return led, func() int { return srv.System(id).Resets["Nmi"] }
}

// locatorOnly runs the locator's and the NMI's subtests (and the
// capability checks) on a peer that lacks lacks.
func locatorOnly(lacks ...bmc.Capability) bmctest.Options {
	return bmctest.Options{Unsupported: lacks, Skip: []string{"Power", "BootOverride", "BootHTTP", "VirtualMedia", "ResetBMC",
		"LastResetTime", "FirmwareUpdate", "Inventory", "BIOS", "Health", "Logs", "Events", "Context",
		"Dial", "Concurrency", "Close", "Stats"}}
}

// lastBody is the body of the last request that carried one.
func lastBody(srv *redfishtest.Server) string {
	reqs := srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Body != "" {
			return strings.TrimSpace(reqs[i].Body)
		}
	}
	return ""
}

// Each shape gets one PATCH of one property, at the resource that has it.
func TestLocatorLEDPatchesWhereTheLocatorIs(t *testing.T) {
	for _, c := range []struct {
		shape redfishtest.LocatorShape
		set   bmc.LEDState
		path  string
		body  string
	}{
		{redfishtest.LocatorBoth, bmc.LEDOn, "/redfish/v1/Systems/1", `{"LocationIndicatorActive":true}`},
		{redfishtest.LocatorBoth, bmc.LEDBlinking, "/redfish/v1/Systems/1", `{"IndicatorLED":"Blinking"}`},
		{redfishtest.LocatorActive, bmc.LEDOff, "/redfish/v1/Systems/1", `{"LocationIndicatorActive":false}`},
		{redfishtest.LocatorIndicator, bmc.LEDOn, "/redfish/v1/Systems/1", `{"IndicatorLED":"Lit"}`},
		{redfishtest.LocatorChassis, bmc.LEDOn, "/redfish/v1/Chassis/1", `{"LocationIndicatorActive":true}`},
	} {
		t.Run(string(c.shape)+"/"+string(c.set), func(t *testing.T) {
			srv, drv := dialSim(t, redfishtest.Config{Locator: c.shape}, testOptions(), "", false)
			srv.ClearRequests()
			var l bmc.LocatorLED = drv
			if err := l.SetLocatorLED(context.Background(), c.set); err != nil {
				t.Fatal(err)
			}
			if got := stateChanging(srv); len(got) != 1 || got[0] != "PATCH "+c.path || lastBody(srv) != c.body {
				t.Fatalf("state-changing requests %v (last body %s); want one PATCH %s %s", got, lastBody(srv), c.path, c.body)
			}
			s, err := l.LocatorLED(context.Background())
			if err != nil || !s.Satisfies(c.set) {
				t.Fatalf("LocatorLED = %q, %v; want %s", s, err, c.set)
			}
		})
	}
}

// What the BMC cannot show is refused NotSupported with no state-changing
// request: blinking without IndicatorLED or with AllowableValues that
// leave it out, any state without a locator, an NMI the reset types leave
// out; the preflight (CheckNeed) says the same.
func TestLocatorLEDAndNMINotSupportedSendNothing(t *testing.T) {
	for name, c := range map[string]struct {
		cfg  redfishtest.Config
		call func(d bmc.Driver) error
		need bmc.Need
		want string
	}{
		"blink on LocationIndicatorActive only": {redfishtest.Config{Locator: redfishtest.LocatorActive},
			func(d bmc.Driver) error {
				return d.(bmc.LocatorLED).SetLocatorLED(context.Background(), bmc.LEDBlinking)
			},
			bmc.Need{LocatorLED: bmc.LEDBlinking}, "has LocationIndicatorActive but no IndicatorLED"},
		"blink left out of AllowableValues": {redfishtest.VendorConfig(redfishtest.VendorILO5Apollo),
			func(d bmc.Driver) error {
				return d.(bmc.LocatorLED).SetLocatorLED(context.Background(), bmc.LEDBlinking)
			},
			bmc.Need{LocatorLED: bmc.LEDBlinking}, "AllowableValues (Lit, Off) leave out Blinking"},
		"no locator": {redfishtest.Config{Locator: redfishtest.LocatorNone},
			func(d bmc.Driver) error { return d.(bmc.LocatorLED).SetLocatorLED(context.Background(), bmc.LEDOn) },
			bmc.Need{LocatorLED: bmc.LEDOn}, "nor its chassis (/redfish/v1/Chassis/1) has LocationIndicatorActive or IndicatorLED"},
		"nmi not listed": {redfishtest.Config{ResetTypes: []string{"On", "ForceOff"}},
			func(d bmc.Driver) error { return d.(bmc.NMISender).SendNMI(context.Background()) },
			bmc.Need{NMI: true}, "lists no Nmi (it lists: On, ForceOff)"},
		"nmi not listed in ActionInfo": {redfishtest.Config{ResetTypes: []string{"On", "ForceOff"}, ResetTypesInActionInfo: true},
			func(d bmc.Driver) error { return d.(bmc.NMISender).SendNMI(context.Background()) },
			bmc.Need{NMI: true}, "lists no Nmi"},
	} {
		t.Run(name, func(t *testing.T) {
			srv, drv := dialSim(t, c.cfg, testOptions(), "", false)
			srv.ClearRequests()
			var nc bmc.NeedChecker = drv
			err := nc.CheckNeed(context.Background(), c.need)
			if !errors.Is(err, bmc.ErrNotSupported) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckNeed(%s) = %v; want ErrNotSupported naming %q", c.need, err, c.want)
			}
			err = c.call(drv)
			if !errors.Is(err, bmc.ErrNotSupported) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("call = %v; want ErrNotSupported naming %q", err, c.want)
			}
			if got := stateChanging(srv); len(got) != 0 {
				t.Fatalf("state-changing requests sent: %+v", got)
			}
		})
	}
}

// An NMI is one POST of ResetType Nmi on a server that is on; on a server
// that is off, nothing is sent.
func TestNMIRequests(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
	var n bmc.NMISender = drv
	srv.ClearRequests()
	err := n.SendNMI(context.Background())
	if err == nil || errors.Is(err, bmc.ErrNotSupported) || bmc.IsTransient(err) || !strings.Contains(err.Error(), "the server is Off") {
		t.Fatalf("SendNMI on a server that is off = %v; want a permanent error saying it is off", err)
	}
	if got := stateChanging(srv); len(got) != 0 {
		t.Fatalf("sent to a server that is off: %+v", got)
	}
	srv.SetPower("1", "On")
	if err := n.SendNMI(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := stateChanging(srv); len(got) != 1 || got[0] != "POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset" || !strings.Contains(lastBody(srv), `"ResetType":"Nmi"`) {
		t.Fatalf("requests %v (last body %s); want one POST of ResetType Nmi", got, lastBody(srv))
	}
	if st := srv.System("1"); st.Resets["Nmi"] != 1 || st.Power != "On" {
		t.Fatalf("simulator: %+v; want one Nmi, still On", st)
	}
}
