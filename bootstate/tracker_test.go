package bootstate_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/storage/memstore"
)

func TestNewTrackerConfigErrors(t *testing.T) {
	s := memstore.New()
	cases := []struct {
		name string
		cfg  bootstate.Config
		want string
	}{
		{"no store", bootstate.Config{Secret: testSecret}, "Store is required"},
		{"no secret", bootstate.Config{Store: s}, "Secret must be at least 16 bytes"},
		{"short secret", bootstate.Config{Store: s, Secret: []byte("short")}, "Secret must be at least 16 bytes (got 5)"},
		{"both auth modes", bootstate.Config{Store: s, Secret: testSecret, InsecureSkipAuth: true}, "both set"},
		{"bad policy", bootstate.Config{Store: s, InsecureSkipAuth: true, DefaultPolicy: bootstate.Policy{Mode: "Most"}}, `policy mode "Most"`},
		{"reserved signal", bootstate.Config{Store: s, InsecureSkipAuth: true, CallbackSignals: []string{"Completed"}}, "reserved"},
		{"bad prefix", bootstate.Config{Store: s, InsecureSkipAuth: true, KeyPrefix: "a\x00"}, "KeyPrefix"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := bootstate.NewTracker(c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewTracker error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestStartBootIsIdempotentAndRecordsDefaults(t *testing.T) {
	e := newEnv(t, func(c *bootstate.Config) { c.DefaultTimeout = 10 * time.Minute })
	ctx := context.Background()
	// Upper case on purpose: the record is keyed by the lower-case UUID.
	if err := e.tr.StartBoot(ctx, strings.ToUpper(uuidA), "a1", 0); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e.store)
	e.clock.Advance(time.Minute)
	if err := e.tr.StartBoot(ctx, uuidA, "a1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, e.store); after["bootstate/"+uuidA] != before["bootstate/"+uuidA] {
		t.Fatalf("repeated StartBoot wrote the record again: %v -> %v", before, after)
	}
	rec, err := e.tr.Get(ctx, uuidA)
	if err != nil {
		t.Fatal(err)
	}
	if rec.SystemUUID != uuidA || rec.AttemptID != "a1" {
		t.Fatalf("record = %+v", rec)
	}
	if !rec.Deadline.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("deadline = %v, want default timeout from %v", rec.Deadline, t0)
	}
	if got := rec.Policy.String(); got != "AllOf(BootStateReceived)" {
		t.Fatalf("policy = %s", got)
	}
	if rec.Completed() || !conditions.IsTrue(rec.Conditions, conditions.TypeRunning) || rec.Result != "" {
		t.Fatalf("new attempt should be Running, not Completed, no result: %+v", rec.Conditions)
	}
	done, _, msg, err := e.tr.BootResult(ctx, uuidA, "a1")
	if err != nil || done {
		t.Fatalf("BootResult = done %v err %v", done, err)
	}
	if !strings.Contains(msg, "waiting for AllOf(BootStateReceived)") {
		t.Fatalf("message = %q", msg)
	}
}

func TestStartValidation(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	cases := []struct {
		opts bootstate.StartOptions
		want string
	}{
		{bootstate.StartOptions{SystemUUID: "nope", AttemptID: "a"}, `systemUUID "nope"`},
		{bootstate.StartOptions{SystemUUID: uuidA}, "attempt ID is empty"},
		{bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a b"}, "printable ASCII without spaces"},
		{bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Policy: bootstate.AllOfSignals()}, "no signals"},
		{bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Policy: bootstate.AnyOfSignals("bad-name")}, `signal "bad-name"`},
	}
	for _, c := range cases {
		_, err := e.tr.Start(ctx, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start(%+v) error = %v, want %q", c.opts, err, c.want)
		}
	}
	if s := snapshot(t, e.store); len(s) != 0 {
		t.Fatalf("invalid starts wrote %v", s)
	}
}

func TestNewAttemptRetiresOld(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a1"})
	if _, err := e.tr.RecordSignal(ctx, uuidA, "a1", bootstate.SignalIPXEScriptFetched, ""); err != nil {
		t.Fatal(err)
	}
	rec := mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a2"})
	if rec.AttemptID != "a2" || rec.HasSignal(bootstate.SignalIPXEScriptFetched) {
		t.Fatalf("new attempt kept old signals: %+v", rec)
	}
	done, res, msg, err := e.tr.BootResult(ctx, uuidA, "a1")
	if err != nil || !done || res != conditions.ResultCanceled || !strings.Contains(msg, `superseded by attempt "a2"`) {
		t.Fatalf("BootResult(a1) = %v %q %q %v", done, res, msg, err)
	}
	// A late callback from a1 is refused and writes nothing.
	before := snapshot(t, e.store)
	_, err = e.tr.RecordSignal(ctx, uuidA, "a1", bootstate.SignalBootStateReceived, "")
	if !errors.Is(err, bootstate.ErrStaleAttempt) {
		t.Fatalf("late signal error = %v, want ErrStaleAttempt", err)
	}
	if after := snapshot(t, e.store); after["bootstate/"+uuidA] != before["bootstate/"+uuidA] {
		t.Fatal("stale signal wrote the record")
	}
	// Restarting the retired attempt is refused by Start; StartBoot (a job
	// resuming) accepts the repeat without reopening it.
	if _, err := e.tr.Start(ctx, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a1"}); !errors.Is(err, bootstate.ErrStaleAttempt) {
		t.Fatalf("restart of retired attempt: %v", err)
	}
	before = snapshot(t, e.store)
	if err := e.tr.StartBoot(ctx, uuidA, "a1", 0); err != nil {
		t.Fatalf("StartBoot of retired attempt: %v", err)
	}
	if after := snapshot(t, e.store); after["bootstate/"+uuidA] != before["bootstate/"+uuidA] {
		t.Fatal("StartBoot of a retired attempt wrote the record")
	}
	if rec, _ := e.tr.Get(ctx, uuidA); rec.AttemptID != "a2" {
		t.Fatalf("StartBoot of a retired attempt made it current: %+v", rec)
	}
	// An attempt the record never heard of is done: Canceled, with a reason.
	done, res, msg, err = e.tr.BootResult(ctx, uuidA, "zz")
	if err != nil || !done || res != conditions.ResultCanceled || !strings.Contains(msg, `neither current ("a2")`) {
		t.Fatalf("BootResult(unknown attempt) = %v %q %q %v", done, res, msg, err)
	}
	if _, _, _, err := e.tr.BootResult(ctx, uuidB, "a1"); !errors.Is(err, bootstate.ErrUnknownSystem) {
		t.Fatalf("BootResult(unknown system) = %v", err)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	e := newEnv(t, func(c *bootstate.Config) { c.HistoryLimit = 2 })
	for _, a := range []string{"a1", "a2", "a3", "a4"} {
		mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: a})
	}
	rec, err := e.tr.Get(context.Background(), uuidA)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Previous) != 2 || rec.Previous[0].AttemptID != "a3" || rec.Previous[1].AttemptID != "a2" {
		t.Fatalf("previous = %+v, want a3, a2", rec.Previous)
	}
}

func TestPolicies(t *testing.T) {
	ipxe, ign, boot := bootstate.SignalIPXEScriptFetched, bootstate.SignalIgnitionDataFetched, bootstate.SignalBootStateReceived
	cases := []struct {
		name       string
		policy     bootstate.Policy
		signals    []string
		completeAt int // index in signals after which the attempt completes; -1 never
	}{
		{"all of three", bootstate.AllOfSignals(ipxe, ign, boot), []string{ipxe, ign, boot}, 2},
		{"all of, out of order", bootstate.AllOfSignals(ipxe, boot), []string{boot, "HostDefined", ipxe}, 2},
		{"any of", bootstate.AnyOfSignals(ipxe, boot), []string{ign, ipxe, boot}, 1},
		{"unrelated signals never complete", bootstate.AllOfSignals(boot), []string{ipxe, ign}, -1},
		{"host-defined signal", bootstate.AllOfSignals("DiskWiped"), []string{boot, "DiskWiped"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Policy: c.policy})
			for i, s := range c.signals {
				rec, err := e.tr.RecordSignal(context.Background(), uuidA, "", s, "")
				if err != nil {
					t.Fatal(err)
				}
				want := c.completeAt >= 0 && i >= c.completeAt
				if rec.Completed() != want {
					t.Fatalf("after %s: completed = %v, want %v (%s)", s, rec.Completed(), want, rec.Message())
				}
				if want {
					if rec.Result != conditions.ResultSucceeded || conditions.IsTrue(rec.Conditions, conditions.TypeRunning) {
						t.Fatalf("completed record: result %q, conditions %+v", rec.Result, rec.Conditions)
					}
				}
			}
		})
	}
}

func TestRepeatedSignalWritesNothing(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Policy: bootstate.AllOfSignals("A", "B")})
	first, err := e.tr.RecordSignal(ctx, uuidA, "a", "A", "")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	again, err := e.tr.RecordSignal(ctx, uuidA, "a", "A", "")
	if err != nil {
		t.Fatal(err)
	}
	if again.Revision != first.Revision {
		t.Fatalf("repeat wrote: revision %d -> %d", first.Revision, again.Revision)
	}
	c := conditions.Get(again.Conditions, "A")
	if c == nil || !c.LastTransitionTime.Equal(t0) || c.Reason != bootstate.ReasonSignalReceived {
		t.Fatalf("signal condition = %+v", c)
	}
}

func TestTimeoutFiresThroughRunAndCallsOnTimeout(t *testing.T) {
	timeouts := make(chan bootstate.Record, 4)
	e := newEnv(t, func(c *bootstate.Config) {
		c.OnTimeout = func(_ context.Context, r bootstate.Record) { timeouts <- r }
	})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error)
	go func() { runDone <- e.tr.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: 5 * time.Minute,
		Policy: bootstate.AllOfSignals(bootstate.SignalIPXEScriptFetched, bootstate.SignalBootStateReceived)})
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidB, AttemptID: "b", Timeout: 10 * time.Minute})
	if _, err := e.tr.RecordSignal(ctx, uuidA, "a", bootstate.SignalIPXEScriptFetched, ""); err != nil {
		t.Fatal(err)
	}
	// Run must be waiting on A's deadline before the clock moves; advance
	// in steps until the callback fires (Run re-arms its timer on each kick).
	var got bootstate.Record
	advanceUntil(t, e, time.Minute, func() bool {
		select {
		case got = <-timeouts:
			return true
		default:
			return false
		}
	})
	if got.SystemUUID != uuidA || got.Result != conditions.ResultTimedOut || !got.Completed() {
		t.Fatalf("OnTimeout got %+v", got)
	}
	if now := e.clock.Now(); now.Before(t0.Add(5 * time.Minute)) {
		t.Fatalf("timed out early, at %v", now)
	}
	if !strings.Contains(got.Message(), "timed out after 5m0s") || !strings.Contains(got.Message(), "received IPXEScriptFetched") {
		t.Fatalf("timeout message = %q", got.Message())
	}
	done, res, _, err := e.tr.BootResult(ctx, uuidA, "a")
	if err != nil || !done || res != conditions.ResultTimedOut {
		t.Fatalf("BootResult after timeout = %v %q %v", done, res, err)
	}
	c := conditions.Get(got.Conditions, conditions.TypeCompleted)
	if c.Reason != conditions.ReasonTimedOut || conditions.IsTrue(got.Conditions, conditions.TypeRunning) {
		t.Fatalf("conditions after timeout: %+v", got.Conditions)
	}
	// B is still running.
	if done, _, _, _ := e.tr.BootResult(ctx, uuidB, "b"); done {
		t.Fatal("B completed before its deadline")
	}
	select {
	case r := <-timeouts:
		t.Fatalf("second OnTimeout call: %+v", r)
	default:
	}
}

// advanceUntil advances the fake clock by step, each time after Run (or a
// waiter) registered a timer, until cond holds.
func advanceUntil(t *testing.T, e *env, step time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held while advancing the clock")
		}
		if e.clock.Waiters() > 0 {
			e.clock.Advance(step)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTimeoutAppliedLazilyWithoutRun(t *testing.T) {
	calls := 0
	e := newEnv(t, func(c *bootstate.Config) {
		c.OnTimeout = func(context.Context, bootstate.Record) { calls++ }
	})
	ctx := context.Background()
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: time.Minute})
	e.clock.Advance(59 * time.Second)
	if done, _, _, _ := e.tr.BootResult(ctx, uuidA, "a"); done {
		t.Fatal("done before the deadline")
	}
	e.clock.Advance(time.Second)
	done, res, msg, err := e.tr.BootResult(ctx, uuidA, "a")
	if err != nil || !done || res != conditions.ResultTimedOut || !strings.Contains(msg, "nothing received yet") {
		t.Fatalf("BootResult at deadline = %v %q %q %v", done, res, msg, err)
	}
	// A signal after the deadline is refused (ErrAttemptEnded), writes
	// nothing and does not turn the timeout into success.
	before := snapshot(t, e.store)
	_, err = e.tr.RecordSignal(ctx, uuidA, "a", bootstate.SignalBootStateReceived, "")
	if !errors.Is(err, bootstate.ErrAttemptEnded) {
		t.Fatalf("late signal: %v, want ErrAttemptEnded", err)
	}
	assertUnchanged(t, e.store, before)
	rec, _ := e.tr.Get(ctx, uuidA)
	if rec.Result != conditions.ResultTimedOut || rec.HasSignal(bootstate.SignalBootStateReceived) {
		t.Fatalf("late signal: result %q, conditions %+v", rec.Result, rec.Conditions)
	}
	if calls != 1 {
		t.Fatalf("OnTimeout called %d times, want 1", calls)
	}
}

func TestLateSignalPastDeadlineTimesOut(t *testing.T) {
	calls := 0
	e := newEnv(t, func(c *bootstate.Config) {
		c.OnTimeout = func(context.Context, bootstate.Record) { calls++ }
	})
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: time.Minute})
	e.clock.Advance(2 * time.Minute)
	// The first reader after the deadline is this late signal: it applies
	// the timeout (and fires OnTimeout) but is not recorded itself.
	rec, err := e.tr.RecordSignal(context.Background(), uuidA, "a", bootstate.SignalBootStateReceived, "")
	if !errors.Is(err, bootstate.ErrAttemptEnded) {
		t.Fatalf("late signal: %v, want ErrAttemptEnded", err)
	}
	if rec.Result != conditions.ResultTimedOut || calls != 1 || rec.HasSignal(bootstate.SignalBootStateReceived) {
		t.Fatalf("signal after the deadline: result %q, OnTimeout calls %d", rec.Result, calls)
	}
}

func TestWaitWakesOnSignalWithoutPolling(t *testing.T) {
	// The poll interval is an hour on a fake clock that never moves here:
	// only the in-process notification can wake Wait.
	e := newEnv(t, func(c *bootstate.Config) { c.PollInterval = time.Hour })
	ctx := context.Background()
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: 2 * time.Hour})
	type result struct {
		rec bootstate.Record
		err error
	}
	got := make(chan result, 1)
	go func() {
		r, err := e.tr.Wait(ctx, strings.ToUpper(uuidA), "a")
		got <- result{r, err}
	}()
	<-e.clock.WaiterAdded() // Wait is parked
	if _, err := e.tr.RecordSignal(ctx, uuidA, "a", bootstate.SignalBootStateReceived, "up"); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.rec.Result != conditions.ResultSucceeded {
		t.Fatalf("Wait = %+v, %v", r.rec, r.err)
	}
	if !e.clock.Now().Equal(t0) {
		t.Fatal("clock moved")
	}
}

func TestWaitSeesOtherProcessWithinPollInterval(t *testing.T) {
	// Two trackers on one store stand for two processes: B's waiter learns
	// of A's write through its poll interval.
	a := newEnv(t, nil)
	b := newEnv(t, func(c *bootstate.Config) { c.Store = a.store; c.PollInterval = 5 * time.Second })
	ctx := context.Background()
	mustStart(t, a.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
	got := make(chan error, 1)
	go func() {
		_, err := b.tr.Wait(ctx, uuidA, "a")
		got <- err
	}()
	<-b.clock.WaiterAdded()
	if _, err := a.tr.RecordSignal(ctx, uuidA, "a", bootstate.SignalBootStateReceived, ""); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(5 * time.Second)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestWaitReturnsOnDeadlineAndSupersede(t *testing.T) {
	e := newEnv(t, func(c *bootstate.Config) { c.PollInterval = time.Hour })
	ctx := context.Background()
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: time.Minute})
	got := make(chan bootstate.Record, 1)
	go func() {
		r, err := e.tr.Wait(ctx, uuidA, "a")
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	<-e.clock.WaiterAdded()
	e.clock.Advance(time.Minute)
	if r := <-got; r.Result != conditions.ResultTimedOut {
		t.Fatalf("Wait after deadline: %+v", r)
	}

	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidB, AttemptID: "b1"})
	errc := make(chan error, 1)
	go func() {
		_, err := e.tr.Wait(ctx, uuidB, "b1")
		errc <- err
	}()
	<-e.clock.WaiterAdded()
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidB, AttemptID: "b2"})
	if err := <-errc; !errors.Is(err, bootstate.ErrStaleAttempt) || !strings.Contains(err.Error(), "superseded") {
		t.Fatalf("Wait on a superseded attempt: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() { <-e.clock.WaiterAdded(); cancel() }()
	if _, err := e.tr.Wait(cctx, uuidB, "b2"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with canceled ctx: %v", err)
	}
}

func TestRunResyncPicksUpOtherProcessAttempts(t *testing.T) {
	// Tracker a opens the attempt; tracker b (another process, its own
	// clock) runs the deadline loop and must time it out.
	fired := make(chan bootstate.Record, 1)
	a := newEnv(t, nil)
	b := newEnv(t, func(c *bootstate.Config) {
		c.Store = a.store
		c.ResyncInterval = time.Minute
		c.OnTimeout = func(_ context.Context, r bootstate.Record) { fired <- r }
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = b.tr.Run(ctx) }()
	<-b.clock.WaiterAdded() // first resync done, Run parked
	mustStart(t, a.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: 3 * time.Minute})
	var r bootstate.Record
	advanceUntil(t, b, time.Minute, func() bool {
		select {
		case r = <-fired:
			return true
		default:
			return false
		}
	})
	if r.SystemUUID != uuidA || r.Result != conditions.ResultTimedOut {
		t.Fatalf("fired %+v", r)
	}
	cancel()
	<-runDone
}

func TestConcurrentSignalsAllLand(t *testing.T) {
	e := newEnv(t, nil)
	signals := []string{"S0", "S1", "S2", "S3", "S4", "S5", "S6", "S7"}
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Policy: bootstate.AllOfSignals(signals...)})
	var wg sync.WaitGroup
	for _, s := range signals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.tr.RecordSignal(context.Background(), uuidA, "a", s, ""); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rec, err := e.tr.Get(context.Background(), uuidA)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range signals {
		if !rec.HasSignal(s) {
			t.Errorf("signal %s lost to a write conflict", s)
		}
	}
	if rec.Result != conditions.ResultSucceeded {
		t.Fatalf("result = %q", rec.Result)
	}
}

func TestStoreErrorsWrapErrStore(t *testing.T) {
	fs := &failingStore{Store: memstore.New()}
	e := newEnv(t, func(c *bootstate.Config) { c.Store = fs })
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
	fs.broken.Store(true)
	_, err := e.tr.RecordSignal(context.Background(), uuidA, "a", bootstate.SignalBootStateReceived, "")
	if !errors.Is(err, bootstate.ErrStore) || !errors.Is(err, errBroken) {
		t.Fatalf("error = %v, want ErrStore wrapping the store's error", err)
	}
	if _, _, _, err := e.tr.BootResult(context.Background(), uuidA, "a"); !errors.Is(err, bootstate.ErrStore) {
		t.Fatalf("BootResult error = %v", err)
	}
}

func TestTokenAPI(t *testing.T) {
	e := newEnv(t, nil)
	tok, err := e.tr.Token(strings.ToUpper(uuidA), "a")
	if err != nil {
		t.Fatal(err)
	}
	tok2, _ := e.tr.Token(uuidA, "a")
	tok3, _ := e.tr.Token(uuidA, "b")
	if tok != tok2 || tok == tok3 || len(tok) != 43 {
		t.Fatalf("tokens: %q %q %q", tok, tok2, tok3)
	}
	if _, err := e.tr.Token("x", "a"); err == nil {
		t.Fatal("Token accepted a bad UUID")
	}
	lab := newEnv(t, func(c *bootstate.Config) { c.Secret = nil; c.InsecureSkipAuth = true })
	if _, err := lab.tr.Token(uuidA, "a"); err == nil || lab.tr.AuthEnabled() {
		t.Fatal("a tracker without auth handed out a token")
	}
}
