package stagger_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/stagger"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// The guarantee at the BMC, on the real clock: 40 servers in one group, at
// most 5 power-ons per 2 s, two Runners (each with its own Limiter) sharing a
// memstore, and fake BMCs that stamp each power-on when it takes effect,
// after the BMC's latency. No 2-s window may hold more than 5 effects, in 20
// runs of each scenario.
const (
	realServers  = 40
	realLimit    = 5
	realInterval = 2 * time.Second
	realRuns     = 20
	// realAtOnce is how many runs of a scenario go at once (each has its own
	// store, fleet and group); the others wait for a free place.
	realAtOnce = 20
)

type realScenario struct {
	name string
	// latency is BMC i's latency on every call (fake.Options.Latency).
	latency func(rng *rand.Rand, i int) time.Duration
	// dialDelay: each Dial, and each power request after it is sent (a
	// transport that opens a fresh connection after bmc.Admit), waits
	// 0–1.5 s.
	dialDelay bool
	// failFirst: every server's first power request fails (transient,
	// after the BMC's latency, without effect) and the job retries it.
	failFirst bool
	// busy: spinning goroutines keep every CPU busy during the runs.
	busy bool
}

func spread(rng *rand.Rand, _ int) time.Duration {
	return time.Duration(rng.Int64N(int64(800 * time.Millisecond)))
}

func TestRealClockBoundAtTheBMC(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock runs take about a minute per scenario; not with -short")
	}
	for _, sc := range []realScenario{
		{name: "equal", latency: func(*rand.Rand, int) time.Duration { return 100 * time.Millisecond }},
		{name: "latency_spread", latency: spread},
		{name: "cpu_busy", latency: spread, busy: true},
		{name: "dial_delays", latency: spread, dialDelay: true},
		{name: "retried_request", latency: spread, failFirst: true},
	} {
		t.Run(sc.name, func(t *testing.T) {
			if sc.busy {
				stop := spin(2 * runtime.GOMAXPROCS(0))
				defer stop()
			}
			start := time.Now()
			cpu0 := cpuTime()
			results := make([]realResult, realRuns)
			sem := make(chan struct{}, realAtOnce)
			var wg sync.WaitGroup
			for run := range realRuns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					results[run] = realRun(t, sc, uint64(run))
				}()
			}
			wg.Wait()
			worst, spans := 0, []time.Duration{}
			var perRun []int
			for run, r := range results {
				assert.LessOrEqual(t, r.maxPerWindow, realLimit, "run %d (seed %d): a %v window held %d power-ons: %v", run, run, realInterval, r.maxPerWindow, r.busiest)
				worst = max(worst, r.maxPerWindow)
				perRun = append(perRun, r.maxPerWindow)
				spans = append(spans, r.span)
			}
			sort.Slice(spans, func(a, b int) bool { return spans[a] < spans[b] })
			t.Logf("%s: %d runs, max power-ons in any %v window: %d (per run %v); first to last power-on %v..%v; %v wall, %v CPU for all runs",
				sc.name, realRuns, realInterval, worst, perRun, spans[0].Round(10*time.Millisecond), spans[len(spans)-1].Round(10*time.Millisecond),
				time.Since(start).Round(100*time.Millisecond), (cpuTime() - cpu0).Round(100*time.Millisecond))
		})
	}
}

type realResult struct {
	maxPerWindow int
	busiest      []string // the busiest window's effects, for the failure message
	span         time.Duration
}

// realRun runs one scenario once and returns what the BMCs saw.
func realRun(t *testing.T, sc realScenario, seed uint64) realResult {
	rng := rand.New(rand.NewPCG(seed, 27))
	var mu sync.Mutex
	pending := map[string]time.Time{} // system -> effect time of its SetPower in progress
	var effects []time.Time
	fleet := fake.NewFleet()
	var urls []string
	for i := range realServers {
		u := fmt.Sprintf("redfish://10.27.%d.%d/redfish/v1/Systems/1", seed, i+1)
		ep, err := bmc.ParseEndpoint(u)
		require.NoError(t, err)
		key := ep.SystemKey()
		b, err := fleet.AddNew(u, fake.Options{Power: bmc.PowerOff, Latency: sc.latency(rng, i), Hooks: map[fake.Method]fake.Hook{
			// After the latency, right before the effect: the time the
			// power-on takes effect, committed when the call succeeds.
			fake.MethodSetPower: func(_ context.Context, c fake.Call) error {
				if c.Args[0] == bmc.PowerActionOn {
					mu.Lock()
					pending[key] = time.Now()
					mu.Unlock()
				}
				return nil
			},
		}})
		require.NoError(t, err)
		if sc.failFirst {
			b.FailNext(fake.MethodSetPower, 1, bmc.Transient(errors.New("connection reset by peer (injected)")))
		}
		urls = append(urls, u)
	}
	d := &realDialer{fleet: fleet, seed: seed, delays: sc.dialDelay, commit: func(system string) {
		mu.Lock()
		effects = append(effects, pending[system])
		delete(pending, system)
		mu.Unlock()
	}}
	store := memstore.New()
	var runners []*job.Runner
	for r := range 2 {
		lim, err := stagger.New(stagger.Config{Store: store, Group: func(string) string { return "pdu-1" }, Limit: realLimit, Interval: realInterval})
		require.NoError(t, err)
		runner, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{
			Dialer:    d,
			PowerGate: lim,
		}, Owner: fmt.Sprintf("replica-%d", r),
			Workers: 16, ScanInterval: 50 * time.Millisecond})
		require.NoError(t, err)
		runners = append(runners, runner)
	}
	for i, u := range urls {
		_, err := runners[i%2].Submit(context.Background(), fmt.Sprintf("on-%02d", i),
			job.Spec{BMC: u, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}})
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Add(1)
		go func() { defer wg.Done(); assert.NoError(t, r.Start(ctx)) }()
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	for i := range urls {
		j, err := runners[0].Wait(wctx, fmt.Sprintf("on-%02d", i))
		if assert.NoError(t, err, "job on-%02d (seed %d)", i, seed) {
			assert.Equal(t, conditions.ResultSucceeded, j.Status.Result, "job %s (seed %d): %s", j.Name, seed, j.Status.Message)
		}
	}
	wcancel()
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, effects, realServers, "seed %d: one power-on per server", seed)
	sort.Slice(effects, func(a, b int) bool { return effects[a].Before(effects[b]) })
	res := realResult{}
	if len(effects) > 0 {
		res.span = effects[len(effects)-1].Sub(effects[0])
	}
	for i := range effects {
		n := sort.Search(len(effects), func(k int) bool { return !effects[k].Before(effects[i].Add(realInterval)) }) - i
		if n > res.maxPerWindow {
			res.maxPerWindow, res.busiest = n, nil
			for _, e := range effects[i : i+n] {
				res.busiest = append(res.busiest, e.Sub(effects[0]).Round(time.Millisecond).String())
			}
		}
	}
	return res
}

// realDialer dials the fleet, after a delay when delays, and wraps each
// driver so that a successful power-on commits its effect time.
type realDialer struct {
	fleet  *fake.Fleet
	seed   uint64
	delays bool
	commit func(system string)
	n      atomic.Uint64
}

// delay waits 0–1.5 s (a fresh random draw each time) or until ctx ends.
func (d *realDialer) delay(ctx context.Context) error {
	if !d.delays {
		return nil
	}
	rng := rand.New(rand.NewPCG(d.seed, d.n.Add(1)))
	tm := time.NewTimer(time.Duration(rng.Int64N(int64(1500 * time.Millisecond))))
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return bmc.Transient(ctx.Err())
	case <-tm.C:
		return nil
	}
}

func (d *realDialer) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	if err := d.delay(ctx); err != nil {
		return nil, err
	}
	drv, err := d.fleet.Dial(ctx, ep, creds)
	if err != nil {
		return nil, err
	}
	return &realDriver{Driver: drv, d: d, system: ep.SystemKey()}, nil
}

type realDriver struct {
	bmc.Driver
	d      *realDialer
	system string
}

func (r *realDriver) SetPower(ctx context.Context, a bmc.PowerAction) error {
	if r.d.delays {
		// Sent (the request passed bmc.Admit, as in a driver's transport),
		// then a fresh connection is dialed before it reaches the BMC.
		if err := bmc.Admit(ctx); err != nil {
			return err
		}
		if err := r.d.delay(ctx); err != nil {
			return err
		}
	}
	err := r.Driver.SetPower(ctx, a)
	if err == nil && a == bmc.PowerActionOn {
		r.d.commit(r.system)
	}
	return err
}

// spin keeps n goroutines busy until stop is called.
func spin(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for !done.Load() {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	return func() { done.Store(true); wg.Wait() }
}
