package ipmitest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
	"github.com/bmckit/bmckit/clock"
)

// peer is one IPMI implementation under test: the in-process simulator or
// OpenIPMI's ipmi_sim.
type peer struct {
	ep    bmc.Endpoint
	creds bmc.Credentials
}

func simPeer(t *testing.T, opts ipmitest.Options) (*ipmitest.Server, peer) {
	t.Helper()
	s := ipmitest.NewServer(t, opts)
	return s, peer{s.Endpoint, s.Credentials}
}

func openIPMIPeer(t *testing.T) peer {
	t.Helper()
	s := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	return peer{s.Endpoint, s.Credentials}
}

func open(t *testing.T, p peer, opts ipmi.Options) *ipmi.Driver {
	t.Helper()
	if opts.CipherSuites == nil {
		opts.CipherSuites = []int{3} // ipmi_sim lacks 17 and ignores the suite query
	}
	d, err := ipmi.NewDialer(opts)
	if err != nil {
		t.Fatal(err)
	}
	drv, err := d.Open(t.Context(), p.ep, p.creds)
	if err != nil {
		t.Fatalf("open %s: %v", p.ep, err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	return drv
}

// ipmitool runs the ipmitool program against p (cipher suite 3, 2 s per
// attempt, 3 retries: every use here expects an answer) and returns its
// combined output. The password goes through the
// environment.
func ipmitool(t *testing.T, p peer, user, password string, args ...string) (string, error) {
	t.Helper()
	bin := ipmitest.RequireProgram(t, "ipmitool", "ipmitool")
	base := []string{"-I", "lanplus", "-H", p.ep.Host, "-p", strconv.Itoa(p.ep.Port), "-U", user, "-E", "-C", "3", "-N", "2", "-R", "3"}
	cmd := exec.CommandContext(t.Context(), bin, append(base, args...)...)
	cmd.Env = append(os.Environ(), "IPMITOOL_PASSWORD="+password)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestIPMIVersion: Get Device ID reports IPMI version 2.0 (BCD 02h, minor
// digit in the high nibble), as ipmitool's "mc info" shows, like ipmi_sim.
func TestIPMIVersion(t *testing.T) {
	t.Parallel()
	_, p := simPeer(t, ipmitest.Options{})
	c, err := client.NewClient(p.ep.Host, p.ep.Port, p.creds.Username, p.creds.Password)
	if err != nil {
		t.Fatal(err)
	}
	c.WithCipherSuiteID(types.CipherSuiteID3).WithTimeout(2 * time.Second)
	if err := c.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	res, err := c.GetDeviceID(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.MajorIPMIVersion != 2 || res.MinorIPMIVersion != 0 {
		t.Fatalf("Get Device ID: IPMI version %d.%d, want 2.0", res.MajorIPMIVersion, res.MinorIPMIVersion)
	}
	peers := map[string]peer{"ipmitest": p, "ipmi_sim": openIPMIPeer(t)}
	for name, p := range peers {
		out, err := ipmitool(t, p, p.creds.Username, p.creds.Password, "mc", "info")
		if err != nil {
			t.Fatalf("%s: ipmitool mc info: %v\n%s", name, err, out)
		}
		if !strings.Contains(out, "IPMI Version              : 2.0") {
			t.Errorf("%s: ipmitool mc info does not report IPMI Version 2.0:\n%s", name, out)
		}
	}
}

// TestBootOnceClearedByBoot: the next boot consumes a one-time boot flag,
// and only a one-time one, read back through the driver and through
// ipmitool.
func TestBootOnceClearedByBoot(t *testing.T) {
	t.Parallel()
	sim, p := simPeer(t, ipmitest.Options{})
	drv := open(t, p, ipmi.Options{})
	ctx := t.Context()
	for _, power := range []bmc.PowerAction{bmc.PowerActionOn, bmc.PowerActionCycle, bmc.PowerActionReset} {
		if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
			t.Fatal(err)
		}
		if got, err := drv.BootOverride(ctx); err != nil || got.Device != bmc.BootDevicePXE {
			t.Fatalf("before the boot: %+v, %v; want pxe", got, err)
		}
		if err := drv.SetPower(ctx, power); err != nil {
			t.Fatal(err)
		}
		if got, err := drv.BootOverride(ctx); err != nil || got.Device != bmc.BootDeviceNone {
			t.Fatalf("after power %s: %+v, %v; want the one-time override consumed (none)", power, got, err)
		}
	}
	if n := sim.Chassis().Counts().Boots; n != 3 {
		t.Errorf("boots counted: %d, want 3", n)
	}
	// A persistent override survives boots.
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDeviceDisk, Persistent: true}); err != nil {
		t.Fatal(err)
	}
	if err := drv.SetPower(ctx, bmc.PowerActionCycle); err != nil {
		t.Fatal(err)
	}
	if got, err := drv.BootOverride(ctx); err != nil || got.Device != bmc.BootDeviceDisk || !got.Persistent {
		t.Fatalf("persistent override after a power cycle: %+v, %v; want disk, persistent", got, err)
	}
	// ipmitool's view: set once, power off and on, the flag is invalid.
	for _, args := range [][]string{{"chassis", "bootdev", "pxe"}, {"chassis", "power", "off"}, {"chassis", "power", "on"}} {
		if out, err := ipmitool(t, p, p.creds.Username, p.creds.Password, args...); err != nil {
			t.Fatalf("ipmitool %v: %v\n%s", args, err, out)
		}
	}
	out, err := ipmitool(t, p, p.creds.Username, p.creds.Password, "chassis", "bootparam", "get", "5")
	if err != nil || !strings.Contains(out, "Boot Flag Invalid") {
		t.Fatalf("ipmitool bootparam get 5 after a boot: %v\n%s\nwant Boot Flag Invalid", err, out)
	}
}

// TestBootOnceTimeout: with BootFlagTimeout, a one-time flag is cleared
// when no Chassis Control command arrives in time; a Chassis Control
// command restarts the countdown; "don't clear on timeout" (parameter 3
// bit 3) and persistence keep the flag. Time is a fake clock.
func TestBootOnceTimeout(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// Sessions outlive the hours the clock jumps here.
	sim, p := simPeer(t, ipmitest.Options{BootFlagTimeout: time.Minute, SessionTimeout: 24 * time.Hour, Clock: clk})
	drv := open(t, p, ipmi.Options{})
	ctx := t.Context()
	valid := func() bool { return sim.Chassis().BootFlags().BootFlagsValid }

	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(59 * time.Second)
	if !valid() {
		t.Fatal("the one-time flag was cleared before 60 s")
	}
	// Hard reset of a server that is off: a Chassis Control command, no boot.
	c, err := client.NewClient(p.ep.Host, p.ep.Port, p.creds.Username, p.creds.Password)
	if err != nil {
		t.Fatal(err)
	}
	c.WithCipherSuiteID(types.CipherSuiteID3).WithTimeout(2 * time.Second)
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.ChassisControl(ctx, chassis.ChassisControlHardReset); err != nil {
		t.Fatal(err)
	}
	clk.Advance(59 * time.Second)
	if !valid() {
		t.Fatal("the countdown did not restart on a Chassis Control command")
	}
	clk.Advance(time.Second)
	if valid() {
		t.Fatal("the one-time flag is still valid 60 s after the last Chassis Control command")
	}
	if got, err := drv.BootOverride(ctx); err != nil || got.Device != bmc.BootDeviceNone {
		t.Fatalf("read back after the timeout: %+v, %v; want none", got, err)
	}

	// Persistent flags do not time out.
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDeviceDisk, Persistent: true}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if !valid() {
		t.Fatal("a persistent flag timed out")
	}

	// Parameter 3 bit 3: don't clear on timeout; read back as set.
	set3 := &chassis.SetSystemBootOptionsParamRequest{ParamSelector: types.BootOptionParamSelector_BMCBootFlagValidBitClear, ParamData: []byte{0x08}}
	if err := c.Exchange(ctx, set3, &chassis.SetSystemBootOptionsParamResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if !valid() {
		t.Fatal(`a one-time flag timed out although "don't clear on timeout" is set`)
	}
	out, err := ipmitool(t, p, p.creds.Username, p.creds.Password, "chassis", "bootparam", "get", "3")
	if err != nil || !strings.Contains(out, "Don't automatically clear boot flag valid bit on timeout") {
		t.Errorf("ipmitool bootparam get 3: %v\n%s", err, out)
	}
}

// TestSessionTimeout: a session idle longer than SessionTimeout is
// forgotten (its requests get no answer); the driver logs in again.
func TestSessionTimeout(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sim, p := simPeer(t, ipmitest.Options{SessionTimeout: 30 * time.Second, Clock: clk})
	drv := open(t, p, ipmi.Options{Timeout: 2 * time.Second, Retries: -1, IdleRelogin: time.Hour})
	ctx := t.Context()
	if _, err := drv.PowerState(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(29 * time.Second)
	if _, err := drv.PowerState(ctx); err != nil {
		t.Fatalf("a session idle 29 s of 30: %v", err)
	}
	clk.Advance(31 * time.Second)
	_, err := drv.PowerState(ctx)
	if err == nil || !bmc.IsTransient(err) {
		t.Fatalf("a request on a session idle 31 s of 30: %v; want a transient error (no answer)", err)
	}
	logins := drv.Stats().Logins
	if _, err := drv.PowerState(ctx); err != nil {
		t.Fatalf("after the expiry: %v; want the driver to log in again", err)
	}
	if got := drv.Stats().Logins; got != logins+1 {
		t.Errorf("logins %d after the expiry, want %d", got, logins+1)
	}
	_ = sim
}

// TestBMCResetDowntime: after a cold reset the BMC is silent for
// BMCResetDowntime (by the fake clock) and has forgotten every session.
func TestBMCResetDowntime(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := ipmitest.Realistic()
	opts.Clock = clk
	sim, p := simPeer(t, opts)
	drv := open(t, p, ipmi.Options{Timeout: 2 * time.Second, Retries: -1})
	other := open(t, p, ipmi.Options{Timeout: 2 * time.Second, Retries: -1, IdleRelogin: time.Hour})
	ctx := t.Context()
	if _, err := other.PowerState(ctx); err != nil {
		t.Fatal(err)
	}
	if err := drv.ResetBMC(ctx, bmc.BMCResetCold); err != nil {
		t.Fatal(err)
	}
	if n := sim.Chassis().Counts().BMCColdResets; n != 1 {
		t.Fatalf("cold resets: %d, want 1", n)
	}
	_, err := drv.PowerState(ctx)
	if err == nil || !bmc.IsTransient(err) {
		t.Fatalf("during the downtime: %v; want a transient error (no answer)", err)
	}
	clk.Advance(89 * time.Second)
	if _, err := drv.PowerState(ctx); err == nil {
		t.Fatal("the BMC answered 89 s into a 90 s downtime")
	}
	clk.Advance(2 * time.Second)
	if _, err := drv.PowerState(ctx); err != nil {
		t.Fatalf("after the downtime: %v", err)
	}
	// The session opened before the reset is gone: its next request gets
	// no answer, then the driver opens a new one.
	logins := other.Stats().Logins
	if _, err := other.PowerState(ctx); err == nil {
		t.Fatal("a session from before the BMC reset still answers")
	}
	if _, err := other.PowerState(ctx); err != nil {
		t.Fatalf("a new session after the reset: %v", err)
	}
	if got := other.Stats().Logins; got != logins+1 {
		t.Errorf("logins %d, want %d", got, logins+1)
	}
}

// TestRealisticPowerDelay: Realistic power changes land 4 s later; until
// then the old state reads back.
func TestRealisticPowerDelay(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := ipmitest.Realistic()
	opts.Clock = clk
	sim, p := simPeer(t, opts)
	drv := open(t, p, ipmi.Options{})
	ctx := t.Context()
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
		t.Fatal(err)
	}
	if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	if st, err := drv.PowerState(ctx); err != nil || st != bmc.PowerOff {
		t.Fatalf("3 s after power on: %s, %v; want still off", st, err)
	}
	if !sim.Chassis().BootFlags().BootFlagsValid {
		t.Fatal("the one-time flag was consumed before the boot landed")
	}
	clk.Advance(time.Second)
	if st, err := drv.PowerState(ctx); err != nil || st != bmc.PowerOn {
		t.Fatalf("4 s after power on: %s, %v; want on", st, err)
	}
	if sim.Chassis().BootFlags().BootFlagsValid {
		t.Fatal("the boot did not consume the one-time flag")
	}
}

// TestUnknownUserAndWrongPassword: an unknown user is refused at RAKP 2
// with status 0Dh (unauthorized name) and a wrong password at RAKP 4 with
// 0Fh (invalid integrity check value), after the client found RAKP 2's
// code wrong, as ipmi_sim does; ipmitool reports them differently.
func TestUnknownUserAndWrongPassword(t *testing.T) {
	t.Parallel()
	_, sim := simPeer(t, ipmitest.Options{})
	for name, p := range map[string]peer{"ipmitest": sim, "ipmi_sim": openIPMIPeer(t)} {
		t.Run(name, func(t *testing.T) {
			handshake := func(user, pass string) (rakp2, rakp4 error) {
				c, err := client.NewClient(p.ep.Host, p.ep.Port, user, pass)
				if err != nil {
					t.Fatal(err)
				}
				c.WithCipherSuiteID(types.CipherSuiteID3).WithTimeout(2 * time.Second).WithRetry(0)
				defer c.Close(context.Background())
				if _, err := c.OpenSession(t.Context()); err != nil {
					t.Fatalf("open session: %v", err)
				}
				if _, rakp2 = c.RAKPMessage1(t.Context()); rakp2 != nil && !errors.Is(rakp2, client.ErrRAKPAuthentication) {
					return rakp2, nil
				}
				_, rakp4 = c.RAKPMessage3(t.Context())
				return rakp2, rakp4
			}
			status := func(err error) types.RmcpStatusCode {
				var rs *types.RmcpStatusError
				if errors.As(err, &rs) {
					return rs.StatusCode()
				}
				return 0
			}
			rakp2, _ := handshake("bmctest-nobody", p.creds.Password)
			if status(rakp2) != types.RmcpStatusCodeUnauthorizedName {
				t.Errorf("unknown user: RAKP 2 %v; want status 0Dh (unauthorized name)", rakp2)
			}
			rakp2, rakp4 := handshake(p.creds.Username, "Zq7-wrong-Xw3")
			if !errors.Is(rakp2, client.ErrRAKPAuthentication) {
				t.Errorf("wrong password: RAKP 2 %v; want a status-0 reply whose code does not match", rakp2)
			}
			if status(rakp4) != types.RmcpStatusCodeInvalidIntegrityCheckValue {
				t.Errorf("wrong password: RAKP 4 %v; want status 0Fh (invalid integrity check value)", rakp4)
			}
			if _, rakp4 := handshake(p.creds.Username, p.creds.Password); rakp4 != nil {
				t.Errorf("good credentials: %v", rakp4)
			}

			out, err := ipmitool(t, p, "bmctest-nobody", p.creds.Password, "-v", "chassis", "power", "status")
			if err == nil || !strings.Contains(out, "unauthorized name") {
				t.Errorf("ipmitool as an unknown user: %v\n%s\nwant a failure naming the unauthorized name", err, out)
			}
			out, err = ipmitool(t, p, p.creds.Username, "Zq7-wrong-Xw3", "-v", "chassis", "power", "status")
			if err == nil || !strings.Contains(out, "RAKP 2 HMAC is invalid") {
				t.Errorf("ipmitool with a wrong password: %v\n%s\nwant a failure at RAKP 2's HMAC", err, out)
			}
		})
	}
}

// TestSessionInfo: Get Session Info answers for the current session, as
// ipmitool's "session info active" asks.
func TestSessionInfo(t *testing.T) {
	t.Parallel()
	_, p := simPeer(t, ipmitest.Options{})
	out, err := ipmitool(t, p, p.creds.Username, p.creds.Password, "session", "info", "active")
	if err != nil {
		t.Fatalf("ipmitool session info active: %v\n%s", err, out)
	}
	for _, want := range []string{"session handle                : 1", "privilege level               : ADMINISTRATOR", "session type                  : IPMIv2/RMCP+"} {
		if !strings.Contains(out, want) {
			t.Errorf("session info lacks %q:\n%s", want, out)
		}
	}
}

// TestDriverUnknownUser: the ipmi driver tells an unknown user (wrapping
// ipmi.ErrUnknownUser and naming the user) from a wrong password, both
// permanent bmc.ErrUnauthorized without the password, against the
// simulator and ipmi_sim.
func TestDriverUnknownUser(t *testing.T) {
	t.Parallel()
	const pass = "Qx8-bmckit-7Zw"
	_, sim := simPeer(t, ipmitest.Options{Password: pass})
	sim2 := openIPMIPeer(t)
	for name, p := range map[string]peer{"ipmitest": sim, "ipmi_sim": sim2} {
		t.Run(name, func(t *testing.T) {
			d, err := ipmi.NewDialer(ipmi.Options{CipherSuites: []int{3}, Timeout: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Open(t.Context(), p.ep, bmc.Credentials{Username: "bmctest-nobody", Password: p.creds.Password})
			if !errors.Is(err, bmc.ErrUnauthorized) || !errors.Is(err, ipmi.ErrUnknownUser) || bmc.IsTransient(err) {
				t.Fatalf("unknown user: %v; want a permanent bmc.ErrUnauthorized wrapping ipmi.ErrUnknownUser", err)
			}
			if !strings.Contains(err.Error(), `"bmctest-nobody"`) || strings.Contains(err.Error(), p.creds.Password) {
				t.Errorf("unknown user: %q should name the user and not the password", err)
			}
			_, err = d.Open(t.Context(), p.ep, bmc.Credentials{Username: p.creds.Username, Password: pass + "x"})
			if !errors.Is(err, bmc.ErrUnauthorized) || errors.Is(err, ipmi.ErrUnknownUser) || bmc.IsTransient(err) {
				t.Fatalf("wrong password: %v; want a permanent bmc.ErrUnauthorized, not ipmi.ErrUnknownUser", err)
			}
			if strings.Contains(err.Error(), pass) {
				t.Errorf("wrong password: %q leaks the password", err)
			}
		})
	}
}
