package main

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
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

// The "wait" mode measures how a power job waits for its change to land:
// polls, requests and detection lag, per waiting strategy, on simulators
// whose power changes take a predictable time (8±1 s by default). Each
// strategy gets its own simulator and its own Runner (so what adaptive
// polling learns stays with it), and runs its jobs one after the other on
// one system (power on, off, on, ...); the strategies run side by side.

// waitVariant is one waiting strategy.
type waitVariant struct {
	name   string
	events bool // the simulator offers the SSE stream
	cfg    job.Config
}

func waitVariants() []waitVariant {
	fixed := job.AdaptivePoll{Disabled: true}
	noEvents := job.PowerEvents{Disabled: true}
	return []waitVariant{
		{name: "fixed 1 s (a careful bmclib user)", cfg: job.Config{StepperConfig: job.StepperConfig{PollInterval: time.Second, AdaptivePoll: fixed, PowerEvents: noEvents}}},
		{name: "fixed 250 ms (AdaptivePoll.Disabled)", cfg: job.Config{StepperConfig: job.StepperConfig{AdaptivePoll: fixed, PowerEvents: noEvents}}},
		{name: "adaptive (default), no events", cfg: job.Config{}},
		{name: "events (SSE) + adaptive (default)", events: true, cfg: job.Config{}},
		{name: "events (SSE) + fixed 250 ms", events: true, cfg: job.Config{StepperConfig: job.StepperConfig{AdaptivePoll: fixed}}},
	}
}

// waitJob is what one job cost, from the server's log.
type waitJob struct {
	requests int           // every request of the job's session (dial to logout, event stream included)
	polls    int           // reads of the system after the action's read-back
	lag      time.Duration // landing to the first read after it
}

func runWait(n, warmup int, mean, spread time.Duration, seed int64) error {
	vs := waitVariants()
	out := make([][]waitJob, len(vs))
	errs := make([]error, len(vs))
	start := time.Now()
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = runWaitVariant(v, n, mean, spread, seed)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: %w", vs[i].name, err)
		}
	}
	fmt.Printf("Power jobs (on, off, on, ... one at a time on one system) through job.Runner and the Redfish\n")
	fmt.Printf("driver, power changes landing %s±%s after the request (uniform, seed %d), %d jobs per\n", mean, spread, seed, n)
	fmt.Printf("strategy, the first %d (learning) left out. Wall time %s.\n\n", warmup, time.Since(start).Round(time.Second))
	fmt.Println("| strategy | polls per job | vs fixed 1 s | requests per job | detection lag median | p90 | max |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var base float64
	for i, v := range vs {
		jobs := out[i][min(warmup, len(out[i])):]
		var polls, reqs int
		lags := make([]time.Duration, 0, len(jobs))
		for _, j := range jobs {
			polls += j.polls
			reqs += j.requests
			lags = append(lags, j.lag)
		}
		slices.Sort(lags)
		pj := float64(polls) / float64(len(jobs))
		if i == 0 {
			base = pj
		}
		q := func(f float64) time.Duration { return lags[int(f*float64(len(lags)-1))].Round(time.Millisecond) }
		fmt.Printf("| %s | %.2f | %.2f | %.2f | %s | %s | %s |\n", v.name, pj, pj/base,
			float64(reqs)/float64(len(jobs)), q(0.5), q(0.9), lags[len(lags)-1].Round(time.Millisecond))
	}
	fmt.Println()
	fmt.Println("polls per job: GETs of the system after the action's read-back, up to the job's end (with")
	fmt.Println("events: the confirming GET after the event). requests per job: every request of the job's")
	fmt.Println("session, login to logout, the EventService GET and the stream's GET included.")
	return nil
}

func runWaitVariant(v waitVariant, n int, mean, spread time.Duration, seed int64) ([]waitJob, error) {
	rng := rand.New(rand.NewSource(seed))
	var rngMu sync.Mutex
	delay := func() time.Duration {
		rngMu.Lock()
		defer rngMu.Unlock()
		return mean - spread + time.Duration(rng.Int63n(int64(2*spread)+1))
	}
	srv := redfishtest.NewServer(redfishtest.Config{PowerDelayFunc: delay, EventStream: v.events})
	defer srv.Close()
	var sd bmc.SchemeDialer
	sd.Register("redfish", redfish.NewDialer(redfish.Options{}))
	cfg := v.cfg
	cfg.Store = memstore.New()
	cfg.Dialer = &sd
	cfg.Credentials = bmc.StaticCredentials{"lab": srv.Credentials()}
	r, err := job.NewRunner(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()
	var res []waitJob
	for k := range n {
		op := task.PowerOn
		if k%2 == 1 {
			op = task.PowerOff
		}
		before := len(srv.Requests())
		name := fmt.Sprintf("power-%d", k)
		if _, err := r.Submit(ctx, name, job.Spec{BMC: srv.Address("1"), CredentialsRef: "lab", Tasks: []task.Spec{{Power: &task.PowerAction{Op: op}}}}); err != nil {
			return nil, err
		}
		j, err := r.Wait(ctx, name)
		if err != nil {
			return nil, err
		}
		if j.Status.Result != conditions.ResultSucceeded {
			return nil, fmt.Errorf("job %s: %s", name, j.Status.Message)
		}
		// The event stream's GET is logged when the stream ends, after the
		// logout: wait for the session's entries to be complete.
		deadline := time.Now().Add(5 * time.Second)
		for v.events && srv.EventStreams() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		changes := srv.PowerChanges()
		if len(changes) != k+1 {
			return nil, fmt.Errorf("job %s: %d power changes in all; want %d", name, len(changes), k+1)
		}
		res = append(res, measureWaitJob(srv.Requests()[before:], changes[k].Lands))
	}
	return res, nil
}

// measureWaitJob reads one job's requests (its log, in completion order).
func measureWaitJob(reqs []redfishtest.Request, lands time.Time) waitJob {
	const sys = "/redfish/v1/Systems/1"
	var w waitJob
	w.requests = len(reqs)
	acted := false
	reads := 0
	w.lag = -1
	for _, r := range reqs {
		switch {
		case r.Method == "POST" && strings.HasSuffix(r.Path, "/Actions/ComputerSystem.Reset"):
			acted = true
		case r.Method == "DELETE":
			acted = false
		case acted && r.Method == "GET" && r.Path == sys:
			reads++
			if w.lag < 0 && !r.Time.Before(lands) {
				w.lag = r.Time.Sub(lands)
			}
		}
	}
	w.polls = max(reads-1, 0)
	if w.lag < 0 {
		w.lag = 0
	}
	return w
}
