package ipmi_test

// The locator LED and the NMI against two BMC implementations, each
// compared with what the real ipmitool sends or reads: OpenIPMI's ipmi_sim
// (which hands Chassis Identify to its chassis-control program, never
// reports the identify state, and refuses the diagnostic interrupt) and
// go-ipmi's server in package ipmitest (which reports both).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// The Chassis Identify the driver sends for On and Off reaches ipmi_sim's
// chassis program as ipmitool's "chassis identify force" and "chassis
// identify 0" do; the read is NotSupported, as ipmitool's raw Get Chassis
// Status shows (byte 3, bit 6 clear).
func TestLocatorLEDOpenIPMIAsIpmitool(t *testing.T) {
	t.Parallel()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{PoweredOn: true})
	drv, err := dialer(t, sim.DialOptions()).Dial(t.Context(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	l := drv.(bmc.LocatorLED)
	identify := func() string {
		interval, force, ok, err := sim.ChassisIdentify()
		if err != nil || !ok {
			t.Fatalf("ipmi_sim's chassis program got no identify (%v)", err)
		}
		return fmt.Sprintf("interval %d force %t", interval, force)
	}
	for _, c := range []struct {
		state bmc.LEDState
		tool  []string
	}{
		{bmc.LEDOn, []string{"chassis", "identify", "force"}},
		{bmc.LEDOff, []string{"chassis", "identify", "0"}},
	} {
		runIpmitool(t, sim, c.tool...)
		want := identify()
		if err := l.SetLocatorLED(t.Context(), bmc.LEDOff+bmc.LEDOn+c.state); err == nil {
			t.Fatal("an invalid state was accepted")
		}
		if err := l.SetLocatorLED(t.Context(), c.state); err != nil {
			t.Fatal(err)
		}
		if got := identify(); got != want {
			t.Errorf("SetLocatorLED(%s) reached ipmi_sim as identify %s; ipmitool %s as %s", c.state, got, strings.Join(c.tool, " "), want)
		}
	}
	_, err = l.LocatorLED(t.Context())
	if !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("LocatorLED on ipmi_sim: %v; want ErrNotSupported", err)
	}
	if fields := strings.Fields(runIpmitool(t, sim, "raw", "0x00", "0x01")); len(fields) < 3 || fields[2] != "00" {
		t.Fatalf("ipmitool raw Get Chassis Status: %v; expected ipmi_sim's misc byte 00 (no identify state)", fields)
	}
	err = l.SetLocatorLED(t.Context(), bmc.LEDBlinking)
	if !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("SetLocatorLED(Blinking): %v; want ErrNotSupported", err)
	}
}

// ipmi_sim refuses the diagnostic interrupt (CCh) to ipmitool's "chassis
// power diag" and to the driver, which says NotSupported; on a server
// that is off the driver sends nothing and says why.
func TestNMIOpenIPMIAsIpmitool(t *testing.T) {
	t.Parallel()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{PoweredOn: true})
	out, err := ipmitoolAt(t, sim.Endpoint, sim.Credentials, "chassis", "power", "diag")
	if err == nil {
		t.Fatalf("ipmitool chassis power diag succeeded on ipmi_sim: %s", out)
	}
	drv, err := dialer(t, sim.DialOptions()).Dial(t.Context(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	n := drv.(bmc.NMISender)
	if err := n.SendNMI(t.Context()); !errors.Is(err, bmc.ErrNotSupported) || !strings.Contains(err.Error(), "completion code 0xcc") {
		t.Fatalf("SendNMI on ipmi_sim: %v; want ErrNotSupported naming CCh", err)
	}
	if err := drv.SetPower(t.Context(), bmc.PowerActionOff); err != nil {
		t.Fatal(err)
	}
	err = n.SendNMI(t.Context())
	if err == nil || errors.Is(err, bmc.ErrNotSupported) || bmc.IsTransient(err) || !strings.Contains(err.Error(), "the server is Off") {
		t.Fatalf("SendNMI on a server that is off: %v; want a permanent error saying so", err)
	}
}

// go-ipmi's server in ipmitest reports the identify state: the driver and
// ipmitool read each other's changes (ipmitool's raw Get Chassis Status:
// byte 3 is 40h off, 60h forced on, 50h timed on), and an NMI from either
// is counted.
func TestLocatorLEDAndNMIGoIPMIAsIpmitool(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{PoweredOn: true})
	drv, err := dialer(t, ipmi.Options{CipherSuites: []int{3}}).Dial(t.Context(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	l := drv.(bmc.LocatorLED)
	misc := func() string {
		out, err := ipmitoolAt(t, sim.Endpoint, sim.Credentials, "raw", "0x00", "0x01")
		f := strings.Fields(out)
		if err != nil || len(f) < 3 {
			t.Fatalf("ipmitool raw 0x00 0x01: %v %q", err, out)
		}
		return f[2]
	}
	read := func() bmc.LEDState {
		s, err := l.LocatorLED(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := misc(); got != "40" || read() != bmc.LEDOff {
		t.Fatalf("at start: ipmitool reads misc byte %s, the driver %s; want 40, Off", got, read())
	}
	if err := l.SetLocatorLED(t.Context(), bmc.LEDOn); err != nil {
		t.Fatal(err)
	}
	if got := misc(); got != "60" {
		t.Errorf("after SetLocatorLED(On) ipmitool reads misc byte %s, want 60 (indefinite on)", got)
	}
	if err := l.SetLocatorLED(t.Context(), bmc.LEDOff); err != nil {
		t.Fatal(err)
	}
	if got := misc(); got != "40" {
		t.Errorf("after SetLocatorLED(Off) ipmitool reads misc byte %s, want 40", got)
	}
	if _, err := ipmitoolAt(t, sim.Endpoint, sim.Credentials, "chassis", "identify", "240"); err != nil {
		t.Fatal(err)
	}
	if got, s := misc(), read(); got != "50" || s != bmc.LEDOn {
		t.Errorf("after ipmitool chassis identify 240: misc byte %s, the driver reads %s; want 50, On", got, s)
	}
	if sim.Chassis().LocatorLED() != bmc.LEDOn {
		t.Errorf("the simulator's locator is off")
	}

	if _, err := ipmitoolAt(t, sim.Endpoint, sim.Credentials, "chassis", "power", "diag"); err != nil {
		t.Fatalf("ipmitool chassis power diag: %v", err)
	}
	if err := drv.(bmc.NMISender).SendNMI(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c := sim.Chassis().Counts(); c.NMIs != 2 || !sim.Chassis().PoweredOn() {
		t.Errorf("counts %+v, powered on %t; want 2 NMIs (ipmitool's and the driver's), still on", c, sim.Chassis().PoweredOn())
	}
}
