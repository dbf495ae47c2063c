package ipmi_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// TestCipherSuiteSubstitutionFallsBack: a BMC that answers a request for
// suite 17 with suite 3's algorithms (pyghmi's BMC, older firmwares) is
// reached with the default suites (17, then 3) on a fresh suite-3 session,
// and CipherSuite reports 3; no timeout is involved (Timeout is an hour).
// Allowed only 17, the dial fails at once with a permanent error naming
// both algorithm triples.
func TestCipherSuiteSubstitutionFallsBack(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{DowngradeCipherSuite: true})
	for _, suites := range [][]int{nil, {17, 3}, {3}} {
		drv, err := dialer(t, ipmi.Options{CipherSuites: suites, Timeout: time.Hour}).Open(t.Context(), sim.Endpoint, sim.Credentials)
		if err != nil {
			t.Fatalf("suites %v: %v", suites, err)
		}
		if got := drv.CipherSuite(); got != 3 {
			t.Errorf("suites %v: cipher suite %d, want 3", suites, got)
		}
		if _, err := drv.PowerState(t.Context()); err != nil {
			t.Fatalf("suites %v: %v", suites, err)
		}
		st := drv.Stats()
		_ = drv.Close(context.Background())
		if want := int64(1); st.Logins != want {
			t.Errorf("suites %v: %d logins, want %d", suites, st.Logins, want)
		}
	}
	drv, err := dialer(t, ipmi.Options{CipherSuites: []int{17}, Timeout: time.Hour}).Open(t.Context(), sim.Endpoint, sim.Credentials)
	if err == nil {
		_ = drv.Close(t.Context())
		t.Fatalf("suite 17 only: dial accepted the substituted suite %d", drv.CipherSuite())
	}
	requireOpError(t, err)
	if !errors.Is(err, ipmi.ErrCipherSuiteMismatch) || bmc.IsTransient(err) || errors.Is(err, bmc.ErrUnauthorized) {
		t.Fatalf("suite 17 only: error %v: want a permanent ErrCipherSuiteMismatch", err)
	}
	for _, want := range []string{"requested cipher suite 17", "hmac_sha256", "hmac_sha1", "(cipher suite 3)", "never used"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestCipherSuiteSubstitutionWrongPassword: on the substituting BMC a
// wrong password (or user name) is reported as bmc.ErrUnauthorized, not as
// a cipher mismatch, with the default suites.
func TestCipherSuiteSubstitutionWrongPassword(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{DowngradeCipherSuite: true})
	d := dialer(t, ipmi.Options{Timeout: time.Hour})
	for _, c := range []bmc.Credentials{
		{Username: sim.Credentials.Username, Password: sim.Credentials.Password + "x"},
		{Username: "nobody", Password: sim.Credentials.Password},
	} {
		_, err := d.Open(t.Context(), sim.Endpoint, c)
		if !errors.Is(err, bmc.ErrUnauthorized) || errors.Is(err, ipmi.ErrCipherSuiteMismatch) || bmc.IsTransient(err) {
			t.Fatalf("user %q: error %v: want a permanent bmc.ErrUnauthorized", c.Username, err)
		}
		if strings.Contains(err.Error(), c.Password) {
			t.Fatalf("error %q carries the password", err)
		}
	}
}

// TestCipherSuiteDowngradeIpmitool checks the personality against an
// independent client: ipmitool refuses suite 17 on it and works with 3.
func TestCipherSuiteDowngradeIpmitool(t *testing.T) {
	t.Parallel()
	tool := ipmitest.RequireProgram(t, "ipmitool", "ipmitool")
	sim := ipmitest.NewServer(t, ipmitest.Options{DowngradeCipherSuite: true})
	run := func(suite int) error {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		return exec.CommandContext(ctx, tool, "-I", "lanplus", "-H", sim.Endpoint.Host,
			"-p", strconv.Itoa(sim.Endpoint.Port), "-U", sim.Credentials.Username, "-P", sim.Credentials.Password,
			"-C", strconv.Itoa(suite), "-N", "1", "-R", "1", "chassis", "power", "status").Run()
	}
	if err := run(17); err == nil {
		t.Error("ipmitool -C 17 accepted the downgrade: the personality does not downgrade")
	}
	if err := run(3); err != nil {
		t.Errorf("ipmitool -C 3: %v", err)
	}
}

// TestOpenIPMISuite17: ipmi_sim lacks suite 17 and refuses it (an RMCP+
// status, not a downgrade), so the driver's check does not fire there.
func TestOpenIPMISuite17(t *testing.T) {
	t.Parallel()
	osim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	_, err := dialer(t, ipmi.Options{CipherSuites: []int{17}}).Open(t.Context(), osim.Endpoint, osim.Credentials)
	if err == nil {
		t.Fatal("ipmi_sim accepted suite 17")
	}
	if errors.Is(err, ipmi.ErrCipherSuiteMismatch) {
		t.Fatalf("ipmi_sim: %v: want a refusal, not a downgrade", err)
	}
}

// TestReplayedOldSessionReplyDropped: a BMC that answers a new dial's
// handshake with the previous session's last reply first. Every dial
// succeeds, and the driver dropped the stale replies rather than parsing
// them.
func TestReplayedOldSessionReplyDropped(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{ReplayOldReplies: true, PoweredOn: true})
	d := dialer(t, ipmi.Options{Timeout: time.Hour})
	var dropped int64
	for i := range 5 {
		drv, err := d.Open(t.Context(), sim.Endpoint, sim.Credentials)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		st, err := drv.PowerState(t.Context())
		if err != nil || st != bmc.PowerOn {
			t.Fatalf("dial %d: power state %s, %v; want On", i, st, err)
		}
		dropped += ipmi.Dropped(drv)
		if err := drv.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if sim.Replayed() == 0 {
		t.Fatal("the simulator replayed nothing")
	}
	if dropped < int64(sim.Replayed())-4 { // Close's logout replies may be in flight
		t.Errorf("driver dropped %d datagrams; the simulator replayed %d", dropped, sim.Replayed())
	}
}
