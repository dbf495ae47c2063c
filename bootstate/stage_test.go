package bootstate_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
)

// stagedPolicy: iPXE within 5 min of the start, Ignition within 10 min of
// the iPXE fetch, BootStateReceived within 30 min of the Ignition fetch.
func stagedPolicy() bootstate.Policy {
	p := bootstate.AllOfSignals(bootstate.SignalIPXEScriptFetched, bootstate.SignalIgnitionDataFetched, bootstate.SignalBootStateReceived)
	p.Deadlines = []bootstate.SignalDeadline{
		{Signal: bootstate.SignalIPXEScriptFetched, Within: 5 * time.Minute},
		{Signal: bootstate.SignalIgnitionDataFetched, Within: 10 * time.Minute, From: bootstate.FromPreviousSignal},
		{Signal: bootstate.SignalBootStateReceived, Within: 30 * time.Minute, From: bootstate.FromPreviousSignal},
	}
	return p
}

// Each stage's deadline fires through Run with its own reason and a message
// with the times; the overall deadline keeps reason TimedOut.
func TestStageDeadlinesFireWithTheirOwnReason(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signals []string // received one minute apart
		reason  string
		stage   string
		at      time.Duration // when it must time out, from the start
	}{
		{"no iPXE fetch", nil, bootstate.ReasonIPXETimeout, bootstate.SignalIPXEScriptFetched, 5 * time.Minute},
		{"no Ignition fetch", []string{bootstate.SignalIPXEScriptFetched}, bootstate.ReasonIgnitionTimeout, bootstate.SignalIgnitionDataFetched, 11 * time.Minute},
		{"OS never reported", []string{bootstate.SignalIPXEScriptFetched, bootstate.SignalIgnitionDataFetched}, bootstate.ReasonBootStateTimeout, bootstate.SignalBootStateReceived, 32 * time.Minute},
		{"overall deadline first", []string{bootstate.SignalIPXEScriptFetched, bootstate.SignalIgnitionDataFetched}, conditions.ReasonTimedOut, "", 20 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			timeouts := make(chan bootstate.Record, 4)
			e := newEnv(t, func(c *bootstate.Config) {
				c.OnTimeout = func(_ context.Context, r bootstate.Record) { timeouts <- r }
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			overall := time.Hour
			if tc.reason == conditions.ReasonTimedOut {
				overall = 20 * time.Minute
			}
			mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: overall, Policy: stagedPolicy()})
			for _, s := range tc.signals {
				e.clock.Advance(time.Minute)
				if _, err := e.tr.RecordSignal(ctx, uuidA, "a", s, ""); err != nil {
					t.Fatal(err)
				}
			}
			runDone := make(chan struct{})
			go func() { defer close(runDone); _ = e.tr.Run(ctx) }()
			var got bootstate.Record
			advanceUntil(t, e, 15*time.Second, func() bool {
				select {
				case got = <-timeouts:
					return true
				default:
					return false
				}
			})
			cancel()
			<-runDone
			if got.Result != conditions.ResultTimedOut || got.Reason() != tc.reason || got.TimedOutStage != tc.stage {
				t.Fatalf("timed out with %s/%s stage %q, want %s stage %q: %s", got.Result, got.Reason(), got.TimedOutStage, tc.reason, tc.stage, got.Message())
			}
			if fired := e.clock.Now().Sub(t0); fired < tc.at || fired > tc.at+15*time.Second {
				t.Fatalf("fired %s after the start, want %s", fired, tc.at)
			}
			if tc.stage != "" && (!strings.Contains(got.Message(), "timed out at stage "+tc.stage) || !strings.Contains(got.Message(), "due ")) {
				t.Fatalf("message %q does not name the stage and its times", got.Message())
			}
			done, res, _, err := e.tr.BootResult(context.Background(), uuidA, "a")
			if err != nil || !done || res != conditions.ResultTimedOut {
				t.Fatalf("BootResult = %v %s %v", done, res, err)
			}
		})
	}
}

// A stage deadline is in the stored record: a tracker started later (a
// restart) fires it, and BootResult applies it lazily without Run.
func TestStageDeadlineDurableAcrossRestart(t *testing.T) {
	e := newEnv(t, nil)
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: time.Hour, Policy: stagedPolicy()})
	timeouts := make(chan bootstate.Record, 1)
	restarted, err := bootstate.NewTracker(bootstate.Config{Store: e.store, Clock: e.clock, Secret: testSecret,
		OnTimeout: func(_ context.Context, r bootstate.Record) { timeouts <- r }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = restarted.Run(ctx) }()
	var got bootstate.Record
	advanceUntil(t, e, 30*time.Second, func() bool {
		select {
		case got = <-timeouts:
			return true
		default:
			return false
		}
	})
	if got.Reason() != bootstate.ReasonIPXETimeout {
		t.Fatalf("restarted tracker: %s: %s", got.Reason(), got.Message())
	}

	// Lazily, without Run.
	e2 := newEnv(t, nil)
	mustStart(t, e2.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: time.Hour, Policy: stagedPolicy()})
	e2.clock.Advance(5 * time.Minute)
	done, res, msg, err := e2.tr.BootResult(context.Background(), uuidA, "a")
	if err != nil || !done || res != conditions.ResultTimedOut || !strings.Contains(msg, "stage IPXEScriptFetched") {
		t.Fatalf("lazy stage timeout: %v %s %q %v", done, res, msg, err)
	}
}

func TestStagePolicyValidation(t *testing.T) {
	e := newEnv(t, nil)
	for _, p := range []bootstate.Policy{
		{Signals: []string{"BootStateReceived"}, Deadlines: []bootstate.SignalDeadline{{Signal: "BootStateReceived"}}},
		{Signals: []string{"BootStateReceived"}, Deadlines: []bootstate.SignalDeadline{{Signal: "BootStateReceived", Within: time.Minute, From: bootstate.FromPreviousSignal}}},
		{Signals: []string{"BootStateReceived"}, Deadlines: []bootstate.SignalDeadline{{Signal: "x y", Within: time.Minute}}},
		{Signals: []string{"BootStateReceived"}, Deadlines: []bootstate.SignalDeadline{{Signal: "A", Within: time.Minute}, {Signal: "A", Within: time.Minute}}},
		{Signals: []string{"BootStateReceived"}, Deadlines: []bootstate.SignalDeadline{{Signal: "A", Within: time.Minute, From: "Later"}}},
	} {
		if _, err := e.tr.Start(context.Background(), bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Policy: p}); err == nil {
			t.Fatalf("policy %+v accepted", p)
		}
	}
	// Deadlines alone take the default's signals.
	rec := mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a",
		Policy: bootstate.Policy{Deadlines: []bootstate.SignalDeadline{{Signal: bootstate.SignalIPXEScriptFetched, Within: time.Minute}}}})
	if rec.Policy.String() != "AllOf(BootStateReceived)" || len(rec.Policy.Deadlines) != 1 {
		t.Fatalf("policy = %s %+v", rec.Policy, rec.Policy.Deadlines)
	}
	if _, err := e.tr.Start(context.Background(), bootstate.StartOptions{SystemUUID: uuidB, AttemptID: "b", AllowedSources: []string{"10.0.0.300"}}); err == nil {
		t.Fatal("bad source accepted")
	}
}

// Callbacks and fetches from an address the attempt does not allow get 403
// and write nothing; the bound address (IP or CIDR) is accepted.
func TestAddressBindingRefusesForeignAddress(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	rec := mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a",
		AllowedSources: []string{"198.51.100.7", "2001:db8::/64"},
		Policy:         bootstate.AllOfSignals(bootstate.SignalIPXEScriptFetched, bootstate.SignalBootStateReceived)})
	if strings.Join(rec.AllowedSources, ",") != "198.51.100.7/32,2001:db8::/64" {
		t.Fatalf("stored sources %v", rec.AllowedSources)
	}
	tok, _ := e.tr.Token(uuidA, "a")
	h := bootstate.NewHandler(e.tr, bootstate.HandlerConfig{})
	served := 0
	ipxe := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIPXEScriptFetched})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++; _, _ = w.Write([]byte("#!ipxe token=secret")) }))
	do := func(hh http.Handler, method, target, body, from string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.RemoteAddr = from
		rr := httptest.NewRecorder()
		hh.ServeHTTP(rr, req)
		return rr
	}
	body := jsonBody(t, map[string]string{"systemUUID": uuidA, "attemptID": "a", "token": tok})
	before := snapshot(t, e.store)
	for _, from := range []string{"192.0.2.99:1234", "[2001:db8:1::7]:1234", "198.51.100.8:1"} {
		if rr := do(h, http.MethodPost, "/bootstate", body, from); rr.Code != http.StatusForbidden || !strings.Contains(rr.Body.String(), "may not act") || strings.Contains(rr.Body.String(), "198.51.100") {
			t.Fatalf("callback from %s: %d %s", from, rr.Code, rr.Body)
		}
		if rr := do(ipxe, http.MethodGet, "/ipxe/"+uuidA, "", from); rr.Code != http.StatusForbidden || strings.Contains(rr.Body.String(), "secret") {
			t.Fatalf("fetch from %s: %d %s", from, rr.Code, rr.Body)
		}
	}
	assertUnchanged(t, e.store, before)
	if served != 0 {
		t.Fatalf("wrapped handler served %d foreign fetches", served)
	}
	if rr := do(ipxe, http.MethodGet, "/ipxe/"+uuidA, "", "[2001:db8::42]:1"); rr.Code != http.StatusOK || served != 1 {
		t.Fatalf("fetch from the bound prefix: %d %s", rr.Code, rr.Body)
	}
	if rr := do(h, http.MethodPost, "/bootstate", body, "[::ffff:198.51.100.7]:9"); rr.Code != http.StatusOK || !strings.Contains(rr.Body.String(), `"completed":true`) {
		t.Fatalf("callback from the bound address (IPv4-mapped): %d %s", rr.Code, rr.Body)
	}
	// The host's own RecordSignal is not bound (it has no address).
	if _, err := e.tr.RecordSignal(ctx, uuidA, "a", "HostChecked", ""); err != nil {
		t.Fatal(err)
	}
}

// A callback after the deadline gets 409 Conflict (not 200 with TimedOut in
// the body) and the late signal is not recorded; whether the timeout was
// already applied or this callback is the first to notice.
func TestLateCallbackGets409(t *testing.T) {
	for _, applied := range []bool{false, true} {
		e := newEnv(t, nil)
		mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: time.Minute})
		tok, _ := e.tr.Token(uuidA, "a")
		h := bootstate.NewHandler(e.tr, bootstate.HandlerConfig{})
		e.clock.Advance(time.Minute)
		if applied {
			if done, _, _, _ := e.tr.BootResult(context.Background(), uuidA, "a"); !done {
				t.Fatal("not timed out")
			}
		}
		before := snapshot(t, e.store)
		code, out := post(t, h, http.MethodPost, jsonBody(t, map[string]string{"systemUUID": uuidA, "attemptID": "a", "token": tok}))
		if msg, _ := out["error"].(string); code != http.StatusConflict || !strings.Contains(msg, "ended") || !strings.Contains(msg, "timed out") || strings.Contains(msg, `"a"`) {
			t.Fatalf("late callback (timeout applied before: %v): %d %v", applied, code, out)
		}
		if applied {
			assertUnchanged(t, e.store, before)
		}
		rec, _ := e.tr.Get(context.Background(), uuidA)
		if rec.Result != conditions.ResultTimedOut || rec.HasSignal(bootstate.SignalBootStateReceived) {
			t.Fatalf("record after late callback: %s %+v", rec.Result, rec.Conditions)
		}
		if _, err := e.tr.RecordSignal(context.Background(), uuidA, "a", bootstate.SignalBootStateReceived, ""); !errors.Is(err, bootstate.ErrAttemptEnded) {
			t.Fatalf("RecordSignal after the end: %v", err)
		}
	}
}
