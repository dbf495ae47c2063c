package bmclib_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmclib"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// provider is a scripted bmclib provider recording the calls it gets.
type provider struct {
	mu    sync.Mutex
	state string
	calls []string
	setOK bool
}

func (p *provider) PowerStateGet(context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "get")
	return p.state, nil
}

func (p *provider) PowerSet(_ context.Context, s string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "set "+s)
	return p.setOK, nil
}

func (p *provider) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// TestSetPowerMapping: the adapter reads the state and sends bmclib the one
// action bmckit's semantics need from there.
func TestSetPowerMapping(t *testing.T) {
	cases := []struct {
		state  string
		action bmc.PowerAction
		want   []string
	}{
		{"Chassis Power is off\n", bmc.PowerActionOff, []string{"get"}},
		{"on", bmc.PowerActionOn, []string{"get"}},
		{"Off", bmc.PowerActionCycle, []string{"get", "set on"}},
		{"off", bmc.PowerActionReset, []string{"get", "set on"}},
		{"Chassis Power is on", bmc.PowerActionCycle, []string{"get", "set cycle"}},
		{"On", bmc.PowerActionReset, []string{"get", "set reset"}},
		{"On", bmc.PowerActionSoftOff, []string{"get", "set soft"}},
		{"PoweringOff", bmc.PowerActionOff, []string{"get"}},
		{"garbage", bmc.PowerActionOn, []string{"get", "set on"}},
	}
	for _, c := range cases {
		p := &provider{state: c.state, setOK: true}
		d, err := bmclib.New(context.Background(), p, bmclib.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetPower(context.Background(), c.action); err != nil {
			t.Errorf("SetPower(%s) from %q: %v", c.action, c.state, err)
		}
		if got := p.log(); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("SetPower(%s) from %q: provider calls %v, want %v", c.action, c.state, got, c.want)
		}
	}
}

// TestNotOKIsAnError: bmclib's ok=false without an error is a failure.
func TestNotOKIsAnError(t *testing.T) {
	p := &provider{state: "off", setOK: false}
	d, err := bmclib.New(context.Background(), p, bmclib.Options{Endpoint: "ipmi://10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	err = d.SetPower(context.Background(), bmc.PowerActionOn)
	var oe *bmc.OpError
	if err == nil || !errors.As(err, &oe) || oe.Endpoint != "ipmi://10.0.0.1" {
		t.Fatalf("SetPower with ok=false: %v, want a *bmc.OpError naming the endpoint", err)
	}
	if err := d.SetBootOverride(context.Background(), bmc.BootOverride{Device: bmc.BootDevicePXE}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("SetBootOverride on a provider without BootDeviceSet: %v, want bmc.ErrNotSupported", err)
	}
	if err := d.ResetBMC(context.Background(), bmc.BMCResetWarm); !errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("ResetBMC on a provider without BmcReset: %v, want bmc.ErrNotSupported", err)
	}
}

func TestNormalizePowerState(t *testing.T) {
	for in, want := range map[string]bmc.PowerState{
		"Chassis Power is on\n":                bmc.PowerOn,
		"Chassis Power is off":                 bmc.PowerOff,
		"Warning: x\nChassis Power is on\n":    bmc.PowerOn,
		" On ":                                 bmc.PowerOn,
		"off":                                  bmc.PowerOff,
		"PoweringOn":                           bmc.PowerPoweringOn,
		"poweringoff":                          bmc.PowerPoweringOff,
		"":                                     bmc.PowerUnknown,
		"Error: Unable to establish IPMI v2":   bmc.PowerUnknown,
		"Chassis Power is on fire, apparently": bmc.PowerOn,
	} {
		if got := bmclib.NormalizePowerState(in); got != want {
			t.Errorf("NormalizePowerState(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzNormalizePowerState: any provider output maps to one of bmc's
// constants.
func FuzzNormalizePowerState(f *testing.F) {
	for _, s := range []string{"Chassis Power is on\n", "Chassis Power is off", "On", "PoweringOff", "", "chassis power is "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		switch st := bmclib.NormalizePowerState(s); st {
		case bmc.PowerOn, bmc.PowerOff, bmc.PowerPoweringOn, bmc.PowerPoweringOff, bmc.PowerUnknown:
		default:
			t.Fatalf("NormalizePowerState(%q) = %q, not a bmc.PowerState constant", s, st)
		}
	})
}

// FuzzClassifyIPMIToolError: any ipmitool output classifies without
// panicking and keeps the cause.
func FuzzClassifyIPMIToolError(f *testing.F) {
	f.Add("Error: Unable to establish IPMI v2 / RMCP+ session", int64(time.Second))
	f.Add("MC reset command failed: Invalid command", int64(0))
	f.Add("", int64(10*time.Second))
	f.Fuzz(func(t *testing.T, msg string, elapsed int64) {
		cause := errors.New(msg)
		err := bmclib.ClassifyIPMIToolError(cause, time.Duration(elapsed))
		if !errors.Is(err, cause) {
			t.Fatalf("classified error %v lost its cause", err)
		}
	})
}

const secret = "s3cr3t-Pa55"

// TestIPMIToolWrongPassword: ipmitool against a BMC that refuses the
// password gives a permanent bmc.ErrUnauthorized without the password in
// it.
func TestIPMIToolWrongPassword(t *testing.T) {
	t.Parallel()
	d := ipmitoolDialer(t, bmclib.IPMIToolOptions{CipherSuite: 3})
	sim := ipmitest.NewServer(t, ipmitest.Options{Password: secret})
	_, err := d.Dial(context.Background(), sim.Endpoint, bmc.Credentials{Username: sim.Credentials.Username, Password: "wrong-" + secret})
	if !errors.Is(err, bmc.ErrUnauthorized) || bmc.IsTransient(err) {
		t.Fatalf("dial with a wrong password: %v, want permanent bmc.ErrUnauthorized", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error leaks the password: %v", err)
	}
}

// TestIPMIToolUnreachable: a BMC that never answers gives a transient error
// once Options.Timeout ends the ipmitool run.
func TestIPMIToolUnreachable(t *testing.T) {
	t.Parallel()
	d := ipmitoolDialer(t, bmclib.IPMIToolOptions{CipherSuite: 3, Timeout: time.Second})
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep := bmc.Endpoint{Protocol: "ipmi", Host: "127.0.0.1", Port: c.LocalAddr().(*net.UDPAddr).Port}
	_, err = d.Dial(context.Background(), ep, bmc.Credentials{Username: "admin", Password: secret})
	if err == nil || !bmc.IsTransient(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial of a silent BMC: %v, want a transient deadline error", err)
	}
	var oe *bmc.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("%v is not a *bmc.OpError", err)
	}
}

func TestIPMIToolOptionsValidation(t *testing.T) {
	for _, c := range []struct {
		opts  bmclib.IPMIToolOptions
		field string
	}{
		{bmclib.IPMIToolOptions{CipherSuite: 300}, "CipherSuite"},
		{bmclib.IPMIToolOptions{Timeout: -1}, "Timeout"},
		{bmclib.IPMIToolOptions{Path: "/nonexistent/ipmitool"}, "Path"},
	} {
		if _, err := bmclib.NewIPMIToolDialer(c.opts); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewIPMIToolDialer(%+v): %v, want an error naming %s", c.opts, err, c.field)
		}
	}
}

// TestIPMIToolLogsNoPassword: at every verbosity, neither bmclib's nor the
// adapter's logs contain the password, on success or failure.
func TestIPMIToolLogsNoPassword(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logs strings.Builder
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
	d := ipmitoolDialer(t, bmclib.IPMIToolOptions{CipherSuite: 3, Logger: log})
	sim := ipmitest.NewServer(t, ipmitest.Options{Password: secret})
	ctx := logr.NewContext(context.Background(), log)
	if _, err := d.Dial(ctx, sim.Endpoint, bmc.Credentials{Username: sim.Credentials.Username, Password: "x" + secret}); err == nil {
		t.Fatal("dial with a wrong password succeeded")
	}
	drv, err := d.Dial(ctx, sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	_ = drv.Close(ctx)
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), secret) {
		t.Errorf("logs leak the password:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "ipmitool") {
		t.Errorf("no ipmitool log lines at verbosity 10 (is the logger wired?):\n%s", logs.String())
	}
}
