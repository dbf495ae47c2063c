package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/growstack"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// The floor (-floor) is what no Runner can beat in this process on this
// machine: the same N netboot jobs against the same fake BMCs, each driven
// by job.Stepper on a goroutine of its own from the first instant, with no
// store (persist does nothing), no locks, no queue, no scan, no Workers
// bound and no Wait. What it costs is the fake BMCs, the goroutines and
// timers their latency needs, the connection pool and the state machine.
// A Runner does all that and more, so the floor's wall / one job bounds the
// Runner's from below: when the floor is already past a target, the target
// cannot be met here by any runner design, only by more CPUs (or cheaper
// simulated BMCs, which would flatter the runner).
//
// The reference is the same: one job stepped alone, against its own fake.

type floorResult struct {
	wall, one time.Duration
	usage     usage
	peakG     int
	failed    []string
	rssPeakKB int64
	serverCPU time.Duration // PostgreSQL's over the run, -1 if unknown
}

// noPersist is the floor's persist without -floor-store: nothing is written.
func noPersist(context.Context, *job.Job) error { return nil }

// storePersist is the floor's persist with -floor-store: the job's record
// written by compare-and-swap at the revision its last write returned, as
// the Runner's persist writes it (the same bytes, with the Runner's encoder,
// go-json), with nothing else around it.
func storePersist(st storage.Store, key string, rev int64) job.PersistFunc {
	return func(ctx context.Context, j *job.Job) error {
		data, err := gojson.Marshal(j)
		if err != nil {
			return err
		}
		n, err := st.Update(ctx, key, data, rev)
		if err != nil {
			return fmt.Errorf("persisting %s: %w", key, err)
		}
		rev = n
		return nil
	}
}

// stepToEnd steps j until it completed, waiting out each RequeueAfter, and
// returns when it completed; the BMC connection is released after.
func stepToEnd(ctx context.Context, s *job.Stepper, j *job.Job, persist job.PersistFunc) (time.Time, error) {
	defer func() { _ = s.Release(ctx, j.Name, j.Spec.BMC) }()
	for {
		res, err := s.Step(ctx, j, persist)
		if err != nil {
			return time.Time{}, err
		}
		if res.Done {
			return time.Now(), nil
		}
		if res.RequeueAfter > 0 {
			t := time.NewTimer(res.RequeueAfter)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return time.Time{}, ctx.Err()
			}
		}
	}
}

func newJob(name string, spec job.Spec) *job.Job {
	return &job.Job{Name: name, Generation: 1, CreatedAt: time.Now(), Spec: spec}
}

func newFloorStepper(d bmc.Dialer, creds bmc.CredentialsResolver) (*job.Stepper, error) {
	return job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: d, Credentials: creds})
}

func runFloor(c config) (bool, error) {
	if err := c.validate(); err != nil {
		return false, err
	}
	if c.target != "fake" {
		return false, fmt.Errorf("-floor -target %s: the floor runs on the fake target only", c.target)
	}
	if c.perSystem > 1 {
		return false, fmt.Errorf("-floor -jobs-per-system %d: the floor steps every job at once, one per system", c.perSystem)
	}
	if c.powerDelay < 0 {
		c.powerDelay = 0
	}
	startedAt, load0 := time.Now().UTC(), loadAvg()
	tgt, err := newFakeTarget(c.n, 1, c.latency, c.powerDelay)
	if err != nil {
		return false, err
	}
	defer tgt.close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()

	var res floorResult
	ps, err := newFloorStepper(tgt.probeDialer(), tgt.creds())
	if err != nil {
		return false, err
	}
	t0 := time.Now()
	pj := newJob("probe", tgt.probeSpec())
	at, err := stepToEnd(ctx, ps, pj, noPersist)
	if err != nil {
		return false, fmt.Errorf("the lone job: %w", err)
	}
	if pj.Status.Result != conditions.ResultSucceeded {
		return false, fmt.Errorf("the lone job ended %s: %s", pj.Status.Result, pj.Status.Message)
	}
	res.one = at.Sub(t0)

	s, err := newFloorStepper(tgt.dialer(), tgt.creds())
	if err != nil {
		return false, err
	}
	jobs := make([]*job.Job, c.n)
	persists := make([]job.PersistFunc, c.n)
	for i := range jobs {
		jobs[i] = newJob(fmt.Sprintf("fleet-%05d", i), tgt.spec(i))
		persists[i] = noPersist
	}
	var srvCPU func() time.Duration
	storeDesc := "no store"
	if c.floorStore {
		stores, desc, cleanup, cpuFn, err := openStores(ctx, config{store: c.store, replicas: 1, dsn: c.dsn})
		if err != nil {
			return false, err
		}
		defer cleanup()
		srvCPU, storeDesc = cpuFn, desc
		if err := createRecords(ctx, stores[0], jobs, persists, c.submitters); err != nil {
			return false, err
		}
	}
	runtime.GC()
	resetPeakRSS()
	var last atomic.Int64
	var failedMu sync.Mutex
	var wg sync.WaitGroup
	var peakG atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // goroutines, every 10 ms
		defer close(sampled)
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tk.C:
				if g := int64(runtime.NumGoroutine()); g > peakG.Load() {
					peakG.Store(g)
				}
			}
		}
	}()
	var srv0 time.Duration
	if srvCPU != nil {
		srv0 = srvCPU()
	}
	u0 := usageNow()
	t0 = time.Now()
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// As the Runner's step workers do: without it the floor would
			// pay for stack copies the Runner does not, 15-17% of its CPU.
			growstack.Grow()
			at, err := stepToEnd(ctx, s, j, persists[i])
			if err == nil {
				for {
					l := last.Load()
					if at.UnixNano() <= l || last.CompareAndSwap(l, at.UnixNano()) {
						break
					}
				}
			}
			if err != nil || j.Status.Result != conditions.ResultSucceeded {
				failedMu.Lock()
				res.failed = append(res.failed, fmt.Sprintf("%s: %v %s %s", j.Name, err, j.Status.Result, j.Status.Message))
				failedMu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.usage = usageNow().sub(u0)
	res.serverCPU = -1
	if srvCPU != nil {
		res.serverCPU = srvCPU() - srv0
	}
	res.wall = time.Unix(0, last.Load()).Sub(t0)
	res.rssPeakKB = procStatusKB("VmHWM")
	close(stopSampling)
	<-sampled
	res.peakG = int(peakG.Load())

	violations, onceSummary := tgt.verify(false)
	ok := len(res.failed) == 0 && len(violations) == 0
	tasks := float64(c.n * tasksPerJob)
	cpuCell := fmtDur(time.Duration(float64(res.usage.cpu()) / tasks))
	if res.serverCPU >= 0 {
		cpuCell += " + " + fmtDur(time.Duration(float64(res.serverCPU)/tasks)) + " PostgreSQL"
	}
	fmt.Printf("| floor: Stepper alone, %s | N | wall | one job alone | wall / one job | CPU per task | allocs per task | peak RSS per job | peak goroutines | all Succeeded, exactly once |\n", map[bool]string{false: "no store", true: "job records written to " + c.store}[c.floorStore])
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	fmt.Printf("| fake, latency %s | %d | %s | %s | %.2f | %s | %.0f | %s | %d | %v |\n\n",
		c.latency, c.n, fmtDur(res.wall), fmtDur(res.one), res.wall.Seconds()/res.one.Seconds(),
		cpuCell, float64(res.usage.allocs)/tasks, fmtBytes(float64(res.rssPeakKB)*1024/float64(c.n)), res.peakG, ok)
	fmt.Printf("    go run ./bench/fleet %s\n\n", strings.Join(os.Args[1:], " "))
	writeSummary(c.summary, summary{Wall: res.wall, CPUPerTask: time.Duration(float64(res.usage.cpu()) / tasks), ServerCPU: -1,
		AllocsPerTask: float64(res.usage.allocs) / tasks, RSSPerJob: float64(res.rssPeakKB) * 1024 / float64(c.n), OK: ok})
	fmt.Printf("- Run at %s, load average %s before and %s after; %d CPUs (GOMAXPROCS %d), %s.\n",
		startedAt.Format("2006-01-02 15:04 UTC"), load0, loadAvg(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Printf("- CPU: %s user+system for the whole process over the run, %d tasks (%s per job); %.1f minor page faults per job.\n",
		fmtDur(res.usage.cpu()), int(tasks), fmtDur(res.usage.cpu()/time.Duration(c.n)), float64(res.usage.minFaults)/float64(c.n))
	fmt.Printf("- On %d CPUs, wall = %.2f × one job needs at most %s of CPU per task for the whole process at that ratio; 1.1× allows %s.\n",
		runtime.GOMAXPROCS(0), res.wall.Seconds()/res.one.Seconds(),
		fmtDur(time.Duration(float64(res.wall)*float64(runtime.GOMAXPROCS(0))/tasks)),
		fmtDur(time.Duration(1.1*float64(res.one)*float64(runtime.GOMAXPROCS(0))/tasks)))
	fmt.Printf("- Store: %s.\n", storeDesc)
	fmt.Printf("- Exactly once: %s.\n", onceSummary)
	for i, f := range res.failed {
		if i == 5 {
			fmt.Printf("  - ... %d more\n", len(res.failed)-5)
			break
		}
		fmt.Println("  - not Succeeded: " + f)
	}
	for i, v := range violations {
		if i == 10 {
			break
		}
		fmt.Println("  - exactly-once violated: " + v)
	}
	return ok, nil
}

// createRecords stores every job's first record before the clock starts,
// as the Runner's fleet run submits before Start, from submitters
// goroutines, and sets each job's persist to write that record on.
func createRecords(ctx context.Context, st storage.Store, jobs []*job.Job, persists []job.PersistFunc, submitters int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, submitters)
	for range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					return
				}
				data, err := gojson.Marshal(jobs[i])
				if err != nil {
					errs <- err
					return
				}
				key := keyPrefix + "jobs/" + jobs[i].Name
				rev, err := st.Create(ctx, key, data)
				if err != nil {
					errs <- fmt.Errorf("creating %s: %w", key, err)
					return
				}
				persists[i] = storePersist(st, key, rev)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
