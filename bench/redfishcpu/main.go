// Command redfishcpu compares the client CPU a fleet of netboot jobs costs
// through job.Runner and the Redfish driver with that of a bare net/http
// client sending the same requests (issue 28's Redfish ratio).
//
//	cd bench && go build -o redfishcpu ./redfishcpu
//	./redfishcpu -n 200 -endpoints 4 -rounds 3
//
// Each round runs twice, Runner then bare, each against a fresh set of
// redfishtest simulators (k endpoints, n systems in all, power landing
// -power-delay after the request) served by a child process, so that the
// CPU this process's rusage counts is the client's alone:
//
//   - Runner: job.Runner on memstore with the Redfish driver runs one
//     netboot job (power off, PXE once in UEFI mode, power on, each read
//     back) per system. Every request the driver sends is recorded (method,
//     path, body, when) through redfish.Options.WrapTransport.
//   - bare: the recorded requests are sent again with net/http at the same
//     offsets from the start, each system's in order on a goroutine of its
//     own (each endpoint's session requests on one more), with the session
//     token the bare client's own login returned. Each answer is decoded
//     into a struct holding only the fields a netboot job needs (power
//     state, boot override, members, the session's Location and token).
//
// The ratio printed is Runner CPU per job ÷ bare CPU per job, each from
// getrusage over its run (from the first request to the last answer).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bench/internal/measure"
	"github.com/bmckit/bmckit/bench/internal/selfchild"
	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

func main() {
	n := flag.Int("n", 200, "netboot jobs, one system each")
	k := flag.Int("endpoints", 4, "simulated Redfish endpoints the systems are spread over")
	delay := flag.Duration("power-delay", 2*time.Second, "how long a power change takes to land")
	rounds := flag.Int("rounds", 3, "alternating rounds (Runner, bare)")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the first round's Runner run (only) to this file")
	serve := flag.Bool("serve", false, "internal: serve the simulators, print their URLs, exit when stdin closes")
	flag.Parse()
	var err error
	if *serve {
		err = serveSimulators(*n, *k, *delay)
	} else {
		err = run(*n, *k, *delay, *rounds)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/redfishcpu:", err)
		os.Exit(1)
	}
}

// cpuProfile is where -cpuprofile writes the Runner rounds' profile.
var cpuProfile string

// serveSimulators is the child: k redfishtest servers holding n systems in
// all, every system On; it prints each server's base URL on a line, then
// "ready", and serves until stdin closes.
func serveSimulators(n, k int, delay time.Duration) error {
	var srvs []*redfishtest.Server
	for e := range k {
		count := n / k
		if e < n%k {
			count++
		}
		srv := redfishtest.NewServer(redfishtest.Config{Systems: count, PowerDelay: delay})
		for id := 1; id <= count; id++ {
			srv.SetPower(fmt.Sprint(id), "On")
		}
		srvs = append(srvs, srv)
		fmt.Println(srv.URL())
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, s := range srvs {
		s.Close()
	}
	return nil
}

// simulators is a running child.
type simulators struct {
	*selfchild.Proc
	urls []string
}

func startSimulators(n, k int, delay time.Duration) (*simulators, error) {
	p, err := selfchild.Start(nil, "-serve", "-n", fmt.Sprint(n), "-endpoints", fmt.Sprint(k), "-power-delay", delay.String())
	if err != nil {
		return nil, err
	}
	s := &simulators{Proc: p}
	sc := bufio.NewScanner(p.Stdout)
	for sc.Scan() {
		if sc.Text() == "ready" {
			return s, nil
		}
		s.urls = append(s.urls, sc.Text())
	}
	s.stop()
	return nil, fmt.Errorf("the simulators' process ended before it was ready")
}

func (s *simulators) stop() { _ = s.Stop() }

// recorded is one request the driver sent.
type recorded struct {
	at     time.Duration // after the run's start
	ep     int           // endpoint index
	method string
	path   string
	body   []byte
	// session requests: a login (POST to the session collection) or a
	// logout (DELETE of a session).
	login, logout bool
	// token: the request went after the endpoint's login, with its token
	// (the driver's transport adds it below WrapTransport; the requests
	// before the login, such as the service root, carry none).
	token bool
}

// recorder notes every request the driver sends.
type recorder struct {
	t0   time.Time
	eps  map[string]int // host:port -> endpoint index
	mu   sync.Mutex
	reqs []recorded
}

// recording is the driver's WrapTransport (one per connection): it notes
// each request in the recorder, then sends it on.
type recording struct {
	r    *recorder
	next http.RoundTripper
}

func (w recording) RoundTrip(req *http.Request) (*http.Response, error) {
	r := w.r
	rec := recorded{at: time.Since(r.t0), ep: r.eps[req.URL.Host], method: req.Method, path: req.URL.Path}
	if req.Body != nil && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			rec.body, _ = io.ReadAll(b)
			_ = b.Close()
		}
	} else if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		_ = req.Body.Close()
		rec.body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	rec.login = req.Method == http.MethodPost && strings.HasSuffix(strings.TrimSuffix(req.URL.Path, "/"), "/SessionService/Sessions")
	rec.logout = req.Method == http.MethodDelete && strings.Contains(req.URL.Path, "/SessionService/Sessions/")
	r.mu.Lock()
	r.reqs = append(r.reqs, rec)
	r.mu.Unlock()
	return w.next.RoundTrip(req)
}

func netboot(url string) job.Spec {
	return job.Spec{BMC: url, CredentialsRef: "lab", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
}

// runnerRound runs the jobs through a Runner and returns its CPU, wall and
// the requests sent.
func runnerRound(sims *simulators, n int) (cpu, wall time.Duration, reqs []recorded, err error) {
	rec := &recorder{eps: map[string]int{}}
	for i, u := range sims.urls {
		rec.eps[strings.TrimPrefix(u, "http://")] = i
	}
	var sd bmc.SchemeDialer
	sd.Register("redfish", redfish.NewDialer(redfish.Options{WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		return recording{r: rec, next: rt}
	}}))
	r, err := job.NewRunner(job.Config{StepperConfig: job.StepperConfig{Dialer: &sd,
		Credentials: bmc.StaticCredentials{"lab": {Username: "admin", Password: "redfishtest-secret"}}}, Store: memstore.New()})
	if err != nil {
		return 0, 0, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := len(sims.urls)
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("rf-%05d", i)
		url := "redfish+http://" + strings.TrimPrefix(sims.urls[i%k], "http://") + fmt.Sprintf("/redfish/v1/Systems/%d", i/k+1)
		if _, err := r.Submit(ctx, names[i], netboot(url)); err != nil {
			return 0, 0, nil, err
		}
	}
	runtime.GC()
	done := make(chan error, 1)
	c0 := measure.CPUTime()
	rec.t0 = time.Now()
	go func() { done <- r.Start(ctx) }()
	for _, name := range names {
		j, err := r.Wait(ctx, name)
		if err != nil {
			return 0, 0, nil, err
		}
		if j.Status.Result != conditions.ResultSucceeded {
			return 0, 0, nil, fmt.Errorf("job %s ended %s: %s", name, j.Status.Result, j.Status.Message)
		}
	}
	cancel()
	if err := <-done; err != nil {
		return 0, 0, nil, err
	}
	cpu, wall = measure.CPUTime()-c0, time.Since(rec.t0)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return cpu, wall, rec.reqs, nil
}

// answer holds the fields of a Redfish answer a netboot job reads.
type answer struct {
	PowerState string `json:"PowerState"`
	Boot       *struct {
		BootSourceOverrideTarget  string `json:"BootSourceOverrideTarget"`
		BootSourceOverrideEnabled string `json:"BootSourceOverrideEnabled"`
		BootSourceOverrideMode    string `json:"BootSourceOverrideMode"`
	} `json:"Boot"`
	Members []struct {
		ID string `json:"@odata.id"`
	} `json:"Members"`
}

// session is an endpoint's login as the bare client made it.
type session struct {
	ready    chan struct{}
	systems  sync.WaitGroup // the endpoint's system streams; the logout waits for them
	token    string
	location string
}

// bareRound sends reqs again with net/http at their recorded offsets and
// returns the CPU and wall it took.
func bareRound(sims *simulators, reqs []recorded) (cpu, wall time.Duration, err error) {
	// 4 connections per endpoint, as the driver keeps by default
	// (redfish.Options.MaxConnections).
	tr := &http.Transport{MaxIdleConnsPerHost: 4, MaxConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	k := len(sims.urls)
	sessions := make([]*session, k)
	for i := range sessions {
		sessions[i] = &session{ready: make(chan struct{})}
	}
	// One stream per system (its requests, in order), and one per
	// endpoint for the rest (service root, collections, sessions).
	streams := map[string][]recorded{}
	loggedIn := make([]bool, k)
	for _, q := range reqs {
		q.token = loggedIn[q.ep] && !q.login
		loggedIn[q.ep] = loggedIn[q.ep] || q.login
		key := fmt.Sprint(q.ep)
		if rest, ok := strings.CutPrefix(q.path, "/redfish/v1/Systems/"); ok && rest != "" {
			key += "/" + strings.SplitN(rest, "/", 2)[0]
		}
		streams[key] = append(streams[key], q)
	}
	keys := make([]string, 0, len(streams))
	for key := range streams {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	runtime.GC()
	c0 := measure.CPUTime()
	t0 := time.Now()
	for _, key := range keys {
		ep := streams[key][0].ep
		system := strings.Contains(key, "/")
		if system {
			sessions[ep].systems.Add(1)
		}
		wg.Add(1)
		go func(qs []recorded) {
			defer wg.Done()
			if system {
				defer sessions[ep].systems.Done()
			}
			for _, q := range qs {
				if d := time.Until(t0.Add(q.at)); d > 0 {
					time.Sleep(d)
				}
				if err := send(client, sims.urls[q.ep], sessions[q.ep], q); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}(streams[key])
	}
	wg.Wait()
	return measure.CPUTime() - c0, time.Since(t0), firstErr
}

// send sends one recorded request as the bare client: the login's token
// on every other request of the endpoint, the login's own session on the
// logout.
func send(client *http.Client, base string, s *session, q recorded) error {
	path := q.path
	if q.token || q.logout {
		<-s.ready
		if q.logout {
			s.systems.Wait() // the driver logs out after the last job's requests
			path = s.location
		}
	}
	var body io.Reader
	if q.body != nil {
		body = bytes.NewReader(q.body)
	}
	req, err := http.NewRequest(q.method, base+path, body)
	if err != nil {
		return err
	}
	if q.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if q.token {
		req.Header.Set("X-Auth-Token", s.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %s: %s", q.method, path, resp.Status, b)
	}
	if q.login {
		s.token, s.location = resp.Header.Get("X-Auth-Token"), resp.Header.Get("Location")
		s.location = strings.TrimPrefix(s.location, base)
		_, _ = io.Copy(io.Discard, resp.Body)
		close(s.ready)
		return nil
	}
	if q.method == http.MethodGet {
		var a answer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

func run(n, k int, delay time.Duration, rounds int) error {
	if k <= 0 || k > n {
		return fmt.Errorf("-endpoints %d: want 1 to -n (%d)", k, n)
	}
	start := time.Now().UTC()
	fmt.Println("| round | Runner: wall, CPU per job | bare net/http: wall, CPU per job | requests | Runner ÷ bare, CPU |")
	fmt.Println("|---|---|---|---|---|")
	var ratios []float64
	var prof *os.File
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		prof = f
	}
	for round := 1; round <= rounds; round++ {
		sims, err := startSimulators(n, k, delay)
		if err != nil {
			return err
		}
		if prof != nil && round == 1 {
			if err := pprof.StartCPUProfile(prof); err != nil {
				return err
			}
		}
		rcpu, rwall, reqs, err := runnerRound(sims, n)
		if prof != nil && round == 1 {
			pprof.StopCPUProfile()
		}
		sims.stop()
		if err != nil {
			return fmt.Errorf("round %d, Runner: %w", round, err)
		}
		if sims, err = startSimulators(n, k, delay); err != nil {
			return err
		}
		bcpu, bwall, err := bareRound(sims, reqs)
		sims.stop()
		if err != nil {
			return fmt.Errorf("round %d, bare: %w", round, err)
		}
		per := func(d time.Duration) time.Duration { return (d / time.Duration(n)).Round(time.Microsecond) }
		ratio := float64(rcpu) / float64(bcpu)
		ratios = append(ratios, ratio)
		fmt.Printf("| %d | %s, %s | %s, %s | %d | %.2f |\n", round,
			rwall.Round(time.Millisecond), per(rcpu), bwall.Round(time.Millisecond), per(bcpu), len(reqs), ratio)
	}
	sort.Float64s(ratios)
	fmt.Printf("\n    ./redfishcpu %s\n\n", strings.Join(os.Args[1:], " "))
	fmt.Printf("- %s, %d jobs on %d endpoints, power delay %s; %d CPUs (GOMAXPROCS %d), %s.\n",
		start.Format("2006-01-02 15:04 UTC"), n, k, delay, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Printf("- Runner ÷ bare, client CPU per job: %.2f - %.2f.\n", ratios[0], ratios[len(ratios)-1])
	return nil
}
