// Command inventory measures the inventory task at fleet scale (issue 26):
// N inventory jobs, one per system, through one job.Runner on memstore and
// the Redfish driver, against redfishtest simulators on 127.0.0.1 that run
// in a child process (so that getrusage counts the client alone). The
// systems are spread over -endpoints endpoints (10: 100 systems behind each,
// sharing a session; 1000: one system each), with the simulators'
// $expand off and on, the settings alternating (A B A B) -reps times.
//
// It prints a Markdown report for docs/benchmarks.md: HTTP requests per
// system (the simulators' request logs, and the jobs' own Status.Wire from
// the driver's bmc.Stats), CPU per system of the client process and of the
// simulators, wall time, and the size of the stored job record, whose task
// status holds the inventory.
//
//	go run ./bench/inventory -n 1000 -endpoints 10,1000 -expand off,on -reps 2
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bench/internal/measure"
	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// config is one run's settings.
type config struct {
	protocol            string // redfish or ipmi
	n, endpoints        int
	expand              bool
	rps                 float64
	workers, endpointCC int
	timeout             time.Duration
}

func main() {
	if os.Getenv(childEnv) == "1" {
		if err := serve(os.Args[1:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench/inventory (simulators):", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 1000, "systems, one inventory job each")
	eps := flag.String("endpoints", "10,1000", "endpoint counts to measure, comma-separated; the systems are spread evenly (n must divide)")
	exp := flag.String("expand", "off,on", "the simulators' $expand (redfishtest.Config.ExpandQuery), alternating: off, on or off,on")
	ipmiToo := flag.Bool("ipmi", false, "also run the n systems as ipmitest BMCs (one system each) through the IPMI driver, once per repetition")
	reps := flag.Int("reps", 2, "repetitions of the alternating sequence")
	rps := flag.Float64("rps", 0, "the driver's request budget per endpoint, redfish.Options.RequestsPerSecond (0: its default; negative: none)")
	workers := flag.Int("workers", 0, "job.Config.Workers (0: the default)")
	epcc := flag.Int("endpoint-concurrency", 0, "job.Config.EndpointConcurrency (0: the default)")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up on a run after this long")
	flag.Parse()
	if err := runAll(os.Args[1:], *n, *eps, *exp, *ipmiToo, *reps, config{rps: *rps, workers: *workers, endpointCC: *epcc, timeout: *timeout}); err != nil {
		fmt.Fprintln(os.Stderr, "bench/inventory:", err)
		os.Exit(1)
	}
}

func runAll(args []string, n int, eps, exp string, ipmiToo bool, reps int, base config) error {
	var endpoints []int
	for _, f := range strings.Split(eps, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || k > n || n%k != 0 {
			return fmt.Errorf("-endpoints %q: %q is not a count from 1 to -n (%d) that divides it", eps, f, n)
		}
		endpoints = append(endpoints, k)
	}
	var expands []bool
	for _, f := range strings.Split(exp, ",") {
		switch strings.TrimSpace(f) {
		case "off":
			expands = append(expands, false)
		case "on":
			expands = append(expands, true)
		default:
			return fmt.Errorf("-expand %q: %q is neither off nor on", exp, f)
		}
	}
	if reps < 1 {
		return fmt.Errorf("-reps %d: want at least 1", reps)
	}
	started, load0 := time.Now().UTC(), loadAvg()
	var cs []config
	for _, k := range endpoints {
		for _, e := range expands {
			cs = append(cs, config{protocol: "redfish", endpoints: k, expand: e})
		}
	}
	if ipmiToo {
		cs = append(cs, config{protocol: "ipmi", endpoints: n})
	}
	var results []*result
	for rep := range reps {
		for _, c := range cs {
			c.n, c.rps, c.workers, c.endpointCC, c.timeout = n, base.rps, base.workers, base.endpointCC, base.timeout
			res, err := run(c)
			if err != nil {
				return fmt.Errorf("%s, %d endpoints, $expand %v, repetition %d: %w", c.protocol, c.endpoints, c.expand, rep+1, err)
			}
			res.rep = rep
			fmt.Fprintf(os.Stderr, "bench/inventory: %s, %d endpoints, $expand %v: %.2f requests/system, CPU %s/system, wall %s\n",
				c.protocol, c.endpoints, c.expand, float64(res.requests)/float64(n), res.cpu/time.Duration(n), res.wall.Round(time.Millisecond))
			results = append(results, res)
		}
	}
	report(args, n, results, started, load0)
	for _, r := range results {
		if len(r.problems) > 0 {
			return fmt.Errorf("%s, %d endpoints, $expand %v: %d jobs not as expected (see the report)", r.cfg.protocol, r.cfg.endpoints, r.cfg.expand, len(r.problems))
		}
	}
	return nil
}

// result is what one run measured.
type result struct {
	cfg                 config
	rep                 int
	wall                time.Duration // Start to the last completion write
	cpu, submitCPU      time.Duration // the client's, Start until the runner stopped; the submits'
	simCPU              time.Duration // the simulators' process
	requests, failed    int           // the simulators' logs
	logins, connections int64
	perSystem           []int // requests under each system's path
	byKind              map[string]int
	wire                []int64 // each job's Status.Wire.Requests
	record, invJSON     []int   // stored job record and its inventory's JSON, bytes
	problems            []string
}

func run(c config) (*result, error) {
	pw := make([]byte, 8) // 16 hex characters: IPMI v2.0 allows 20
	_, _ = rand.Read(pw)
	creds := bmc.Credentials{Username: simUser, Password: hex.EncodeToString(pw)}
	sm, err := startSims(c.protocol, c.endpoints, c.n/c.endpoints, c.expand, creds.Password)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sm.close() }()
	if len(sm.hello.Addrs) != c.endpoints || sm.hello.Expanded != c.expand || sm.hello.Protocol != c.protocol {
		return nil, fmt.Errorf("the simulator process started %d endpoints ($expand %v), want %d ($expand %v)", len(sm.hello.Addrs), sm.hello.Expanded, c.endpoints, c.expand)
	}
	var sd bmc.SchemeDialer
	sd.Register("redfish", redfish.NewDialer(redfish.Options{RequestsPerSecond: c.rps}))
	id, err := ipmi.NewDialer(ipmi.Options{RequestsPerSecond: c.rps})
	if err != nil {
		return nil, err
	}
	sd.Register("ipmi", id)
	store := memstore.New()
	var mu sync.Mutex
	var last time.Time
	r, err := job.NewRunner(job.Config{
		Store: store,
		StepperConfig: job.StepperConfig{
			Dialer:      &sd,
			Credentials: bmc.StaticCredentials{"lab": creds},
		},
		Workers: c.workers, EndpointConcurrency: c.endpointCC,
		OnUpdate: func(j job.Job) {
			if j.Completed() {
				now := time.Now()
				mu.Lock()
				if now.After(last) {
					last = now
				}
				mu.Unlock()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	names := make([]string, c.n)
	cpu0 := measure.CPUTime()
	for i := range names {
		names[i] = fmt.Sprintf("inventory-%04d", i)
		if _, err := r.Submit(ctx, names[i], job.Spec{BMC: systemAddr(sm.hello, c.endpoints, i), CredentialsRef: "lab",
			Tasks: []task.Spec{{Inventory: &task.InventoryAction{}}}}); err != nil {
			return nil, err
		}
	}
	res := &result{cfg: c, submitCPU: measure.CPUTime() - cpu0}
	runtime.GC()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	cpu0, t0 := measure.CPUTime(), time.Now()
	go func() { done <- r.Start(rctx) }()
	wctx, wcancel := context.WithTimeout(ctx, c.timeout)
	defer wcancel()
	jobs := make([]*job.Job, c.n)
	for i, name := range names {
		if jobs[i], err = r.Wait(wctx, name); err != nil {
			return nil, fmt.Errorf("job %s: %w", name, err)
		}
	}
	mu.Lock()
	res.wall = last.Sub(t0)
	mu.Unlock()
	cancel() // the runner closes its connections (logouts) before Start returns
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	res.cpu = measure.CPUTime() - cpu0

	for i, j := range jobs {
		rec, err := store.Get(ctx, "bmckit/jobs/"+j.Name)
		if err != nil {
			return nil, err
		}
		res.record = append(res.record, len(rec.Value))
		if j.Status.Wire != nil {
			res.wire = append(res.wire, j.Status.Wire.Requests)
		}
		if p := check(j, c, i); p != "" {
			res.problems = append(res.problems, j.Name+": "+p)
			continue
		}
		b, err := json.Marshal(j.Status.Tasks[0].Inventory)
		if err != nil {
			return nil, err
		}
		res.invJSON = append(res.invJSON, len(b))
	}
	rep, err := sm.report()
	if err != nil {
		return nil, fmt.Errorf("simulator report: %w", err)
	}
	res.simCPU, res.byKind = rep.CPU, map[string]int{}
	for _, e := range rep.Endpoints {
		res.requests += e.Requests
		res.failed += e.Failed
		res.logins += e.Logins
		res.connections += e.Connections
		for _, v := range e.PerSystem {
			res.perSystem = append(res.perSystem, v)
		}
		for k, v := range e.ByKind {
			res.byKind[k] += v
		}
	}
	if c.protocol == "ipmi" {
		// No request log: the jobs' own counts.
		for _, w := range res.wire {
			res.requests += int(w)
			res.perSystem = append(res.perSystem, int(w))
		}
		for _, j := range jobs {
			if j.Status.Wire != nil {
				res.logins += j.Status.Wire.Logins
			}
		}
	}
	if len(res.perSystem) != c.n {
		res.problems = append(res.problems, fmt.Sprintf("requests reached %d systems, want %d", len(res.perSystem), c.n))
	}
	return res, nil
}

// systemAddr is job i's system: endpoint i%k, system i/k+1 (IPMI: the
// endpoint, one system each).
func systemAddr(h simHello, k, i int) string {
	if h.Protocol == "ipmi" {
		return h.Addrs[i]
	}
	return h.Addrs[i%k] + "/redfish/v1/Systems/" + strconv.Itoa(i/k+1)
}

// check says what is wrong with job i's inventory ("" when nothing): it
// must have Succeeded with redfishtest's default hardware of its own
// system (serial number and MACs), or the IPMI BMC's FRU and firmware.
func check(j *job.Job, c config, i int) string {
	if j.Status.Result != conditions.ResultSucceeded {
		return fmt.Sprintf("%s: %s", j.Status.Result, j.Status.Message)
	}
	inv := j.Status.Tasks[0].Inventory
	if inv == nil {
		return "no inventory in the task status"
	}
	sys := i/c.endpoints + 1
	if c.protocol == "ipmi" {
		sys = i + 1
	}
	var bad []string
	if c.protocol == "ipmi" {
		want := []bmc.InventorySection{bmc.InventoryProcessors, bmc.InventoryMemory, bmc.InventoryStorage, bmc.InventoryNetwork}
		if inv.System.SerialNumber != redfishtest.SystemSerial(sys) || inv.Board.SerialNumber == "" || len(inv.Firmware) != 1 || !slices.Equal(inv.Unsupported, want) {
			bad = append(bad, fmt.Sprintf("system %+v, board %+v, firmware %+v, unsupported %v; want serial %s, a board, the BMC's firmware, %v unsupported",
				inv.System, inv.Board, inv.Firmware, inv.Unsupported, redfishtest.SystemSerial(sys), want))
		}
		return strings.Join(bad, "; ")
	}
	if want := redfishtest.SystemSerial(sys); inv.System.SerialNumber != want {
		bad = append(bad, fmt.Sprintf("serial %q, want %q", inv.System.SerialNumber, want))
	}
	if len(inv.Processors) != 2 || len(inv.Memory) != 4 || len(inv.Drives) != 2 || len(inv.StorageControllers) != 1 || len(inv.NetworkInterfaces) != 2 || len(inv.Firmware) != 2 {
		bad = append(bad, fmt.Sprintf("%d processors, %d DIMMs, %d drives, %d controllers, %d NICs, %d firmware components, want 2, 4, 2, 1, 2, 2",
			len(inv.Processors), len(inv.Memory), len(inv.Drives), len(inv.StorageControllers), len(inv.NetworkInterfaces), len(inv.Firmware)))
	}
	for n, nic := range inv.NetworkInterfaces {
		if want := bmc.NormalizeMAC(redfishtest.SystemMAC(sys, n+1)); nic.MACAddress != want {
			bad = append(bad, fmt.Sprintf("NIC %d MAC %q, want %q", n+1, nic.MACAddress, want))
		}
	}
	if len(inv.Unsupported) > 0 || inv.Truncated {
		bad = append(bad, fmt.Sprintf("unsupported %v, truncated %v", inv.Unsupported, inv.Truncated))
	}
	return strings.Join(bad, "; ")
}

func loadAvg() string {
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

// span is "min–max" of vs, or the one value.
func span[T int | int64 | float64](vs []T, format func(T) string) string {
	if len(vs) == 0 {
		return "-"
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	if format(lo) == format(hi) {
		return format(lo)
	}
	return format(lo) + "–" + format(hi)
}

func median[T int | int64](vs []T) T {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

func micros(d float64) string { return fmt.Sprintf("%.0f µs", d/1e3) }
func secs(d float64) string   { return fmt.Sprintf("%.1f s", d/1e9) }
func kib(b int) string        { return fmt.Sprintf("%.1f KiB", float64(b)/1024) }

func report(args []string, n int, results []*result, started time.Time, load0 string) {
	fmt.Printf("    go run ./bench/inventory %s\n\n", strings.Join(args, " "))
	fmt.Printf("Run at %s, load average %s before and %s after; %d CPUs (GOMAXPROCS %d), %s. %d systems, one inventory job each, submitted before Runner.Start; %d runs in the order measured (repetition, endpoints, $expand).\n\n",
		started.Format("2006-01-02 15:04 UTC"), load0, loadAvg(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), n, len(results))

	type key struct {
		p string
		k int
		e bool
	}
	groups := map[key][]*result{}
	var order []key
	for _, r := range results {
		kk := key{r.cfg.protocol, r.cfg.endpoints, r.cfg.expand}
		if groups[kk] == nil {
			order = append(order, kk)
		}
		groups[kk] = append(groups[kk], r)
	}
	onOff := map[bool]string{false: "off", true: "on"}
	label := func(kk key) (string, string) {
		if kk.p == "ipmi" {
			return "IPMI, 1 per BMC", "-"
		}
		return fmt.Sprintf("Redfish, %d per endpoint", n/kk.k), onOff[kk.e]
	}
	fmt.Println("| protocol, systems per endpoint | $expand | runs | requests per system (Redfish: simulators' logs; IPMI: commands, Status.Wire) | under the system's path, min–max | Status.Wire requests per job, min–max | logins | client CPU per system | simulators' CPU per system | wall | stored job record per system | its inventory (JSON) | all as expected |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, kk := range order {
		g := groups[kk]
		var reqs, cpu, sim, wall []float64
		var perSys, rec, inv []int
		var wire, logins []int64
		ok := true
		for _, r := range g {
			reqs = append(reqs, float64(r.requests)/float64(n))
			cpu = append(cpu, float64(r.cpu)/float64(n))
			sim = append(sim, float64(r.simCPU)/float64(n))
			wall = append(wall, float64(r.wall))
			perSys = append(perSys, r.perSystem...)
			rec = append(rec, r.record...)
			inv = append(inv, r.invJSON...)
			wire = append(wire, r.wire...)
			logins = append(logins, r.logins)
			ok = ok && len(r.problems) == 0 && r.failed == 0
		}
		yes := "yes"
		if !ok {
			yes = "**NO**"
		}
		shape, ex := label(kk)
		fmt.Printf("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s (median %s) | %s (median %s) | %s |\n",
			shape, ex, len(g), span(reqs, func(v float64) string { return fmt.Sprintf("%.2f", v) }),
			span(perSys, strconv.Itoa), span(wire, func(v int64) string { return strconv.FormatInt(v, 10) }),
			span(logins, func(v int64) string { return strconv.FormatInt(v, 10) }),
			span(cpu, micros), span(sim, micros), span(wall, secs),
			span(rec, kib), kib(median(rec)), span(inv, kib), kib(medianOr(inv)), yes)
	}
	fmt.Println()

	// A/B: the client's CPU with $expand on over off, per adjacent pair.
	var eps []int
	for _, kk := range order {
		if kk.p == "redfish" && !slices.Contains(eps, kk.k) {
			eps = append(eps, kk.k)
		}
	}
	for _, k := range eps {
		var ratios []string
		for _, r := range results {
			if r.cfg.protocol != "redfish" || r.cfg.endpoints != k || !r.cfg.expand {
				continue
			}
			for _, o := range results {
				if o.cfg.protocol == "redfish" && o.cfg.endpoints == k && !o.cfg.expand && o.rep == r.rep {
					ratios = append(ratios, fmt.Sprintf("%.2f", float64(r.cpu)/float64(o.cpu)))
				}
			}
		}
		if len(ratios) > 0 {
			fmt.Printf("- %d per endpoint: client CPU with $expand on / off, per repetition: %s.\n", n/k, strings.Join(ratios, ", "))
		}
	}
	fmt.Println("- Requests per system, by kind (the first run of each setting; {id} a system, {m} a member):")
	fmt.Println()
	for _, kk := range order {
		r := groups[kk][0]
		if kk.p != "redfish" {
			continue
		}
		kinds := make([]string, 0, len(r.byKind))
		for k := range r.byKind {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("`%s` %.2f", k, float64(r.byKind[k])/float64(n))
		}
		fmt.Printf("  - %d per endpoint, $expand %s (%d connections, %d answers not 2xx): %s\n", n/kk.k, onOff[kk.e], r.connections, r.failed, strings.Join(parts, ", "))
	}
	for _, r := range results {
		for i, p := range r.problems {
			if i == 5 {
				fmt.Printf("  - ... %d more\n", len(r.problems)-5)
				break
			}
			fmt.Printf("  - not as expected (%s, %d endpoints, $expand %s): %s\n", r.cfg.protocol, r.cfg.endpoints, onOff[r.cfg.expand], p)
		}
	}
}

func medianOr(vs []int) int {
	if len(vs) == 0 {
		return 0
	}
	return median(vs)
}
