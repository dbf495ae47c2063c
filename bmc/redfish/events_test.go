package redfish_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

func dialEvents(t *testing.T, srv *redfishtest.Server, system string) *redfish.Driver {
	t.Helper()
	d, err := redfish.NewDialer(testOptions()).DialDriver(context.Background(), srv.Endpoint(system), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

// events collects a watch's notifications.
func events() (chan bmc.PowerEvent, func(bmc.PowerEvent)) {
	ch := make(chan bmc.PowerEvent, 16)
	return ch, func(ev bmc.PowerEvent) { ch <- ev }
}

func nextEvent(t *testing.T, ch chan bmc.PowerEvent) bmc.PowerEvent {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
		return bmc.PowerEvent{}
	}
}

// TestWatchPowerOneStreamPerSession: the systems sharing a session share one
// stream, and each watch hears only of its own system's changes.
func TestWatchPowerOneStreamPerSession(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 2, EventStream: true, PowerDelay: 200 * time.Millisecond})
	t.Cleanup(srv.Close)
	ctx := context.Background()
	d1 := dialEvents(t, srv, "1")
	d2, err := d1.OpenSystem(ctx, srv.Endpoint("2"))
	if err != nil {
		t.Fatal(err)
	}
	ch1, n1 := events()
	ch2, n2 := events()
	stop1, err := d1.WatchPower(ctx, n1)
	if err != nil {
		t.Fatal(err)
	}
	defer stop1()
	stop2, err := d2.(bmc.PowerWatcher).WatchPower(ctx, n2)
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	if n := srv.EventStreams(); n != 1 {
		t.Fatalf("%d event streams open; want 1 for the session", n)
	}
	if err := d2.SetPower(ctx, bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ch2); ev.Err != nil {
		t.Fatalf("event: %v", ev.Err)
	}
	if st, err := d2.PowerState(ctx); err != nil || st != bmc.PowerOn {
		t.Fatalf("after the event: %v, %v; want On", st, err)
	}
	select {
	case ev := <-ch1:
		t.Fatalf("system 1's watch heard of system 2's change: %+v", ev)
	default:
	}
	// Breaking the stream ends both watches with an error.
	srv.BreakEventStreams()
	for _, ch := range []chan bmc.PowerEvent{ch1, ch2} {
		if ev := nextEvent(t, ch); ev.Err == nil {
			t.Fatal("want the watch's last event to carry the stream's end")
		}
	}
	// The next watch opens a new stream, without asking the EventService
	// again.
	before := len(srv.Requests())
	stop3, err := d1.WatchPower(ctx, func(bmc.PowerEvent) {})
	if err != nil {
		t.Fatal(err)
	}
	stop3()
	if n := srv.EventStreams(); n != 1 {
		t.Fatalf("%d event streams open after the watch reopened it; want 1", n)
	}
	for _, r := range srv.Requests()[before:] {
		if r.Path == "/redfish/v1/EventService" {
			t.Fatal("reopening the stream asked the EventService again")
		}
	}
}

// TestWatchPowerNotSupported: without an EventService, WatchPower answers
// ErrNotSupported without a request (the service root names none); with
// the stream switched off, after one GET of the EventService, once.
func TestWatchPowerNotSupported(t *testing.T) {
	ctx := context.Background()
	srv := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	d := dialEvents(t, srv, "1")
	before := len(srv.Requests())
	if _, err := d.WatchPower(ctx, func(bmc.PowerEvent) {}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("WatchPower without an EventService: %v; want ErrNotSupported", err)
	}
	if n := len(srv.Requests()) - before; n != 0 {
		t.Fatalf("WatchPower without an EventService sent %d requests", n)
	}

	off := redfishtest.NewServer(redfishtest.Config{EventStream: true})
	t.Cleanup(off.Close)
	off.SetEventStream(false)
	d = dialEvents(t, off, "1")
	before = len(off.Requests())
	for range 2 {
		if _, err := d.WatchPower(ctx, func(bmc.PowerEvent) {}); !errors.Is(err, bmc.ErrNotSupported) {
			t.Fatalf("WatchPower without ServerSentEventUri: %v; want ErrNotSupported", err)
		}
	}
	if got := trace(off.Requests()[before:]); got != "GET /redfish/v1/EventService 200\n" {
		t.Fatalf("requests %q; want one GET of the EventService", got)
	}

	noStream := dialEventsOpts(t, srv, redfish.Options{NoEventStream: true})
	if _, err := noStream.WatchPower(ctx, func(bmc.PowerEvent) {}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("WatchPower with Options.NoEventStream: %v; want ErrNotSupported", err)
	}
}

func dialEventsOpts(t *testing.T, srv *redfishtest.Server, opts redfish.Options) *redfish.Driver {
	t.Helper()
	base := testOptions()
	base.NoEventStream = opts.NoEventStream
	d, err := redfish.NewDialer(base).DialDriver(context.Background(), srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

// systemGETsAfterReset counts the GETs of system 1 after each reset POST,
// up to the job's logout (the next job's Dial reads the system too).
func systemGETsAfterReset(reqs []redfishtest.Request) []int {
	var out []int
	counting := false
	for _, r := range reqs {
		switch {
		case r.Method == "POST" && r.Path == "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset":
			out = append(out, 0)
			counting = true
		case r.Method == "DELETE" && strings.HasPrefix(r.Path, "/redfish/v1/SessionService/Sessions/"):
			counting = false
		case counting && r.Method == "GET" && r.Path == "/redfish/v1/Systems/1":
			out[len(out)-1]++
		}
	}
	return out
}

// powerJobs runs power on, off, on ... through one Runner (one Stepper, so
// what it learned carries over) and returns the simulator's request log.
func powerJobs(t *testing.T, srv *redfishtest.Server, cfg job.Config, n int, during func(k int)) {
	t.Helper()
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(testOptions()))
	cfg.Dialer = &dialer
	cfg.Store = memstore.New()
	cfg.Credentials = bmc.StaticCredentials{"lab": srv.Credentials()}
	cfg.ScanInterval = 20 * time.Millisecond
	r, err := job.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()
	for k := range n {
		op := task.PowerOn
		if k%2 == 1 {
			op = task.PowerOff
		}
		name := fmt.Sprintf("power-%d", k)
		if _, err := r.Submit(ctx, name, job.Spec{BMC: srv.Address("1"), CredentialsRef: "lab", Tasks: []task.Spec{{Power: &task.PowerAction{Op: op}}}}); err != nil {
			t.Fatal(err)
		}
		if during != nil {
			during(k)
		}
		j := jobtest.Wait(t, r, name, time.Minute)
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %d: %s: %s", k, j.Status.Result, j.Status.Message)
		}
	}
}

// TestPowerJobConfirmedByEvent: with the EventService stream, a power job
// reads the state back after the reset, then once more after the event:
// no polls in between (once the endpoint's events proved themselves on the
// first job, which also polls).
func TestPowerJobConfirmedByEvent(t *testing.T) {
	// 1.5 s: half-way between two 1 s polls, so on the first job the event
	// (within 10 ms of the landing) comes well before the next poll.
	srv := redfishtest.NewServer(redfishtest.Config{EventStream: true, PowerDelay: 1500 * time.Millisecond})
	t.Cleanup(srv.Close)
	powerJobs(t, srv, job.Config{
		StepperConfig: job.StepperConfig{
			PollInterval: time.Second,
			AdaptivePoll: job.AdaptivePoll{Disabled: true},
			PowerEvents:  job.PowerEvents{PollInterval: 10 * time.Minute},
		},

		// Longer than any test: a poll here would be a safety poll.

	}, 3, nil)
	gets := systemGETsAfterReset(srv.Requests())
	t.Logf("system GETs after each reset: %v", gets)
	if len(gets) != 3 {
		t.Fatalf("%d resets; want 3", len(gets))
	}
	if gets[0] < 3 {
		t.Fatalf("first job: %d GETs after the reset; want the 1 s poll too (events not yet trusted)", gets[0])
	}
	for k := 1; k < 3; k++ {
		if gets[k] != 2 {
			t.Fatalf("job %d: %d GETs of the system after the reset; want 2: the read-back and one after the event", k, gets[k])
		}
	}
}

// TestPowerJobFallsBackWhenStreamBreaks: the stream breaks mid-wait (and
// stays off): the job polls and completes.
func TestPowerJobFallsBackWhenStreamBreaks(t *testing.T) {
	// 3.5 s: half-way between 1 s polls (job 0's event comes first).
	srv := redfishtest.NewServer(redfishtest.Config{EventStream: true, PowerDelay: 3500 * time.Millisecond})
	t.Cleanup(srv.Close)
	powerJobs(t, srv, job.Config{
		StepperConfig: job.StepperConfig{
			PollInterval: time.Second,
			AdaptivePoll: job.AdaptivePoll{Disabled: true},
			PowerEvents:  job.PowerEvents{PollInterval: 10 * time.Minute},
		},
	}, 2, func(k int) {
		if k != 1 {
			return
		}
		// Wait for the job's stream (the wait has begun), then break it.
		deadline := time.Now().Add(30 * time.Second)
		for srv.EventStreams() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the job opened no event stream")
			}
			time.Sleep(5 * time.Millisecond)
		}
		srv.SetEventStream(false)
	})
	gets := systemGETsAfterReset(srv.Requests())
	t.Logf("system GETs after each reset: %v", gets)
	// Job 1: the read-back, a read when the stream's end woke it, then polls
	// at 1, 2 and 3 s (about 4 s of the change): at least 5. A wait on the
	// event alone would have read twice, a wait for the 10-minute safety
	// poll would not have completed.
	if gets[1] < 5 {
		t.Fatalf("job 1: %d GETs after the stream broke; want polling", gets[1])
	}
}

// TestPowerJobWithoutEventService: a BMC without an EventService costs no
// request for events, and jobs poll as before.
func TestPowerJobWithoutEventService(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{PowerDelay: 300 * time.Millisecond})
	t.Cleanup(srv.Close)
	powerJobs(t, srv, job.Config{StepperConfig: job.StepperConfig{PollInterval: 50 * time.Millisecond, AdaptivePoll: job.AdaptivePoll{Disabled: true}}}, 2, nil)
	for _, r := range srv.Requests() {
		if r.Path == "/redfish/v1/EventService" || r.Path == "/redfish/v1/EventService/SSE" {
			t.Fatalf("request %s %s to a BMC without an EventService", r.Method, r.Path)
		}
	}
	for k, n := range systemGETsAfterReset(srv.Requests()) {
		if n < 3 {
			t.Fatalf("job %d: %d GETs; want polling", k, n)
		}
	}
}

// TestPowerJobsShareOneStream: jobs on the systems behind one endpoint share
// one session, and so one event stream, however many wait at once.
func TestPowerJobsShareOneStream(t *testing.T) {
	const n = 8
	srv := redfishtest.NewServer(redfishtest.Config{Systems: n, EventStream: true, PowerDelay: 1500 * time.Millisecond})
	t.Cleanup(srv.Close)
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(testOptions()))
	r, err := job.NewRunner(job.Config{
		Store: memstore.New(), StepperConfig: job.StepperConfig{
			Dialer:       &dialer,
			Credentials:  bmc.StaticCredentials{"lab": srv.Credentials()},
			PollInterval: time.Second,
			AdaptivePoll: job.AdaptivePoll{Disabled: true},
		},
		ScanInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()
	for i := 1; i <= n; i++ {
		spec := job.Spec{BMC: srv.Address(fmt.Sprint(i)), CredentialsRef: "lab", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}}
		if _, err := r.Submit(ctx, fmt.Sprintf("on-%d", i), spec); err != nil {
			t.Fatal(err)
		}
	}
	// While they wait, at most one stream is open.
	var most atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				if n := int64(srv.EventStreams()); n > most.Load() {
					most.Store(n)
				}
			}
		}
	}()
	for i := 1; i <= n; i++ {
		j := jobtest.Wait(t, r, fmt.Sprintf("on-%d", i), time.Minute)
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %d: %s", i, j.Status.Message)
		}
	}
	close(stop)
	<-sampled
	if got := most.Load(); got != 1 {
		t.Fatalf("at most %d event streams were open while %d jobs waited; want 1", got, n)
	}
}

// A Dialer remembers an endpoint without SSE across sessions: a second
// session (the next job's) does not GET the EventService again, so a job
// with a session costs 8 non-poll requests there, not 9.
func TestNoSSERememberedAcrossSessions(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{EventStream: true})
	t.Cleanup(srv.Close)
	srv.SetEventStream(false)
	dialer := redfish.NewDialer(testOptions())
	for i := range 3 {
		drv, err := dialer.DialDriver(t.Context(), srv.Endpoint("1"), srv.Credentials())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := drv.WatchPower(t.Context(), func(bmc.PowerEvent) {}); !errors.Is(err, bmc.ErrNotSupported) {
			t.Fatalf("session %d: WatchPower %v; want ErrNotSupported", i, err)
		}
		_ = drv.Close(t.Context())
	}
	if n := strings.Count(trace(srv.Requests()), "GET /redfish/v1/EventService 200"); n != 1 {
		t.Fatalf("%d GETs of the EventService over 3 sessions; want 1", n)
	}
	// Another Dialer has its own memory.
	drv, err := redfish.NewDialer(testOptions()).DialDriver(t.Context(), srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(t.Context())
	_, _ = drv.WatchPower(t.Context(), func(bmc.PowerEvent) {})
	if n := strings.Count(trace(srv.Requests()), "GET /redfish/v1/EventService 200"); n != 2 {
		t.Fatalf("%d GETs of the EventService; want 2 (a new Dialer asks once)", n)
	}
}

// A job's log lines name the job once (the Runner's logger and the step's
// both used to add "job").
func TestJobLogLinesNameJobOnce(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{EventStream: true, PowerDelay: 20 * time.Millisecond})
	t.Cleanup(srv.Close)
	srv.SetEventStream(false) // WatchPower: not supported, logged at V(1) from the step
	var mu sync.Mutex
	var lines []string
	opts := testOptions()
	opts.Logger = funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{Verbosity: 1})
	j := runJob(t, job.Spec{BMC: srv.Address("1"), CredentialsRef: "lab", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}}, srv.Credentials(), opts)
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := 0
	for _, l := range lines {
		if n := strings.Count(l, `"job"=`); n > 1 {
			t.Errorf("log line names the job %d times: %s", n, l)
		}
		if strings.Contains(l, "no power event stream") {
			seen++
			if !strings.Contains(l, `"job"="netboot"`) || !strings.Contains(l, `"system"=`) {
				t.Errorf("step log line %s: want the job and the system", l)
			}
		}
	}
	if seen == 0 {
		t.Fatalf("no step log line among %d lines: the check saw nothing", len(lines))
	}
}
