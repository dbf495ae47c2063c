package job_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/stagger"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

var (
	_ job.PowerGate     = (*stagger.Limiter)(nil)
	_ job.HeldPowerGate = (*stagger.Limiter)(nil)
)

// Staggering: 100 servers in one group, at most 10 power-ons per 5 s, through
// real Runners on a fake clock: one runner, a runner restarted mid-way on a
// reopened boltstore, and two replicas sharing a store.
const (
	staggerServers  = 100
	staggerLimit    = 10
	staggerInterval = 5 * time.Second
	staggerStep     = 100 * time.Millisecond // how far the fake clock moves at a time
)

// staggerHarness is a fleet of fake BMCs on a fake clock that records when
// every power on, cycle and reset was accepted, and the goroutine that moves
// the clock. The clock never moves between an admission and the SetPower
// that follows it (inflight counts them), so the time recorded is the time
// the Limiter stamped.
type staggerHarness struct {
	t     *testing.T
	clk   *clock.Fake
	fleet *fake.Fleet
	urls  []string

	mu       sync.Mutex
	inflight int // admitted, SetPower not yet returned
	ons      []staggerOn
	changed  chan struct{} // closed and replaced when ons grows

	paused sync.Mutex // held by drive while it advances; a test holds it to stop time

	// The holdAt-th power-on request (counting from 1; 0: none) waits in
	// SetPower until its ctx ends or release is closed; held is closed
	// when it starts waiting and heldSystem names it.
	holdAt      int
	attempts    int
	held        chan struct{}
	release     chan struct{}
	heldSystem  string
	releaseOnce sync.Once
}

type staggerOn struct {
	system string
	at     time.Time
}

func newStaggerHarness(t *testing.T, power bmc.PowerState) *staggerHarness {
	h := &staggerHarness{t: t, clk: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		fleet: fake.NewFleet(), changed: make(chan struct{}), held: make(chan struct{}), release: make(chan struct{})}
	for i := 0; i < staggerServers; i++ {
		u := fmt.Sprintf("redfish://10.9.%d.%d/redfish/v1/Systems/1", i/200, i%200+1)
		_, err := h.fleet.AddNew(u, fake.Options{Power: power, Clock: h.clk})
		require.NoError(t, err)
		h.urls = append(h.urls, u)
	}
	return h
}

// limiter is a Limiter on store with one group for the whole fleet, wrapped
// so that the clock waits for the SetPower an admission leads to.
func (h *staggerHarness) limiter(store storage.Store) job.PowerGate {
	l, err := stagger.New(stagger.Config{
		Store: store, Group: func(string) string { return "rack-1" },
		Limit: staggerLimit, Interval: staggerInterval, Clock: h.clk,
	})
	require.NoError(h.t, err)
	return heldGate{h, l}
}

type heldGate struct {
	h   *staggerHarness
	lim *stagger.Limiter
}

func (g heldGate) Admit(ctx context.Context, system, jobName string, taskIndex int) (time.Duration, error) {
	g.h.mu.Lock()
	g.h.inflight++
	g.h.mu.Unlock()
	w, err := g.lim.Admit(ctx, system, jobName, taskIndex)
	if err != nil || w > 0 { // nothing will be sent
		g.h.mu.Lock()
		g.h.inflight--
		g.h.mu.Unlock()
	}
	return w, err
}

// AdmitHeld is the path the Stepper takes with a *stagger.Limiter (slots
// held open until the request's call returned), counted like Admit.
func (g heldGate) AdmitHeld(ctx context.Context, system, jobName string, taskIndex int) (context.Context, func(context.Context), time.Duration, error) {
	g.h.mu.Lock()
	g.h.inflight++
	g.h.mu.Unlock()
	send, release, w, err := g.lim.AdmitHeld(ctx, system, jobName, taskIndex)
	if err != nil || w > 0 { // nothing will be sent
		g.h.mu.Lock()
		g.h.inflight--
		g.h.mu.Unlock()
	}
	return send, release, w, err
}

var _ job.HeldPowerGate = heldGate{}

// Dial wraps the fleet's drivers to record power-ons.
func (h *staggerHarness) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	d, err := h.fleet.Dial(ctx, ep, creds)
	if err != nil {
		return nil, err
	}
	return &staggerDriver{Driver: d, h: h, system: ep.SystemKey()}, nil
}

type staggerDriver struct {
	bmc.Driver
	h      *staggerHarness
	system string
}

func (d *staggerDriver) SetPower(ctx context.Context, a bmc.PowerAction) error {
	if a == bmc.PowerActionOff || a == bmc.PowerActionSoftOff {
		return d.Driver.SetPower(ctx, a) // not gated
	}
	at := d.h.clk.Now()
	d.h.mu.Lock()
	d.h.attempts++
	hold := d.h.attempts == d.h.holdAt
	if hold {
		d.h.heldSystem = d.system
		close(d.h.held)
	}
	d.h.mu.Unlock()
	if hold {
		select {
		case <-ctx.Done():
		case <-d.h.release:
		}
	}
	err := d.Driver.SetPower(ctx, a)
	d.h.mu.Lock()
	defer d.h.mu.Unlock()
	d.h.inflight--
	if err == nil {
		d.h.ons = append(d.h.ons, staggerOn{d.system, at})
		close(d.h.changed)
		d.h.changed = make(chan struct{})
	}
	return err
}

// startDriving runs drive until the test's cleanups, after the runners
// started later have stopped (cleanups run last-in first-out), so their
// shutdown can still wait on the clock.
func (h *staggerHarness) startDriving() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.drive(ctx) }()
	h.t.Cleanup(func() { cancel(); <-done })
}

// drive moves the fake clock by staggerStep whenever the goroutines it woke
// have gone quiet (no new timer for 2 ms of real time) and no admitted
// action is waiting to be sent, until ctx ends.
func (h *staggerHarness) drive(ctx context.Context) {
	for {
		for quiet, rounds := false, 0; !quiet && rounds < 100; rounds++ {
			select {
			case <-ctx.Done():
				return
			case <-h.clk.WaiterAdded():
			case <-time.After(2 * time.Millisecond):
				quiet = true
			}
		}
		for advanced := false; !advanced; {
			h.paused.Lock()
			h.mu.Lock()
			if h.inflight == 0 {
				h.clk.Advance(staggerStep)
				advanced = true
			}
			h.mu.Unlock()
			h.paused.Unlock()
			if !advanced {
				select {
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Microsecond):
				}
			}
		}
	}
}

func (h *staggerHarness) runner(store storage.Store, owner string) *job.Runner {
	r, err := job.NewRunner(job.Config{
		Store: store, StepperConfig: job.StepperConfig{
			Dialer:    h,
			PowerGate: h.limiter(store),
			Clock:     h.clk,
		}, Owner: owner,
		Workers: 32, ScanInterval: 200 * time.Millisecond,
		// Long enough that a slow machine never lets a lease lapse while
		// the fake clock runs ahead of a busy worker.
		LeaseDuration: time.Hour,
	})
	require.NoError(h.t, err)
	return r
}

// start runs r until the returned stop is called; stop waits for Start to return.
func (h *staggerHarness) start(r *job.Runner) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		// A held request goes on once its ctx ended (or at once, if the
		// runner does not cancel requests in flight when it stops).
		h.releaseOnce.Do(func() { close(h.release) })
		select {
		case err := <-done:
			assert.NoError(h.t, err)
		case <-time.After(30 * time.Second):
			h.t.Fatal("Runner.Start did not return within 30s of its ctx ending")
		}
	}
	h.t.Cleanup(stop)
	return stop
}

func staggerSpec(url string, cycle bool) job.Spec {
	tasks := []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}, {Power: &task.PowerAction{Op: task.PowerOn}}}
	if cycle {
		tasks = []task.Spec{{Power: &task.PowerAction{Op: task.PowerCycle}}}
	}
	return job.Spec{BMC: url, Tasks: tasks}
}

func staggerJob(i int) string { return fmt.Sprintf("stagger-%03d", i) }

// waitAll waits for every job through r and checks it succeeded.
func (h *staggerHarness) waitAll(r *job.Runner) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range h.urls {
		j, err := r.Wait(ctx, staggerJob(i))
		require.NoError(h.t, err, "job %s", staggerJob(i))
		require.Equal(h.t, conditions.ResultSucceeded, j.Status.Result, "job %s: %s", j.Name, j.Status.Message)
	}
}

// check asserts one power-on per server and no Interval-long stretch with
// more than Limit of them, and returns the span from first to last.
func (h *staggerHarness) check() time.Duration {
	h.t.Helper()
	h.mu.Lock()
	ons := append([]staggerOn(nil), h.ons...)
	h.mu.Unlock()
	per := map[string]int{}
	for _, o := range ons {
		per[o.system]++
	}
	assert.Len(h.t, per, staggerServers, "every server powered on")
	for s, n := range per {
		assert.Equal(h.t, 1, n, "%s powered on %d times", s, n)
	}
	sort.Slice(ons, func(a, b int) bool { return ons[a].at.Before(ons[b].at) })
	violations := 0
	for i := 0; i+staggerLimit < len(ons); i++ {
		// ons[i..i+Limit] are Limit+1 actions: they must span a whole Interval.
		if span := ons[i+staggerLimit].at.Sub(ons[i].at); span < staggerInterval {
			if violations++; violations > 3 {
				continue
			}
			h.t.Errorf("%d power-ons within %v (from %s at %s to %s at %s)", staggerLimit+1, span,
				ons[i].system, ons[i].at.Format("15:04:05.000"), ons[i+staggerLimit].system, ons[i+staggerLimit].at.Format("15:04:05.000"))
		}
	}
	if violations > 0 {
		h.t.Errorf("%d stretches of %v held more than %d power-ons", violations, staggerInterval, staggerLimit)
	}
	require.NotEmpty(h.t, ons)
	span := ons[len(ons)-1].at.Sub(ons[0].at)
	// 100 actions at 10 per 5 s: the 91st cannot come before 9 windows.
	assert.GreaterOrEqual(h.t, span, time.Duration(staggerServers/staggerLimit-1)*staggerInterval)
	return span
}

func (h *staggerHarness) firstOn() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := h.ons[0].at
	for _, o := range h.ons {
		if o.at.Before(first) {
			first = o.at
		}
	}
	return first
}

// perWindow renders how many power-ons fell in each 5-s slot after the first.
func (h *staggerHarness) perWindow() []int {
	first := h.firstOn()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int
	for _, o := range h.ons {
		k := int(o.at.Sub(first) / staggerInterval)
		for len(out) <= k {
			out = append(out, 0)
		}
		out[k]++
	}
	return out
}

func TestStaggerRunnerFakeClock(t *testing.T) {
	h := newStaggerHarness(t, bmc.PowerOff)
	store := memstore.New()
	r := h.runner(store, "runner")
	for i, u := range h.urls {
		_, err := r.Submit(context.Background(), staggerJob(i), staggerSpec(u, false))
		require.NoError(t, err)
	}
	h.startDriving()
	h.start(r)
	h.waitAll(r)
	span := h.check()
	t.Logf("100 power-ons, limit 10 per 5s, one runner: last %v after the first (fake clock); per 5s: %v", span, h.perWindow())
}

// A runner stopped mid-way and a new one (new Limiter, reopened store): the
// window carries over through the store. The runner stops while one
// admitted power-on has not been sent yet, so the new runner sends it later
// than it was first admitted.
func TestStaggerRunnerRestart(t *testing.T) {
	h := newStaggerHarness(t, bmc.PowerOff)
	h.holdAt = 36
	path := filepath.Join(t.TempDir(), "bmckit.db")
	store, err := boltstore.Open(path, boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() }) // after the runner stopped
	r := h.runner(store, "runner")
	for i, u := range h.urls {
		_, err := r.Submit(context.Background(), staggerJob(i), staggerSpec(u, false))
		require.NoError(t, err)
	}
	h.startDriving()
	stop := h.start(r)
	select {
	case <-h.held:
	case <-time.After(60 * time.Second):
		t.Fatal("the 36th power-on was not requested within 60s")
	}
	// Stop time while the runner restarts, so the new one starts inside the
	// window of the old one's last admissions.
	h.paused.Lock()
	at := h.clk.Now()
	stop()
	h.mu.Lock()
	before, held := len(h.ons), h.heldSystem
	h.mu.Unlock()
	require.NoError(t, store.Close())
	store, err = boltstore.Open(path, boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	r = h.runner(store, "runner")
	h.start(r)
	h.paused.Unlock()

	h.waitAll(r)
	span := h.check()
	var sent time.Time
	h.mu.Lock()
	for _, o := range h.ons {
		if o.system == held {
			sent = o.at
		}
	}
	h.mu.Unlock()
	t.Logf("restart at fake %s after %d power-ons, %s admitted but not sent; sent at %s by the new runner; last power-on %v after the first; per 5s: %v",
		at.Format("15:04:05.0"), before, held, sent.Format("15:04:05.0"), span, h.perWindow())
}

// Two replicas, two Limiters, one store; jobs are power cycles.
func TestStaggerRunnerReplicas(t *testing.T) {
	h := newStaggerHarness(t, bmc.PowerOn)
	store := memstore.New()
	rs := []*job.Runner{h.runner(store, "replica-0"), h.runner(store, "replica-1")}
	for i, u := range h.urls {
		_, err := rs[i%2].Submit(context.Background(), staggerJob(i), staggerSpec(u, true))
		require.NoError(t, err)
	}
	h.startDriving()
	for _, r := range rs {
		h.start(r)
	}
	h.waitAll(rs[1])
	span := h.check()
	t.Logf("two replicas, power cycles: last %v after the first; per 5s: %v", span, h.perWindow())
}
