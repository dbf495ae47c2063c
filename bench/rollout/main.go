// Command rollout measures a rollout's wall time against its ideal schedule
// (issue 37, docs/rollouts.md "Speed"). N servers, one firmware update each
// (every update task runs -update on the BMC), maxUnavailable -max, no
// failures, no canary: the ideal is ceil(N / max) x one job's time, where
// one job's time is the median of -lone jobs run alone, one after another,
// on the same Runner and store just before the rollout (Submit to
// Runner.Wait returning: the BMC's update time plus everything a job costs
// around it, the Runner's pickup and polls included). A rollout cannot beat
// that: each server's job takes at least that long and at most max run at
// once; the ratio is what the rollout's scheduling (its passes, the write
// before each start, the Runner picking up each created job) adds.
//
// The BMCs are bmc/fake (in process) or redfishtest simulators (-target
// redfish: in a child process of this program, so the CPU figure is the
// client's alone). The store is memstore or boltstore (the embedded
// default), wrapped to count writes by key prefix.
//
// It prints one Markdown row per run:
//
//	go run ./rollout -n 1000,10000 -store memstore,boltstore
//	go run ./rollout -target redfish -n 1000 -store boltstore
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/bench/internal/measure"
	"github.com/bmckit/bmckit/bench/internal/selfchild"
	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

const (
	simChildEnv  = "BMCKIT_BENCH_ROLLOUT_SIMS"
	simUser      = "admin"
	simPassword  = "bench-pw"
	component    = "BIOS"
	version      = "2.0.0"
	fakeImageURI = "http://img.example/bios-2.0.0.bin"
)

type config struct {
	target      string
	ns          []int
	stores      []string
	max         int
	update      time.Duration
	lone        int
	reps        int
	poll        time.Duration
	slowPoll    time.Duration
	rolloutPoll time.Duration
	scan        time.Duration
	cpuprofile  string
	dir         string
	verbose     bool
}

func main() {
	if os.Getenv(simChildEnv) != "" {
		simChild()
		return
	}
	var c config
	var ns, stores string
	flag.StringVar(&c.target, "target", "fake", "fake (bmc/fake, in process) or redfish (redfishtest simulators in a child process)")
	flag.StringVar(&ns, "n", "1000,10000", "servers, comma-separated")
	flag.StringVar(&stores, "store", "memstore,boltstore", "stores, comma-separated: memstore, boltstore")
	flag.IntVar(&c.max, "max", 50, "maxUnavailable")
	flag.DurationVar(&c.update, "update", 200*time.Millisecond, "how long each BMC's update task runs")
	flag.IntVar(&c.lone, "lone", 7, "jobs run alone for the ideal (the median counts)")
	flag.IntVar(&c.reps, "reps", 1, "runs per (n, store), alternating the stores")
	flag.DurationVar(&c.poll, "poll", 20*time.Millisecond, "the Runner's PollInterval")
	flag.DurationVar(&c.slowPoll, "slow-poll", 40*time.Millisecond, "the Runner's SlowPollInterval (firmware tasks are read at it)")
	flag.DurationVar(&c.scan, "scan", 0, "the Runner's ScanInterval (0: its default, 1s)")
	flag.DurationVar(&c.rolloutPoll, "rollout-poll", time.Second, "the Controller's PollInterval")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the rollouts (not the lone jobs) to this file")
	flag.BoolVar(&c.verbose, "v", false, "print the rollout's progress")
	flag.Parse()
	for _, s := range strings.Split(ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fatal("-n %q: %v", s, err)
		}
		c.ns = append(c.ns, n)
	}
	c.stores = strings.Split(stores, ",")
	dir, err := os.MkdirTemp("", "bench-rollout-")
	if err != nil {
		fatal("%v", err)
	}
	defer os.RemoveAll(dir)
	c.dir = dir
	if c.cpuprofile != "" {
		f, err := os.Create(c.cpuprofile)
		if err != nil {
			fatal("%v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal("%v", err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("target %s, update %v, maxUnavailable %d, Runner poll %v/%v scan %v, Controller poll %v, GOMAXPROCS %d, load %s\n",
		c.target, c.update, c.max, c.poll, c.slowPoll, c.scan, c.rolloutPoll, runtime.GOMAXPROCS(0), loadavg())
	fmt.Println("| target | servers | store | lone job (median) | ideal | rollout wall | ratio | CPU/server | store writes/server (rollout record / jobs / locks / other) | rollout passes written | result | load |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, n := range c.ns {
		for rep := range c.reps {
			order := slices.Clone(c.stores)
			if rep%2 == 1 { // alternate A/B
				slices.Reverse(order)
			}
			for _, st := range order {
				fmt.Println(run(c, n, strings.TrimSpace(st)))
			}
		}
	}
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rollout bench: "+format+"\n", args...)
	os.Exit(1)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// fleet is the BMCs: n for the rollout and some more for the lone jobs.
type fleet struct {
	addrs, lone []string
	dialer      bmc.Dialer
	imageURI    string
	stop        func()
}

func newFleet(c config, n int) *fleet {
	nl := c.lone
	switch c.target {
	case "fake":
		ff := fake.NewFleet()
		opts := fake.Options{Power: bmc.PowerOn, Firmware: fake.FirmwareOptions{
			Components: map[string]string{component: "1.0.0"},
			Images:     map[string]fake.FirmwareImageInfo{fakeImageURI: {Component: component, Version: version}},
			Duration:   c.update,
		}}
		f := &fleet{dialer: ff, imageURI: fakeImageURI, stop: func() {}}
		for i := range n + nl {
			addr := fmt.Sprintf("redfish://10.%d.%d.%d/redfish/v1/Systems/1", i/65536, (i/256)%256, i%256)
			if _, err := ff.AddNew(addr, opts); err != nil {
				fatal("fake: %v", err)
			}
			if i < n {
				f.addrs = append(f.addrs, addr)
			} else {
				f.lone = append(f.lone, addr)
			}
		}
		return f
	case "redfish":
		p, err := selfchild.Start([]string{simChildEnv + "=1"}, "-sims", strconv.Itoa(n+nl), "-update", c.update.String())
		if err != nil {
			fatal("sim child: %v", err)
		}
		sc := bufio.NewScanner(p.Stdout)
		f := &fleet{stop: func() { _ = p.Stop() }}
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "image "):
				f.imageURI = strings.TrimPrefix(l, "image ")
			case strings.HasPrefix(l, "addr "):
				if len(f.addrs) < n {
					f.addrs = append(f.addrs, strings.TrimPrefix(l, "addr "))
				} else {
					f.lone = append(f.lone, strings.TrimPrefix(l, "addr "))
				}
			}
			if l == "ready" {
				break
			}
		}
		if len(f.addrs)+len(f.lone) != n+nl || f.imageURI == "" {
			fatal("sim child gave %d addresses, want %d", len(f.addrs)+len(f.lone), n+nl)
		}
		d := &bmc.SchemeDialer{}
		d.Register("redfish", redfish.NewDialer(redfish.Options{RequestsPerSecond: -1}))
		f.dialer = d
		return f
	}
	fatal("-target %q: fake or redfish", c.target)
	return nil
}

// simChild serves -sims redfishtest simulators and an image server, prints
// "image <uri>", "addr <address>" per simulator and "ready", and runs until
// its stdin closes.
func simChild() {
	fs := flag.NewFlagSet("sims", flag.ExitOnError)
	n := fs.Int("sims", 1, "")
	update := fs.Duration("update", 0, "")
	_ = fs.Parse(os.Args[1:])
	img := redfishtest.FirmwareImage(component, version)
	isrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(img) })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal("%v", err)
	}
	go func() { _ = isrv.Serve(ln) }()
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "image http://%s/bios-%s.bin\n", ln.Addr(), version)
	for range *n {
		s := redfishtest.NewServer(redfishtest.Config{Username: simUser, Password: simPassword,
			Firmware: redfishtest.FirmwareConfig{Duration: *update, Components: map[string]string{component: "1.0.0"}}})
		defer s.Close()
		fmt.Fprintf(w, "addr %s\n", s.Address("1"))
	}
	fmt.Fprintln(w, "ready")
	_ = w.Flush()
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until stdin closes
}

func template(imageURI string) job.Spec {
	return job.Spec{CredentialsRef: "bmc", Tasks: []task.Spec{{FirmwareUpdate: &task.FirmwareUpdateAction{
		ImageURI: imageURI, Component: component, Version: version, Reset: task.FirmwareResetNone,
	}}}}
}

// run measures one rollout of n servers on store st.
func run(c config, n int, st string) string {
	f := newFleet(c, n)
	defer f.stop()
	var base storage.Store
	var closeStore func()
	switch st {
	case "memstore":
		base, closeStore = memstore.New(), func() {}
	case "boltstore":
		path := filepath.Join(c.dir, fmt.Sprintf("jobs-%d-%d.db", n, time.Now().UnixNano()))
		bs, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			fatal("boltstore: %v", err)
		}
		base, closeStore = bs, func() { _ = bs.Close(); _ = os.Remove(path) }
	default:
		fatal("-store %q: memstore or boltstore", st)
	}
	defer closeStore()
	cs := newCountingStore(base)
	r, err := job.NewRunner(job.Config{
		Store: cs,
		StepperConfig: job.StepperConfig{
			Dialer:       f.dialer,
			Credentials:  bmc.StaticCredentials{"bmc": {Username: simUser, Password: simPassword}},
			PollInterval: c.poll, SlowPollInterval: c.slowPoll,
		},
		ScanInterval: c.scan,
	})
	if err != nil {
		fatal("runner: %v", err)
	}
	ev := &events{admit: make([]time.Time, n), recorded: make([]time.Time, n)}
	ctl, err := rollout.New(rollout.Config{Runner: r, Store: cs, PollInterval: c.rolloutPoll, Observer: rollout.Observer{Transition: ev.on}})
	if err != nil {
		fatal("controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdone := make(chan struct{})
	go func() { defer close(rdone); _ = r.Start(ctx) }()
	cdone := make(chan struct{})
	go func() { defer close(cdone); _ = ctl.Start(ctx) }()
	defer func() { cancel(); <-rdone; <-cdone }()

	// One job alone, -lone times in turn: the ideal's unit.
	var lone []time.Duration
	for i, addr := range f.lone {
		js := template(f.imageURI)
		js.BMC = addr
		began := time.Now()
		if _, err := r.Submit(ctx, fmt.Sprintf("lone-%d", i), js); err != nil {
			fatal("lone submit: %v", err)
		}
		j, err := r.Wait(ctx, fmt.Sprintf("lone-%d", i))
		if err != nil || j.Status.Result != conditions.ResultSucceeded {
			fatal("lone job: %v %+v", err, j.Status)
		}
		lone = append(lone, time.Since(began))
	}
	slices.Sort(lone)
	one := lone[len(lone)/2]

	servers := make([]rollout.Server, n)
	for i, a := range f.addrs {
		servers[i] = rollout.Server{Name: fmt.Sprintf("s%05d", i), BMC: a}
	}
	spec := rollout.Spec{Template: template(f.imageURI), Servers: servers, Policy: rollout.Policy{MaxUnavailable: rollout.Count(c.max)}}
	runtime.GC()
	cs.reset()
	cpu0 := measure.CPUTime()
	began := time.Now()
	if _, err := ctl.Create(ctx, "bench", spec); err != nil {
		fatal("create: %v", err)
	}
	var ro *rollout.Rollout
	if c.verbose {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(5 * time.Second):
				}
				if x, err := ctl.Get(ctx, "bench"); err == nil {
					fmt.Fprintf(os.Stderr, "%v %+v\n", time.Since(began).Round(time.Second), x.Status.Counts)
				}
			}
		}()
	}
	ro, err = ctl.Wait(ctx, "bench")
	if err != nil {
		fatal("wait: %v", err)
	}
	wall := time.Since(began)
	cpu := measure.CPUTime() - cpu0
	phases := breakdown(ctx, r, ev, n, wall, c.max, began, began.Add(wall)) + cs.latencies()
	waves := (n + c.max - 1) / c.max
	ideal := time.Duration(waves) * one
	w := cs.counts()
	per := func(x int64) string { return fmt.Sprintf("%.2f", float64(x)/float64(n)) }
	return fmt.Sprintf("| %s | %d | %s | %v (%v–%v) | %v | %v | %.3f× | %v | %s (%s / %s / %s / %s) | %d | %s %d/%d | %s |\n  %s",
		c.target, n, st, one.Round(time.Millisecond), lone[0].Round(time.Millisecond), lone[len(lone)-1].Round(time.Millisecond),
		ideal.Round(10*time.Millisecond), wall.Round(10*time.Millisecond), float64(wall)/float64(ideal),
		(cpu / time.Duration(n)).Round(time.Microsecond),
		per(w.total()), per(w.rollouts), per(w.jobs), per(w.systems), per(w.other), w.rolloutUpdates,
		ro.Status.Result, ro.Status.Counts.Succeeded, n, loadavg(), phases)
}

// events keeps, per server, the pass times of its start and of the pass
// that recorded its completion (Event.Time: the pass's clock, before its
// write).
type events struct {
	admit, recorded []time.Time
}

func (e *events) on(ev rollout.Event) {
	if ev.Index < 0 {
		return
	}
	switch ev.To {
	case rollout.StateRunning:
		e.admit[ev.Index] = ev.Time
	case rollout.StateSucceeded, rollout.StateFailed:
		e.recorded[ev.Index] = ev.Time
	}
}

// breakdown splits a server's slot (from the pass that started it to the
// pass that recorded its completion) into: the pass's write and the job's
// creation (admit -> CreatedAt), the Runner's pickup (-> StartTime), the job
// (-> CompletionTime) and the completion's recording (-> the pass), means
// over the servers; and the slots' use: the summed slot time over wall x
// max.
func breakdown(ctx context.Context, r *job.Runner, ev *events, n int, wall time.Duration, maxU int, created, createdEnd time.Time) string {
	jobs, err := r.List(ctx)
	if err != nil {
		return "breakdown: " + err.Error()
	}
	var create, pickup, runT, record, slot time.Duration
	var mCreate, mPickup, mRun, mRecord time.Duration
	var k, slowPickups int
	for _, j := range jobs {
		if !strings.HasPrefix(j.Name, "bench.") || j.Status.StartTime == nil || j.Status.CompletionTime == nil {
			continue
		}
		f := strings.Split(j.Name, ".")
		i, err := strconv.Atoi(f[1])
		if err != nil || i >= n || ev.admit[i].IsZero() || ev.recorded[i].IsZero() {
			continue
		}
		k++
		create += j.CreatedAt.Sub(ev.admit[i])
		pickup += j.Status.StartTime.Sub(j.CreatedAt)
		runT += j.Status.CompletionTime.Sub(j.Status.StartTime.Time)
		record += ev.recorded[i].Sub(j.Status.CompletionTime.Time)
		slot += ev.recorded[i].Sub(ev.admit[i])
		mCreate = max(mCreate, j.CreatedAt.Sub(ev.admit[i]))
		mPickup = max(mPickup, j.Status.StartTime.Sub(j.CreatedAt))
		if j.Status.StartTime.Sub(j.CreatedAt) > 100*time.Millisecond {
			slowPickups++
		}
		mRun = max(mRun, j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
		mRecord = max(mRecord, ev.recorded[i].Sub(j.Status.CompletionTime.Time))
	}
	// Idle slots: from the first start to the last, the integral of the
	// slots not held (max minus running), in slot-seconds; and after the
	// last start (the tail, fewer servers left than slots).
	type edge struct {
		t time.Time
		d int
	}
	var es []edge
	var first, last time.Time
	for i := range n {
		if ev.admit[i].IsZero() || ev.recorded[i].IsZero() {
			continue
		}
		es = append(es, edge{ev.admit[i], 1}, edge{ev.recorded[i], -1})
		if first.IsZero() || ev.admit[i].Before(first) {
			first = ev.admit[i]
		}
		if ev.admit[i].After(last) {
			last = ev.admit[i]
		}
	}
	slices.SortFunc(es, func(a, b edge) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return b.d - a.d
	})
	var idle time.Duration
	var longest time.Duration // the longest stretch with a slot free before the last start
	var freeSince time.Time
	running := 0
	for x, e := range es {
		if x > 0 && !e.t.After(last) {
			idle += time.Duration(maxU-running) * e.t.Sub(es[x-1].t)
		}
		running += e.d
		if running < maxU && freeSince.IsZero() {
			freeSince = e.t
		}
		if running >= maxU && !freeSince.IsZero() {
			longest = max(longest, e.t.Sub(freeSince))
			freeSince = time.Time{}
		}
		_ = e
	}
	if k == 0 {
		return "breakdown: no jobs"
	}
	m := func(d time.Duration) time.Duration { return (d / time.Duration(k)).Round(100 * time.Microsecond) }
	r1 := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("per server (mean / max of %d): start write+create %v / %v, Runner pickup %v / %v (%d over 100 ms), job %v / %v, completion recorded %v / %v; slot %v; slots used %.1f%%; "+
		"idle slot time between the first and the last start %.1f slot-s (%.0f ms of wall), longest stretch with a slot free %v; first start %v after Create, tail after the last start %v",
		k, m(create), r1(mCreate), m(pickup), r1(mPickup), slowPickups, m(runT), r1(mRun), m(record), r1(mRecord), m(slot), 100*float64(slot)/float64(wall*time.Duration(maxU)),
		idle.Seconds(), float64(idle.Milliseconds())/float64(maxU), r1(longest), r1(first.Sub(created)), r1(createdEnd.Sub(last)))
}

// countingStore counts the writes that succeeded, by key prefix.
type countingStore struct {
	storage.Store
	feed    storage.ChangeFeed
	skipper storage.ValueSkipper
	compact storage.Compactor

	rollouts, rolloutUpdates, jobs, systems, other atomic.Int64
	// Latencies (summed nanoseconds, and counts) of the writes a pass
	// waits for: its record's update and its jobs' creation.
	recordNs, recordN, createNs, createN atomic.Int64
}

var (
	_ storage.ChangeFeed   = (*countingStore)(nil)
	_ storage.ValueSkipper = (*countingStore)(nil)
	_ storage.Compactor    = (*countingStore)(nil)
)

func newCountingStore(s storage.Store) *countingStore {
	c := &countingStore{Store: s}
	c.feed, _ = s.(storage.ChangeFeed)
	c.skipper, _ = s.(storage.ValueSkipper)
	c.compact, _ = s.(storage.Compactor)
	if c.feed == nil || c.skipper == nil || c.compact == nil {
		fatal("store %T lacks a change feed", s)
	}
	return c
}

type writeCounts struct{ rollouts, rolloutUpdates, jobs, systems, other int64 }

func (w writeCounts) total() int64 { return w.rollouts + w.jobs + w.systems + w.other }

func (c *countingStore) counts() writeCounts {
	return writeCounts{c.rollouts.Load(), c.rolloutUpdates.Load(), c.jobs.Load(), c.systems.Load(), c.other.Load()}
}

func (c *countingStore) reset() {
	for _, x := range []*atomic.Int64{&c.rollouts, &c.rolloutUpdates, &c.jobs, &c.systems, &c.other, &c.recordNs, &c.recordN, &c.createNs, &c.createN} {
		x.Store(0)
	}
}

func (c *countingStore) latencies() string {
	mean := func(ns, n *atomic.Int64) time.Duration {
		if n.Load() == 0 {
			return 0
		}
		return time.Duration(ns.Load() / n.Load()).Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("; record update %v (%d), job create %v (%d)", mean(&c.recordNs, &c.recordN), c.recordN.Load(), mean(&c.createNs, &c.createN), c.createN.Load())
}

func (c *countingStore) count(key string, update bool) {
	k := strings.TrimPrefix(key, "bmckit/")
	switch {
	case strings.HasPrefix(k, "rollouts/") || strings.HasPrefix(k, "rolloutspecs/"):
		c.rollouts.Add(1)
		if update {
			c.rolloutUpdates.Add(1)
		}
	case strings.HasPrefix(k, "jobs/"):
		c.jobs.Add(1)
	case strings.HasPrefix(k, "systems/"):
		c.systems.Add(1)
	default:
		c.other.Add(1)
	}
}

func (c *countingStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	began := time.Now()
	rev, err := c.Store.Create(ctx, key, value)
	if strings.HasPrefix(key, "bmckit/jobs/") {
		c.createNs.Add(int64(time.Since(began)))
		c.createN.Add(1)
	}
	if err == nil {
		c.count(key, false)
	}
	return rev, err
}

func (c *countingStore) Update(ctx context.Context, key string, value []byte, revision int64) (int64, error) {
	began := time.Now()
	rev, err := c.Store.Update(ctx, key, value, revision)
	if strings.HasPrefix(key, "bmckit/rollouts/") {
		c.recordNs.Add(int64(time.Since(began)))
		c.recordN.Add(1)
	}
	if err == nil {
		c.count(key, true)
	}
	return rev, err
}

func (c *countingStore) Delete(ctx context.Context, key string, revision int64) error {
	err := c.Store.Delete(ctx, key, revision)
	if err == nil {
		c.count(key, false)
	}
	return err
}

func (c *countingStore) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	return c.feed.Changes(ctx, prefix, since, limit)
}

func (c *countingStore) ChangesSkipping(ctx context.Context, prefix string, since int64, limit int, skip func(string, int64) bool) (storage.Changes, error) {
	return c.skipper.ChangesSkipping(ctx, prefix, since, limit, skip)
}

func (c *countingStore) Compact(ctx context.Context, revision int64) error {
	return c.compact.Compact(ctx, revision)
}
