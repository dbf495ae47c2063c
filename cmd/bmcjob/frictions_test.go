package main

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
)

// A failed job is told once: its message is in the result on standard
// output, the progress line gives the reason only, and the binary exits 1
// without printing it again on standard error.
func TestOneMessagePerFailure(t *testing.T) {
	const msg = `BIOS attribute Foo="1": unknown attribute`
	stdout, stderr, err := runIO(t, "", "bios", "set", "Foo=1", "-simulate")
	var re *resultError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T), want a *resultError (printed already)", err, err)
	}
	if n := strings.Count(stdout+stderr, msg); n != 1 {
		t.Errorf("the failure's message is printed %d times, want once:\nstdout:\n%s\nstderr:\n%s", n, stdout, stderr)
	}
	if !strings.Contains(stdout, "set BIOS settings Foo: Failed (InvalidSpec): ") || !strings.Contains(stderr, "task 1/1 set BIOS settings Foo: failed (InvalidSpec)\n") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}

	// run, as lines: the job's line holds the message, the failed task's
	// line does not repeat it.
	spec := writeSpec(t, `{"bmc":"redfish://x","tasks":[{"powerStatus":{}},{"bios":{"attributes":{"Foo":"1"}}}]}`)
	stdout, stderr, err = runIO(t, "", "run", "-simulate", "-spec", spec)
	if !errors.As(err, &re) || strings.Count(stdout+stderr, msg) != 1 {
		t.Errorf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "  task 1/2 power status: Canceled (Skipped)\n  task 2/2 set BIOS settings Foo: Failed (InvalidSpec)\n") {
		t.Errorf("run stdout:\n%s", stdout)
	}

	// The binary: exit 1, nothing on standard error but the progress.
	cmd := exec.Command(buildBMCJob(t), "bios", "set", "Foo=1", "-simulate")
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v", err)
	}
	if strings.Contains(e.String(), "bmcjob:") || strings.Count(o.String()+e.String(), msg) != 1 {
		t.Errorf("binary output:\nstdout:\n%s\nstderr:\n%s", o.String(), e.String())
	}
}

// countingListener accepts TCP connections on loopback and counts them.
func countingListener(t *testing.T) (addr string, accepted *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted = &atomic.Int64{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return l.Addr().String(), accepted
}

// A missing -user is refused before anything is dialed; -user "" (an IPMI
// null user) is a user.
func TestMissingUserRefusedBeforeDialing(t *testing.T) {
	addr, accepted := countingListener(t)
	url := "redfish+http://" + addr + "/redfish/v1/Systems/1"
	for _, args := range [][]string{
		{"power", "status", "-bmc", url},
		{"run", "-spec", "specs/netboot.json", "-bmc", url},
		{"boot", "pxe", "-bmc", url},
		{"monitor", url},
	} {
		_, err := runOut(t, "pw", args...)
		if err == nil || !strings.HasPrefix(err.Error(), "-user is required") {
			t.Errorf("bmcjob %s: %v, want -user is required", strings.Join(args, " "), err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections to the BMC; want none before -user is checked", n)
	}
	// Without a password as well: the user is named first.
	if _, err := runOut(t, "", "power", "status", "-bmc", url); err == nil || !strings.HasPrefix(err.Error(), "-user is required") {
		t.Errorf("no user, no password: %v", err)
	}
	if _, err := runOut(t, "pw", "power", "status", "-bmc", url, "-user", "", "-timeout", "1ms"); err == nil || strings.Contains(err.Error(), "-user is required") {
		t.Errorf(`-user "": %v`, err)
	}
}

// Against an address that refuses every connection, the job fails once the
// refusals lasted -unreachable (on the command's clock), with a message that
// says what to check, instead of retrying until -timeout.
func TestUnreachableBMCGivesUp(t *testing.T) {
	addr := refusedAddress(t)
	stderr, clk, done := startRun(t, context.Background(), "pw", "power", "status",
		"-bmc", "redfish://"+addr+"/redfish/v1/Systems/1", "-user", "admin", "-unreachable", "30s", "-timeout", "10m")
	waitFor(t, "a refused dial", func() bool { return strings.Contains(stderr.String(), "connection refused") }, stderr.String)
	clk.Advance(31 * time.Second)
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("bmcjob did not give up:\n%s", stderr.String())
	}
	var re *resultError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "power status Failed") || !strings.Contains(err.Error(), "connection refused; gave up: no connection to "+addr+" for 31s (-unreachable)") {
		t.Fatalf("error: %v\n%s", err, stderr.String())
	}
}

// The guard itself: it counts only errors that mean "not reached", gives up
// only after limit, and never again once a dial succeeded.
func TestReachGuard(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	var next error
	up := fake.New(fake.Options{})
	inner := bmc.DialerFunc(func(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
		if next != nil {
			return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: next}
		}
		return up.Dial(ctx, ep, creds)
	})
	ep, _ := bmc.ParseEndpoint("redfish://10.0.0.5/redfish/v1/Systems/1")
	dial := func(g *reachGuard) error {
		drv, err := g.Dial(context.Background(), ep, bmc.Credentials{})
		if drv != nil {
			_ = drv.Close(context.Background())
		}
		return err
	}

	g := &reachGuard{Dialer: inner, limit: 30 * time.Second, now: clk.Now}
	next = errors.New("HTTP 500") // answered: not counted
	clk.Advance(time.Hour)
	if err := dial(g); !strings.Contains(err.Error(), "HTTP 500") || strings.Contains(err.Error(), "gave up") {
		t.Errorf("an answer: %v", err)
	}
	next = refused
	if err := dial(g); !bmc.IsTransient(err) {
		t.Errorf("first refusal: %v, want transient", err)
	}
	clk.Advance(29 * time.Second)
	if err := dial(g); !bmc.IsTransient(err) {
		t.Errorf("refused for 29s: %v, want transient", err)
	}
	clk.Advance(time.Second)
	if err := dial(g); bmc.IsTransient(err) || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "gave up: no connection to 10.0.0.5:443 for 30s (-unreachable)") {
		t.Errorf("refused for 30s: %v, want permanent, naming -unreachable", err)
	}

	g = &reachGuard{Dialer: inner, limit: 30 * time.Second, now: clk.Now}
	next = nil
	if err := dial(g); err != nil {
		t.Fatal(err)
	}
	next = refused
	for range 3 {
		clk.Advance(time.Minute)
		if err := dial(g); !bmc.IsTransient(err) || strings.Contains(err.Error(), "gave up") {
			t.Errorf("refused after the BMC was reached: %v, want transient (the library's retries)", err)
		}
	}
}

// bmcjob spec lists and prints the example specs built into the binary:
// what "go install" users get without a checkout.
func TestShippedSpecsBuiltIn(t *testing.T) {
	stdout, _, err := runIO(t, "", "spec")
	if err != nil || !strings.Contains(stdout, "netboot\n") || !strings.Contains(stdout, "install-from-iso\n") {
		t.Fatalf("spec: %v\n%s", err, stdout)
	}
	stdout, _, err = runIO(t, "", "spec", "netboot")
	if err != nil || strings.TrimSpace(stdout) != specExample {
		t.Errorf("spec netboot: %v\n%s", err, stdout)
	}
	if _, _, err := runIO(t, "", "spec", "nope"); err == nil || !strings.Contains(err.Error(), `no shipped spec "nope": want one of bios-settings,`) {
		t.Errorf("spec nope: %v", err)
	}
}
