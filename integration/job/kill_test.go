//go:build linux

package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
	"github.com/bmckit/bmckit/task"
)

const (
	killSystems       = 10
	killJobsPerSystem = 10
	killMaxWaves      = 5
	killMinKills      = 30
	killMinDelay      = 30 * time.Millisecond
	killMaxDelay      = 700 * time.Millisecond
	killFinalDeadline = 4 * time.Minute

	killUser, killPassword = "admin", "kill-test-pw"

	envKillSeed = "BMCKIT_KILLTEST_SEED" // set to repeat a run's kill moments and power delays
	envKillSim  = "BMCKIT_KILLTEST_SIM"  // the simulator's base address, for the runner child
	envKillDB   = "BMCKIT_KILLTEST_DB"   // the runner child's boltstore file
	envKillJobs = "BMCKIT_KILLTEST_JOBS" // jobs per system the runner child submits
)

// TestRunnerSIGKILL checks the Runner's scheduling invariants across
// crashes. A simulated Redfish BMC with 10 systems runs in one child process
// and reports every state-changing request it applied, tagged with the job,
// task and attempt that sent it. A runner over a boltstore file runs in
// another child that is SIGKILLed 30 times, each time 30-700 ms after its
// process started (seeded; the seed is logged). Each incarnation submits, in
// one fixed order interleaved across systems, whatever of the 100 jobs (10
// per system, 4 tasks each) is not stored yet; a last incarnation runs until
// every job is done. Then every job must have succeeded, and the BMC's log
// must show no two jobs interleaved on a system, jobs started in submission
// order per system, no finished task sent again, and every request tagged.
// The one-line summary is printed for the docs.
func TestRunnerSIGKILL(t *testing.T) {
	switch {
	case childtest.IsChild("kill-sim"):
		killSimChild()
		return
	case childtest.IsChild("kill-runner"):
		killRunnerChild()
		return
	}
	if testing.Short() {
		t.Skip("SIGKILLs a runner 30 times; takes 15-90 s")
	}
	began := time.Now()
	seed := time.Now().UnixNano()
	if s := os.Getenv(envKillSeed); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envKillSeed, s, err)
		}
	}
	t.Logf("seed %d (%s=%d repeats the kill moments and power delays)", seed, envKillSeed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0)) //nolint:gosec // test randomness

	sim := &simFeed{t: t, c: childtest.Start(t, t.Name(), "kill-sim", envKillSeed+"="+strconv.FormatInt(seed, 10))}
	addr := sim.address()
	db := filepath.Join(t.TempDir(), "jobs.db")

	// Kill runner incarnations at random moments after their start. An
	// incarnation that finishes every job before its kill gets company: a
	// wave of 10 more jobs per system, so the remaining kills land during
	// work however fast the runner is.
	jobsPerSystem, waves := killJobsPerSystem, 1
	env := func() []string {
		return []string{envKillSim + "=" + addr, envKillDB + "=" + db, envKillJobs + "=" + strconv.Itoa(jobsPerSystem)}
	}
	phases := map[string]int{}
	kills, busyKills := 0, 0
	for kills < killMinKills {
		rc := startRunnerChild(t, env())
		delay := killMinDelay + time.Duration(rng.Int64N(int64(killMaxDelay-killMinDelay)+1))
		before := sim.count()
		timer := time.NewTimer(delay)
		killed := false
		for !killed && !rc.allDone {
			select {
			case <-timer.C:
				rc.kill()
				killed = true
			case l, ok := <-rc.c.Lines():
				if !ok {
					t.Fatalf("runner child %d exited before it was killed:\n%s", kills+1, rc.tail())
				}
				rc.take(l)
			case l, ok := <-sim.c.Lines():
				sim.take(l, ok)
			}
		}
		timer.Stop()
		if rc.allDone {
			sim.finish(rc, time.Minute)
			if waves == killMaxWaves {
				t.Fatalf("every job of %d waves finished after only %d kills", waves, kills)
			}
			waves++
			jobsPerSystem += killJobsPerSystem
			t.Logf("every job finished before kill %d: adding wave %d (%d jobs per system)", kills+1, waves, jobsPerSystem)
			continue
		}
		kills++
		phases[rc.phase]++
		busy := sim.count() > before
		if busy {
			busyKills++
		}
		t.Logf("kill %d after %v in phase %s, BMC requests during this run: %v", kills, delay.Round(time.Millisecond), rc.phase, busy)
	}
	sim.finish(startRunnerChild(t, env()), killFinalDeadline)
	// Every request was answered before ALL DONE, and the simulator writes a
	// request's line before it answers: everything is in its pipe now.
	for _, l := range sim.c.Kill() {
		sim.take(l, true)
	}

	// The jobs as the store holds them, read after the runner exited for good.
	store, err := boltstore.Open(db, boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reader, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: &bmc.SchemeDialer{}}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := reader.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	submitted := killSubmissions(jobsPerSystem)
	var names []string
	for _, sys := range sortedKeys(submitted) {
		names = append(names, submitted[sys]...)
	}
	tasks, succeeded := 0, 0
	var unsucceeded []string
	for _, j := range jobs {
		tasks += len(j.Spec.Tasks)
		if j.Completed() && j.Status.Result == conditions.ResultSucceeded {
			succeeded++
		} else {
			unsucceeded = append(unsucceeded, fmt.Sprintf("%s (completed %v, result %q: %s)", j.Name, j.Completed(), j.Status.Result, j.Status.Message))
		}
	}

	f := analyzeKillLog(sim.requests(), submitted)
	summary := fmt.Sprintf("runner SIGKILL test: %d job waves, %d kills (%d while starting, %d while submitting, %d while running; %d with BMC requests during the run), "+
		"%d jobs / %d tasks on %d systems, %d completed Succeeded; %d state-changing requests (%s min/avg/max per job); "+
		"untagged %d, misdirected %d, interleavings %d, reorders %d, re-sent tasks %d; %s",
		waves, kills, phases["starting"], phases["submitting"], phases["running"], busyKills,
		len(jobs), tasks, killSystems, succeeded, f.Requests, f.perJobRange(names),
		f.Untagged, f.Misdirected, f.Interleavings, f.Reorders, f.Resent, time.Since(began).Round(time.Second))
	t.Log(summary)
	fmt.Println(summary)

	if len(jobs) != len(names) {
		t.Errorf("the store holds %d jobs, want %d", len(jobs), len(names))
	}
	if len(unsucceeded) > 0 {
		t.Errorf("%d jobs did not end Completed with result Succeeded, e.g. %s", len(unsucceeded), unsucceeded[0])
	}
	if f.Untagged > 0 {
		t.Errorf("requests without caller tag: %d of %d (the Stepper must put a job.Call into the ctx of every BMC call); the other checks cannot see them", f.Untagged, f.Requests)
	}
	if n := f.Violations() - f.Untagged; n > 0 {
		t.Errorf("%d scheduling violations (misdirected %d, interleavings %d, reorders %d, re-sent tasks %d), e.g.:\n%s",
			n, f.Misdirected, f.Interleavings, f.Reorders, f.Resent, strings.Join(f.Examples, "\n"))
	}
}

// killSubmissions maps each simulator system ID to its jobs' names in
// submission order.
func killSubmissions(jobsPerSystem int) map[string][]string {
	m := map[string][]string{}
	for n := range jobsPerSystem {
		for s := 1; s <= killSystems; s++ {
			id := strconv.Itoa(s)
			m[id] = append(m[id], fmt.Sprintf("sys%d-job%d", s, n))
		}
	}
	return m
}

// killSpec is every job's task list: power off, one-time PXE, power on,
// power off.
func killSpec(addr, system string) job.Spec {
	return job.Spec{
		BMC:            addr + "/redfish/v1/Systems/" + system,
		CredentialsRef: "sim",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
			{Power: &task.PowerAction{Op: task.PowerOff}},
		},
	}
}

// killSimChild serves the simulated BMC and prints "addr <address>", then
// one JSON line per state change, until it is killed.
func killSimChild() {
	seed, _ := strconv.ParseInt(os.Getenv(envKillSeed), 10, 64)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(seed), 1)) //nolint:gosec // test randomness
	srv := redfishtest.NewServer(redfishtest.Config{
		Username: killUser, Password: killPassword, Systems: killSystems,
		// Power tasks take about 100-400 ms: the change lands after this,
		// and the runner polls every 20 ms.
		PowerDelayFunc: func() time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return 100*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond)))
		},
		OnStateChange: func(c redfishtest.StateChange) {
			b, err := json.Marshal(c)
			if err != nil {
				panic(err)
			}
			mu.Lock()
			defer mu.Unlock()
			// Written before the request is answered.
			_, _ = os.Stdout.Write(append(b, '\n'))
		},
	})
	defer srv.Close()
	mu.Lock()
	fmt.Println("addr", srv.Address(""))
	mu.Unlock()
	<-time.After(10 * time.Minute) // a safety net: the parent kills us
}

// killRunnerChild is one runner incarnation: it opens the store, submits
// the jobs that are not stored yet in a fixed order, runs them and prints
// "ALL DONE" once every job is completed. It reports progress as "open",
// "submitted" and "started"; an "error ..." line and exit status 1 on failure.
func killRunnerChild() {
	fail := func(format string, args ...any) {
		fmt.Printf("error "+format+"\n", args...)
		os.Exit(1)
	}
	time.AfterFunc(killFinalDeadline+time.Minute, func() { fail("runner child gave up after %v", killFinalDeadline+time.Minute) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := os.Getenv(envKillSim)
	jobsPerSystem, err := strconv.Atoi(os.Getenv(envKillJobs))
	if err != nil {
		fail("%s: %v", envKillJobs, err)
	}
	store, err := boltstore.Open(os.Getenv(envKillDB), boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fail("open store: %v", err)
	}
	fmt.Println("open")
	dialer := &bmc.SchemeDialer{}
	dialer.Register("redfish", redfish.NewDialer(redfish.Options{
		WrapTransport: func(next http.RoundTripper) http.RoundTripper { return callTagger{next} },
	}))
	r, err := job.NewRunner(job.Config{
		Store: store, StepperConfig: job.StepperConfig{
			Dialer:       dialer,
			Credentials:  bmc.StaticCredentials{"sim": {Username: killUser, Password: killPassword}},
			PollInterval: 20 * time.Millisecond,
		},

		Owner:         "kill-runner", // the restarted runner is the same runner
		LeaseDuration: 2 * time.Second, ScanInterval: 50 * time.Millisecond,
		Workers: 16,
	})
	if err != nil {
		fail("new runner: %v", err)
	}
	// Interleaved across systems, so each system's jobs go in N order.
	for n := range jobsPerSystem {
		for s := 1; s <= killSystems; s++ {
			name := fmt.Sprintf("sys%d-job%d", s, n)
			if _, err := r.Submit(ctx, name, killSpec(addr, strconv.Itoa(s))); err != nil && !errors.Is(err, storage.ErrExists) {
				fail("submit %s: %v", name, err)
			}
		}
	}
	fmt.Println("submitted")
	runChildUntilDone(ctx, cancel, r, store, killSystems*jobsPerSystem, fail)
}

// callTagger names the job, task and attempt of each request in the
// X-Bmckit-Call header, from the job.Call the Stepper puts in the ctx.
type callTagger struct{ next http.RoundTripper }

func (c callTagger) RoundTrip(req *http.Request) (*http.Response, error) {
	if call, ok := job.CallFromContext(req.Context()); ok {
		req = req.Clone(req.Context())
		req.Header.Set(redfishtest.CallerHeader, fmt.Sprintf("%s/%d/%d", call.Job, call.Task, call.Attempt))
	}
	return c.next.RoundTrip(req)
}

// runnerChild is one runner incarnation seen from the parent.
type runnerChild struct {
	c       *childtest.Child
	phase   string // starting, submitting, running
	allDone bool
	lines   []string // the last lines it printed
}

func startRunnerChild(t *testing.T, env []string) *runnerChild {
	return &runnerChild{c: childtest.Start(t, t.Name(), "kill-runner", env...), phase: "starting"}
}

func (rc *runnerChild) take(l string) {
	switch l {
	case "open":
		rc.phase = "submitting"
	case "started":
		rc.phase = "running"
	case "ALL DONE":
		rc.allDone = true
	}
	rc.lines = append(rc.lines, l)
	if len(rc.lines) > 40 {
		rc.lines = rc.lines[len(rc.lines)-20:]
	}
}

// kill SIGKILLs the child and takes the lines it printed before dying.
func (rc *runnerChild) kill() {
	for _, l := range rc.c.Kill() {
		rc.take(l)
	}
}

func (rc *runnerChild) tail() string {
	if len(rc.lines) == 0 {
		return "(no output)"
	}
	return strings.Join(rc.lines, "\n")
}

// simFeed collects the simulator child's state changes.
type simFeed struct {
	t       *testing.T
	c       *childtest.Child
	addr    string
	changes []redfishtest.StateChange
}

// address waits for the simulator's address.
func (f *simFeed) address() string {
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for f.addr == "" {
		select {
		case l, ok := <-f.c.Lines():
			f.take(l, ok)
		case <-deadline.C:
			f.t.Fatal("the simulator child did not start within a minute")
		}
	}
	return f.addr
}

func (f *simFeed) take(l string, ok bool) {
	f.t.Helper()
	if !ok {
		f.t.Fatal("the simulator child exited")
	}
	switch {
	case strings.HasPrefix(l, "addr "):
		f.addr = strings.TrimPrefix(l, "addr ")
	case strings.HasPrefix(l, "{"):
		var c redfishtest.StateChange
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			f.t.Fatalf("simulator line %q: %v", l, err)
		}
		f.changes = append(f.changes, c)
	}
}

func (f *simFeed) count() int { return len(f.changes) }

// finish waits, within timeout, for the runner child to print ALL DONE and
// exit 0, draining the simulator meanwhile (its pipe must not fill up).
func (f *simFeed) finish(rc *runnerChild, timeout time.Duration) {
	f.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !rc.allDone {
		select {
		case l, ok := <-rc.c.Lines():
			if !ok {
				f.t.Fatalf("a runner child exited before all jobs were done:\n%s", rc.tail())
			}
			rc.take(l)
		case l, ok := <-f.c.Lines():
			f.take(l, ok)
		case <-deadline.C:
			f.t.Fatalf("a runner child did not finish all jobs within %v; its last output:\n%s", timeout, rc.tail())
		}
	}
	exited := make(chan error, 1)
	go func() {
		rest, err := rc.c.Wait()
		for _, l := range rest {
			rc.take(l)
		}
		exited <- err
	}()
	for {
		select {
		case err := <-exited:
			if err != nil {
				f.t.Fatalf("a runner child failed after ALL DONE: %v\n%s", err, rc.tail())
			}
			return
		case l, ok := <-f.c.Lines():
			f.take(l, ok)
		case <-deadline.C:
			f.t.Fatalf("a runner child did not exit after ALL DONE:\n%s", rc.tail())
		}
	}
}

// requests turns the state changes into the analysis' input.
func (f *simFeed) requests() []bmcRequest {
	out := make([]bmcRequest, 0, len(f.changes))
	for _, c := range f.changes {
		r := bmcRequest{Seq: c.Seq, System: c.System, What: c.What}
		if c.Note != "" {
			r.What += " (" + c.Note + ")"
		}
		if name, tk, at, ok := parseCallerTag(c.Caller); ok {
			r.Job, r.Task, r.Attempt = name, tk, at
		}
		out = append(out, r)
	}
	return out
}

// runChildUntilDone is a kill-test child's main loop: it starts r, prints
// "started", waits (polling the store) until want jobs completed, prints
// "ALL DONE", then stops r and closes store. Any failure ends the child
// through fail.
func runChildUntilDone(ctx context.Context, cancel context.CancelFunc, r *job.Runner, store *boltstore.Store, want int, fail func(format string, args ...any)) {
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	fmt.Println("started")
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		jobs, err := r.List(ctx)
		if err != nil {
			fail("list: %v", err)
		}
		finished := 0
		for _, j := range jobs {
			if j.Completed() {
				finished++
			}
		}
		if finished == want {
			break
		}
		select {
		case err := <-done:
			fail("runner stopped with %d of %d jobs done: %v", finished, want, err)
		case <-tick.C:
		}
	}
	fmt.Println("ALL DONE")
	cancel()
	if err := <-done; err != nil {
		fail("runner: %v", err)
	}
	if err := store.Close(); err != nil {
		fail("close store: %v", err)
	}
}
