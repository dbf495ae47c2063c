package ipmi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// TestURLOptions: options in the BMC URL override the Dialer's for that
// endpoint only.
func TestURLOptions(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	d := dialer(t, ipmi.Options{}) // defaults: 17 first, full read-back
	open := func(query string) *ipmi.Driver {
		t.Helper()
		ep, err := bmc.ParseEndpoint(sim.URL() + query)
		if err != nil {
			t.Fatal(err)
		}
		drv, err := d.Open(t.Context(), ep, sim.Credentials)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		t.Cleanup(func() { _ = drv.Close(t.Context()) })
		return drv
	}
	set := bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeUEFI}

	drv := open("?cipher=3&privilege=operator&bootReadBack=device&timeout=5s")
	if got := drv.CipherSuite(); got != 3 {
		t.Errorf("cipher=3: negotiated suite %d", got)
	}
	if err := drv.SetBootOverride(t.Context(), set); err != nil {
		t.Fatal(err)
	}
	got, err := drv.BootOverride(t.Context())
	if err != nil || got.Device != bmc.BootDevicePXE || got.Mode != bmc.BootModeUnchanged {
		t.Errorf("bootReadBack=device: read %+v, %v; want pxe with the mode unreported", got, err)
	}

	drv = open("")
	if got := drv.CipherSuite(); got != 17 {
		t.Errorf("no options: suite %d, want the Dialer's 17", got)
	}
	if got, err := drv.BootOverride(t.Context()); err != nil || got.Mode != bmc.BootModeUEFI {
		t.Errorf("no options: read %+v, %v; want the mode reported", got, err)
	}

	drv = open("?bootReadBack=none")
	if _, err := drv.BootOverride(t.Context()); !errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("bootReadBack=none: %v, want ErrNotSupported", err)
	}
}

// TestURLOptionsRefused: a bad option fails the dial at once, permanently,
// naming the option, without a request.
func TestURLOptionsRefused(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	d := dialer(t, ipmi.Options{})
	for query, want := range map[string]string{
		"?cipher=0":             `cipher="0"`,
		"?cipher=3,x":           `cipher="3,x"`,
		"?cipher=3,3":           "named twice",
		"?cipher=":              `cipher=""`,
		"?privilege=root":       `privilege="root"`,
		"?bootReadBack=mode":    `bootReadBack="mode"`,
		"?timeout=-1s":          `timeout="-1s"`,
		"?timeout=soon":         `timeout="soon"`,
		"?Cipher=3":             `unknown option "Cipher"`,
		"?cipher=3&retries=9":   `unknown option "retries"`,
		"?privilege=&cipher=17": `privilege=""`,
	} {
		ep, err := bmc.ParseEndpoint(sim.URL() + query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		drv, err := d.Open(t.Context(), ep, sim.Credentials)
		if err == nil {
			_ = drv.Close(t.Context())
			t.Errorf("%s: accepted", query)
			continue
		}
		if !strings.Contains(err.Error(), want) || bmc.IsTransient(err) {
			t.Errorf("%s: %v; want a permanent error containing %q", query, err, want)
		}
	}
}
