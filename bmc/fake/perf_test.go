package fake_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
)

// Tests of the paths that make a call cheap: the latency wait on the wall
// clock (pooled timer, or a plain sleep under a ctx that never ends), the
// ring that holds the call log, the boxed SetPower argument.

// endingCtx is a ctx whose Done channel is closed from the start while its
// first Err reports nil: a call passes its first ctx check and finds the ctx
// ended while it waits out its latency, deterministically.
type endingCtx struct {
	context.Context
	mu    sync.Mutex
	calls int
}

func newEndingCtx() *endingCtx {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return &endingCtx{Context: ctx}
}

func (c *endingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls++; c.calls == 1 {
		return nil
	}
	return c.Context.Err()
}

// A ctx that ends while a call waits out its latency on the wall clock ends
// the call (with an hour of latency, a wait that ignored it would hang the
// test).
func TestCancelDuringWallClockLatency(t *testing.T) {
	srv := fake.New(fake.Options{Latency: time.Hour})
	_, err := srv.Dial(newEndingCtx(), testEP, bmc.Credentials{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial whose ctx ends during the latency = %v, want context.Canceled", err)
	}
	if s := srv.Sessions(); s.Logins != 0 || s.FailedLogins != 1 || s.Open != 0 {
		t.Errorf("Sessions() = %+v after a cancelled Dial", s)
	}
	calls := srv.Calls()
	if len(calls) != 1 || calls[0].Method != fake.MethodDial || !errors.Is(calls[0].Err, context.Canceled) {
		t.Errorf("call log %v, want the cancelled Dial with its error", calls)
	}

	// Cancelled from another goroutine, before or during the wait.
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if _, err := srv.Dial(ctx, testEP, bmc.Credentials{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial with a cancelled ctx = %v, want context.Canceled", err)
	}
}

// After calls cancelled during their wait (their timer stopped and reused),
// a call still waits out its whole latency, under a ctx that can end and
// under one that cannot.
func TestWallClockLatencyAfterCancelledCalls(t *testing.T) {
	const lat = 20 * time.Millisecond
	srv := fake.New(fake.Options{Latency: lat})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	d, err := srv.Dial(ctx, testEP, bmc.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < lat {
		t.Fatalf("Dial took %v, want at least the latency %v", el, lat)
	}
	for range 3 {
		if err := d.SetPower(newEndingCtx(), bmc.PowerActionOn); !errors.Is(err, context.Canceled) {
			t.Fatalf("SetPower whose ctx ends during the latency = %v, want context.Canceled", err)
		}
	}
	for _, c := range []context.Context{ctx, context.Background()} {
		start := time.Now()
		if err := d.SetPower(c, bmc.PowerActionOn); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < lat {
			t.Fatalf("SetPower took %v, want at least the latency %v", el, lat)
		}
	}
	if st := srv.State(); st.Power != bmc.PowerOn || st.Boots != 1 {
		t.Errorf("state %+v, want On after one boot (the cancelled calls change nothing)", st)
	}
	if n := len(srv.CallsTo(fake.MethodSetPower)); n != 5 {
		t.Errorf("%d SetPower calls logged, want 5", n)
	}
}

// The bounded log holds the last CallLogSize calls of the unbounded one,
// oldest first, after every call: while it grows, once it is full and as it
// wraps around, and again after ResetCalls.
func TestCallLogRing(t *testing.T) {
	const size = 5
	small := fake.New(fake.Options{CallLogSize: size})
	big := fake.New(fake.Options{CallLogSize: 1000})
	ds, db := dial(t, small), dial(t, big)
	ctx := context.Background()
	actions := []bmc.PowerAction{bmc.PowerActionOn, bmc.PowerActionOff, bmc.PowerActionCycle, bmc.PowerActionReset, bmc.PowerActionSoftOff}
	check := func(step int) {
		t.Helper()
		render := func(calls []fake.Call) string {
			var s []string
			for _, c := range calls {
				s = append(s, c.String())
			}
			return fmt.Sprint(s)
		}
		all := big.Calls()
		want := all[max(0, len(all)-size):]
		if got := small.Calls(); render(got) != render(want) {
			t.Fatalf("step %d: log %s, want the last %d calls %s", step, render(got), size, render(want))
		}
		var wantSet []fake.Call
		for _, c := range want {
			if c.Method == fake.MethodSetPower {
				wantSet = append(wantSet, c)
			}
		}
		if got := small.CallsTo(fake.MethodSetPower); render(got) != render(wantSet) {
			t.Fatalf("step %d: CallsTo(SetPower) %s, want %s", step, render(got), render(wantSet))
		}
		if got := small.CallsTo(fake.MethodAny); render(got) != render(want) {
			t.Fatalf("step %d: CallsTo(MethodAny) %s, want %s", step, render(got), render(want))
		}
	}
	step := 0
	for round := range 2 {
		check(step)
		for i := range 3*size + 2 {
			step++
			for _, d := range []*fake.Driver{ds, db} {
				if i%3 == 0 {
					if _, err := d.PowerState(ctx); err != nil {
						t.Fatal(err)
					}
				} else if err := d.SetPower(ctx, actions[(i+round)%len(actions)]); err != nil {
					t.Fatal(err)
				}
			}
			check(step)
		}
		small.ResetCalls()
		big.ResetCalls()
		if got := small.Calls(); got != nil {
			t.Fatalf("Calls() after ResetCalls = %v, want nil", got)
		}
	}
}

// SetPower logs its action as a bmc.PowerAction, a defined one or not.
func TestSetPowerArgs(t *testing.T) {
	srv := fake.New(fake.Options{})
	d := dial(t, srv)
	ctx := context.Background()
	all := []bmc.PowerAction{bmc.PowerActionOn, bmc.PowerActionOff, bmc.PowerActionSoftOff, bmc.PowerActionCycle, bmc.PowerActionReset, "sideways"}
	for _, a := range all {
		_ = d.SetPower(ctx, a)
	}
	calls := srv.CallsTo(fake.MethodSetPower)
	if len(calls) != len(all) {
		t.Fatalf("%d SetPower calls logged, want %d", len(calls), len(all))
	}
	for i, c := range calls {
		if len(c.Args) != 1 || c.Args[0] != any(all[i]) {
			t.Errorf("SetPower(%s) logged with args %#v", all[i], c.Args)
		}
	}
	if calls[len(all)-1].Err == nil {
		t.Error("SetPower(sideways) logged without its error")
	}
}
