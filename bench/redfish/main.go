// Command redfish measures what a netboot job (power off, one-time PXE,
// power on, each verified) costs on the wire when it runs through
// job.Runner and the Redfish driver against redfishtest simulators whose
// power changes land 1-11 s after the request, with requests during a
// pending change dropped. It prints a Markdown report for docs/benchmarks.md.
//
//	go run ./bench/redfish -jobs 20
//
// With -mode wait it compares how power jobs wait for a change that takes
// 8±1 s: fixed polling (1 s and 250 ms), adaptive polling, and the
// EventService's event stream (see wait.go):
//
//	go run ./bench/redfish -mode wait -jobs 20
//
// With -mode lag it measures detection lag and reads per power job, fixed
// 1 s polling against the default schedule, with 32 and 200 systems behind
// one endpoint and two delay spreads (see lag.go):
//
//	go run ./bench/redfish -mode lag -systems 32,200 -spreads 1s-11s,1.8s-2.2s -rounds 6 -warmup 2
//
// With -mode settle it measures PowerSettle 0, 5 s and 12 s against another
// client's pending On that the BMC does not show (see settle.go):
//
//	go run ./bench/redfish -mode settle
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

func main() {
	jobs := flag.Int("jobs", 20, "netboot jobs, one simulated BMC each, run concurrently")
	minDelay := flag.Duration("min-delay", time.Second, "shortest power landing delay")
	maxDelay := flag.Duration("max-delay", 11*time.Second, "longest power landing delay")
	seed := flag.Int64("seed", 1, "random seed for the delays")
	mode := flag.String("mode", "netboot", "netboot: concurrent netboot jobs; wait: power-wait strategies on the -mean±-spread personality")
	mean := flag.Duration("mean", 8*time.Second, "wait mode: mean power landing delay")
	spread := flag.Duration("spread", time.Second, "wait mode: the delay is uniform in mean±spread")
	warmup := flag.Int("warmup", 6, "wait mode: jobs per strategy left out of the figures (adaptive polling learns from 3 changes per action); lag mode: jobs per system")
	systems := flag.String("systems", "32,200", "lag mode: systems behind the one endpoint, comma-separated")
	spreads := flag.String("spreads", "1s-11s,1.8s-2.2s", "lag mode: delay spreads min-max, comma-separated")
	rounds := flag.Int("rounds", 6, "lag mode: jobs per system, one after the other")
	reps := flag.Int("reps", 1, "lag mode: alternating repetitions of every run")
	pause := flag.Duration("pause", 0, "lag mode: a system pauses uniformly 0-2*pause before each job")
	rps := flag.Float64("rps", 0, "lag mode: the driver's RequestsPerSecond (0: its default, 50)")
	pending := flag.Duration("pending", 10600*time.Millisecond, "settle mode: when the other client's On lands")
	flag.Parse()
	var err error
	switch {
	case *mode == "lag":
		var ns []int
		var sps []lagSpread
		if ns, err = parseInts(*systems); err == nil {
			if sps, err = parseSpreads(*spreads); err == nil {
				err = runLag(ns, sps, *rounds, *warmup, *reps, *pause, *rps, *seed)
			}
		}
	case *mode == "settle":
		err = runSettle([]time.Duration{0, 5 * time.Second, 12 * time.Second}, *pending)
	case *mode == "wait":
		err = runWait(*jobs, *warmup, *mean, *spread, *seed)
	default:
		err = run(*jobs, *minDelay, *maxDelay, *seed)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/redfish:", err)
		os.Exit(1)
	}
}

// observation is one PowerState answer.
type observation struct {
	at    time.Time
	state bmc.PowerState
}

// meter wraps a driver and measures each call's requests.
type meter struct {
	drv bmc.Driver
	mu  sync.Mutex
	obs []observation
	// requests per call kind
	calls map[string][]int64
}

func (m *meter) measure(kind string, fn func() error) error {
	sr := m.drv.(bmc.StatsReporter)
	before := sr.Stats().Requests
	err := fn()
	d := sr.Stats().Requests - before
	m.mu.Lock()
	m.calls[kind] = append(m.calls[kind], d)
	m.mu.Unlock()
	return err
}

func (m *meter) PowerState(ctx context.Context) (bmc.PowerState, error) {
	var st bmc.PowerState
	err := m.measure("PowerState", func() error {
		var err error
		st, err = m.drv.PowerState(ctx)
		return err
	})
	m.mu.Lock()
	m.obs = append(m.obs, observation{time.Now(), st})
	m.mu.Unlock()
	return st, err
}

func (m *meter) SetPower(ctx context.Context, a bmc.PowerAction) error {
	return m.measure("SetPower("+string(a)+")", func() error { return m.drv.SetPower(ctx, a) })
}

func (m *meter) Close(ctx context.Context) error {
	return m.measure("Close", func() error { return m.drv.Close(ctx) })
}

func (m *meter) SetBootOverride(ctx context.Context, o bmc.BootOverride) error {
	return m.measure("SetBootOverride", func() error { return m.drv.(bmc.BootOverrideSetter).SetBootOverride(ctx, o) })
}

func (m *meter) BootOverride(ctx context.Context) (bmc.BootOverride, error) {
	var o bmc.BootOverride
	err := m.measure("BootOverride", func() error {
		var err error
		o, err = m.drv.(bmc.BootOverrideGetter).BootOverride(ctx)
		return err
	})
	return o, err
}

func (m *meter) Stats() bmc.Stats { return m.drv.(bmc.StatsReporter).Stats() }

var (
	_ bmc.Driver             = (*meter)(nil)
	_ bmc.BootOverrideSetter = (*meter)(nil)
	_ bmc.BootOverrideGetter = (*meter)(nil)
	_ bmc.StatsReporter      = (*meter)(nil)
)

type result struct {
	srv   *redfishtest.Server
	meter *meter
	job   *job.Job
	dial  bmc.Stats
}

func run(n int, minDelay, maxDelay time.Duration, seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	var rngMu sync.Mutex
	delay := func() time.Duration {
		rngMu.Lock()
		defer rngMu.Unlock()
		return minDelay + time.Duration(rng.Int63n(int64(maxDelay-minDelay)+1))
	}
	results := map[string]*result{}
	var mu sync.Mutex
	inner := redfish.NewDialer(redfish.Options{})
	dialer := bmc.DialerFunc(func(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
		d, err := inner.Dial(ctx, ep, creds)
		if err != nil {
			return nil, err
		}
		m := &meter{drv: d, calls: map[string][]int64{}}
		mu.Lock()
		results[ep.String()].meter = m
		results[ep.String()].dial = d.(bmc.StatsReporter).Stats()
		mu.Unlock()
		return m, nil
	})
	var sd bmc.SchemeDialer
	sd.Register("redfish", dialer)

	r, err := job.NewRunner(job.Config{
		Store: memstore.New(),
		StepperConfig: job.StepperConfig{
			Dialer:      &sd,
			Credentials: bmc.StaticCredentials{"lab": {Username: "admin", Password: "redfishtest-secret"}},
		},

		Workers: n,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()

	names := make([]string, n)
	for i := range n {
		srv := redfishtest.NewServer(redfishtest.Config{PowerDelayFunc: delay, DropDuringTransition: true})
		defer srv.Close()
		srv.SetPower("1", "On")
		ep := srv.Endpoint("1")
		mu.Lock()
		results[ep.String()] = &result{srv: srv}
		mu.Unlock()
		names[i] = fmt.Sprintf("netboot-%d", i)
		spec := job.Spec{BMC: ep.String(), CredentialsRef: "lab", Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		}}
		if _, err := r.Submit(ctx, names[i], spec); err != nil {
			return err
		}
	}
	start := time.Now()
	for _, name := range names {
		j, err := r.Wait(ctx, name)
		if err != nil {
			return err
		}
		mu.Lock()
		results[j.Spec.BMC].job = j
		mu.Unlock()
	}
	elapsed := time.Since(start)
	cancel()
	<-done
	return report(n, minDelay, maxDelay, elapsed, results)
}

func report(n int, minDelay, maxDelay, elapsed time.Duration, results map[string]*result) error {
	var (
		perJob, logins, conns, dialReqs []int64
		lags                            []time.Duration
		calls                           = map[string][]int64{}
		failed                          int
	)
	for _, res := range results {
		if res.job == nil || res.meter == nil {
			return fmt.Errorf("a job did not run")
		}
		if res.job.Status.Result != conditions.ResultSucceeded {
			failed++
			fmt.Fprintf(os.Stderr, "job %s: %s: %s\n", res.job.Name, res.job.Status.Result, res.job.Status.Message)
		}
		perJob = append(perJob, int64(len(res.srv.Requests())))
		logins = append(logins, res.srv.Logins())
		conns = append(conns, res.srv.Connections())
		dialReqs = append(dialReqs, res.dial.Requests)
		res.meter.mu.Lock()
		for k, v := range res.meter.calls {
			calls[k] = append(calls[k], v...)
		}
		obs := append([]observation(nil), res.meter.obs...)
		res.meter.mu.Unlock()
		for _, ch := range res.srv.PowerChanges() {
			want := bmc.PowerState(ch.Target)
			for _, o := range obs {
				if !o.at.Before(ch.Lands) && o.state == want {
					lags = append(lags, o.at.Sub(ch.Lands))
					break
				}
			}
		}
	}
	fmt.Printf("Netboot jobs (power off, PXE once UEFI, power on; each verified) through job.Runner with default\n")
	fmt.Printf("settings and the Redfish driver, %d jobs on %d simulated BMCs at once, power landing %s-%s late,\n", n, n, minDelay, maxDelay)
	fmt.Printf("requests during a pending change dropped. %d failed. Wall time %s.\n\n", failed, elapsed.Round(100*time.Millisecond))
	fmt.Println("| measure | min | median | max |")
	fmt.Println("|---|---|---|---|")
	row := func(name string, v []int64) {
		if len(v) == 0 {
			return
		}
		slices.Sort(v)
		fmt.Printf("| %s | %d | %d | %d |\n", name, v[0], v[len(v)/2], v[len(v)-1])
	}
	row("HTTP requests per job (server log)", perJob)
	row("logins per job", logins)
	row("TCP connections per job", conns)
	row("requests to dial (root, session, system)", dialReqs)
	keys := make([]string, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		row(fmt.Sprintf("requests per %s call (%d calls)", k, len(calls[k])), calls[k])
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		p := func(q float64) time.Duration { return lags[int(q*float64(len(lags)-1))].Round(time.Millisecond) }
		fmt.Printf("| detection lag, landing to first PowerState showing it (%d changes) | %s | %s (p90 %s) | %s |\n",
			len(lags), lags[0].Round(time.Millisecond), p(0.5), p(0.9), lags[len(lags)-1].Round(time.Millisecond))
	}
	fmt.Println()
	fmt.Println("Minimum the actions need: dial 3 (service root, session, system) + power off 1 (POST; its")
	fmt.Println("pre-read is dial's GET, bmc.ReadScope) + boot override 2 (PATCH, read-back GET) + power on 1")
	fmt.Println("(POST; pre-read is the read-back) + logout 1 = 8 requests, plus at least one verifying GET per")
	fmt.Println("power change: 10.")
	if failed > 0 {
		return fmt.Errorf("%d jobs failed", failed)
	}
	return nil
}
