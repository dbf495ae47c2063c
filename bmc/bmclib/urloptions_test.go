package bmclib_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmclib"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// TestIPMIToolURLOptions: options in the BMC URL that bmclib's ipmitool
// provider can honour are honoured; the others fail the dial with a
// permanent error naming the option, before ipmitool runs.
func TestIPMIToolURLOptions(t *testing.T) {
	t.Parallel()
	// The simulator offers only suite 17: the URL's cipher=17 is what makes
	// the dial work when the dialer is set to suite 3.
	sim := ipmitest.NewServer(t, ipmitest.Options{CipherSuites: []int{17}})
	d := ipmitoolDialer(t, bmclib.IPMIToolOptions{CipherSuite: 3, Timeout: 5 * time.Second})
	dial := func(query string) (bmc.Driver, error) {
		ep, err := bmc.ParseEndpoint(sim.URL() + query)
		if err != nil {
			t.Fatalf("parse %q: %v", sim.URL()+query, err)
		}
		return d.Dial(t.Context(), ep, sim.Credentials)
	}
	if _, err := dial(""); err == nil {
		t.Fatal("suite 3 against a BMC with only suite 17 succeeded; the test would not show the option is honoured")
	}
	drv, err := dial("?cipher=17&privilege=administrator&bootReadBack=none&timeout=4s")
	if err != nil {
		t.Fatalf("dial with cipher=17: %v", err)
	}
	if err := drv.SetPower(t.Context(), bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	_ = drv.Close(context.Background())
	if !sim.Chassis().PoweredOn() {
		t.Fatal("power on did not reach the simulator")
	}

	for query, name := range map[string]string{
		"?cipher=17,3":          "cipher",
		"?cipher=0":             "cipher",
		"?cipher=x":             "cipher",
		"?privilege=operator":   "privilege",
		"?privilege=root":       "privilege",
		"?bootReadBack=device":  "bootReadBack",
		"?bootReadBack=full":    "bootReadBack",
		"?timeout=-1s":          "timeout",
		"?retries=3":            "retries",
		"?cipher=17&cipher=3":   "cipher",
		"?timeout=5s&color=red": "color",
	} {
		ep, err := bmc.ParseEndpoint(sim.URL() + query)
		if err != nil {
			// bmc.ParseEndpoint itself refuses some (a name twice).
			if !strings.Contains(err.Error(), name) {
				t.Errorf("ParseEndpoint(%s): %v does not name %q", query, err, name)
			}
			continue
		}
		_, err = d.Dial(t.Context(), ep, sim.Credentials)
		if err == nil || bmc.IsTransient(err) || !strings.Contains(err.Error(), `"`+name) && !strings.Contains(err.Error(), name+"=") {
			t.Errorf("dial with %s: %v; want a permanent error naming %q", query, err, name)
		}
		var oe *bmc.OpError
		if !errors.As(err, &oe) {
			t.Errorf("dial with %s: %v is not a *bmc.OpError", query, err)
		}
	}
}

// TestIPMIToolUnreachableWithinDeadline: with default options, a dial of a
// BMC that never answers (a UDP port on 127.0.0.1 that reads and never
// replies) fails with the adapter's own transient error before a 10 s
// context deadline ends; the caller's ctx is still alive when it returns.
func TestIPMIToolUnreachableWithinDeadline(t *testing.T) {
	t.Parallel()
	d := ipmitoolDialer(t, bmclib.IPMIToolOptions{})
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep := bmc.Endpoint{Protocol: "ipmi", Host: "127.0.0.1", Port: c.LocalAddr().(*net.UDPAddr).Port}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = d.Dial(ctx, ep, bmc.Credentials{Username: "admin", Password: secret})
	if ctx.Err() != nil {
		t.Fatalf("the dial outlived the caller's 10 s deadline: %v", err)
	}
	if err == nil || !bmc.IsTransient(err) || errors.Is(err, bmc.ErrUnauthorized) {
		t.Fatalf("dial of a silent BMC: %v; want a transient error, not bmc.ErrUnauthorized", err)
	}
	if !strings.Contains(err.Error(), "dial timeout") {
		t.Errorf("error %q does not say the dial timed out", err)
	}
	var oe *bmc.OpError
	if !errors.As(err, &oe) || oe.Op != "dial" {
		t.Errorf("%v is not a dial *bmc.OpError", err)
	}
}
