package fake_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
)

var testEP = bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "10.0.0.9", Path: "/redfish/v1/Systems/1"}

func dial(t *testing.T, srv *fake.BMC) *fake.Driver {
	t.Helper()
	d, err := srv.Dial(context.Background(), testEP, bmc.Credentials{})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d.(*fake.Driver)
}

func mustPower(t *testing.T, d bmc.Driver, want bmc.PowerState) {
	t.Helper()
	got, err := d.PowerState(context.Background())
	if err != nil {
		t.Fatalf("PowerState: %v", err)
	}
	if got != want {
		t.Fatalf("PowerState = %s, want %s", got, want)
	}
}

func mustSet(t *testing.T, d bmc.Driver, a bmc.PowerAction) {
	t.Helper()
	if err := d.SetPower(context.Background(), a); err != nil {
		t.Fatalf("SetPower(%s): %v", a, err)
	}
}

func TestNewDefaults(t *testing.T) {
	srv := fake.New(fake.Options{})
	st := srv.State()
	if st.Power != bmc.PowerOff || st.PendingPower != "" || st.Boots != 0 {
		t.Errorf("zero Options: state %+v, want Off with nothing pending and no boots", st)
	}
	if st.BootOverride.Device != bmc.BootDeviceNone {
		t.Errorf("zero Options: boot override %+v, want none", st.BootOverride)
	}
	if len(st.Media) != 2 || st.Media[bmc.MediaCD].Inserted || st.Media[bmc.MediaUSB].Inserted {
		t.Errorf("zero Options: media %+v, want empty CD and USB", st.Media)
	}
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	cases := []struct {
		opts fake.Options
		want string
	}{
		{fake.Options{Power: bmc.PowerPoweringOn}, "Options.Power"},
		{fake.Options{Latency: -time.Second}, "Options.Latency"},
		{fake.Options{PowerTransition: -1}, "Options.PowerTransition"},
		{fake.Options{SoftOffDelay: -1}, "Options.SoftOffDelay"},
		{fake.Options{Unsupported: []fake.Capability{"teleport"}}, `"teleport"`},
		{fake.Options{Hooks: map[fake.Method]fake.Hook{"Reboot": nil}}, `"Reboot"`},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("New(%+v) did not panic", c.opts)
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, c.want) {
					t.Errorf("panic %q does not name %s", msg, c.want)
				}
			}()
			fake.New(c.opts)
		})
	}
}

func TestCredentials(t *testing.T) {
	const secret = "hunter2-very-secret"
	srv := fake.New(fake.Options{Username: "admin", Password: secret})
	ctx := context.Background()

	for _, creds := range []bmc.Credentials{
		{Username: "admin", Password: "wrong-" + secret},
		{Username: "root", Password: secret},
		{},
	} {
		_, err := srv.Dial(ctx, testEP, creds)
		if !errors.Is(err, bmc.ErrUnauthorized) {
			t.Fatalf("Dial as %q: error %v, want one wrapping bmc.ErrUnauthorized", creds.Username, err)
		}
		var oe *bmc.OpError
		if !errors.As(err, &oe) || oe.Op != "dial" || oe.Endpoint != testEP.String() {
			t.Errorf("Dial error %#v: want *bmc.OpError{Op: dial, Endpoint: %s}", err, testEP)
		}
		if bmc.IsTransient(err) {
			t.Errorf("bad credentials classified transient: %v", err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error leaks the password: %v", err)
		}
	}
	d, err := srv.Dial(ctx, testEP, bmc.Credentials{Username: "admin", Password: secret})
	if err != nil {
		t.Fatalf("Dial with the right credentials: %v", err)
	}
	defer d.Close(ctx)

	got := srv.Sessions()
	if got.Logins != 1 || got.FailedLogins != 3 || got.Open != 1 {
		t.Errorf("Sessions() = %+v, want 1 login, 3 failed, 1 open", got)
	}
	for _, c := range srv.Calls() {
		if s := fmt.Sprintf("%v %+v %#v", c, c, c.Args); strings.Contains(s, secret) {
			t.Errorf("call log leaks the password: %s", s)
		}
	}
	if n := len(srv.CallsTo(fake.MethodDial)); n != 4 {
		t.Errorf("%d Dial calls logged, want 4", n)
	}
}

func TestAnyCredentialsWhenNoneConfigured(t *testing.T) {
	srv := fake.New(fake.Options{})
	d, err := srv.Dial(context.Background(), testEP, bmc.Credentials{Username: "whoever", Password: "x"})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	_ = d.Close(context.Background())
}

func TestSessionCounting(t *testing.T) {
	srv := fake.New(fake.Options{})
	ctx := context.Background()
	a, _ := srv.Dial(ctx, testEP, bmc.Credentials{})
	b, _ := srv.Dial(ctx, testEP, bmc.Credentials{})
	if s := srv.Sessions(); s.Open != 2 || s.MaxOpen != 2 || s.Logins != 2 {
		t.Fatalf("two dials: Sessions() = %+v", s)
	}
	for range 3 { // idempotent
		if err := a.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if s := srv.Sessions(); s.Open != 1 || s.MaxOpen != 2 {
		t.Fatalf("after closing one (thrice): Sessions() = %+v, want Open 1, MaxOpen 2", s)
	}
	_, err := a.PowerState(ctx)
	if !errors.Is(err, fake.ErrClosed) {
		t.Errorf("PowerState on a closed session: %v, want ErrClosed", err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s := srv.Sessions(); s.Open != 0 {
		t.Errorf("after closing both: Open = %d", s.Open)
	}
	if n := len(srv.CallsTo(fake.MethodClose)); n != 2 {
		t.Errorf("%d Close calls logged, want 2 (repeats are not calls to the BMC)", n)
	}
	if got := a.(*fake.Driver).Session(); got != 1 {
		t.Errorf("first session number %d, want 1", got)
	}
}

// Sequential sessions never overlap, so MaxOpen stays 1: what a runner test
// asserts for "one connection per job, never two on one BMC".
func TestMaxOpenStaysOneForSequentialSessions(t *testing.T) {
	srv := fake.New(fake.Options{})
	ctx := context.Background()
	for range 5 {
		d, err := srv.Dial(ctx, testEP, bmc.Credentials{})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetPower(ctx, bmc.PowerActionOn); err != nil {
			t.Fatal(err)
		}
		_ = d.Close(ctx)
	}
	if s := srv.Sessions(); s.MaxOpen != 1 || s.Logins != 5 {
		t.Errorf("Sessions() = %+v, want MaxOpen 1 and 5 logins", s)
	}
}

func TestExpireSessions(t *testing.T) {
	srv := fake.New(fake.Options{})
	d := dial(t, srv)
	srv.ExpireSessions()
	_, err := d.PowerState(context.Background())
	if !errors.Is(err, fake.ErrSessionExpired) || !bmc.IsTransient(err) {
		t.Fatalf("PowerState on an expired session: %v, want transient ErrSessionExpired", err)
	}
	d2 := dial(t, srv)
	mustPower(t, d2, bmc.PowerOff)
}

func TestPowerSemanticsInstant(t *testing.T) {
	srv := fake.New(fake.Options{})
	d := dial(t, srv)
	mustSet(t, d, bmc.PowerActionOff) // off on off
	mustPower(t, d, bmc.PowerOff)
	if srv.State().Boots != 0 {
		t.Fatal("off counted a boot")
	}
	mustSet(t, d, bmc.PowerActionCycle) // cycle on off: on
	mustPower(t, d, bmc.PowerOn)
	mustSet(t, d, bmc.PowerActionOn) // on on on
	if b := srv.State().Boots; b != 1 {
		t.Fatalf("Boots = %d after cycle-from-off and a repeated on, want 1", b)
	}
	mustSet(t, d, bmc.PowerActionReset) // warm reset: a reboot
	mustSet(t, d, bmc.PowerActionCycle) // cycle: a reboot
	mustPower(t, d, bmc.PowerOn)
	if b := srv.State().Boots; b != 3 {
		t.Fatalf("Boots = %d after reset and cycle, want 3", b)
	}
	mustSet(t, d, bmc.PowerActionSoftOff)
	mustPower(t, d, bmc.PowerOff)
	mustSet(t, d, bmc.PowerActionReset) // reset on off: on
	mustPower(t, d, bmc.PowerOn)

	err := d.SetPower(context.Background(), "bogus")
	var oe *bmc.OpError
	if !errors.As(err, &oe) || oe.Op != "set power" || !strings.Contains(err.Error(), `"bogus"`) || bmc.IsTransient(err) {
		t.Errorf("SetPower(bogus): %v, want a permanent *bmc.OpError naming the action", err)
	}
}

// Transitions land on the injected clock: PoweringOn/PoweringOff are
// reported until the delay has passed.
func TestDelayedTransitionsOnFakeClock(t *testing.T) {
	clk := clock.NewFake(epoch)
	srv := fake.New(fake.Options{PowerTransition: 10 * time.Second, SoftOffDelay: time.Minute, Clock: clk})
	d := dial(t, srv)

	mustSet(t, d, bmc.PowerActionOn)
	mustPower(t, d, bmc.PowerPoweringOn)
	if st := srv.State(); st.PendingPower != bmc.PowerOn || st.Boots != 0 {
		t.Fatalf("pending on: %+v", st)
	}
	mustSet(t, d, bmc.PowerActionOn) // repeat while powering on: no-op
	clk.Advance(9 * time.Second)
	mustPower(t, d, bmc.PowerPoweringOn)
	clk.Advance(time.Second)
	mustPower(t, d, bmc.PowerOn)
	if st := srv.State(); st.PendingPower != "" || st.Boots != 1 {
		t.Fatalf("landed on: %+v", st)
	}

	// A cycle spends the delay twice: off, then on.
	mustSet(t, d, bmc.PowerActionCycle)
	mustPower(t, d, bmc.PowerPoweringOff)
	clk.Advance(10 * time.Second)
	mustPower(t, d, bmc.PowerPoweringOn)
	clk.Advance(10 * time.Second)
	mustPower(t, d, bmc.PowerOn)
	if b := srv.State().Boots; b != 2 {
		t.Fatalf("Boots = %d after a cycle, want 2", b)
	}

	// Soft-off lands after its own delay.
	mustSet(t, d, bmc.PowerActionSoftOff)
	clk.Advance(30 * time.Second)
	mustPower(t, d, bmc.PowerPoweringOff)
	// A hard off during a soft-off replaces it and lands after the
	// (shorter) power transition.
	mustSet(t, d, bmc.PowerActionOff)
	clk.Advance(10 * time.Second)
	mustPower(t, d, bmc.PowerOff)

	// On during a pending off replaces it.
	srv.SetPower(bmc.PowerOn)
	mustSet(t, d, bmc.PowerActionOff)
	mustSet(t, d, bmc.PowerActionOn)
	mustPower(t, d, bmc.PowerPoweringOn)
	clk.Advance(10 * time.Second)
	mustPower(t, d, bmc.PowerOn)
}

func TestSoftOffIgnored(t *testing.T) {
	srv := fake.New(fake.Options{Power: bmc.PowerOn, SoftOffIgnored: true})
	d := dial(t, srv)
	mustSet(t, d, bmc.PowerActionSoftOff)
	mustPower(t, d, bmc.PowerOn)
	mustSet(t, d, bmc.PowerActionOff)
	mustPower(t, d, bmc.PowerOff)
}

func TestDropDuringTransition(t *testing.T) {
	clk := clock.NewFake(epoch)
	srv := fake.New(fake.Options{PowerTransition: 5 * time.Second, DropDuringTransition: true, Clock: clk})
	d := dial(t, srv)
	mustSet(t, d, bmc.PowerActionOn)
	mustSet(t, d, bmc.PowerActionOff) // dropped: a change is pending
	clk.Advance(5 * time.Second)
	mustPower(t, d, bmc.PowerOn)
	mustSet(t, d, bmc.PowerActionOff) // nothing pending: accepted
	clk.Advance(5 * time.Second)
	mustPower(t, d, bmc.PowerOff)
}

func TestOneTimeBootOverrideIsConsumed(t *testing.T) {
	srv := fake.New(fake.Options{})
	d := dial(t, srv)
	ctx := context.Background()
	if err := d.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeUEFI}); err != nil {
		t.Fatal(err)
	}
	mustSet(t, d, bmc.PowerActionOn)
	st := srv.State()
	if st.LastBootDevice != bmc.BootDevicePXE || st.BootOverride.Device != bmc.BootDeviceNone || st.BootOverride.Mode != bmc.BootModeUEFI {
		t.Fatalf("after a one-time PXE boot: %+v, want booted from pxe, override consumed, mode kept", st)
	}
	mustSet(t, d, bmc.PowerActionReset)
	if st := srv.State(); st.LastBootDevice != bmc.BootDeviceDisk {
		t.Fatalf("second boot used %s, want disk", st.LastBootDevice)
	}
	if err := d.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDeviceCDROM, Persistent: true}); err != nil {
		t.Fatal(err)
	}
	mustSet(t, d, bmc.PowerActionReset)
	mustSet(t, d, bmc.PowerActionCycle)
	got, err := d.BootOverride(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := srv.State(); st.LastBootDevice != bmc.BootDeviceCDROM || got.Device != bmc.BootDeviceCDROM || !got.Persistent || got.Mode != bmc.BootModeUEFI {
		t.Fatalf("persistent override: state %+v, read back %+v", st, got)
	}
}

func TestMediaAndResetBMC(t *testing.T) {
	srv := fake.New(fake.Options{})
	d := dial(t, srv)
	ctx := context.Background()
	if err := d.InsertMedia(ctx, bmc.MediaUSB, "http://127.0.0.1/a.img"); err != nil {
		t.Fatal(err)
	}
	if st := srv.State().Media; !st[bmc.MediaUSB].Inserted || st[bmc.MediaCD].Inserted {
		t.Fatalf("media after USB insert: %+v", st)
	}
	for _, err := range []error{d.InsertMedia(ctx, bmc.MediaCD, ""), d.InsertMedia(ctx, "floppy", "x"), d.ResetBMC(ctx, "lukewarm")} {
		if err == nil || bmc.IsTransient(err) {
			t.Errorf("invalid input: %v, want a permanent error", err)
		}
	}
	if err := d.ResetBMC(ctx, bmc.BMCResetCold); err != nil {
		t.Fatal(err)
	}
	if n := srv.State().BMCResets; n != 1 {
		t.Errorf("BMCResets = %d, want 1", n)
	}
	srv.SetMedia(bmc.MediaCD, bmc.MediaStatus{Inserted: true, Image: "x"})
	if s, _ := d.MediaStatus(ctx, bmc.MediaCD); s.Image != "x" {
		t.Errorf("MediaStatus after SetMedia: %+v", s)
	}
}

func TestFailNextAndHooks(t *testing.T) {
	srv := fake.New(fake.Options{})
	d := dial(t, srv)
	ctx := context.Background()
	boom := errors.New("boom")
	srv.FailNext(fake.MethodSetPower, 2, bmc.Transient(boom))
	for i := range 2 {
		err := d.SetPower(ctx, bmc.PowerActionOn)
		if !errors.Is(err, boom) || !bmc.IsTransient(err) {
			t.Fatalf("call %d: %v, want transient boom", i+1, err)
		}
	}
	mustPower(t, d, bmc.PowerOff) // failed calls changed nothing
	mustSet(t, d, bmc.PowerActionOn)
	mustPower(t, d, bmc.PowerOn)

	// MethodAny hooks see every call; method hooks only theirs.
	var mu sync.Mutex
	var seen []fake.Method
	srv.SetHook(fake.MethodAny, func(_ context.Context, c fake.Call) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c.Method)
		return nil
	})
	srv.SetHook(fake.MethodEjectMedia, func(context.Context, fake.Call) error { return bmc.Permanent(boom) })
	_, _ = d.PowerState(ctx)
	if err := d.EjectMedia(ctx, bmc.MediaCD); !errors.Is(err, boom) || bmc.IsTransient(err) {
		t.Fatalf("EjectMedia with a failing hook: %v", err)
	}
	mu.Lock()
	if fmt.Sprint(seen) != "[PowerState]" {
		t.Errorf("MethodAny hook saw %v, want [PowerState] (the failing method hook runs first)", seen)
	}
	mu.Unlock()
	srv.SetHook(fake.MethodEjectMedia, nil)
	if err := d.EjectMedia(ctx, bmc.MediaCD); err != nil {
		t.Fatalf("EjectMedia after removing the hook: %v", err)
	}

	// A hook may change the state under the call (a BMC that flips back).
	srv.SetHook(fake.MethodPowerState, func(context.Context, fake.Call) error {
		srv.SetPower(bmc.PowerOff)
		return nil
	})
	mustPower(t, d, bmc.PowerOff)
	srv.SetHook(fake.MethodPowerState, nil)

	// FailNext for MethodAny fails whatever comes next, Dial included.
	srv.FailNext(fake.MethodAny, 1, bmc.Transient(errors.New("connection reset")))
	if _, err := srv.Dial(ctx, testEP, bmc.Credentials{}); err == nil || !bmc.IsTransient(err) {
		t.Fatalf("Dial after FailNext(MethodAny): %v", err)
	}
	if s := srv.Sessions(); s.FailedLogins != 1 {
		t.Errorf("FailedLogins = %d, want 1", s.FailedLogins)
	}
}

func TestCallLog(t *testing.T) {
	clk := clock.NewFake(epoch)
	srv := fake.New(fake.Options{Clock: clk})
	d := dial(t, srv)
	ctx := context.Background()
	mustSet(t, d, bmc.PowerActionOn)
	clk.Advance(time.Minute)
	_ = d.InsertMedia(ctx, bmc.MediaCD, "http://127.0.0.1/x.iso")
	_ = d.SetBootOverride(ctx, bmc.BootOverride{Device: "tape"})

	calls := srv.Calls()
	if len(calls) != 4 {
		t.Fatalf("calls %v, want Dial, SetPower, InsertMedia, SetBootOverride", calls)
	}
	want := []string{
		"#1 Dial()",
		"#1 SetPower(on)",
		"#1 InsertMedia(cd, http://127.0.0.1/x.iso)",
		`#1 SetBootOverride({tape false  }): bmc set boot override on redfish://10.0.0.9/redfish/v1/Systems/1: invalid boot device "tape"`,
	}
	for i, c := range calls {
		if c.String() != want[i] {
			t.Errorf("call %d = %q, want %q", i, c.String(), want[i])
		}
	}
	if !calls[1].Time.Equal(epoch) || !calls[2].Time.Equal(epoch.Add(time.Minute)) {
		t.Errorf("call times %v, %v: want the clock's time", calls[1].Time, calls[2].Time)
	}
	if calls[1].Args[0] != bmc.PowerActionOn {
		t.Errorf("SetPower args %v", calls[1].Args)
	}
	srv.ResetCalls()
	if n := len(srv.Calls()); n != 0 {
		t.Errorf("%d calls after ResetCalls", n)
	}
}

func TestUnsupported(t *testing.T) {
	srv := fake.New(fake.Options{Power: bmc.PowerOn, Unsupported: bmc.Capabilities()})
	d := dial(t, srv)
	ctx := context.Background()
	_, errGet := d.BootOverride(ctx)
	_, errStatus := d.MediaStatus(ctx, bmc.MediaUSB)
	for i, err := range []error{
		d.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}),
		errGet, errStatus,
		d.InsertMedia(ctx, bmc.MediaCD, "http://127.0.0.1/x"),
		d.ResetBMC(ctx, bmc.BMCResetWarm),
		d.SetPower(ctx, bmc.PowerActionCycle),
		d.SetPower(ctx, bmc.PowerActionReset),
		d.SetPower(ctx, bmc.PowerActionSoftOff),
	} {
		if !errors.Is(err, bmc.ErrNotSupported) {
			t.Errorf("#%d: %v, want ErrNotSupported", i, err)
		}
	}
	// Off works, and on a server that is off cycle means "on".
	mustSet(t, d, bmc.PowerActionOff)
	mustSet(t, d, bmc.PowerActionCycle)
	mustPower(t, d, bmc.PowerOn)
}

// A cancelled ctx ends a call while it waits out its latency.
func TestCancelDuringLatency(t *testing.T) {
	clk := clock.NewFake(epoch)
	srv := fake.New(fake.Options{Latency: time.Hour, Clock: clk})
	// Dial also waits out the latency: let it through.
	dialed := make(chan bmc.Driver, 1)
	go func() {
		d, err := srv.Dial(context.Background(), testEP, bmc.Credentials{})
		if err != nil {
			t.Error(err)
		}
		dialed <- d
	}()
	<-clk.WaiterAdded()
	clk.Advance(time.Hour)
	d := <-dialed
	if d == nil {
		t.FailNow()
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- d.SetPower(ctx, bmc.PowerActionOn) }()
	<-clk.WaiterAdded() // the call is waiting out its latency
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("SetPower cancelled during latency: %v, want context.Canceled", err)
	}
	if st := srv.State(); st.Power != bmc.PowerOff {
		t.Errorf("cancelled SetPower changed the power: %+v", st)
	}
	calls := srv.CallsTo(fake.MethodSetPower)
	if len(calls) != 1 || !errors.Is(calls[0].Err, context.Canceled) {
		t.Errorf("call log %v, want the cancelled SetPower with its error", calls)
	}
}

func TestConcurrentUse(t *testing.T) {
	srv := fake.New(fake.Options{PowerTransition: time.Millisecond})
	ctx := context.Background()
	var wg sync.WaitGroup
	actions := []bmc.PowerAction{bmc.PowerActionOn, bmc.PowerActionOff, bmc.PowerActionCycle, bmc.PowerActionReset, bmc.PowerActionSoftOff}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := srv.Dial(ctx, testEP, bmc.Credentials{})
			if err != nil {
				t.Error(err)
				return
			}
			defer d.Close(ctx)
			vm := d.(bmc.VirtualMedia)
			for i := range 50 {
				if err := d.SetPower(ctx, actions[(g+i)%len(actions)]); err != nil {
					t.Error(err)
				}
				if _, err := d.PowerState(ctx); err != nil {
					t.Error(err)
				}
				if err := vm.InsertMedia(ctx, bmc.MediaCD, "http://127.0.0.1/x"); err != nil {
					t.Error(err)
				}
				_ = srv.State()
				_ = srv.Calls()
			}
		}()
	}
	wg.Wait()
	s := srv.Sessions()
	if s.Logins != 8 || s.Open != 0 || s.MaxOpen < 1 || s.MaxOpen > 8 {
		t.Errorf("Sessions() = %+v", s)
	}
	if n := len(srv.CallsTo(fake.MethodSetPower)); n != 400 {
		t.Errorf("%d SetPower calls logged, want 400", n)
	}
}

func TestStats(t *testing.T) {
	srv := fake.New(fake.Options{})
	d := dial(t, srv)
	_, _ = d.PowerState(context.Background())
	_, _ = d.PowerState(context.Background())
	// Dial plus two reads.
	if s := d.Stats(); s.Requests != 3 || s.Logins != 1 || s.Connections != 1 {
		t.Errorf("Stats() = %+v, want 3 requests, 1 login, 1 connection", s)
	}
}

func TestFleet(t *testing.T) {
	f := fake.NewFleet()
	ctx := context.Background()
	a, err := f.AddNew("redfish://10.0.0.1/redfish/v1/Systems/1", fake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.AddNew("ipmi://10.0.0.2", fake.Options{Power: bmc.PowerOn})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add("redfish+https://10.0.0.1:443/redfish/v1/Systems/1", fake.New(fake.Options{})); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("duplicate Add: %v", err)
	}
	if err := f.Add("ftp://10.0.0.3", fake.New(fake.Options{})); err == nil || !strings.Contains(err.Error(), "ftp") {
		t.Errorf("Add with a bad URL: %v", err)
	}
	if f.Get("ipmi://10.0.0.2:623") != b || f.Get("redfish://10.0.0.1/redfish/v1/Systems/1") != a || f.Get("ipmi://10.9.9.9") != nil {
		t.Error("Get does not find the registered BMCs by equivalent URLs")
	}
	if n := len(f.BMCs()); n != 2 {
		t.Errorf("BMCs() has %d entries", n)
	}

	ep, _ := bmc.ParseEndpoint("ipmi://10.0.0.2")
	d, err := f.Dial(ctx, ep, bmc.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	mustPower(t, d, bmc.PowerOn)
	_ = d.Close(ctx)
	if a.Sessions().Logins != 0 || b.Sessions().Logins != 1 {
		t.Error("Dial reached the wrong BMC")
	}

	unknown, _ := bmc.ParseEndpoint("redfish://10.0.0.7/redfish/v1/Systems/1")
	_, err = f.Dial(ctx, unknown, bmc.Credentials{})
	var oe *bmc.OpError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "no BMC registered at 10.0.0.7:443/redfish/v1/Systems/1") || !strings.Contains(err.Error(), "10.0.0.2:623") {
		t.Errorf("Dial of an unknown address: %v, want an OpError naming it and the registered ones", err)
	}
	if bmc.IsTransient(err) {
		t.Errorf("unknown address classified transient: %v", err)
	}
}

func TestMaxSessions(t *testing.T) {
	srv := fake.New(fake.Options{MaxSessions: 1})
	ctx := context.Background()
	a, err := srv.Dial(ctx, testEP, bmc.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = srv.Dial(ctx, testEP, bmc.Credentials{})
	if err == nil || !bmc.IsTransient(err) || !strings.Contains(err.Error(), "session limit") {
		t.Fatalf("second Dial with MaxSessions 1: %v, want a transient session-limit error", err)
	}
	_ = a.Close(ctx)
	b, err := srv.Dial(ctx, testEP, bmc.Credentials{})
	if err != nil {
		t.Fatalf("Dial after closing the first session: %v", err)
	}
	_ = b.Close(ctx)
	if s := srv.Sessions(); s.MaxOpen != 1 || s.Logins != 2 || s.FailedLogins != 1 {
		t.Errorf("Sessions() = %+v", s)
	}
}

func TestCallLogSize(t *testing.T) {
	srv := fake.New(fake.Options{CallLogSize: 3})
	d := dial(t, srv)
	for _, a := range []bmc.PowerAction{bmc.PowerActionOn, bmc.PowerActionOff, bmc.PowerActionCycle, bmc.PowerActionReset, bmc.PowerActionOn, bmc.PowerActionOff, bmc.PowerActionOn} {
		mustSet(t, d, a)
	}
	var got []string
	for _, c := range srv.Calls() {
		got = append(got, fmt.Sprint(c.Args[0]))
	}
	if fmt.Sprint(got) != "[on off on]" {
		t.Errorf("log with CallLogSize 3 holds %v, want the last three SetPower calls [on off on]", got)
	}

	off := fake.New(fake.Options{CallLogSize: -1})
	mustSet(t, dial(t, off), bmc.PowerActionOn)
	if n := len(off.Calls()); n != 0 {
		t.Errorf("disabled log holds %d calls", n)
	}
}

func TestIgnoreOnceOverride(t *testing.T) {
	srv := fake.New(fake.Options{IgnoreOnceOverride: true})
	d := dial(t, srv)
	ctx := context.Background()
	if err := d.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
		t.Fatalf("SetBootOverride(once): %v", err)
	}
	if got, _ := d.BootOverride(ctx); got.Device != bmc.BootDeviceNone {
		t.Fatalf("ignored one-time override reads back %+v, want none", got)
	}
	mustSet(t, d, bmc.PowerActionOn)
	if st := srv.State(); st.LastBootDevice != bmc.BootDeviceDisk {
		t.Fatalf("booted from %s, want disk", st.LastBootDevice)
	}
	if err := d.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE, Persistent: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.BootOverride(ctx); got.Device != bmc.BootDevicePXE || !got.Persistent {
		t.Fatalf("persistent override reads back %+v", got)
	}
}

func TestBMCResetDowntime(t *testing.T) {
	clk := clock.NewFake(epoch)
	srv := fake.New(fake.Options{BMCResetDowntime: time.Minute, Clock: clk})
	d := dial(t, srv)
	ctx := context.Background()
	if err := d.ResetBMC(ctx, bmc.BMCResetWarm); err != nil {
		t.Fatal(err)
	}
	_, err := d.PowerState(ctx)
	if !errors.Is(err, fake.ErrUnreachable) || !bmc.IsTransient(err) {
		t.Fatalf("PowerState while the BMC restarts: %v, want transient ErrUnreachable", err)
	}
	if _, err := srv.Dial(ctx, testEP, bmc.Credentials{}); !errors.Is(err, fake.ErrUnreachable) {
		t.Fatalf("Dial while the BMC restarts: %v", err)
	}
	clk.Advance(time.Minute)
	mustPower(t, d, bmc.PowerOff) // the session survived
}

func TestFleetSystemPaths(t *testing.T) {
	f := fake.NewFleet()
	only, _ := f.AddNew("redfish://10.0.0.1", fake.Options{})
	one, _ := f.AddNew("redfish://10.0.0.2/redfish/v1/Systems/1", fake.Options{})
	s1, _ := f.AddNew("redfish://10.0.0.3/redfish/v1/Systems/1", fake.Options{})
	s2, _ := f.AddNew("redfish://10.0.0.3/redfish/v1/Systems/2", fake.Options{})
	for url, want := range map[string]*fake.BMC{
		"redfish://10.0.0.1/redfish/v1/Systems/7": only, // registered without a path
		"redfish://10.0.0.2":                      one,  // the only system there
		"redfish://10.0.0.3/redfish/v1/Systems/2": s2,
		"redfish://10.0.0.3/redfish/v1/Systems/1": s1,
		"redfish://10.0.0.3":                      nil, // two systems: ambiguous
	} {
		if got := f.Get(url); got != want {
			t.Errorf("Get(%s) found the wrong BMC (nil: %v)", url, got == nil)
		}
	}
	ep, _ := bmc.ParseEndpoint("redfish://10.0.0.3")
	if _, err := f.Dial(context.Background(), ep, bmc.Credentials{}); err == nil {
		t.Error("Dial of an address naming no system among two succeeded")
	}
}
