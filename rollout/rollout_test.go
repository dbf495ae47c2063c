package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// fleet is a rollout's test bed: fake BMCs (one per server, on endpoints
// 10.0.<e>.<n>), a Runner over a memstore, a Controller, and the transitions
// the Controller reported.
type fleet struct {
	t       *testing.T
	fake    *fake.Fleet
	store   storage.Store
	servers []rollout.Server
	bmcs    []*fake.BMC
	runner  *job.Runner
	ctl     *rollout.Controller

	mu     sync.Mutex
	events []rollout.Event
}

type fleetOpts struct {
	servers, endpoints, racks int
	failing                   map[int]bool // servers whose update fails
	version                   map[int]string
	updateTime                time.Duration
	approve                   func(ctx context.Context, r string, s rollout.Server) (bool, error)
	store                     storage.Store
}

func newFleet(t *testing.T, o fleetOpts) *fleet {
	t.Helper()
	f := &fleet{t: t, fake: fake.NewFleet(), store: o.store}
	if f.store == nil {
		f.store = memstore.New()
	}
	if o.endpoints == 0 {
		o.endpoints = 1
	}
	if o.racks == 0 {
		o.racks = 1
	}
	for i := 0; i < o.servers; i++ {
		addr := fmt.Sprintf("redfish://10.0.%d.%d/redfish/v1/Systems/1", i%o.endpoints, i/o.endpoints+1)
		v := "1.0.0"
		if o.version[i] != "" {
			v = o.version[i]
		}
		b, err := f.fake.AddNew(addr, fake.Options{Power: bmc.PowerOn, Firmware: fake.FirmwareOptions{
			Components: map[string]string{"BIOS": v},
			Images:     map[string]fake.FirmwareImageInfo{"http://img/bios-2.bin": {Component: "BIOS", Version: "2.0.0"}, "http://img/bios-3.bin": {Component: "BIOS", Version: "3.0.0"}},
			Duration:   o.updateTime,
			Fail:       o.failing[i],
		}})
		if err != nil {
			t.Fatal(err)
		}
		f.bmcs = append(f.bmcs, b)
		f.servers = append(f.servers, rollout.Server{
			Name: fmt.Sprintf("node-%03d", i), BMC: addr,
			Labels: map[string]string{"rack": fmt.Sprintf("r%d", i%o.racks)},
		})
	}
	r, err := job.NewRunner(job.Config{
		StepperConfig: job.StepperConfig{Dialer: f.fake, Credentials: bmc.StaticCredentials{"lab": {Username: "u", Password: "p"}},
			PollInterval: 5 * time.Millisecond, SlowPollInterval: 5 * time.Millisecond},
		Store: f.store, ScanInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.runner = r
	f.ctl = f.controller(r, o.approve)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = r.Start(ctx) }()
	go func() { defer wg.Done(); _ = f.ctl.Start(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return f
}

func (f *fleet) controller(r *job.Runner, approve func(context.Context, string, rollout.Server) (bool, error)) *rollout.Controller {
	ctl, err := rollout.New(rollout.Config{
		Runner: r, Store: f.store, Approve: approve, PollInterval: 50 * time.Millisecond,
		Observer: rollout.Observer{Transition: func(e rollout.Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
		}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return ctl
}

func firmwareTemplate() job.Spec {
	return job.Spec{CredentialsRef: "lab", Tasks: []task.Spec{{FirmwareUpdate: &task.FirmwareUpdateAction{
		ImageURI: "http://img/bios-2.bin", Component: "BIOS", Version: "2.0.0", Reset: task.FirmwareResetNone,
	}}}}
}

func (f *fleet) create(name string, p rollout.Policy) {
	f.t.Helper()
	if _, err := f.ctl.Create(context.Background(), name, rollout.Spec{Template: firmwareTemplate(), Servers: f.servers, Policy: p}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fleet) wait(name string) *rollout.Rollout {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := f.ctl.Wait(ctx, name)
	if err != nil {
		f.t.Fatalf("rollout %s: %v (status %+v)", name, err, r.Status.Counts)
	}
	return r
}

// window is one server's unavailability as its BMC saw it: from its first
// state-changing request to the last request of the session(s) that sent
// one (the job's), logging out aside. Another replica's skip check reads
// the server on a session of its own, possibly late under load: those reads
// are not the job's.
type window struct {
	server   int
	from, to time.Time
}

// wire returns each touched server's window, from the fakes' call logs.
func (f *fleet) wire() []window {
	var out []window
	for i, b := range f.bmcs {
		calls := b.Calls()
		jobs := map[int]bool{}
		w := window{server: i}
		for _, c := range calls {
			if c.Method == fake.MethodStartFirmwareUpdate {
				jobs[c.Session] = true
				if w.from.IsZero() {
					w.from = c.Time
				}
			}
		}
		if w.from.IsZero() {
			continue
		}
		for _, c := range calls {
			if jobs[c.Session] && c.Method != fake.MethodClose && c.Time.After(w.to) {
				w.to = c.Time
			}
		}
		out = append(out, w)
	}
	return out
}

// maxOverlap is the most windows open at one instant, among those group
// accepts.
func maxOverlap(ws []window, group func(int) bool) int {
	type edge struct {
		t     time.Time
		delta int
	}
	var es []edge
	for _, w := range ws {
		if group != nil && !group(w.server) {
			continue
		}
		es = append(es, edge{w.from, +1}, edge{w.to, -1})
	}
	sort.Slice(es, func(a, b int) bool {
		if es[a].t.Equal(es[b].t) {
			return es[a].delta > es[b].delta // count touching windows as overlapping
		}
		return es[a].t.Before(es[b].t)
	})
	n, most := 0, 0
	for _, e := range es {
		n += e.delta
		most = max(most, n)
	}
	return most
}

func (f *fleet) eventsOf(name string) []rollout.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []rollout.Event
	for _, e := range f.events {
		if e.Rollout == name {
			out = append(out, e)
		}
	}
	return out
}

func TestLimitsHoldOnTheWire(t *testing.T) {
	f := newFleet(t, fleetOpts{servers: 120, endpoints: 6, racks: 12, updateTime: 20 * time.Millisecond})
	f.create("bios", rollout.Policy{
		MaxUnavailable:         rollout.Count(8),
		MaxUnavailablePerGroup: []rollout.GroupLimit{{Label: "rack", Max: rollout.Count(1)}},
	})
	r := f.wait("bios")
	if r.Status.Result != rollout.ResultSucceeded || r.Status.Counts.Succeeded != 120 {
		t.Fatalf("result %s %s, counts %+v", r.Status.Result, r.Status.Message, r.Status.Counts)
	}
	ws := f.wire()
	if len(ws) != 120 {
		t.Fatalf("%d servers were updated, want 120", len(ws))
	}
	if got := maxOverlap(ws, nil); got > 8 || got < 2 {
		t.Errorf("at most %d servers were unavailable at once on the wire; want 2..8 (the limit, and some parallelism)", got)
	}
	for rack := 0; rack < 12; rack++ {
		if got := maxOverlap(ws, func(i int) bool { return i%12 == rack }); got > 1 {
			t.Errorf("rack r%d: %d servers unavailable at once, limit 1", rack, got)
		}
	}
	for _, b := range f.bmcs {
		if n := len(b.CallsTo(fake.MethodStartFirmwareUpdate)); n != 1 {
			t.Fatalf("a server got %d update starts, want 1", n)
		}
	}
	if !conditions.IsTrue(r.Status.Conditions, conditions.TypeCompleted) || conditions.IsTrue(r.Status.Conditions, conditions.TypeRunning) {
		t.Errorf("conditions %+v", r.Status.Conditions)
	}
}

func TestFailureBudgetHalts(t *testing.T) {
	failing := map[int]bool{}
	for i := 10; i < 100; i += 9 { // 10 of 100, none in the canary
		failing[i] = true
	}
	f := newFleet(t, fleetOpts{servers: 100, endpoints: 4, failing: failing, updateTime: 10 * time.Millisecond})
	f.create("bios", rollout.Policy{MaxUnavailable: rollout.Count(5), Canary: 5, FailureBudget: rollout.Percent(3)})
	r := f.wait("bios")
	st := r.Status
	if st.Result != rollout.ResultHalted || st.Reason != rollout.ReasonBudgetSpent {
		t.Fatalf("result %s/%s %q, want Halted/%s", st.Result, st.Reason, st.Message, rollout.ReasonBudgetSpent)
	}
	if st.FailureBudget != 3 || st.Counts.Failed < 4 || st.Counts.Failed > 4+4 {
		t.Errorf("budget %d, failed %d: want 3, and 4 plus at most the 4 others running at the halt", st.FailureBudget, st.Counts.Failed)
	}
	if st.Canary.Result != rollout.ResultSucceeded || st.Canary.Succeeded != 5 {
		t.Errorf("canary %+v", st.Canary)
	}
	if st.Counts.Pending == 0 || st.Counts.Running != 0 {
		t.Errorf("counts %+v: want servers left pending and none running", st.Counts)
	}
	if !strings.Contains(st.Message, "node-010") {
		t.Errorf("message %q does not name the first failure", st.Message)
	}
	// Nothing started after the halt was decided, and every started server
	// is one the wire saw updated.
	halted := false
	for _, e := range f.eventsOf("bios") {
		if e.Kind == rollout.EventHalting {
			halted = true
		}
		if halted && e.To == rollout.StateRunning {
			t.Errorf("server %s started after the halt", e.Server)
		}
	}
	if !halted {
		t.Fatal("no halting event")
	}
	if got, want := len(f.wire()), st.Counts.Succeeded+st.Counts.Failed; got != want {
		t.Errorf("%d servers updated on the wire, the status counts %d", got, want)
	}
}

func TestCanaryFailureHaltsBeforeTheRest(t *testing.T) {
	f := newFleet(t, fleetOpts{servers: 30, failing: map[int]bool{2: true}})
	f.create("bios", rollout.Policy{MaxUnavailable: rollout.Count(10), Canary: 3, FailureBudget: rollout.Count(5)})
	r := f.wait("bios")
	if r.Status.Result != rollout.ResultHalted || r.Status.Reason != rollout.ReasonCanaryFailed {
		t.Fatalf("result %s/%s %q", r.Status.Result, r.Status.Reason, r.Status.Message)
	}
	for _, w := range f.wire() {
		if w.server >= 3 {
			t.Errorf("server %d was updated although the canary failed", w.server)
		}
	}
}

func TestCanaryApproval(t *testing.T) {
	f := newFleet(t, fleetOpts{servers: 12})
	f.create("bios", rollout.Policy{MaxUnavailable: rollout.Count(4), Canary: 2, CanaryApproval: true})
	ctx := context.Background()
	r := waitFor(t, f, "bios", func(r *rollout.Rollout) bool {
		c := conditions.Get(r.Status.Conditions, conditions.TypeCompleted)
		return c != nil && c.Reason == rollout.ReasonAwaitingApproval
	})
	if r.Status.Counts.Succeeded != 2 || r.Status.Counts.Running != 0 {
		t.Fatalf("awaiting approval with counts %+v", r.Status.Counts)
	}
	// Passes while waiting start nothing.
	if err := f.ctl.Pass(ctx, "bios"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.wire()); n != 2 {
		t.Fatalf("%d servers updated before the approval, want the 2 of the canary", n)
	}
	if err := f.ctl.ApproveCanary(ctx, "bios"); err != nil {
		t.Fatal(err)
	}
	r = f.wait("bios")
	if r.Status.Result != rollout.ResultSucceeded || r.Status.Counts.Succeeded != 12 {
		t.Fatalf("after approval: %s %+v", r.Status.Result, r.Status.Counts)
	}
}

// waitFor waits (on the Controller's writes) until cond holds; the
// rollout must not complete before.
func waitFor(t *testing.T, f *fleet, name string, cond func(*rollout.Rollout) bool) *rollout.Rollout {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := f.ctl.WaitFor(ctx, name, func(r *rollout.Rollout) bool { return cond(r) || r.Status.Completed() })
	if err != nil {
		t.Fatalf("condition not reached: %v; status %+v", err, r.Status)
	}
	if !cond(r) {
		t.Fatalf("rollout completed (%s %s %+v) before the condition held", r.Status.Result, r.Status.Message, r.Status.Failures)
	}
	return r
}

func TestApprovalGateHoldsAServer(t *testing.T) {
	var mu sync.Mutex
	hold := map[string]bool{"node-003": true}
	f := newFleet(t, fleetOpts{servers: 10, approve: func(_ context.Context, _ string, s rollout.Server) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if s.Name == "node-007" {
			return false, errors.New("owner lookup failed")
		}
		return !hold[s.Name], nil
	}})
	f.create("bios", rollout.Policy{MaxUnavailable: rollout.Count(3)})
	r := waitFor(t, f, "bios", func(r *rollout.Rollout) bool {
		return r.Status.Counts.Succeeded == 8 && r.Status.Counts.Held == 2
	})
	if r.Status.State(3) != rollout.StateHeld || r.Status.State(7) != rollout.StateHeld {
		t.Fatalf("states %s", r.Status.States)
	}
	if len(f.bmcs[3].CallsTo(fake.MethodStartFirmwareUpdate)) != 0 {
		t.Fatal("a held server was updated")
	}
	mu.Lock()
	hold["node-003"] = false
	mu.Unlock()
	r = waitFor(t, f, "bios", func(r *rollout.Rollout) bool { return r.Status.State(3) == rollout.StateSucceeded })
	if r.Status.Completed() || r.Status.Counts.Held != 1 {
		t.Fatalf("with node-007 still held: completed %v, counts %+v", r.Status.Completed(), r.Status.Counts)
	}
	if err := f.ctl.Abort(context.Background(), "bios"); err != nil {
		t.Fatal(err)
	}
	r = f.wait("bios")
	if r.Status.Result != rollout.ResultAborted || r.Status.Counts.Held != 1 {
		t.Fatalf("after abort: %s %+v", r.Status.Result, r.Status.Counts)
	}
}

func TestPauseResume(t *testing.T) {
	f := newFleet(t, fleetOpts{servers: 20, updateTime: 20 * time.Millisecond})
	ctx := context.Background()
	f.create("bios", rollout.Policy{MaxUnavailable: rollout.Count(2), Canary: 0})
	if err := f.ctl.Pause(ctx, "bios"); err != nil {
		t.Fatal(err)
	}
	r := waitFor(t, f, "bios", func(r *rollout.Rollout) bool {
		return conditions.IsTrue(r.Status.Conditions, rollout.TypePaused) && r.Status.Counts.Running == 0
	})
	touched := len(f.wire())
	if err := f.ctl.Pass(ctx, "bios"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.wire()); n != touched || r.Status.Completed() {
		t.Fatalf("paused: %d servers touched, then %d; completed %v", touched, n, r.Status.Completed())
	}
	if err := f.ctl.Resume(ctx, "bios"); err != nil {
		t.Fatal(err)
	}
	r = f.wait("bios")
	if r.Status.Result != rollout.ResultSucceeded || conditions.IsTrue(r.Status.Conditions, rollout.TypePaused) {
		t.Fatalf("after resume: %s, conditions %+v", r.Status.Result, r.Status.Conditions)
	}
}

func TestSpecErrorsNameTheField(t *testing.T) {
	f := newFleet(t, fleetOpts{servers: 3})
	bad := []struct {
		name string
		spec func(s *rollout.Spec)
		want string
	}{
		{"no servers", func(s *rollout.Spec) { s.Servers = nil }, "servers: at least one"},
		{"dup name", func(s *rollout.Spec) { s.Servers[2].Name = s.Servers[0].Name }, "servers[2].name"},
		{"bad bmc", func(s *rollout.Spec) { s.Servers[1].BMC = "ftp://x" }, "servers[1].bmc"},
		{"bad task", func(s *rollout.Spec) { s.Template.Tasks = nil }, "template.tasks"},
		{"group", func(s *rollout.Spec) { s.Policy.MaxUnavailablePerGroup = []rollout.GroupLimit{{Label: ""}} }, "policy.maxUnavailablePerGroup[0].label"},
	}
	for _, b := range bad {
		s := rollout.Spec{Template: firmwareTemplate(), Servers: append([]rollout.Server(nil), f.servers...)}
		b.spec(&s)
		_, err := f.ctl.Create(context.Background(), "x", s)
		if !errors.Is(err, rollout.ErrInvalidSpec) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v, want ErrInvalidSpec naming %q", b.name, err, b.want)
		}
	}
	if _, err := f.ctl.Create(context.Background(), "has.dot", rollout.Spec{Template: firmwareTemplate(), Servers: f.servers}); err == nil {
		t.Error("a rollout name with a '.' was accepted")
	}
	if _, err := f.ctl.Get(context.Background(), "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("an invalid rollout was stored: %v", err)
	}
}

func TestLimitJSON(t *testing.T) {
	for in, want := range map[string]rollout.Limit{`50`: rollout.Count(50), `"50"`: rollout.Count(50), `"5%"`: rollout.Percent(5)} {
		var l rollout.Limit
		if err := l.UnmarshalJSON([]byte(in)); err != nil || l != want {
			t.Errorf("%s: %v %v", in, l, err)
		}
		b, _ := want.MarshalJSON()
		var back rollout.Limit
		if err := back.UnmarshalJSON(b); err != nil || back != want {
			t.Errorf("round trip of %v: %s -> %v %v", want, b, back, err)
		}
	}
	for _, in := range []string{`"x"`, `-1`, `"101%"`, `"5%%"`, `1.5`} {
		var l rollout.Limit
		if err := l.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s accepted as %v", in, l)
		}
	}
	if got := rollout.Percent(2).Of(1000); got != 20 {
		t.Errorf("2%% of 1000 = %d", got)
	}
}

// A firmware path 2.0.0 -> 3.0.0: a server at 3.0.0 is skipped (no job, no
// state-changing request, no slot), one at 2.0.0 gets only 3.0.0, an older
// one both, in order.
func TestFirmwarePathSkipsServersInState(t *testing.T) {
	version := map[int]string{}
	for i := 0; i < 12; i++ {
		switch i % 3 {
		case 1:
			version[i] = "2.0.0"
		case 2:
			version[i] = "3.0.0"
		}
	}
	f := newFleet(t, fleetOpts{servers: 12, version: version})
	tasks, err := task.FirmwarePath("BIOS",
		task.FirmwareStep{Version: "2.0.0", ImageURI: "http://img/bios-2.bin"},
		task.FirmwareStep{Version: "3.0.0", ImageURI: "http://img/bios-3.bin"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range tasks {
		tasks[i].FirmwareUpdate.Reset = task.FirmwareResetNone
	}
	ctx := context.Background()
	if _, err := f.ctl.Create(ctx, "path", rollout.Spec{
		Template: job.Spec{CredentialsRef: "lab", Tasks: tasks}, Servers: f.servers,
		Policy: rollout.Policy{MaxUnavailable: rollout.Count(4)},
	}); err != nil {
		t.Fatal(err)
	}
	r := f.wait("path")
	if r.Status.Result != rollout.ResultSucceeded || r.Status.Counts.Skipped != 4 || r.Status.Counts.Succeeded != 8 {
		t.Fatalf("%s %s %+v", r.Status.Result, r.Status.Message, r.Status.Counts)
	}
	for i, b := range f.bmcs {
		starts := b.CallsTo(fake.MethodStartFirmwareUpdate)
		want := []int{2, 1, 0}[i%3]
		if len(starts) != want {
			t.Errorf("server %d (at %q): %d update starts, want %d", i, version[i], len(starts), want)
		}
		if v := b.FirmwareVersion("BIOS"); v != "3.0.0" {
			t.Errorf("server %d ends at %s", i, v)
		}
		_, err := f.runner.Get(ctx, rollout.JobName("path", i, f.servers[i].Name))
		if skipped := r.Status.State(i) == rollout.StateSkipped; skipped != errors.Is(err, storage.ErrNotFound) {
			t.Errorf("server %d: state %s, job lookup %v", i, r.Status.State(i), err)
		}
	}
}

// concurrentCreates is a Store whose job creates each wait until another
// one is in flight (or 10 s pass: then guard counts it), and that notes the
// most in flight at once.
type concurrentCreates struct {
	storage.Store
	mu             sync.Mutex
	inFlight, most int
	guard          int
	pair           chan struct{}
	paired         bool
}

func (s *concurrentCreates) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if strings.HasPrefix(key, "bmckit/jobs/") {
		s.mu.Lock()
		s.inFlight++
		s.most = max(s.most, s.inFlight)
		if s.inFlight == 2 && !s.paired {
			s.paired = true
			close(s.pair)
		}
		s.mu.Unlock()
		select {
		case <-s.pair:
		case <-time.After(10 * time.Second): // a guard against a hang, not a wait for state
			s.mu.Lock()
			s.guard++
			s.mu.Unlock()
		}
		defer func() {
			s.mu.Lock()
			s.inFlight--
			s.mu.Unlock()
		}()
	}
	return s.Store.Create(ctx, key, value)
}

// TestPassCreatesJobsConcurrently: a pass that starts several servers
// creates their jobs at once, not one after another (a durable store
// commits concurrent writes together; one by one, each waits for its own
// fsync, and the pass, which holds up the next one, for all of them:
// bench/rollout measured the difference, docs/benchmarks.md "Rollouts").
func TestPassCreatesJobsConcurrently(t *testing.T) {
	store := &concurrentCreates{Store: memstore.New(), pair: make(chan struct{})}
	f := newFleet(t, fleetOpts{servers: 4, store: store})
	f.create("bios", rollout.Policy{MaxUnavailable: rollout.Count(4)})
	r := f.wait("bios")
	if r.Status.Result != rollout.ResultSucceeded {
		t.Fatalf("result %s %q", r.Status.Result, r.Status.Message)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.guard > 0 || store.most < 2 {
		t.Errorf("at most %d job creates in flight at once (%d waited 10 s for a second): the pass created its 4 jobs one after another", store.most, store.guard)
	}
}
