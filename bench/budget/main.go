// Command budget measures the per-endpoint request budget's two promises
// (bmc/budget, the drivers' Options.RequestsPerSecond and
// RequestBurst) and prints a Markdown report for docs/benchmarks.md:
//
//  1. A lone job is not taxed: IPMI netboot jobs (power off, one-time PXE,
//     power on, each verified) through job.Runner against go-ipmi's
//     simulator, one at a time on an idle endpoint, alternating the default
//     budget and no budget (A B A B ...), in the same run. It reports the
//     median wall time and CPU time per job of each, their ratio, and the
//     requests that waited. The order alternates too (on off, off on, ...).
//
//  2. A crowd does not exceed the rate: -crowd netboot jobs at once on one
//     Redfish endpoint with that many systems (EndpointConcurrency = the
//     crowd), power changes landing 1-11 s after the request, default
//     budget (50/s); it reports the busiest one-second window of requests
//     the simulator received.
//
//     go run ./bench/budget -rounds 40 -crowd 200
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bench/internal/measure"
	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

func main() {
	rounds := flag.Int("rounds", 40, "lone IPMI netboot jobs per mode (alternating budget on / off)")
	crowd := flag.Int("crowd", 200, "netboot jobs at once on one budgeted Redfish endpoint")
	flag.Parse()
	if err := run(*rounds, *crowd); err != nil {
		fmt.Fprintln(os.Stderr, "bench/budget:", err)
		os.Exit(1)
	}
}

func netboot(addr string) job.Spec {
	return job.Spec{BMC: addr, CredentialsRef: "lab", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
}

// lone is one mode of part 1: a Runner whose IPMI Dialer has opts.
type lone struct {
	name     string
	r        *job.Runner
	sim      *ipmitest.Server
	wall     []time.Duration
	cpu      []time.Duration
	requests int64
	waited   int64
}

func newLone(ctx context.Context, name string, opts ipmi.Options) (*lone, error) {
	sim, err := ipmitest.Start(ipmitest.Options{PoweredOn: true})
	if err != nil {
		return nil, err
	}
	d, err := ipmi.NewDialer(opts)
	if err != nil {
		return nil, err
	}
	var sd bmc.SchemeDialer
	sd.Register("ipmi", d)
	r, err := job.NewRunner(job.Config{
		Store: memstore.New(), StepperConfig: job.StepperConfig{
			Dialer:      &sd,
			Credentials: bmc.StaticCredentials{"lab": sim.Credentials},
			IdleTimeout: time.Millisecond,
		}, Workers: 1,

		ScanInterval: 10 * time.Millisecond,
		// Close the session after each job: every job starts with a
		// handshake on an idle endpoint, a fresh budget.

	})
	if err != nil {
		return nil, err
	}
	go func() { _ = r.Start(ctx) }()
	return &lone{name: name, r: r, sim: sim}, nil
}

func (l *lone) once(ctx context.Context, i int) error {
	name := fmt.Sprintf("%s-%d", l.name, i)
	c0, t0 := measure.CPUTime(), time.Now()
	if _, err := l.r.Submit(ctx, name, netboot(l.sim.URL())); err != nil {
		return err
	}
	j, err := l.r.Wait(ctx, name)
	if err != nil {
		return err
	}
	l.wall = append(l.wall, time.Since(t0))
	l.cpu = append(l.cpu, measure.CPUTime()-c0)
	if j.Status.Result != "Succeeded" {
		return fmt.Errorf("job %s: %s: %s", name, j.Status.Result, j.Status.Message)
	}
	if w := j.Status.Wire; w != nil {
		l.requests += w.Requests
		l.waited += w.Throttled
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func run(rounds, crowd int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	on, err := newLone(ctx, "on", ipmi.Options{})
	if err != nil {
		return err
	}
	off, err := newLone(ctx, "off", ipmi.Options{RequestsPerSecond: -1})
	if err != nil {
		return err
	}
	for i := range rounds + 2 {
		order := []*lone{on, off}
		if i%2 == 1 {
			order = []*lone{off, on}
		}
		for _, l := range order {
			if err := l.once(ctx, i); err != nil {
				return err
			}
		}
		if i == 1 { // warm-up rounds left out
			on.wall, on.cpu, on.requests, on.waited = nil, nil, 0, 0
			off.wall, off.cpu, off.requests, off.waited = nil, nil, 0, 0
		}
		time.Sleep(1100 * time.Millisecond / 2) // the endpoint goes quiet between jobs
	}
	fmt.Printf("## Lone IPMI netboot, budget on vs off (%d jobs each, alternating)\n\n", rounds)
	fmt.Println("| budget | wall median | CPU median / job | requests / job | requests that waited |")
	fmt.Println("|---|---|---|---|---|")
	for _, l := range []*lone{on, off} {
		label := "default (50/s, burst 25)"
		if l == off {
			label = "off"
		}
		fmt.Printf("| %s | %s | %s | %.1f | %d |\n", label, median(l.wall).Round(100*time.Microsecond),
			median(l.cpu).Round(100*time.Microsecond), float64(l.requests)/float64(rounds), l.waited)
	}
	fmt.Printf("\nratio on/off of the wall medians: %.2f\n\n", float64(median(on.wall))/float64(median(off.wall)))
	on.sim.Close()
	off.sim.Close()

	return runCrowd(ctx, crowd)
}

func runCrowd(ctx context.Context, n int) error {
	rng := rand.New(rand.NewSource(1))
	var mu sync.Mutex
	delay := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Second + time.Duration(rng.Int63n(int64(10*time.Second)+1))
	}
	srv := redfishtest.NewServer(redfishtest.Config{Systems: n, PowerDelayFunc: delay, DropDuringTransition: true})
	defer srv.Close()
	var sd bmc.SchemeDialer
	var st stamps
	sd.Register("redfish", redfish.NewDialer(redfish.Options{WrapTransport: st.wrap}))
	r, err := job.NewRunner(job.Config{
		Store: memstore.New(), StepperConfig: job.StepperConfig{
			Dialer:      &sd,
			Credentials: bmc.StaticCredentials{"lab": srv.Credentials()},
		}, EndpointConcurrency: n,

		ScanInterval: 50 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = r.Start(ctx) }()
	names := make([]string, n)
	for i := range n {
		id := fmt.Sprint(i + 1)
		srv.SetPower(id, "On")
		names[i] = "crowd-" + id
		if _, err := r.Submit(ctx, names[i], netboot(srv.Endpoint(id).String())); err != nil {
			return err
		}
	}
	t0 := time.Now()
	var failed int
	for _, name := range names {
		j, err := r.Wait(ctx, name)
		if err != nil {
			return err
		}
		if j.Status.Result != "Succeeded" {
			failed++
		}
	}
	elapsed := time.Since(t0)
	reqs := srv.Requests()
	times := make([]time.Time, len(reqs))
	for i, q := range reqs {
		times[i] = q.Time
	}
	best := measure.BusiestSecond(times)
	st.mu.Lock()
	released, written := measure.BusiestSecond(st.released), measure.BusiestSecond(st.written)
	nRel, nWr := len(st.released), len(st.written)
	lat := append([]time.Duration(nil), st.wait...)
	st.mu.Unlock()
	fmt.Printf("## %d netboot jobs on one Redfish endpoint, default budget (50/s)\n\n", n)
	fmt.Println("| jobs | failed | requests | wall | mean requests/s | busiest 1 s window at the simulator |")
	fmt.Println("|---|---|---|---|---|---|")
	fmt.Printf("| %d | %d | %d | %s | %.1f | %d |\n", n, failed, len(times), elapsed.Round(time.Second),
		float64(len(times))/elapsed.Seconds(), best)
	fmt.Printf("\nThe same requests' busiest one-second window where the client released them from the budget\n")
	fmt.Printf("(httptrace GetConn, right after Budget.Wait: %d requests): %d; where it finished writing them\n", nRel, released)
	fmt.Printf("(WroteRequest: %d): %d; at the simulator (its log's arrival time): %d.\n", nWr, written, best)
	// Detection lag: from each power change landing to the first GET of
	// its system the simulator received after it.
	var lags []time.Duration
	for _, ch := range srv.PowerChanges() {
		sys := "/redfish/v1/Systems/" + ch.System
		for _, q := range reqs {
			if q.Method == "GET" && q.Path == sys && !q.Time.Before(ch.Lands) {
				lags = append(lags, q.Time.Sub(ch.Lands))
				break
			}
		}
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		fmt.Printf("Detection lag of the %d power changes (landing to the first GET of the system after it): median %s,\n",
			len(lags), lags[len(lags)/2].Round(time.Millisecond))
		fmt.Printf("p95 %s, max %s.\n", lags[len(lags)*95/100].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		fmt.Printf("Release to written: median %s, p99 %s, max %s.\n", lat[len(lat)/2].Round(time.Microsecond),
			lat[len(lat)*99/100].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	}
	return nil
}

// stamps records, per request, when the driver released it from the
// request budget and when it finished writing it (net/http/httptrace: the
// driver's transport waits for the budget before the base transport, which
// calls GetConn first).
type stamps struct {
	mu                sync.Mutex
	released, written []time.Time
	wait              []time.Duration // released to written
}

func (s *stamps) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		var rel time.Time
		trace := &httptrace.ClientTrace{
			GetConn: func(string) {
				rel = time.Now()
				s.mu.Lock()
				s.released = append(s.released, rel)
				s.mu.Unlock()
			},
			WroteRequest: func(httptrace.WroteRequestInfo) {
				now := time.Now()
				s.mu.Lock()
				s.written = append(s.written, now)
				if !rel.IsZero() {
					s.wait = append(s.wait, now.Sub(rel))
				}
				s.mu.Unlock()
			},
		}
		return next.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
