package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// target is the BMCs a scenario runs its jobs against: one system per job,
// plus a lone system of the same kind for the one-job reference run.
type target interface {
	// dialer reaches the fleet; probeDialer the lone system.
	dialer() bmc.Dialer
	probeDialer() bmc.Dialer
	creds() bmc.CredentialsResolver
	// spec is job i's spec; probeSpec the lone system's.
	spec(i int) job.Spec
	probeSpec() job.Spec
	// probeCalls counts the requests the lone system received before until
	// (the one job's critical path), with a breakdown.
	probeCalls(until time.Time) (n int, breakdown string)
	// formula is the critical path's ideal from the call count.
	formula(calls int) (time.Duration, string)
	// verify checks that every system received each state-changing call
	// exactly once; it returns violations and a summary. After a crash
	// (-crash-at) a system may have had two sessions open at once.
	verify(crashed bool) (violations []string, summary string)
	// notes are target-specific lines for the report.
	notes() []string
	close()
}

// netboot is the job every system gets: power off, PXE once in UEFI mode,
// power on.
func netboot(bmcURL, credsRef string) job.Spec {
	return job.Spec{BMC: bmcURL, CredentialsRef: credsRef, Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
}

const tasksPerJob = 3

// fakeTarget is one bmc/fake BMC per job, each its own endpoint, every
// call taking latency, power landing powerDelay after the request (at once
// by default), all servers On at first.
type fakeTarget struct {
	latency    time.Duration
	n          int // jobs; job i runs on system i % len(bmcs)
	fleet      *fake.Fleet
	urls       []string
	bmcs       []*fake.BMC
	probeFleet *fake.Fleet
	probeURL   string
	probeBMC   *fake.BMC
}

// newFakeTarget makes one fake BMC per perSystem jobs (rounded up).
func newFakeTarget(n, perSystem int, latency, powerDelay time.Duration) (*fakeTarget, error) {
	systems := (n + perSystem - 1) / perSystem
	t := &fakeTarget{latency: latency, n: n, fleet: fake.NewFleet(), probeFleet: fake.NewFleet(),
		urls: make([]string, systems), bmcs: make([]*fake.BMC, systems)}
	opts := fake.Options{Power: bmc.PowerOn, Latency: latency, PowerTransition: powerDelay, CallLogSize: 64 * perSystem}
	for i := range systems {
		t.urls[i] = fmt.Sprintf("redfish://10.%d.%d.%d/redfish/v1/Systems/1", 1+i>>16, (i>>8)&255, i&255)
		b, err := t.fleet.AddNew(t.urls[i], opts)
		if err != nil {
			return nil, err
		}
		t.bmcs[i] = b
	}
	t.probeURL = "redfish://10.250.0.1/redfish/v1/Systems/1"
	b, err := t.probeFleet.AddNew(t.probeURL, opts)
	if err != nil {
		return nil, err
	}
	t.probeBMC = b
	return t, nil
}

func (t *fakeTarget) dialer() bmc.Dialer      { return t.fleet }
func (t *fakeTarget) probeDialer() bmc.Dialer { return t.probeFleet }
func (t *fakeTarget) creds() bmc.CredentialsResolver {
	return bmc.StaticCredentials{"lab": {Username: "admin", Password: "fleet-bench"}}
}
func (t *fakeTarget) spec(i int) job.Spec { return netboot(t.urls[i%len(t.urls)], "lab") }
func (t *fakeTarget) probeSpec() job.Spec { return netboot(t.probeURL, "lab") }
func (t *fakeTarget) close()              {}

func (t *fakeTarget) probeCalls(until time.Time) (int, string) {
	by := map[string]int{}
	n := 0
	for _, c := range t.probeBMC.Calls() {
		if c.Time.Before(until) {
			by[string(c.Method)]++
			n++
		}
	}
	return n, breakdown(by)
}

func (t *fakeTarget) formula(calls int) (time.Duration, string) {
	return time.Duration(calls) * t.latency, fmt.Sprintf("%d calls × %s", calls, t.latency)
}

func (t *fakeTarget) verify(crashed bool) ([]string, string) {
	maxOpen, sessions := 1, "never two sessions at once on one"
	if crashed {
		maxOpen, sessions = 2, "at most two sessions at once on one (a dead runner's and its successor's)"
	}
	var bad []string
	logins := 0
	for i, b := range t.bmcs {
		var setPower, setBoot int
		for _, c := range b.Calls() {
			if c.Err != nil {
				continue
			}
			switch c.Method {
			case fake.MethodSetPower:
				setPower++
			case fake.MethodSetBootOverride:
				setBoot++
			}
		}
		s := b.Sessions()
		logins += s.Logins
		jobs := t.n / len(t.bmcs) // the system's jobs
		if i < t.n%len(t.bmcs) {
			jobs++
		}
		if setPower != 2*jobs || setBoot != jobs || s.MaxOpen < 1 || s.MaxOpen > maxOpen {
			bad = append(bad, fmt.Sprintf("%s: SetPower %d (want %d), SetBootOverride %d (want %d), sessions open at once %d (want 1 to %d)",
				t.urls[i], setPower, 2*jobs, setBoot, jobs, s.MaxOpen, maxOpen))
		}
	}
	return bad, fmt.Sprintf("SetPower 2 and SetBootOverride 1 per job on each of the %d fake BMCs, %s; %d logins in all",
		len(t.bmcs)-len(bad), sessions, logins)
}

func (t *fakeTarget) notes() []string { return nil }

// redfishTarget is n systems behind k redfishtest endpoints, reached with
// the Redfish driver; power changes land powerDelay after the request.
type redfishTarget struct {
	delay   time.Duration
	limit   float64 // requests/s each endpoint serves (0: no limit)
	rps     float64 // the driver's request budget per endpoint (0: its default)
	servers []*redfishtest.Server
	perSrv  []int
	n       int
	drv     bmc.Dialer
	probeD  bmc.Dialer
	probe   *redfishtest.Server

	mu      sync.Mutex
	changes map[string]*sysChanges // "<endpoint index>/<system id>"
}

type sysChanges struct{ resets, boots, dropped int }

func newRedfishTarget(n, k int, delay time.Duration, limit, rps float64) (*redfishTarget, error) {
	if k <= 0 || k > n {
		return nil, fmt.Errorf("-endpoints %d: want 1 to -n (%d)", k, n)
	}
	t := &redfishTarget{delay: delay, limit: limit, rps: rps, n: n, changes: map[string]*sysChanges{}}
	for e := range k {
		count := n / k
		if e < n%k {
			count++
		}
		srv := redfishtest.NewServer(redfishtest.Config{Systems: count, PowerDelay: delay, RequestLimit: limit, OnStateChange: t.recorder(e)})
		for id := 1; id <= count; id++ {
			srv.SetPower(fmt.Sprint(id), "On")
		}
		t.servers = append(t.servers, srv)
		t.perSrv = append(t.perSrv, count)
	}
	t.probe = redfishtest.NewServer(redfishtest.Config{PowerDelay: delay})
	t.probe.SetPower("1", "On")
	mk := func() bmc.Dialer {
		var sd bmc.SchemeDialer
		sd.Register("redfish", redfish.NewDialer(redfish.Options{RequestsPerSecond: rps}))
		return &sd
	}
	t.drv, t.probeD = mk(), mk()
	return t, nil
}

func (t *redfishTarget) recorder(e int) func(redfishtest.StateChange) {
	return func(c redfishtest.StateChange) {
		key := fmt.Sprintf("%d/%s", e, c.System)
		t.mu.Lock()
		defer t.mu.Unlock()
		sc := t.changes[key]
		if sc == nil {
			sc = &sysChanges{}
			t.changes[key] = sc
		}
		switch {
		case c.Note == "dropped":
			sc.dropped++
		case strings.HasPrefix(c.What, "reset:"):
			sc.resets++
		case strings.HasPrefix(c.What, "boot:"):
			sc.boots++
		}
	}
}

func (t *redfishTarget) dialer() bmc.Dialer      { return t.drv }
func (t *redfishTarget) probeDialer() bmc.Dialer { return t.probeD }
func (t *redfishTarget) creds() bmc.CredentialsResolver {
	return bmc.StaticCredentials{"lab": t.probe.Credentials()}
}

// spec: job i is on endpoint i%k, system i/k+1.
func (t *redfishTarget) spec(i int) job.Spec {
	k := len(t.servers)
	return netboot(t.servers[i%k].Address(fmt.Sprint(i/k+1)), "lab")
}
func (t *redfishTarget) probeSpec() job.Spec { return netboot(t.probe.Address("1"), "lab") }

func (t *redfishTarget) close() {
	for _, s := range t.servers {
		s.Close()
	}
	t.probe.Close()
}

func (t *redfishTarget) probeCalls(until time.Time) (int, string) {
	by := map[string]int{}
	n := 0
	for _, r := range t.probe.Requests() {
		if r.Time.Before(until) {
			by[r.Method]++
			n++
		}
	}
	return n, breakdown(by) + " HTTP requests"
}

func (t *redfishTarget) formula(int) (time.Duration, string) {
	return 2 * t.delay, fmt.Sprintf("2 power changes × %s", t.delay)
}

func (t *redfishTarget) verify(bool) ([]string, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var bad []string
	for e, count := range t.perSrv {
		for id := 1; id <= count; id++ {
			sc := t.changes[fmt.Sprintf("%d/%d", e, id)]
			if sc == nil {
				sc = &sysChanges{}
			}
			if sc.resets != 2 || sc.boots != 1 || sc.dropped != 0 {
				bad = append(bad, fmt.Sprintf("%s: %d resets (want 2), %d boot override PATCHes (want 1), %d dropped",
					t.servers[e].Address(fmt.Sprint(id)), sc.resets, sc.boots, sc.dropped))
			}
		}
	}
	return bad, fmt.Sprintf("2 accepted resets and 1 boot override PATCH on each of %d systems", t.n-len(bad))
}

func (t *redfishTarget) notes() []string {
	var logins, reqs, conns, over, peak []string
	for _, s := range t.servers {
		over = append(over, fmt.Sprint(s.OverLimit()))
		peak = append(peak, fmt.Sprintf("%.0f", s.PeakRate()))
		logins = append(logins, fmt.Sprint(s.Logins()))
		reqs = append(reqs, fmt.Sprint(len(s.Requests())))
		conns = append(conns, fmt.Sprint(s.Connections()))
	}
	return []string{
		fmt.Sprintf("Redfish endpoints: %d, systems per endpoint %v, power delay %s, request limit per endpoint %g/s (0: none), driver budget %g/s (0: its default, %d/s).",
			len(t.servers), t.perSrv, t.delay, t.limit, t.rps, redfish.DefaultRequestsPerSecond),
		fmt.Sprintf("Requests refused over the endpoint's limit (Server.OverLimit): %s; busiest second (Server.PeakRate): %s requests.",
			strings.Join(over, ", "), strings.Join(peak, ", ")),
		fmt.Sprintf("Logins per endpoint (Server.Logins): %s; HTTP requests per endpoint: %s; TCP connections per endpoint: %s.",
			strings.Join(logins, ", "), strings.Join(reqs, ", "), strings.Join(conns, ", ")),
	}
}

func breakdown(by map[string]int) string {
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, by[k])
	}
	return strings.Join(parts, ", ")
}
