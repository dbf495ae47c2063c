package ipmi_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

const secret = "s3cr3t-Pa55"

// captureLogger returns a logger that records every line at every
// verbosity.
func captureLogger() (logr.Logger, func() string) {
	var mu sync.Mutex
	var b strings.Builder
	l := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		b.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
	return l, func() string {
		mu.Lock()
		defer mu.Unlock()
		return b.String()
	}
}

func requireOpError(t *testing.T, err error) *bmc.OpError {
	t.Helper()
	var oe *bmc.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T) is not a *bmc.OpError", err, err)
	}
	return oe
}

// TestWrongPassword: a wrong password fails the dial at once with a
// permanent error wrapping bmc.ErrUnauthorized that does not contain the
// password. The request timeout is set to an hour, so a driver that waited
// for a reply instead of reading the BMC's refusal would hang the test.
func TestWrongPassword(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{Password: secret})
	log, logs := captureLogger()
	d := dialer(t, ipmi.Options{Timeout: time.Hour, Logger: log})
	for _, creds := range []bmc.Credentials{
		{Username: sim.Credentials.Username, Password: "wrong-" + secret},
		{Username: "nobody", Password: secret},
	} {
		_, err := d.Dial(context.Background(), sim.Endpoint, creds)
		if !errors.Is(err, bmc.ErrUnauthorized) {
			t.Fatalf("dial as %s: %v, want bmc.ErrUnauthorized", creds.Username, err)
		}
		if bmc.IsTransient(err) {
			t.Errorf("dial as %s: %v is transient; want permanent", creds.Username, err)
		}
		requireOpError(t, err)
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error leaks the password: %v", err)
		}
	}
	drv, err := d.Dial(context.Background(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.PowerState(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := drv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := logs(); strings.Contains(l, secret) {
		t.Errorf("logs leak the password:\n%s", l)
	} else if !strings.Contains(l, "ipmi session opened") {
		t.Errorf("logs do not show the session (is the logger wired?):\n%s", l)
	}
}

// TestWrongPasswordOpenIPMI checks the same against ipmi_sim.
func TestWrongPasswordOpenIPMI(t *testing.T) {
	t.Parallel()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{Password: secret})
	// The default suites: 17 is refused by ipmi_sim, then 3 fails on the
	// password.
	d := dialer(t, ipmi.Options{Timeout: time.Hour})
	_, err := d.Dial(context.Background(), sim.Endpoint, bmc.Credentials{Username: sim.Credentials.Username, Password: "wrong"})
	if !errors.Is(err, bmc.ErrUnauthorized) || bmc.IsTransient(err) {
		t.Fatalf("dial with a wrong password: %v, want permanent bmc.ErrUnauthorized", err)
	}
	requireOpError(t, err)
}

// silentPeer is a UDP socket on 127.0.0.1 that reads requests and never
// answers; it reports each datagram on got.
func silentPeer(t *testing.T) (bmc.Endpoint, <-chan struct{}) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
			got <- struct{}{}
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return bmc.Endpoint{Protocol: "ipmi", Host: "127.0.0.1", Port: c.LocalAddr().(*net.UDPAddr).Port}, got
}

// TestUnreachableSilentBMC: a BMC that never answers yields a transient
// error after the configured Retries+1 attempts of one request (counted at
// the peer), without trying further cipher suites.
func TestUnreachableSilentBMC(t *testing.T) {
	t.Parallel()
	ep, got := silentPeer(t)
	d := dialer(t, ipmi.Options{Timeout: 50 * time.Millisecond, Retries: 2})
	_, err := d.Dial(context.Background(), ep, bmc.Credentials{Username: "admin", Password: secret})
	if err == nil {
		t.Fatal("dial of a silent BMC succeeded")
	}
	if !bmc.IsTransient(err) {
		t.Errorf("dial of a silent BMC: %v is permanent; want transient", err)
	}
	requireOpError(t, err)
	// The driver gave up after the third attempt; the peer may still be
	// handing the last datagram over, so wait for three, then expect no more.
	deadline := time.After(10 * time.Second)
	for i := 0; i < 3; i++ {
		select {
		case <-got:
		case <-deadline:
			t.Fatalf("the silent BMC received %d datagrams; want 3 (one request, Retries 2)", i)
		}
	}
	if n := len(got); n != 0 {
		t.Errorf("the silent BMC received %d datagrams beyond the 3 of one request with Retries 2", n)
	}
}

// TestPrivilegeOperator: a session at operator privilege can read and
// change power.
func TestPrivilegeOperator(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	drv, err := dialer(t, ipmi.Options{Privilege: ipmi.PrivilegeOperator}).Dial(context.Background(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(context.Background())
	if err := drv.SetPower(context.Background(), bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	if !sim.Chassis().PoweredOn() {
		t.Fatal("the simulator is off after SetPower(on) at operator privilege")
	}
}

// TestUnreachableNoListener: nothing listening on the port (ICMP port
// unreachable on loopback) is a transient error.
func TestUnreachableNoListener(t *testing.T) {
	t.Parallel()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ep := bmc.Endpoint{Protocol: "ipmi", Host: "127.0.0.1", Port: c.LocalAddr().(*net.UDPAddr).Port}
	c.Close()
	d := dialer(t, ipmi.Options{Timeout: 100 * time.Millisecond, Retries: 1})
	_, err = d.Dial(context.Background(), ep, bmc.Credentials{Username: "admin", Password: secret})
	if err == nil || !bmc.IsTransient(err) {
		t.Fatalf("dial with no listener: %v, want a transient error", err)
	}
	requireOpError(t, err)
}

// TestDialHonoursContext: cancelling ctx while the driver waits for a
// silent BMC ends the dial with context.Canceled, although the request
// timeout is an hour.
func TestDialHonoursContext(t *testing.T) {
	t.Parallel()
	ep, got := silentPeer(t)
	d := dialer(t, ipmi.Options{Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-got // the first request reached the BMC
		cancel()
	}()
	_, err := d.Dial(ctx, ep, bmc.Credentials{Username: "admin", Password: secret})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("dial: %v, want context.Canceled", err)
	}
	requireOpError(t, err)
}

// TestBootFlagsOnTheWire checks the bytes the simulator stored.
func TestBootFlagsOnTheWire(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	drv, err := dialer(t, ipmi.Options{}).Open(context.Background(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	ctx := context.Background()
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDeviceCDROM, Persistent: true, Mode: bmc.BootModeUEFI}); err != nil {
		t.Fatal(err)
	}
	f := sim.Chassis().BootFlags()
	if !f.BootFlagsValid || !f.Persist || f.BIOSBootType != types.BIOSBootTypeEFI || f.BootDeviceSelector != types.BootDeviceSelectorForceCDROM {
		t.Fatalf("simulator stored %+v; want valid, persistent, EFI, CD-ROM", f)
	}
	// BootModeUnchanged keeps the EFI bit the BMC has.
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
		t.Fatal(err)
	}
	f = sim.Chassis().BootFlags()
	if f.Persist || f.BIOSBootType != types.BIOSBootTypeEFI || f.BootDeviceSelector != types.BootDeviceSelectorForcePXE {
		t.Fatalf("simulator stored %+v; want once, EFI kept, PXE", f)
	}
	err = drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP})
	if !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("uefi-http: %v, want bmc.ErrNotSupported", err)
	}
	err = drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: "bogus"})
	if err == nil || bmc.IsTransient(err) || !strings.Contains(err.Error(), `"bogus"`) {
		t.Fatalf("invalid mode: %v, want a permanent error naming the value", err)
	}
}

// TestOpenIPMIStateChanges checks against ipmi_sim's own state (kept by
// its chassis-control script) rather than through the driver.
func TestOpenIPMIStateChanges(t *testing.T) {
	t.Parallel()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	drv, err := dialer(t, sim.DialOptions()).Open(context.Background(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	ctx := context.Background()
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDeviceCDROM}); err != nil {
		t.Fatal(err)
	}
	if dev, err := sim.BootDevice(); err != nil || dev != "cdrom" {
		t.Fatalf("ipmi_sim boot device %q (%v), want cdrom", dev, err)
	}
	if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	if on, err := sim.PoweredOn(); err != nil || !on {
		t.Fatalf("ipmi_sim powered on = %v (%v) after SetPower(on)", on, err)
	}
	if _, err := drv.BootOverride(ctx); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("BootOverride with NoBootReadBack: %v, want bmc.ErrNotSupported", err)
	}
	if err := drv.ResetBMC(ctx, bmc.BMCResetCold); !errors.Is(err, bmc.ErrNotSupported) || bmc.IsTransient(err) {
		t.Fatalf("ResetBMC on ipmi_sim: %v, want permanent bmc.ErrNotSupported", err)
	}
	if drv.CipherSuite() != 3 {
		t.Fatalf("cipher suite %d, want 3", drv.CipherSuite())
	}
}

// TestConcurrentCalls: calls on one driver from many goroutines are
// serialized and all succeed.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{PoweredOn: true})
	drv, err := dialer(t, ipmi.Options{}).Open(context.Background(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 20; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			st, err := drv.PowerState(context.Background())
			if err == nil && st != bmc.PowerOn {
				err = errors.New("state " + string(st))
			}
			errs <- err
		}()
		go func() {
			defer wg.Done()
			errs <- drv.SetPower(context.Background(), bmc.PowerActionOn)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if s := drv.Stats(); s.Logins != 1 {
		t.Errorf("Stats %+v: want one login for the connection", s)
	}
}

func TestClosedDriver(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	drv, err := dialer(t, ipmi.Options{}).Open(context.Background(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = drv.PowerState(context.Background())
	if err == nil || bmc.IsTransient(err) {
		t.Fatalf("PowerState after Close: %v, want a permanent error", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, c := range []struct {
		opts  ipmi.Options
		field string
	}{
		{ipmi.Options{Privilege: "root"}, "Options.Privilege"},
		{ipmi.Options{CipherSuites: []int{17, 99}}, "Options.CipherSuites[1]"},
		{ipmi.Options{CipherSuites: []int{0}}, "Options.CipherSuites[0]"},
		{ipmi.Options{Timeout: -time.Second}, "Options.Timeout"},
		{ipmi.Options{IdleRelogin: -time.Second}, "Options.IdleRelogin"},
		{ipmi.Options{BootReadBack: "mode"}, "Options.BootReadBack"},
		{ipmi.Options{NoBootReadBack: true, BootReadBack: ipmi.BootReadBackDevice}, "Options.NoBootReadBack"},
	} {
		_, err := ipmi.NewDialer(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewDialer(%+v): %v, want an error naming %s", c.opts, err, c.field)
		}
	}
	d := dialer(t, ipmi.Options{})
	_, err := d.Dial(context.Background(), bmc.Endpoint{Protocol: "redfish", Host: "127.0.0.1"}, bmc.Credentials{})
	if err == nil || bmc.IsTransient(err) {
		t.Errorf("dial of a redfish endpoint: %v, want a permanent error", err)
	}
}

// TestReloginAfterSilence: once a request got no answer, the next call
// opens a new session instead of reusing the one the BMC may have lost.
func TestReloginAfterSilence(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	drv, err := dialer(t, ipmi.Options{Timeout: 100 * time.Millisecond, Retries: -1}).Open(context.Background(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	ctx := context.Background()
	if _, err := drv.PowerState(ctx); err != nil {
		t.Fatal(err)
	}
	sim.SetSilent(true)
	_, err = drv.PowerState(ctx)
	if err == nil || !bmc.IsTransient(err) {
		t.Fatalf("PowerState on a silent BMC: %v, want a transient error", err)
	}
	requireOpError(t, err)
	sim.SetSilent(false)
	if _, err := drv.PowerState(ctx); err != nil {
		t.Fatalf("PowerState after the BMC answers again: %v", err)
	}
	if got := drv.Stats().Logins; got != 2 {
		t.Errorf("logins %d; want 2 (the session was re-opened after the silence)", got)
	}
}

// TestDefaultSuitesFallBack: with the default suites (17, then 3) the
// driver settles on 3 with BMCs that lack 17: go-ipmi's simulator offering
// only 3, and ipmi_sim, which also ignores the cipher-suite query.
func TestDefaultSuitesFallBack(t *testing.T) {
	t.Parallel()
	gosim := ipmitest.NewServer(t, ipmitest.Options{CipherSuites: []int{3}})
	osim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	d := dialer(t, ipmi.Options{})
	for name, peer := range map[string]struct {
		ep    bmc.Endpoint
		creds bmc.Credentials
	}{"go-ipmi": {gosim.Endpoint, gosim.Credentials}, "ipmi_sim": {osim.Endpoint, osim.Credentials}} {
		drv, err := d.Open(context.Background(), peer.ep, peer.creds)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := drv.CipherSuite(); got != 3 {
			t.Errorf("%s: cipher suite %d, want 3", name, got)
		}
		if _, err := drv.PowerState(context.Background()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		_ = drv.Close(context.Background())
	}
}
