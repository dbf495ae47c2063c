// Command fleet measures job.Runner at fleet scale. N netboot jobs (power
// off, PXE once in UEFI mode, power on), one per system, are submitted
// before the runners start (queued, from 64 goroutines at once so a durable
// store's group commit batches the creates); the clock starts at
// Runner.Start and stops at the last job's completion write. The systems
// are bmc/fake BMCs whose every call takes -latency, or redfishtest
// endpoints reached through the Redfish driver; the store is memstore,
// boltstore or PostgreSQL, shared by one or three replicas. One job is run
// alone first, in the same process on the same store, as the ideal.
//
// It prints a Markdown table row with wall time, the ideal, CPU per task
// (getrusage: the stable figure on a shared machine), store writes per job,
// memory and goroutines per job, and whether every job Succeeded with each
// state-changing BMC call sent exactly once, followed by the details.
//
//	go run ./bench/fleet -target fake -n 10000 -latency 50ms -store memstore
//	go run ./bench/fleet -target fake -n 3000 -store postgres -replicas 3
//	go run ./bench/fleet -target redfish -n 200 -endpoints 4
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
)

type config struct {
	target              string
	n                   int
	latency             time.Duration
	store               string
	replicas            int
	workers             int
	endpointConcurrency int
	endpoints           int
	powerDelay          time.Duration
	requestLimit        float64
	rps                 float64
	submitters          int
	dsn                 string
	timeout             time.Duration
	heapProfile         string
	crashAt             float64
	lease               time.Duration
	perSystem           int
	floorStore          bool
	summary             string
}

const keyPrefix = "bmckit/"

func main() {
	var c config
	flag.StringVar(&c.target, "target", "fake", "fake (bmc/fake BMCs, one per job) or redfish (redfishtest endpoints, Redfish driver)")
	flag.IntVar(&c.n, "n", 1000, "jobs, one per system")
	flag.DurationVar(&c.latency, "latency", 50*time.Millisecond, "fake: latency of every BMC call (Dial and Close included)")
	flag.StringVar(&c.store, "store", "memstore", "memstore, boltstore (a file in a temp dir) or postgres (a fresh schema, dropped at the end)")
	flag.IntVar(&c.replicas, "replicas", 1, "runners sharing the store, each with its own Store (its own pool on postgres); boltstore: 1 only")
	flag.IntVar(&c.workers, "workers", 0, "job.Config.Workers (0: the job package's default)")
	flag.IntVar(&c.endpointConcurrency, "endpoint-concurrency", 0, "job.Config.EndpointConcurrency (0: the job package's default)")
	flag.IntVar(&c.endpoints, "endpoints", 4, "redfish: simulated endpoints the systems are spread over")
	flag.DurationVar(&c.powerDelay, "power-delay", -1, "how long a power change takes to land (default: 0 on fake, where a job runs in one step; 2s on redfish)")
	flag.Float64Var(&c.requestLimit, "request-limit", 0, "redfish: requests/s each simulated endpoint serves; it answers 503 beyond (0: no limit)")
	flag.Float64Var(&c.rps, "rps", 0, "redfish: the driver's request budget per endpoint, redfish.Options.RequestsPerSecond (0: its default; negative: none)")
	flag.IntVar(&c.submitters, "submitters", 64, "goroutines submitting the jobs")
	flag.StringVar(&c.dsn, "dsn", envOr("BMCKIT_BENCH_POSTGRES_DSN", "postgres://bmckit:bmckit@127.0.0.1:5432/bmckit?sslmode=disable"),
		"postgres: server DSN (default from BMCKIT_BENCH_POSTGRES_DSN)")
	flag.DurationVar(&c.timeout, "timeout", 15*time.Minute, "give up (and report the unfinished jobs) after this long")
	flag.StringVar(&c.heapProfile, "memprofile", "", "write a heap profile (in use as of the last GC, and allocated so far) to this file the first time 90% of the jobs are in a step at once")
	flag.IntVar(&c.perSystem, "jobs-per-system", 1, "fake: jobs per system, run one after the other in submission order (the report checks that order and that no two jobs' actions interleave)")
	flag.DurationVar(&c.lease, "lease", 0, "job.Config.LeaseDuration (0: the job package's default); after -crash-at, the dead runners retry releasing their locks for this long")
	flag.Float64Var(&c.crashAt, "crash-at", 0, "when the runners made this fraction of the job-record updates the run makes (0 < f < 1), every runner's process dies: its writes are refused from then on, its BMC calls in flight cut off; new runners with the same Owners take over (0: no crash)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.BoolVar(&c.floorStore, "floor-store", false, "with -floor: each job's persist writes its record to -store (created before the clock starts, then one compare-and-swap per persist, as the Runner's persist does), with no locks, reads, scans or queue: the bare loop that writes the Runner's job records, batched by the store the same way")
	flag.StringVar(&c.summary, "summary", "", "also write the run's figures as JSON to this file (what -curve reads)")
	curve := flag.Bool("curve", false, "run the fleet at each of -curve-sizes on each of -curve-stores and the floor beside them, each run a child process, -curve-rounds times alternating, and print one table with the growth from the next-to-largest size to the largest")
	curveSizes := flag.String("curve-sizes", "1000,10000,100000", "-curve: the fleet sizes (jobs)")
	curveStores := flag.String("curve-stores", "memstore,boltstore", "-curve: the stores (memstore, boltstore, postgres)")
	curveRounds := flag.Int("curve-rounds", 2, "-curve: how many times to run the whole sweep, alternating")
	floor := flag.Bool("floor", false, "fake only: instead of runners, step the same jobs with job.Stepper alone, one goroutine each from the start, no store (what no runner can beat here; see floor.go)")
	flag.Usage = func() {
		out := flag.CommandLine.Output()
		fmt.Fprintf(out, "Usage: go run ./bench/fleet [flags]\n\n")
		fmt.Fprintf(out, "Runs N netboot jobs (power off, PXE once, power on), one per system, queued before\n")
		fmt.Fprintf(out, "job.Runner starts, and prints a Markdown table row: wall time against one job run alone,\n")
		fmt.Fprintf(out, "CPU per task, store writes, memory and goroutines per job, and correctness (every job\n")
		fmt.Fprintf(out, "Succeeded, each state-changing BMC call exactly once per system).\n\n")
		fmt.Fprintf(out, "Examples:\n")
		fmt.Fprintf(out, "  go run ./bench/fleet -target fake -n 10000 -latency 50ms -store boltstore\n")
		fmt.Fprintf(out, "  go run ./bench/fleet -target fake -n 3000 -store postgres -replicas 3\n")
		fmt.Fprintf(out, "  go run ./bench/fleet -target redfish -n 200 -endpoints 4\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/fleet:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench/fleet:", err)
			os.Exit(1)
		}
		// Stopped before any exit below, not deferred: os.Exit skips
		// deferred calls and would leave the profile empty.
	}
	stopProfile := func() {
		if *cpuprofile != "" {
			pprof.StopCPUProfile()
		}
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench/fleet: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}
	if c.floorStore && !*floor {
		fmt.Fprintln(os.Stderr, "bench/fleet: -floor-store is a variant of -floor; add -floor")
		os.Exit(2)
	}
	var ok bool
	var err error
	if *curve {
		var sizes []int
		if sizes, err = parseSizes(*curveSizes); err == nil {
			ok, err = runCurve(c, sizes, strings.Split(*curveStores, ","), max(*curveRounds, 1))
		}
	} else if *floor {
		ok, err = runFloor(c)
	} else {
		ok, err = run(c)
	}
	stopProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/fleet:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (c config) validate() error {
	switch {
	case c.target != "fake" && c.target != "redfish":
		return fmt.Errorf("-target %q: want fake or redfish", c.target)
	case c.n <= 0:
		return fmt.Errorf("-n %d: want at least 1", c.n)
	case c.replicas <= 0:
		return fmt.Errorf("-replicas %d: want at least 1", c.replicas)
	case c.store == "boltstore" && c.replicas != 1:
		return fmt.Errorf("-store boltstore -replicas %d: a bbolt file is opened by one process at a time; use 1", c.replicas)
	case c.store != "memstore" && c.store != "boltstore" && c.store != "postgres":
		return fmt.Errorf("-store %q: want memstore, boltstore or postgres", c.store)
	case c.submitters <= 0:
		return fmt.Errorf("-submitters %d: want at least 1", c.submitters)
	case c.perSystem < 0 || c.perSystem > 1 && c.target != "fake":
		return fmt.Errorf("-jobs-per-system %d: want 1, or more on the fake target", c.perSystem)
	case c.crashAt < 0 || c.crashAt >= 1:
		return fmt.Errorf("-crash-at %g: want 0 (no crash) or a fraction between 0 and 1 (of the run's job-record updates)", c.crashAt)
	}
	return nil
}

// openStores returns one Store per replica (memstore: one shared instance,
// as replicas in one process would share it) and a cleanup.
// For PostgreSQL on this machine, serverCPU reports the server's CPU time.
func openStores(ctx context.Context, c config) (stores []storage.Store, desc string, cleanup func(), serverCPUFn func() time.Duration, err error) {
	switch c.store {
	case "memstore":
		s := memstore.New()
		stores := make([]storage.Store, c.replicas)
		for i := range stores {
			stores[i] = s
		}
		return stores, "memstore", func() {}, nil, nil
	case "boltstore":
		dir, err := os.MkdirTemp("", "bench-fleet-")
		if err != nil {
			return nil, "", nil, nil, err
		}
		path := filepath.Join(dir, "jobs.db")
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, "", nil, nil, err
		}
		return []storage.Store{s}, "boltstore (" + path + ")", func() {
			_ = s.Close()
			_ = os.RemoveAll(dir)
		}, nil, nil
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bench_fleet_" + hex.EncodeToString(b)
	var opened []*sqlstore.Store
	cleanup = func() {
		for i := len(opened) - 1; i >= 0; i-- {
			if i == 0 {
				if _, err := opened[0].DB().ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
					fmt.Fprintf(os.Stderr, "bench/fleet: dropping schema %s: %v (drop it by hand)\n", schema, err)
				}
			}
			_ = opened[i].Close(context.Background())
		}
	}
	stores = make([]storage.Store, c.replicas)
	for i := range stores {
		// One after the other: each Open applies the migrations.
		s, err := postgres.Open(ctx, c.dsn, postgres.Options{Store: sqlstore.Options{Schema: schema}})
		if err != nil {
			cleanup()
			return nil, "", nil, nil, err
		}
		opened = append(opened, s)
		stores[i] = s
	}
	return stores, fmt.Sprintf("PostgreSQL schema %s, one pool per replica (default size)", schema), cleanup, serverCPU(ctx, opened[0].DB()), nil
}

// runnerConfig is the Config every runner of the scenario gets.
func runnerConfig(c config, s storage.Store, d job.Config) job.Config {
	d.Store = s
	d.Workers = c.workers
	d.EndpointConcurrency = c.endpointConcurrency
	d.LeaseDuration = c.lease
	return d
}

// probe runs one job alone on the first replica's store, under its own key
// prefix, against the target's lone system, and returns how long it took
// from Runner.Start to its completion write and when that was.
func probe(ctx context.Context, c config, store storage.Store, tgt target) (took time.Duration, at time.Time, updates int64, err error) {
	const prefix = "bmckit-probe/"
	counts := newWriteCounts()
	cs, err := newCountingStore(store, prefix, counts, nil)
	if err != nil {
		return 0, time.Time{}, 0, err
	}
	r, err := job.NewRunner(runnerConfig(c, cs, job.Config{StepperConfig: job.StepperConfig{Dialer: tgt.probeDialer(), Credentials: tgt.creds()}, KeyPrefix: prefix, Owner: "fleet-probe"}))
	if err != nil {
		return 0, time.Time{}, 0, err
	}
	if _, err := r.Submit(ctx, "probe", tgt.probeSpec()); err != nil {
		return 0, time.Time{}, 0, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- r.Start(rctx) }()
	wctx, wcancel := context.WithTimeout(ctx, c.timeout)
	defer wcancel()
	j, err := r.Wait(wctx, "probe")
	if err != nil {
		return 0, time.Time{}, 0, fmt.Errorf("the lone job did not complete: %w", err)
	}
	if j.Status.Result != conditions.ResultSucceeded {
		return 0, time.Time{}, 0, fmt.Errorf("the lone job ended %s: %s", j.Status.Result, j.Status.Message)
	}
	// Wait returns after the completion write; the counting store must
	// have recognized it (its check reads the JSON without decoding it).
	counts.mu.Lock()
	at, ok := counts.completed["probe"]
	counts.mu.Unlock()
	if !ok {
		return 0, time.Time{}, 0, fmt.Errorf("the counting store did not recognize the lone job's completion write; fix completedRecord for the record format")
	}
	for counts.released.Load() == 0 && time.Since(at) < 10*time.Second {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		return 0, time.Time{}, 0, err
	}
	return at.Sub(t0), at, counts.jobsUpdate.Load(), nil
}

// result is what one scenario measured.
type result struct {
	wall, one, formula     time.Duration
	formulaText, callsText string
	usage                  usage         // of the run (getrusage): CPU, split, and page faults
	serverCPU              time.Duration // PostgreSQL's, -1 if unknown
	counts                 *writeCounts
	samples                []sample
	g0                     int
	heap0, heapSubmitted   uint64
	rssPeakKB, rss0KB      int64
	rssReset               bool
	freed                  time.Duration // Start to the last lock released
	jobs                   []*job.Job
	timedOut               bool
	submit                 time.Duration
	start                  time.Time // Runner.Start
	crash                  *crash    // -crash-at: when the runners died and how they recovered
	tracker                *tracker  // the runners' BMC calls
}

// crash is what -crash-at saw.
type crash struct {
	at, firstAfter time.Time
	checked        time.Time     // when the store was last read for unacknowledged completions
	sinceStart     time.Duration // from Start to the crash
	completed      int64         // jobs completed before the crash
	inCall         int64         // BMC calls in flight at the crash
	refused        int64         // writes the dead runners tried after it
	dead           *generation   // the runners that died
}

// generation is the runners of one process lifetime: -crash-at ends one and
// starts the next, on the same stores with the same Owners.
type generation struct {
	runners    []*job.Runner
	dead       *atomic.Bool // set at the crash: their writes are refused
	cancel     context.CancelFunc
	finished   chan struct{} // closed when every runner's Start returned
	finishedAt time.Time
	errs       []error // Start's, once finished is closed
}

func newGeneration(c config, stores []storage.Store, tgt target, counts *writeCounts, tr *tracker) (*generation, error) {
	g := &generation{runners: make([]*job.Runner, c.replicas), dead: new(atomic.Bool)}
	for i := range g.runners {
		cs, err := newCountingStore(stores[i], keyPrefix, counts, tr)
		if err != nil {
			return nil, err
		}
		cs.dead = g.dead
		g.runners[i], err = job.NewRunner(runnerConfig(c, cs, job.Config{
			StepperConfig: job.StepperConfig{
				Dialer:      trackedDialer{d: tgt.dialer(), t: tr},
				Credentials: tgt.creds(),
			}, Owner: fmt.Sprintf("fleet-replica-%d", i),
		}))
		if err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *generation) start(ctx context.Context) {
	ctx, g.cancel = context.WithCancel(ctx)
	g.finished = make(chan struct{})
	g.errs = make([]error, len(g.runners))
	var wg sync.WaitGroup
	for i, r := range g.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.errs[i] = r.Start(ctx)
		}()
	}
	go func() {
		wg.Wait()
		g.finishedAt = time.Now()
		close(g.finished)
	}()
}

// stop cancels the runners and waits for their Start to return; stopping
// again waits for nothing new. A crashed generation's errors come from its
// refused writes and do not count.
func (g *generation) stop() error {
	if g.cancel == nil {
		return nil
	}
	g.cancel()
	<-g.finished
	if g.dead.Load() {
		return nil
	}
	return errors.Join(g.errs...)
}

// restart follows the crash of dead's process at the crashAfter-th job
// update: no write of its runners reaches the store from then on (the
// counting store refuses them), and their BMC calls in flight are cut off
// here; then a new process starts, with the same Owners. The dead runners'
// goroutines wind down in the background, their writes refused, their BMC
// calls canceled (the fake applies nothing whose call was canceled); what
// they still do is close their BMC connections, as a dead process's sockets
// close.
func restart(ctx context.Context, c config, stores []storage.Store, tgt target, counts *writeCounts, tr *tracker, dead *generation) (*generation, error) {
	dead.cancel()
	gen, err := newGeneration(c, stores, tgt, counts, tr)
	if err != nil {
		return nil, err
	}
	gen.start(ctx)
	return gen, nil
}

func run(c config) (bool, error) {
	if err := c.validate(); err != nil {
		return false, err
	}
	c.perSystem = max(c.perSystem, 1) // 0: a config{} of the tests
	ctx := context.Background()
	startedAt := time.Now().UTC()
	load0 := loadAvg()

	var tgt target
	var err error
	if c.powerDelay < 0 {
		c.powerDelay = 0
		if c.target == "redfish" {
			c.powerDelay = 2 * time.Second
		}
	}
	if c.target == "fake" {
		tgt, err = newFakeTarget(c.n, c.perSystem, c.latency, c.powerDelay)
	} else {
		tgt, err = newRedfishTarget(c.n, c.endpoints, c.powerDelay, c.requestLimit, c.rps)
	}
	if err != nil {
		return false, err
	}
	defer tgt.close()
	stores, storeDesc, cleanup, srvCPU, err := openStores(ctx, c)
	if err != nil {
		return false, err
	}
	defer cleanup()

	var res result
	var probeAt time.Time
	var probeUpdates int64
	res.one, probeAt, probeUpdates, err = probe(ctx, c, stores[0], tgt)
	if err != nil {
		return false, err
	}
	ncalls, calls := tgt.probeCalls(probeAt)
	res.formula, res.formulaText = tgt.formula(ncalls)
	res.callsText = calls

	// The fleet run.
	res.counts = newWriteCounts()
	tr := &tracker{}
	res.tracker = tr
	gen, err := newGeneration(c, stores, tgt, res.counts, tr)
	if err != nil {
		return false, err
	}
	runners := gen.runners
	runtime.GC()
	res.heap0 = liveHeap()
	names := make([]string, c.n)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%05d", i)
	}
	s0 := time.Now()
	if err := submitAll(ctx, c, runners, tgt, names); err != nil {
		return false, err
	}
	res.submit = time.Since(s0)
	runtime.GC()
	res.heapSubmitted = liveHeap()
	res.g0 = runtime.NumGoroutine()
	res.rss0KB = procStatusKB("VmRSS")
	res.rssReset = resetPeakRSS()

	smp := startSampler(tr, 10*time.Millisecond, c.n, c.heapProfile)
	res.serverCPU = -1
	var srv0 time.Duration
	if srvCPU != nil {
		srv0 = srvCPU()
	}
	if c.crashAt > 0 {
		// The crash comes at a fraction of the job-record updates the run
		// makes (the lone job's count each): completions bunch together
		// at the end of a fleet run, so a count of completed jobs would
		// crash it when nearly every job is in its last write.
		res.counts.crashAfter = max(1, int64(c.crashAt*float64(c.n)*float64(probeUpdates)))
		res.counts.fence, res.counts.crashed = gen.dead, make(chan struct{})
	}
	u0 := usageNow()
	t0 := time.Now()
	res.start = t0
	gen.start(ctx)
	defer func() { _ = gen.stop() }() // the last generation, on an early return
	deadline := t0.Add(c.timeout)
	for res.counts.ncompleted.Load() < int64(c.n) {
		if time.Now().After(deadline) {
			res.timedOut = true
			break
		}
		select {
		case <-res.counts.crashed: // nil without -crash-at: never
			res.counts.crashed = nil
			res.crash = &crash{at: time.Now(), completed: res.counts.ncompleted.Load(), inCall: tr.inCall.Load(), dead: gen}
			res.crash.sinceStart = res.crash.at.Sub(t0)
			defer func() { _ = res.crash.dead.stop() }() // on an early return
			if gen, err = restart(ctx, c, stores, tgt, res.counts, tr, gen); err != nil {
				return false, err
			}
			runners = gen.runners
		default:
		}
		if res.crash != nil && res.crash.firstAfter.IsZero() && res.counts.ncompleted.Load() > res.crash.completed {
			res.crash.firstAfter = time.Now()
		}
		if cr := res.crash; cr != nil && time.Since(cr.checked) >= 500*time.Millisecond {
			// Completions the crash left unacknowledged (sent before it,
			// so dated at it).
			cr.checked = time.Now()
			if jobs, err := runners[0].List(ctx); err == nil {
				for _, j := range jobs {
					if j.Completed() {
						res.counts.noteUnacked(j.Name, cr.at)
					}
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	res.usage = usageNow().sub(u0)
	if srvCPU != nil {
		res.serverCPU = srvCPU() - srv0
	}
	res.samples = smp.stop()
	res.rssPeakKB = procStatusKB("VmHWM")
	if !res.timedOut {
		res.wall = res.counts.lastCompletion().Sub(t0)
		// Every completed job's lock is deleted right after, or handed to
		// the system's next job; wait until every lock created is deleted.
		for res.counts.sysCreate.Load() > res.counts.sysDelete.Load() && time.Since(t0) < c.timeout {
			time.Sleep(2 * time.Millisecond)
		}
	}
	if n := res.counts.released.Load(); n > 0 {
		res.freed = time.Unix(0, res.counts.lastRelease.Load()).Sub(t0)
	}
	if err := gen.stop(); err != nil {
		return false, err
	}
	if cr := res.crash; cr != nil {
		_ = cr.dead.stop()
		cr.refused = res.counts.refusedDead.Load()
	}
	res.jobs, err = runners[0].List(ctx)
	if err != nil {
		return false, err
	}
	ok := report(c, res, tgt, storeDesc, startedAt, load0)
	return ok, nil
}

// submitAll submits job i through runner i%replicas from c.submitters
// goroutines at once.
func submitAll(ctx context.Context, c config, runners []*job.Runner, tgt target, names []string) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c.submitters)
	for range c.submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(names) {
					return
				}
				if _, err := runners[i%len(runners)].Submit(ctx, names[i], tgt.spec(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func report(c config, res result, tgt target, storeDesc string, startedAt time.Time, load0 string) bool {
	n := float64(c.n)
	// Correctness.
	byResult := map[string]int{}
	reran := 0
	var failures []string
	for _, j := range res.jobs {
		r := string(j.Status.Result)
		if !j.Completed() {
			r = fmt.Sprintf("unfinished (task %d)", j.Status.CurrentTask+1)
		}
		byResult[r]++
		if j.Status.Result != conditions.ResultSucceeded && len(failures) < 5 {
			failures = append(failures, fmt.Sprintf("%s: %s %s: %s", j.Name, r, j.Status.Reason, j.Status.Message))
		}
		for _, ts := range j.Status.Tasks {
			if ts.Attempts != 1 {
				reran++
			}
		}
	}
	allOK := byResult[string(conditions.ResultSucceeded)] == c.n && len(res.jobs) == c.n && !res.timedOut
	violations, onceSummary := tgt.verify(res.crash != nil)
	// After a crash, a task in flight is resumed: its record counts one
	// attempt more, and only the BMC's side (verify) tells whether an
	// action was sent twice.
	order := checkOrder(res.tracker, res.counts)
	once := len(violations) == 0 && (reran == 0 || res.crash != nil) && res.counts.dupes == 0 && order.ok()

	workers := "default"
	if c.workers > 0 {
		workers = fmt.Sprint(c.workers)
	}
	wall, ratio := "timed out", "-"
	if !res.timedOut {
		wall = fmtDur(res.wall)
		// A system's jobs run one after the other.
		ratio = fmt.Sprintf("%.2f", res.wall.Seconds()/(res.one.Seconds()*float64(c.perSystem)))
	}
	tasks := n * tasksPerJob
	jw, sw := float64(res.counts.jobWrites())/n, float64(res.counts.systemWrites())/n
	var peakG int
	var peakHeap uint64
	var maxOpen, maxInCall int64
	var mostWaiting sample
	for _, s := range res.samples {
		peakG = max(peakG, s.goroutines)
		peakHeap = max(peakHeap, s.liveHeap)
		maxOpen = max(maxOpen, s.open)
		maxInCall = max(maxInCall, s.inCall)
		if s.waiting() > mostWaiting.waiting() || s.waiting() == mostWaiting.waiting() && s.active() < mostWaiting.active() {
			mostWaiting = s
		}
	}
	heapPerJob := float64(int64(peakHeap)-int64(res.heap0)) / n
	perActive, perWaiting, fitOK := goroutineFit(res.samples, max(10, int64(c.n)/4))
	// Goroutines per waiting job: at the sample where the most jobs waited
	// between steps, the goroutines above the count at Start, less one per
	// job in a step (each runs on a goroutine of its own), per waiting job.
	// An upper bound: the runner's own goroutines and HTTP connections
	// count too.
	// On the fake without -power-delay, power lands at once and a job runs
	// in one step: a job "waiting" by the sampler's count is one mid-step on
	// a busy CPU.
	gw := "n/a (no job waited)"
	if c.target == "fake" && c.powerDelay == 0 {
		gw = "n/a (jobs never wait: power lands at once)"
	} else if w := mostWaiting.waiting(); w >= max(10, int64(c.n)/4) {
		gw = fmt.Sprintf("≤ %.2f", float64(int64(mostWaiting.goroutines-res.g0)-mostWaiting.active())/float64(w))
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "**NO**"
	}
	cpuCell := fmtDur(time.Duration(float64(res.usage.cpu()) / tasks))
	if res.serverCPU >= 0 {
		cpuCell += " + " + fmtDur(time.Duration(float64(res.serverCPU)/tasks)) + " PostgreSQL"
	}
	fmt.Println("| target | N | store | replicas | workers | wall | one job alone | ideal by calls | wall / (one job × jobs per system) | CPU per task | allocs per task | store writes per job: jobs/ + systems/ = total | live heap per job | peak RSS per job | peak goroutines (per job) | goroutines per waiting job | all Succeeded | exactly once |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	fmt.Printf("| %s | %d | %s | %d | %s | %s | %s | %s (%s) | %s | %s | %.0f | %.2f + %.2f = %.2f | %s | %s | %d (%.2f) | %s | %s | %s |\n",
		c.target, c.n, c.store, c.replicas, workers, wall, fmtDur(res.one), fmtDur(res.formula), res.formulaText, ratio,
		cpuCell, float64(res.usage.allocs)/tasks, jw, sw, jw+sw, fmtBytes(heapPerJob), fmtBytes(float64(res.rssPeakKB)*1024/n),
		peakG, float64(peakG-res.g0)/n, gw, yes(allOK), yes(once))
	sum := summary{Wall: res.wall, CPUPerTask: time.Duration(float64(res.usage.cpu()) / tasks), ServerCPU: -1,
		AllocsPerTask: float64(res.usage.allocs) / tasks, WritesPerJob: jw + sw, RSSPerJob: float64(res.rssPeakKB) * 1024 / n,
		OK: allOK && once}
	if res.serverCPU >= 0 {
		sum.ServerCPU = time.Duration(float64(res.serverCPU) / tasks)
	}
	writeSummary(c.summary, sum)
	fmt.Println()
	fmt.Printf("    go run ./bench/fleet %s\n\n", strings.Join(os.Args[1:], " "))
	fmt.Printf("- Run at %s, load average %s before and %s after; %d CPUs (GOMAXPROCS %d), %s.\n",
		startedAt.Format("2006-01-02 15:04 UTC"), load0, loadAvg(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Printf("- Store: %s. Jobs submitted before Start from %d goroutines (%s, %.0f creates/s); the clock runs from Runner.Start to the last completion write.\n",
		storeDesc, c.submitters, fmtDur(res.submit), n/res.submit.Seconds())
	if !res.timedOut {
		fmt.Printf("- Every system's lock was released %s after Start (the last job's BMC connection closes before its lock is deleted).\n", fmtDur(res.freed))
	}
	fmt.Printf("- One job alone (same process and store, own key prefix, before the fleet run): %s; its critical path: %s.\n", fmtDur(res.one), res.callsText)
	cpu := res.usage.cpu()
	fmt.Printf("- CPU: %s user+system for the whole process over the run (getrusage), %d tasks; system %s (%.0f%%), %.1f minor page faults per job",
		fmtDur(cpu), int(tasks), fmtDur(res.usage.sys), 100*float64(res.usage.sys)/max(float64(cpu), 1), float64(res.usage.minFaults)/float64(c.n))
	switch {
	case res.serverCPU >= 0:
		fmt.Printf("; PostgreSQL's own CPU (the cluster's postmaster and its children, from /proc; other clients of the same cluster count too): %s", fmtDur(res.serverCPU))
	case c.store == "postgres":
		fmt.Printf("; PostgreSQL's own CPU (another process, not found in /proc) is not included")
	}
	if c.target == "redfish" {
		fmt.Printf("; the Redfish simulators run in this process and are included")
	}
	fmt.Println(".")
	fc := res.counts
	fmt.Printf("- Store writes (acknowledged), per job: jobs/ create %.2f, update %.2f, delete %.2f; systems/ (locks) create %.2f, update %.2f, delete %.2f; other %d. Refused writes (lost compare-and-swap, lock taken by another replica), not counted above: jobs/ %d, systems/ %d; by cause: %s.\n",
		float64(fc.jobsCreate.Load())/n, float64(fc.jobsUpdate.Load())/n, float64(fc.jobsDelete.Load())/n,
		float64(fc.sysCreate.Load())/n, float64(fc.sysUpdate.Load())/n, float64(fc.sysDelete.Load())/n, fc.other.Load(),
		fc.failedJobs.Load(), fc.failedSystems.Load(), fc.failures())
	if res.tracker != nil && res.crash == nil {
		fmt.Printf("- The jobs began to dial their BMCs (after Start): %s.\n", res.tracker.dialsAfter(res.start))
	}
	fmt.Printf("- Job-record updates took (store call to its return, as a step waits for it; buckets a quarter of a power of two wide): %s.\n", &fc.updateLatency)
	rssNote := "VmHWM reset at Start (clear_refs)"
	if !res.rssReset {
		rssNote = "VmHWM since process start (clear_refs refused)"
	}
	fmt.Printf("- Memory: live heap (runtime/metrics /gc/heap/live:bytes) %s before submit, %s after (records and queue: %s per job), peak %s during the run; per job = (peak - before submit) / N. Peak RSS: %s, whole process (fakes or simulators included), %s; RSS at Start %s.\n",
		fmtBytes(float64(res.heap0)), fmtBytes(float64(res.heapSubmitted)), fmtBytes(float64(int64(res.heapSubmitted)-int64(res.heap0))/n),
		fmtBytes(float64(peakHeap)), fmtBytes(float64(res.rssPeakKB)*1024), rssNote, fmtBytes(float64(res.rss0KB)*1024))
	fmt.Printf("- Goroutines (sampled every 10 ms, %d samples): %d at Start, peak %d; at most %d BMC connections held and %d BMC calls in flight at once.",
		len(res.samples), res.g0, peakG, maxOpen, maxInCall)
	if mostWaiting.waiting() > 0 && c.target != "fake" {
		fmt.Printf(" Most jobs waiting between steps (BMC connection held, no BMC call or job-record read/write in flight): %d, with %d in a BMC call, %d in a store operation and %d goroutines in all (the table's goroutines per waiting job: those above the count at Start, less one per job in a step, per waiting job).",
			mostWaiting.waiting(), mostWaiting.inCall, mostWaiting.inStore, mostWaiting.goroutines)
	}
	if fitOK && c.target != "fake" {
		fmt.Printf(" Least-squares fit over the samples: %.2f goroutines per job in a step, %.2f per job waiting.", perActive, perWaiting)
	}
	fmt.Println()
	for _, l := range tgt.notes() {
		fmt.Println("- " + l)
	}
	keys := make([]string, 0, len(byResult))
	for k := range byResult {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, byResult[k]))
	}
	if cr := res.crash; cr != nil {
		after := "no job completed after it"
		if !cr.firstAfter.IsZero() {
			after = fmt.Sprintf("the first completion after it came %s after the crash", fmtDur(cr.firstAfter.Sub(cr.at)))
		}
		fmt.Printf("- Crash (-crash-at %g): %s after Start, with %d of %d jobs completed and %d BMC calls in flight. New runners with the same Owners started at once; %s; %d completion writes sent before the crash committed with their acknowledgement lost (found in the store). The dead runners tried %d writes after the crash (refused, never sent) and their Start returned %s after it (releasing their locks, with the store refusing, until a lease ran out). Tasks resumed (more than one attempt in the record): %d, expected after a crash; the BMCs' call logs decide exactly once. A system may have had two sessions open at once, the dead runner's until it closed.\n",
			c.crashAt, fmtDur(cr.sinceStart), cr.completed, c.n, cr.inCall, after, res.counts.unacked, cr.refused, fmtDur(cr.dead.finishedAt.Sub(cr.at)), reran)
	}
	fmt.Println("- " + order.String())
	fmt.Printf("- Results: %s (of %d submitted). Exactly once: %s; tasks with more than one attempt: %d; completion written twice: %d.\n",
		strings.Join(parts, ", "), c.n, onceSummary, reran, fc.dupes)
	if res.timedOut {
		fmt.Printf("- TIMED OUT after %s with %d of %d completion writes seen.\n", c.timeout, fc.ncompleted.Load(), c.n)
	}
	for _, f := range failures {
		fmt.Println("  - not Succeeded: " + f)
	}
	for i, v := range violations {
		if i == 10 {
			fmt.Printf("  - ... %d more systems\n", len(violations)-10)
			break
		}
		fmt.Println("  - exactly-once violated: " + v)
	}
	return allOK && once
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func fmtBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
