package redfish_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/task"
)

// Per-endpoint options in the BMC URL (redfish://...?bootOnce=emulate&
// events=off&timeout=10s), over real HTTP against the simulator.

func withOptions(t *testing.T, addr string) bmc.Endpoint {
	t.Helper()
	ep, err := bmc.ParseEndpoint(addr)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// A bad option fails the dial before any request, permanently, naming the
// option and what it accepts.
func TestURLOptionErrors(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	d := redfish.NewDialer(testOptions())
	for _, tc := range []struct{ query, want string }{
		{"bootOnce=always", `option bootOnce="always" in the BMC URL: want emulate or native`},
		{"events=no", `option events="no" in the BMC URL: want on or off`},
		{"timeout=0s", `option timeout="0s" in the BMC URL: want a positive duration`},
		{"timeout=abc", `option timeout="abc"`},
		{"bootonce=emulate", `unknown option "bootonce" in the BMC URL: want one of bootOnce, events, timeout`},
		{"rps=10", `unknown option "rps"`},
	} {
		ep := withOptions(t, srv.Address("1")+"?"+tc.query)
		_, err := d.DialDriver(context.Background(), ep, srv.Credentials())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dial with ?%s: %v; want an error containing %q", tc.query, err, tc.want)
			continue
		}
		if bmc.IsTransient(err) {
			t.Errorf("dial with ?%s: transient %v; want permanent", tc.query, err)
		}
	}
	// An Endpoint built by hand may hold what ParseEndpoint refuses.
	ep := srv.Endpoint("1")
	ep.Options = "events=on&events=off"
	if _, err := d.DialDriver(context.Background(), ep, srv.Credentials()); err == nil || !strings.Contains(err.Error(), `option "events" in the BMC URL is given 2 times`) {
		t.Errorf("dial with a repeated option: %v", err)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Fatalf("bad options sent requests:\n%s", trace(reqs))
	}
}

// bootOnce=emulate on a BMC that stores Once as Continuous makes the netboot
// job emulate one-time boot and succeed with the Dialer's default (no
// emulation); bootOnce=native overrides a Dialer that emulates, and the job
// fails verification as it would without the option.
func TestURLOptionBootOnce(t *testing.T) {
	t.Run("emulate", func(t *testing.T) {
		srv := redfishtest.NewServer(redfishtest.Config{BootOnce: redfishtest.BootOnceStoredAsContinuous})
		t.Cleanup(srv.Close)
		srv.SetPower("1", "On")
		j := runJob(t, netbootSpec(srv.Address("1")+"?bootOnce=emulate"), srv.Credentials(), testOptions())
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
		}
		if br := j.Status.Tasks[1].BootRestore; br == nil || !br.Emulated || br.State != task.BootRestoreRestored {
			t.Fatalf("boot restore %+v; want emulated and restored", br)
		}
		if st := srv.System("1"); st.Power != "On" || st.Boots != 1 || st.BootEnabled != "Disabled" {
			t.Fatalf("server %+v; want On, booted once, the override disabled again", st)
		}
	})
	t.Run("native", func(t *testing.T) {
		srv := storedAsContinuous(t)
		opts := testOptions()
		opts.EmulateBootOnce = true
		j := runJob(t, netbootSpec(srv.Address("1")+"?bootOnce=native"), srv.Credentials(), opts)
		assertVerificationFailedAndRestored(t, srv, j)
	})
}

func eventServiceRequests(srv *redfishtest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r.Path, "/redfish/v1/EventService") {
			n++
		}
	}
	return n
}

// events=off: on a BMC that offers the event stream, a power job sends no
// request to the EventService and polls; events=on turns the stream on
// where the Dialer has it off.
func TestURLOptionEvents(t *testing.T) {
	cfg := job.Config{StepperConfig: job.StepperConfig{PollInterval: 20 * time.Millisecond, AdaptivePoll: job.AdaptivePoll{Disabled: true}}}
	powerOn := func(addr string) job.Spec {
		return job.Spec{BMC: addr, CredentialsRef: "lab", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}}
	}
	run := func(t *testing.T, query string, opts redfish.Options) *redfishtest.Server {
		t.Helper()
		srv := redfishtest.NewServer(redfishtest.Config{EventStream: true, PowerDelay: 300 * time.Millisecond})
		t.Cleanup(srv.Close)
		var dialer bmc.SchemeDialer
		dialer.Register("redfish", redfish.NewDialer(opts))
		c := cfg
		c.Dialer = &dialer
		c.ScanInterval = 20 * time.Millisecond
		j := jobtest.Run(t, c, srv.Credentials(), powerOn(srv.Address("1")+query), 2*time.Minute)
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
		}
		return srv
	}
	t.Run("off", func(t *testing.T) {
		srv := run(t, "?events=off", testOptions())
		if n := eventServiceRequests(srv); n != 0 {
			t.Fatalf("%d EventService requests with events=off:\n%s", n, trace(srv.Requests()))
		}
	})
	t.Run("on", func(t *testing.T) {
		opts := testOptions()
		opts.NoEventStream = true
		srv := run(t, "?events=on", opts)
		if n := eventServiceRequests(srv); n == 0 {
			t.Fatalf("no EventService request with events=on:\n%s", trace(srv.Requests()))
		}
	})

	// On the driver: WatchPower answers ErrNotSupported without a request.
	srv := redfishtest.NewServer(redfishtest.Config{EventStream: true})
	t.Cleanup(srv.Close)
	drv, err := redfish.NewDialer(testOptions()).DialDriver(context.Background(), withOptions(t, srv.Address("1")+"?events=off"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	before := len(srv.Requests())
	if _, err := drv.WatchPower(context.Background(), func(bmc.PowerEvent) {}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("WatchPower with events=off: %v; want ErrNotSupported", err)
	}
	if reqs := srv.Requests()[before:]; len(reqs) != 0 {
		t.Fatalf("WatchPower with events=off sent:\n%s", trace(reqs))
	}
}

// timeout=200ms bounds each request of that address, below the Dialer's 5s:
// a read the BMC answers after 2s fails with the request timeout named.
func TestURLOptionTimeout(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Faults: redfishtest.Faults{SlowDelay: 2 * time.Second}})
	t.Cleanup(srv.Close)
	opts := testOptions() // RequestTimeout 5s
	opts.Retries = -1
	drv, err := redfish.NewDialer(opts).DialDriver(context.Background(), withOptions(t, srv.Address("1")+"?timeout=200ms"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	srv.SetFaults(0, func(method, path string) redfishtest.Fault {
		if method == "GET" && path == "/redfish/v1/Systems/1" {
			return redfishtest.FaultSlow
		}
		return redfishtest.FaultNone
	})
	_, err = drv.PowerState(context.Background())
	if err == nil || !strings.Contains(err.Error(), "request timeout 200ms") || !bmc.IsTransient(err) {
		t.Fatalf("PowerState against a BMC answering in 2s: %v; want a transient timeout naming 200ms", err)
	}
}

// Systems behind one endpoint share a session only when their addresses
// carry the same options: OpenSystem refuses other options (so nothing
// dialed with events=off serves an address without it), and connpool.Pool
// dials a session per option set.
func TestURLOptionsSessions(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 2})
	t.Cleanup(srv.Close)
	ctx := context.Background()
	d := redfish.NewDialer(testOptions())
	emu := withOptions(t, srv.Address("1")+"?bootOnce=emulate")
	drv, err := d.DialDriver(ctx, emu, srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(ctx) })
	if _, err := drv.OpenSystem(ctx, srv.Endpoint("2")); !errors.Is(err, bmc.ErrNotSupported) || !strings.Contains(err.Error(), "options") {
		t.Fatalf("OpenSystem without the session's options: %v; want ErrNotSupported naming the options", err)
	}
	view, err := drv.OpenSystem(ctx, withOptions(t, srv.Address("2")+"?bootOnce=emulate"))
	if err != nil {
		t.Fatal(err)
	}
	if !view.(*redfish.Driver).EmulateBootOnce() {
		t.Fatal("a view with bootOnce=emulate does not emulate")
	}

	logins := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if r.Method == "POST" && r.Path == "/redfish/v1/SessionService/Sessions" {
				n++
			}
		}
		return n
	}
	pool := connpool.New(d, time.Minute, nil)
	t.Cleanup(func() { _ = pool.Close(ctx) })
	before := logins()
	a, err := pool.Get(ctx, withOptions(t, srv.Address("1")+"?bootOnce=emulate"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	b, err := pool.Get(ctx, srv.Endpoint("2"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	c, err := pool.Get(ctx, withOptions(t, srv.Address("2")+"?bootOnce=emulate"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	if n := logins() - before; n != 2 {
		t.Fatalf("%d logins for two option sets; want 2:\n%s", n, trace(srv.Requests()))
	}
	if !a.(*redfish.Driver).EmulateBootOnce() || b.(*redfish.Driver).EmulateBootOnce() || !c.(*redfish.Driver).EmulateBootOnce() {
		t.Fatal("a pooled driver does not carry its address's bootOnce option")
	}
}
