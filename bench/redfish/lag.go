package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bench/internal/measure"
	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// The "lag" mode measures the detection lag of power changes and the reads
// it costs, fixed 1 s polling against the default (adaptive) schedule, with
// many systems behind one endpoint: -systems systems on one redfishtest
// simulator (EndpointConcurrency = -systems, the driver's default request
// budget), each running -rounds power jobs one after the other (on, off,
// on, ...), all systems at once. Each change lands after a delay drawn
// per change from a spread (-spreads). Runs alternate between the two
// strategies (fixed, adaptive, adaptive, fixed, ...), each with a fresh
// simulator and Runner, so both see the same load on the machine.

type lagSpread struct {
	name     string
	min, max time.Duration
}

func parseSpreads(s string) ([]lagSpread, error) {
	var out []lagSpread
	for _, f := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(f, "-")
		if !ok {
			return nil, fmt.Errorf("-spreads: %q is not min-max (e.g. 1s-11s)", f)
		}
		a, err := time.ParseDuration(lo)
		if err != nil {
			return nil, fmt.Errorf("-spreads: %q: %w", f, err)
		}
		b, err := time.ParseDuration(hi)
		if err != nil || b < a {
			return nil, fmt.Errorf("-spreads: %q: max must be a duration >= min", f)
		}
		out = append(out, lagSpread{name: f, min: a, max: b})
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-systems: %q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

type lagStrategy struct {
	name string
	cfg  job.Config
}

func lagStrategies() []lagStrategy {
	return []lagStrategy{
		{name: "fixed 1 s", cfg: job.Config{StepperConfig: job.StepperConfig{PollInterval: time.Second, AdaptivePoll: job.AdaptivePoll{Disabled: true}}}},
		{name: "adaptive (default)", cfg: job.Config{}},
	}
}

// lagRun is what one run measured.
type lagRun struct {
	lags     []time.Duration // per measured change
	reads    []int           // per measured change: GETs of the system from the reset POST to the first GET showing the change
	requests int             // every request of the run
	wall     time.Duration
	cpu      time.Duration
	busiest  int // requests in the busiest one-second window at the simulator
	changes  int // measured changes
}

func runLag(systems []int, spreads []lagSpread, rounds, warmup, reps int, pause time.Duration, rps float64, seed int64) error {
	ss := lagStrategies()
	type key struct{ spread, n, strat int }
	res := map[key]*lagRun{}
	start := time.Now()
	for rep := range reps {
		for si, sp := range spreads {
			for ni, n := range systems {
				order := []int{0, 1}
				if (rep+si+ni)%2 == 1 {
					order = []int{1, 0}
				}
				for _, k := range order {
					r, err := runLagOnce(ss[k].cfg, n, sp, rounds, warmup, pause, rps, seed+int64(rep))
					if err != nil {
						return fmt.Errorf("%s, %d systems, %s: %w", sp.name, n, ss[k].name, err)
					}
					acc := res[key{si, ni, k}]
					if acc == nil {
						acc = &lagRun{}
						res[key{si, ni, k}] = acc
					}
					acc.lags = append(acc.lags, r.lags...)
					acc.reads = append(acc.reads, r.reads...)
					acc.requests += r.requests
					acc.wall += r.wall
					acc.cpu += r.cpu
					acc.busiest = max(acc.busiest, r.busiest)
					acc.changes += r.changes
				}
			}
		}
	}
	budget := "the default request budget, 50/s"
	if rps != 0 {
		budget = fmt.Sprintf("RequestsPerSecond %g", rps)
	}
	fmt.Printf("Power jobs through job.Runner and the Redfish driver (%s), N systems behind\n", budget)
	fmt.Printf("one simulated endpoint (EndpointConcurrency N), each system running\n")
	fmt.Printf("%d jobs one after the other (on, off, ...), the first %d per system left out (learning); delays\n", rounds, warmup)
	fmt.Printf("uniform in the spread, drawn per change (seed %d); %d alternating repetitions; before each job a\n", seed, reps)
	fmt.Printf("system pauses uniformly 0-%s. Wall time %s.\n\n", 2*pause, time.Since(start).Round(time.Second))
	fmt.Println("| delays | systems | strategy | changes | lag median | p95 | max | polls per job | vs fixed 1 s | requests/s | busiest second | CPU per job |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for si, sp := range spreads {
		for ni, n := range systems {
			var base float64
			for k, s := range ss {
				r := res[key{si, ni, k}]
				slices.Sort(r.lags)
				q := func(f float64) time.Duration { return r.lags[int(f*float64(len(r.lags)-1))].Round(time.Millisecond) }
				var reads int
				for _, x := range r.reads {
					reads += x
				}
				rj := float64(reads) / float64(len(r.reads))
				if k == 0 {
					base = rj
				}
				if os.Getenv("LAGDEBUG") != "" {
					hist := map[int]int{}
					for _, x := range r.reads {
						hist[x]++
					}
					fmt.Fprintln(os.Stderr, sp.name, n, s.name, "polls histogram", hist)
				}
				fmt.Printf("| %s | %d | %s | %d | %s | %s | %s | %.2f | %.2f | %.1f | %d | %s |\n", sp.name, n, s.name, r.changes,
					q(0.5), q(0.95), r.lags[len(r.lags)-1].Round(time.Millisecond), rj, rj/base, float64(r.requests)/r.wall.Seconds(), r.busiest,
					(r.cpu / time.Duration(n*rounds*reps)).Round(10*time.Microsecond))
			}
		}
	}
	fmt.Println()
	fmt.Println("lag: from the change landing to the first GET of the system the simulator received after it.")
	fmt.Println("polls per job: GETs of the system after the action's read-back, up to and including that GET.")
	fmt.Println("CPU per job: the process's CPU (simulator included) over the run, divided by its jobs.")
	return nil
}

func runLagOnce(base job.Config, n int, sp lagSpread, rounds, warmup int, pause time.Duration, rps float64, seed int64) (*lagRun, error) {
	rng := rand.New(rand.NewSource(seed))
	var rngMu sync.Mutex
	delay := func() time.Duration {
		rngMu.Lock()
		defer rngMu.Unlock()
		return sp.min + time.Duration(rng.Int63n(int64(sp.max-sp.min)+1))
	}
	srv := redfishtest.NewServer(redfishtest.Config{Systems: n, PowerDelayFunc: delay})
	defer srv.Close()
	var sd bmc.SchemeDialer
	sd.Register("redfish", redfish.NewDialer(redfish.Options{RequestsPerSecond: rps}))
	cfg := base
	cfg.Store = memstore.New()
	cfg.Dialer = &sd
	cfg.Credentials = bmc.StaticCredentials{"lab": srv.Credentials()}
	cfg.EndpointConcurrency = n
	r, err := job.NewRunner(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()

	c0, t0 := measure.CPUTime(), time.Now()
	errs := make(chan error, n)
	for s := 1; s <= n; s++ {
		prng := rand.New(rand.NewSource(seed*1000 + int64(s)))
		go func() {
			id := strconv.Itoa(s)
			for k := range rounds {
				if pause > 0 {
					time.Sleep(time.Duration(prng.Int63n(int64(2 * pause))))
				}
				op := task.PowerOn
				if k%2 == 1 {
					op = task.PowerOff
				}
				name := fmt.Sprintf("s%d-%d", s, k)
				if _, err := r.Submit(ctx, name, job.Spec{BMC: srv.Address(id), CredentialsRef: "lab", Tasks: []task.Spec{{Power: &task.PowerAction{Op: op}}}}); err != nil {
					errs <- err
					return
				}
				j, err := r.Wait(ctx, name)
				if err != nil {
					errs <- err
					return
				}
				if j.Status.Result != conditions.ResultSucceeded {
					errs <- fmt.Errorf("job %s: %s", name, j.Status.Message)
					return
				}
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	out := &lagRun{wall: time.Since(t0), cpu: measure.CPUTime() - c0}
	reqs := srv.Requests()
	out.requests = len(reqs)
	out.busiest = busiestSecond(reqs)
	// Per system: its change k and its reads.
	bySys := map[string][]redfishtest.Request{}
	for _, q := range reqs {
		rest, ok := strings.CutPrefix(q.Path, "/redfish/v1/Systems/")
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, "/")
		bySys[id] = append(bySys[id], q)
	}
	seen := map[string]int{}
	for _, ch := range srv.PowerChanges() {
		k := seen[ch.System]
		seen[ch.System]++
		if k < warmup {
			continue
		}
		sys := "/redfish/v1/Systems/" + ch.System
		reads, lag := 0, time.Duration(-1)
		for _, q := range bySys[ch.System] {
			if q.Method != "GET" || q.Path != sys || q.Time.Before(ch.Requested) {
				continue
			}
			reads++
			if !q.Time.Before(ch.Lands) {
				lag = q.Time.Sub(ch.Lands)
				break
			}
		}
		if lag < 0 {
			return nil, fmt.Errorf("system %s: change %d never read after it landed", ch.System, k)
		}
		out.lags = append(out.lags, lag)
		out.reads = append(out.reads, max(reads-1, 0)) // the read-back is not a poll
		out.changes++
	}
	return out, nil
}

func busiestSecond(reqs []redfishtest.Request) int {
	times := make([]time.Time, len(reqs))
	for i, q := range reqs {
		times[i] = q.Time
	}
	return measure.BusiestSecond(times)
}
