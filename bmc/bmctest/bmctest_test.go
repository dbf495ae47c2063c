package bmctest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/fake"
)

// broken wraps the fake's driver and breaks one rule of the contract.
type broken struct {
	*fake.Driver
	bug        string
	reads      int // written without a lock by the "racy" bug
	closes     atomic.Int32
	firstImage atomic.Value
}

func (b *broken) PowerState(ctx context.Context) (bmc.PowerState, error) {
	switch b.bug {
	case "racy":
		b.reads++ // the bug under test: unsynchronized state
	case "ignores-ctx":
		ctx = context.Background()
	case "untyped-state":
		st, err := b.Driver.PowerState(ctx)
		return bmc.PowerState(strings.ToLower(string(st))), err
	}
	return b.Driver.PowerState(ctx)
}

func (b *broken) SetPower(ctx context.Context, a bmc.PowerAction) error {
	st := b.BMC().State().Power
	switch {
	case b.bug == "off-not-idempotent" && a == bmc.PowerActionOff && st == bmc.PowerOff:
		return &bmc.OpError{Op: "set power", Err: errors.New("HTTP 409: already off")}
	case b.bug == "cycle-off-stays-off" && a == bmc.PowerActionCycle && st == bmc.PowerOff:
		return nil
	case b.bug == "leaks-password":
		err := b.Driver.SetPower(ctx, a)
		if err != nil {
			return fmt.Errorf("%w (logged in with password %s)", err, testPassword)
		}
		return nil
	case b.bug == "plain-errors":
		err := b.Driver.SetPower(ctx, a)
		var oe *bmc.OpError
		if errors.As(err, &oe) {
			return oe.Err
		}
		return err
	case b.bug == "not-supported-unwrapped":
		err := b.Driver.SetPower(ctx, a)
		if errors.Is(err, bmc.ErrNotSupported) {
			return &bmc.OpError{Op: "set power", Err: errors.New("HTTP 501 Not Implemented")}
		}
		return err
	}
	return b.Driver.SetPower(ctx, a)
}

func (b *broken) BootOverride(ctx context.Context) (bmc.BootOverride, error) {
	o, err := b.Driver.BootOverride(ctx)
	if b.bug == "boot-persistence-lost" {
		o.Persistent = false
	}
	if b.bug == "http-boot-uri-lost" {
		o.URI = ""
	}
	return o, err
}

func (b *broken) InsertMedia(ctx context.Context, kind bmc.MediaKind, image string) error {
	if b.bug == "media-keeps-first-image" {
		b.firstImage.CompareAndSwap(nil, image)
		image = b.firstImage.Load().(string)
	}
	return b.Driver.InsertMedia(ctx, kind, image)
}

func (b *broken) EjectMedia(ctx context.Context, kind bmc.MediaKind) error {
	if b.bug == "eject-empty-fails" {
		if s, err := b.Driver.MediaStatus(ctx, kind); err == nil && !s.Inserted {
			return &bmc.OpError{Op: "eject media", Err: errors.New("HTTP 400: nothing inserted")}
		}
	}
	return b.Driver.EjectMedia(ctx, kind)
}

func (b *broken) ResetBMC(ctx context.Context, t bmc.BMCResetType) error {
	if b.bug == "hangs-on-done-ctx" && ctx.Err() != nil {
		<-make(chan struct{}) // the bug under test: blocks although ctx is done
	}
	if b.bug == "bmc-reset-powers-off" {
		b.BMC().SetPower(bmc.PowerOff) // the bug under test: the host loses power
	}
	return b.Driver.ResetBMC(ctx, t)
}

func (b *broken) Close(ctx context.Context) error {
	if b.bug == "close-not-idempotent" && b.closes.Add(1) > 1 {
		return &bmc.OpError{Op: "close", Err: errors.New("HTTP 404: session already deleted")}
	}
	return b.Driver.Close(ctx)
}

func (b *broken) Stats() bmc.Stats {
	if b.bug == "stats-frozen" {
		return bmc.Stats{Requests: 1}
	}
	return b.Driver.Stats()
}

// bugs maps each broken driver to a subtest that must catch it.
var bugs = []struct {
	bug, mustFail string
	unsupported   []fake.Capability
}{
	{"off-not-idempotent", "Power/OffWhenOff", nil},
	{"cycle-off-stays-off", "Power/CycleWhenOff", nil},
	{"ignores-ctx", "Context/Canceled/PowerState", nil},
	{"untyped-state", "Power/On", nil},
	{"plain-errors", "Power/InvalidAction", nil},
	{"not-supported-unwrapped", "Unsupported/power-cycle", []fake.Capability{bmc.CapabilityPowerCycle}},
	{"boot-persistence-lost", "BootOverride/pxe-persistent-unchanged", nil},
	{"media-keeps-first-image", "VirtualMedia/cd/InsertReplaces", nil},
	{"eject-empty-fails", "VirtualMedia/usb/EjectEmpty", nil},
	{"hangs-on-done-ctx", "Context/Canceled/ResetBMC", nil},
	{"close-not-idempotent", "Close/Idempotent", nil},
	{"stats-frozen", "Stats/CountsRequests", nil},
	{"leaks-password", "Power/InvalidAction", nil},
	{"unauthorized-untyped", "Dial/WrongPassword", nil},
	{"racy", "Concurrency/Reads", nil},                       // caught by the race detector only
	{"once-ignored", "BootOverride/pxe-once-unchanged", nil}, // the fake's IgnoreOnceOverride
	{"http-boot-uri-lost", "BootHTTP/once", nil},
	{"bmc-reset-powers-off", "ResetBMC/warm", nil},
	{"http-boot-refused", "BootHTTP/once", nil}, // the fake lacks boot-http, the suite is not told
}

// passing are correct drivers the suite must pass: the plain fake; one
// whose password is a common word its honest error text contains; one that
// refuses credentials over IPMI's limits with its own (non-unauthorized)
// error, which the suite's wrong credentials must not reach.
var passing = []string{"correct", "common-word-password", "checks-ipmi-limits"}

const (
	bugEnv       = "BMCTEST_BROKEN_DRIVER"
	testPassword = "bmctest-Pa55word"
)

// TestBrokenDriver runs the suite against one broken driver; it is run in a
// child process by TestSuiteCatchesBrokenDrivers and skips otherwise.
func TestBrokenDriver(t *testing.T) {
	bug := os.Getenv(bugEnv)
	if bug == "" {
		t.Skip("run by TestSuiteCatchesBrokenDrivers in a child process")
	}
	var unsupported []fake.Capability
	for _, b := range bugs {
		if b.bug == bug {
			unsupported = b.unsupported
		}
	}
	opts := bmctest.Options{
		PollInterval:  time.Millisecond,
		SettleTimeout: 200 * time.Millisecond,
		CallTimeout:   200 * time.Millisecond,
		Unsupported:   unsupported, // one list configures the fake and the suite
	}
	creds := bmc.Credentials{Username: "admin", Password: testPassword}
	if bug == "common-word-password" {
		creds.Password = "password"
	}
	bmctest.Run(t, opts, func(t *testing.T) bmctest.Target {
		lacks := unsupported
		if bug == "http-boot-refused" {
			lacks = []fake.Capability{bmc.CapabilityBootHTTP}
		}
		srv := fake.New(fake.Options{
			Unsupported: lacks, Username: creds.Username, Password: creds.Password,
			IgnoreOnceOverride: bug == "once-ignored",
		})
		dial := func(ctx context.Context, c bmc.Credentials) (bmc.Driver, error) {
			d, err := srv.Dial(ctx, bmc.Endpoint{Protocol: "ipmi", Host: "127.0.0.1"}, c)
			switch {
			case bug == "unauthorized-untyped" && errors.Is(err, bmc.ErrUnauthorized):
				return nil, errors.New("login failed")
			case bug == "common-word-password" && errors.Is(err, bmc.ErrUnauthorized):
				// Honest text that contains the (common-word) password.
				return nil, &bmc.OpError{Op: "dial", Err: fmt.Errorf("%w: wrong user name or password", err)}
			case bug == "checks-ipmi-limits" && (len(c.Username) > 16 || len(c.Password) > 20):
				// A driver's own length check: not the peer's refusal.
				return nil, &bmc.OpError{Op: "dial", Err: bmc.Permanent(errors.New("credentials exceed IPMI's limits"))}
			}
			return d, err
		}
		d, err := dial(t.Context(), creds)
		if err != nil {
			t.Fatal(err)
		}
		tg := bmctest.Target{Driver: d, Dial: dial, Credentials: creds}
		if !slices.Contains(passing, bug) && bug != "once-ignored" && bug != "http-boot-refused" {
			tg.Driver = &broken{Driver: d.(*fake.Driver), bug: bug}
		}
		return tg
	})
}

// TestSuiteCatchesBrokenDrivers checks the suite itself: each driver with
// one bug must fail the subtest for that rule, and the correct driver must
// pass. The suite runs in a child process because a failing subtest would
// fail this test too.
func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	if os.Getenv(bugEnv) != "" {
		t.Skip("in the child process")
	}
	run := func(t *testing.T, bug string) (string, error) {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenDriver$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), bugEnv+"="+bug)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, ok := range passing {
		t.Run(ok, func(t *testing.T) {
			out, err := run(t, ok)
			if err != nil || !strings.Contains(out, "--- PASS: TestBrokenDriver/Power/On ") || !strings.Contains(out, "--- PASS: TestBrokenDriver/Dial/WrongUser ") {
				t.Fatalf("the suite did not pass the correct driver %q (%v):\n%s", ok, err, out)
			}
		})
	}
	for _, b := range bugs {
		t.Run(b.bug, func(t *testing.T) {
			if b.bug == "racy" && !raceEnabled {
				t.Skip("a data race is only caught with -race")
			}
			out, err := run(t, b.bug)
			if err == nil {
				t.Fatalf("the suite passed a driver with bug %q:\n%s", b.bug, out)
			}
			if want := "--- FAIL: TestBrokenDriver/" + b.mustFail + " "; !strings.Contains(out, want) {
				t.Errorf("bug %q: output lacks %q:\n%s", b.bug, want, out)
			}
		})
	}
}
