package rollout_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/task"
)

const (
	epCount      = 20 // Redfish endpoints ("endpoint" label)
	epSystems    = 50 // systems behind each: 1,000 servers
	epMax        = 5  // at most 5 unavailable per endpoint
	epPowerDelay = 50 * time.Millisecond
)

// biosWant is the template's BIOS change: every simulated system starts
// with BootMode Uefi, so no server is in state beforehand.
var biosWant = map[string]string{"BootMode": "Bios"}

// epFleet is 1,000 simulated servers on 20 Redfish endpoints of 50
// systems each, listed endpoint by endpoint, each endpoint with its request
// log; the failing systems' BIOS PATCH is refused with a 400 (permanent).
type epFleet struct {
	srvs    []*redfishtest.Server // per endpoint
	logs    []*reqLog             // per endpoint
	servers []rollout.Server
	failing map[int]bool
}

func (f *epFleet) endpoint(i int) int    { return i / epSystems }
func (f *epFleet) systemID(i int) string { return strconv.Itoa(i%epSystems + 1) }

func newEPFleet(t *testing.T, failing map[int]bool) *epFleet {
	t.Helper()
	f := &epFleet{failing: failing}
	for e := range epCount {
		refused := map[string]bool{} // BIOS settings paths answered 400
		for s := range epSystems {
			if failing[e*epSystems+s] {
				refused[fmt.Sprintf("/redfish/v1/Systems/%d/Bios/Settings", s+1)] = true
			}
		}
		l := &reqLog{}
		srv := redfishtest.NewServer(redfishtest.Config{
			Username: simUser, Password: simPassword,
			Systems:    epSystems,
			PowerDelay: epPowerDelay,
			OnRequest:  l.onRequest,
			Faults: redfishtest.Faults{Func: func(method, path string) redfishtest.Fault {
				if method == http.MethodPatch && refused[path] {
					return redfishtest.Fault400
				}
				return redfishtest.FaultNone
			}},
		})
		t.Cleanup(srv.Close)
		f.srvs = append(f.srvs, srv)
		f.logs = append(f.logs, l)
		for s := range epSystems {
			id := strconv.Itoa(s + 1)
			srv.SetPower(id, "On")
			f.servers = append(f.servers, rollout.Server{
				Name:   fmt.Sprintf("node-%04d", e*epSystems+s),
				BMC:    srv.Address(id),
				Labels: map[string]string{"endpoint": fmt.Sprintf("e%02d", e)},
			})
		}
	}
	return f
}

// biosTemplate sets biosWant, power cycles (the simulator applies BIOS
// settings at the next boot) and verifies it after the boot.
func biosTemplate() job.Spec {
	return job.Spec{CredentialsRef: "sim", Tasks: []task.Spec{
		{BIOS: &task.BIOSAction{Attributes: biosWant}},
		{Power: &task.PowerAction{Op: task.PowerCycle}},
		{BIOS: &task.BIOSAction{Attributes: biosWant, VerifyOnly: true}},
	}}
}

// biosChanges counts a system's BIOS PATCHes and resets in its requests.
func biosChanges(reqs []logged) (patches, resets int) {
	for _, r := range reqs {
		switch {
		case r.Method == http.MethodPatch && strings.HasSuffix(r.Path, "/Bios/Settings"):
			patches++
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/Actions/ComputerSystem.Reset"):
			resets++
		}
	}
	return patches, resets
}

// TestFleetOn20EndpointsHaltsAtTheBMC is issue 37's "1,000 simulated
// servers on 20 endpoints": 20 Redfish simulators of 50 systems each, a
// BIOS rollout (set BootMode, power cycle, verify; every system starts at
// Uefi, so none is skipped as in state), maxUnavailable 50, at most 5 per
// endpoint (label "endpoint"), a canary of 10, a failure budget of 2% (20);
// 3% of the systems (30, none in the canary, seeded) have their BIOS PATCH
// refused with a 400, a permanent error. The Runner's EndpointConcurrency
// (default 32 jobs at once per host:port) is above the per-endpoint limit
// of 5, so the rollout's limit is the one that binds. From the simulators'
// request logs, each system's share (its Systems/<id> requests and its
// job's) gives its window; checkHalt checks what
// TestFleetFailureBudgetHaltsAtTheBMC does (halted on the budget, nothing
// admitted after the halt reaches a BMC, overlap at most 50 and at most 5
// per endpoint, the canary first, one job per started server), and every
// system got at most one BIOS PATCH and one power cycle (none after a
// refused PATCH).
func TestFleetOn20EndpointsHaltsAtTheBMC(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 simulated systems; takes seconds")
	}
	began := time.Now()
	seed := time.Now().UnixNano()
	if s := os.Getenv(envFleetSeed); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envFleetSeed, s, err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 20)) //nolint:gosec // test randomness
	n := epCount * epSystems
	failing := map[int]bool{}
	for len(failing) < n*fleetFailPct/100 {
		// Not in the canary: the first servers that fit the endpoint limit
		// (the first 5 of each endpoint in turn).
		if i := rng.IntN(n); i%epSystems >= epMax {
			failing[i] = true
		}
	}
	t.Logf("seed %d (%s=%d repeats the failing systems)", seed, envFleetSeed, seed)

	f := newEPFleet(t, failing)
	ctx, r, ctl, tr, stop := startInProcess(t)
	defer stop()

	const name = "bios20"
	st := runFleetRollout(ctx, t, ctl, name, rollout.Spec{Template: biosTemplate(), Servers: f.servers}, "endpoint", epMax)

	// Each system's share of its endpoint's log.
	epLogs := make([][]logged, epCount)
	for e, l := range f.logs {
		epLogs[e] = l.snapshot()
	}
	reqs := func(i int) []logged {
		return systemReqs(epLogs[f.endpoint(i)], f.systemID(i), rollout.JobName(name, i, f.servers[i].Name))
	}
	var patches, resets int
	c := checkHalt(ctx, t, r, st, tr, haltCase{
		name: name, servers: f.servers, failing: f.failing,
		group: "endpoint", groupMax: epMax, maxUnav: fleetMaxUnav, canary: fleetCanary,
		budget: n * fleetBudgetPct / 100,
		reqs:   reqs,
		changes: func(i int, w window, touched bool) string {
			p, rs := biosChanges(reqs(i))
			patches, resets = patches+p, resets+rs
			cur, pending := f.srvs[f.endpoint(i)].BIOSAttributes(f.systemID(i))
			switch {
			case !touched && (cur["BootMode"] != "Uefi" || len(pending) != 0):
				return fmt.Sprintf("not started, but its BIOS has BootMode %v, pending %v", cur["BootMode"], pending)
			case touched && (p != 1 || rs > 1):
				return fmt.Sprintf("%d BIOS PATCHes, %d resets; want one PATCH, at most one reset", p, rs)
			case touched && f.failing[i] && rs != 0:
				return fmt.Sprintf("power cycled (%d resets) after its BIOS PATCH was refused", rs)
			}
			return ""
		},
		applied: func(i int) string {
			if cur, pending := f.srvs[f.endpoint(i)].BIOSAttributes(f.systemID(i)); cur["BootMode"] != "Bios" || len(pending) != 0 {
				return fmt.Sprintf("its BIOS has BootMode %v, pending %v", cur["BootMode"], pending)
			}
			return ""
		},
	})
	summary := fmt.Sprintf("rollout on 20 endpoints: %d simulated systems on %d Redfish endpoints (%d failing, power delay %v), maxUnavailable %d, endpoint limit %d, EndpointConcurrency 32 (default), canary %d, budget %d%% (%d): %s/%s after %d failed, %d succeeded, %d never started; "+
		"on the wire %d systems changed (%d BIOS PATCHes, %d resets, %d systems with more than one), max overlap %d (endpoint max %d); "+
		"halt decided %s after the first start, written %v after its decision; first starts after the decision %d (after its write %d), the latest %v after it, all of servers admitted before it; %d jobs stored; %s",
		n, epCount, len(failing), epPowerDelay, fleetMaxUnav, epMax, fleetCanary, fleetBudgetPct, st.FailureBudget,
		st.Result, st.Reason, st.Counts.Failed, st.Counts.Succeeded, st.Counts.Pending+st.Counts.Held,
		c.started, patches, resets, c.multi, c.most, c.groupMost,
		c.haltAt.Sub(c.firstStart).Round(time.Millisecond), c.haltWritten.Sub(c.haltAt).Round(time.Millisecond), c.afterHalt, c.afterHaltWrite, c.latest.Round(time.Millisecond),
		c.jobs, time.Since(began).Round(100*time.Millisecond))
	t.Log(summary)
	fmt.Println(summary)
	reportProblems(t, c.problems)
}
