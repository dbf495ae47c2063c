package rollout_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/task"
)

const (
	fleetServers   = 1000
	fleetRacks     = 20 // "rack" label: 50 servers each, listed rack by rack
	fleetMaxUnav   = 50
	fleetRackMax   = 3
	fleetCanary    = 10
	fleetBudgetPct = 2
	fleetFailPct   = 3
	// fleetUpdateTime is how long each simulated update task runs.
	fleetUpdateTime = 150 * time.Millisecond

	envFleetSeed = "BMCKIT_ROLLOUT_SEED" // the failing servers' seed
)

// fleetSim is the 1,000 simulated servers: one redfishtest BMC each (a
// simulator's firmware inventory and its Fail switch are per BMC), each
// with its request log.
type fleetSim struct {
	srvs    []*redfishtest.Server
	logs    []*reqLog
	servers []rollout.Server
	failing map[int]bool
}

func newFleetSim(t *testing.T, n, racks int, failing map[int]bool, update time.Duration) *fleetSim {
	t.Helper()
	f := &fleetSim{failing: failing}
	for i := range n {
		l := &reqLog{}
		srv := redfishtest.NewServer(redfishtest.Config{
			Username: simUser, Password: simPassword,
			Firmware:  redfishtest.FirmwareConfig{Duration: update, Fail: failing[i], Components: map[string]string{fwComponent: "1.0.0"}},
			OnRequest: l.onRequest,
		})
		t.Cleanup(srv.Close)
		f.srvs = append(f.srvs, srv)
		f.logs = append(f.logs, l)
		perRack := (n + racks - 1) / racks
		f.servers = append(f.servers, rollout.Server{
			Name:   fmt.Sprintf("node-%04d", i),
			BMC:    srv.Address("1"),
			Labels: map[string]string{"rack": fmt.Sprintf("r%02d", i/perRack)},
		})
	}
	return f
}

func simDialer() bmc.Dialer {
	d := &bmc.SchemeDialer{}
	d.Register("redfish", redfish.NewDialer(redfish.Options{
		RequestsPerSecond: -1,
		WrapTransport:     func(next http.RoundTripper) http.RoundTripper { return callTagger{next} },
	}))
	return d
}

func fwTemplate(imageURI string) job.Spec {
	return job.Spec{CredentialsRef: "sim", Tasks: []task.Spec{{FirmwareUpdate: &task.FirmwareUpdateAction{
		ImageURI: imageURI, Component: fwComponent, Version: fwVersion, Reset: task.FirmwareResetNone,
	}}}}
}

// transitions records the Controller's events with the moment each was
// reported (after the write that made it).
type transitions struct {
	mu     sync.Mutex
	events []timedEvent
}

type timedEvent struct {
	rollout.Event
	reported time.Time
}

func (tr *transitions) observer() rollout.Observer {
	return rollout.Observer{Transition: func(e rollout.Event) {
		tr.mu.Lock()
		tr.events = append(tr.events, timedEvent{e, time.Now()})
		tr.mu.Unlock()
	}}
}

// TestFleetFailureBudgetHaltsAtTheBMC: a firmware rollout over 1,000
// simulated servers (one Redfish simulator each, every update running
// 150 ms), maxUnavailable 50, at most 3 per rack (20 racks of 50), a canary
// of 10, a failure budget of 2% (20); 3% of the servers (30, none in the
// canary, seeded) fail their update. From the simulators' request logs:
//
//   - the rollout ends Halted, FailureBudgetSpent, with at least 21 failures;
//   - every server the BMCs saw a state-changing request for was started
//     by a write before the halt was decided (its "running" transition's
//     pass time is before the halting pass's), so no server's first
//     state-changing request belongs to a server admitted after the halt;
//     servers admitted before it may still send theirs after the halt (their
//     jobs were created, the Runner picks them up): counted and reported;
//   - at no instant were more than 50 servers, nor more than 3 of one rack,
//     between their first state-changing request and the last request of
//     their job;
//   - every server got at most one update start (one update task); the
//     canary's ten got theirs before any other server's.
func TestFleetFailureBudgetHaltsAtTheBMC(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 simulated BMCs; takes a minute")
	}
	began := time.Now()
	seed := time.Now().UnixNano()
	if s := os.Getenv(envFleetSeed); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envFleetSeed, s, err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 37)) //nolint:gosec // test randomness
	failing := map[int]bool{}
	perRack := fleetServers / fleetRacks
	for len(failing) < fleetServers*fleetFailPct/100 {
		// Not in the canary: the canary is the first servers that fit the
		// rack limit (the first 3 of each rack in turn), so none of the
		// first 3 of a rack fails.
		if i := rng.IntN(fleetServers); i%perRack >= fleetRackMax {
			failing[i] = true
		}
	}
	t.Logf("seed %d (%s=%d repeats the failing servers)", seed, envFleetSeed, seed)

	img, imageURI := imageServer()
	defer img.Close()
	f := newFleetSim(t, fleetServers, fleetRacks, failing, fleetUpdateTime)
	ctx, r, ctl, tr, stop := startInProcess(t)
	defer stop()

	const name = "bios"
	st := runFleetRollout(ctx, t, ctl, name, rollout.Spec{Template: fwTemplate(imageURI), Servers: f.servers}, "rack", fleetRackMax)
	c := checkHalt(ctx, t, r, st, tr, haltCase{
		name: name, servers: f.servers, failing: f.failing,
		group: "rack", groupMax: fleetRackMax, maxUnav: fleetMaxUnav, canary: fleetCanary,
		budget: fleetServers * fleetBudgetPct / 100,
		reqs:   func(i int) []logged { return f.logs[i].snapshot() },
		changes: func(i int, w window, touched bool) string {
			tasks := len(f.srvs[i].FirmwareTasks())
			switch {
			case !touched && tasks != 0:
				return fmt.Sprintf("%d update tasks without a logged start", tasks)
			case touched && (w.starts != 1 || tasks != 1):
				return fmt.Sprintf("%d state-changing requests, %d update tasks; want one of each", w.starts, tasks)
			}
			return ""
		},
		applied: func(i int) string {
			if v := f.srvs[i].FirmwareVersion(fwComponent); v != fwVersion {
				return "its BIOS is at " + v
			}
			return ""
		},
	})
	summary := fmt.Sprintf("rollout fleet: %d simulated Redfish BMCs (%d failing, update %v), maxUnavailable %d, rack limit %d (%d racks), canary %d, budget %d%% (%d): %s/%s after %d failed, %d succeeded, %d never started; "+
		"on the wire %d servers updated (%d update tasks, %d servers with more than one), max overlap %d (rack max %d); "+
		"halt decided %s after the first start, written %v after its decision; first starts after the decision %d (after its write %d), the latest %v after it, all of servers admitted before it; %d jobs stored; %s",
		fleetServers, len(failing), fleetUpdateTime, fleetMaxUnav, fleetRackMax, fleetRacks, fleetCanary, fleetBudgetPct, st.FailureBudget,
		st.Result, st.Reason, st.Counts.Failed, st.Counts.Succeeded, st.Counts.Pending+st.Counts.Held,
		c.started, countTasks(f), c.multi, c.most, c.groupMost,
		c.haltAt.Sub(c.firstStart).Round(time.Millisecond), c.haltWritten.Sub(c.haltAt).Round(time.Millisecond), c.afterHalt, c.afterHaltWrite, c.latest.Round(time.Millisecond),
		c.jobs, time.Since(began).Round(100*time.Millisecond))
	t.Log(summary)
	fmt.Println(summary)
	reportProblems(t, c.problems)
}

// haltCase is a rollout that ended Halted (FailureBudgetSpent) over
// simulated servers, for checkHalt: what to read from the simulators, and
// the policy they were rolled out under.
type haltCase struct {
	name     string // the rollout
	servers  []rollout.Server
	failing  map[int]bool // the servers whose BMC refuses the change
	group    string       // the per-group limit's label
	groupMax int
	maxUnav  int
	canary   int
	budget   int // the failure budget, in servers
	// reqs is server i's requests as its BMC logged them: the BMC's whole
	// log, or its system's share of a multi-system BMC's (systemReqs).
	reqs func(i int) []logged
	// changes reports what is wrong ("" nothing) with server i's changes
	// as the simulator knows them, given its window (touched: the BMC saw
	// a state-changing request for it); anything it reports counts as a
	// server changed more than once.
	changes func(i int, w window, touched bool) string
	// applied reports what is wrong ("" nothing) with a succeeded server's
	// change: it must be in place.
	applied func(i int) string
}

// haltFindings is what checkHalt measured; problems are its failures.
type haltFindings struct {
	started                   int // servers the BMCs saw a state-changing request for
	multi                     int // of them, changed more than once (haltCase.changes)
	most, groupMost           int // the most windows open at once, overall and in one group
	afterHalt, afterHaltWrite int // first starts after the halt's decision, after its write
	latest                    time.Duration
	firstStart                time.Time
	haltAt, haltWritten       time.Time
	jobs                      int
	problems                  []string
}

// checkHalt checks, from the simulators' request logs, a rollout that
// spent its failure budget (see TestFleetFailureBudgetHaltsAtTheBMC):
// Halted/FailureBudgetSpent with more failures than the budget, and at
// most maxUnav more; no server admitted at or after the halt's decision
// reached its BMC; at no instant more than maxUnav windows open, nor more
// than groupMax of one group; every server changed at most once
// (haltCase.changes), its state matching the wire (failed only where the
// BMC refuses, succeeded with the change in place); the canary all
// succeeded before any other server started; one job stored per started
// server. Fatal when the result is not the halt.
func checkHalt(ctx context.Context, t *testing.T, r *job.Runner, st rollout.Status, tr *transitions, hc haltCase) haltFindings {
	t.Helper()
	if st.Result != rollout.ResultHalted || st.Reason != rollout.ReasonBudgetSpent {
		t.Fatalf("result %s/%s %q, want Halted/%s", st.Result, st.Reason, st.Message, rollout.ReasonBudgetSpent)
	}
	var c haltFindings
	problem := func(format string, args ...any) { c.problems = append(c.problems, fmt.Sprintf(format, args...)) }
	if budget := hc.budget; st.FailureBudget != budget || st.Counts.Failed <= budget || st.Counts.Failed > budget+hc.maxUnav {
		problem("budget %d, failed %d: want %d, and more than it, at most %d (the others in flight at the halt)", st.FailureBudget, st.Counts.Failed, budget, budget+hc.maxUnav)
	}
	if st.Counts.Running != 0 || st.Counts.Pending == 0 {
		problem("counts %+v: want none running and servers left pending", st.Counts)
	}

	// The rollout's transitions: when each server was admitted, when the
	// halt was decided and written.
	tr.mu.Lock()
	events := append([]timedEvent(nil), tr.events...)
	tr.mu.Unlock()
	admitted := map[int]time.Time{} // server -> its running transition's pass time
	for _, e := range events {
		if e.Index >= 0 && e.To == rollout.StateRunning {
			admitted[e.Index] = e.Time
		}
		if e.Index < 0 && strings.HasPrefix(e.Message, "halting") && c.haltAt.IsZero() {
			c.haltAt, c.haltWritten = e.Time, e.reported
		}
	}
	if c.haltAt.IsZero() {
		t.Fatal("no halting transition was reported")
	}

	// The BMCs' side.
	var (
		ws                            []window
		canaryLast, othersFirst       time.Time
		failedOnWire, succeededOnWire int
	)
	for i, srv := range hc.servers {
		jn := rollout.JobName(hc.name, i, srv.Name)
		w, touched := windowOf(i, hc.reqs(i), jn)
		state := st.State(i)
		if p := hc.changes(i, w, touched); p != "" {
			if touched {
				c.multi++
			}
			problem("%s: %s", srv.Name, p)
		}
		if !touched {
			if state == rollout.StateSucceeded || state == rollout.StateFailed {
				problem("%s: %s with no state-changing request on the wire", srv.Name, state)
			}
			continue
		}
		ws = append(ws, w)
		if w.foreign > 0 {
			problem("%s: %d state-changing requests not from its job", srv.Name, w.foreign)
		}
		adm, ok := admitted[i]
		switch {
		case !ok:
			problem("%s: changed on the wire but never admitted (state %s)", srv.Name, state)
		case !adm.Before(c.haltAt):
			problem("%s: admitted at %s, not before the halt decision at %s", srv.Name, adm.Format("15:04:05.000"), c.haltAt.Format("15:04:05.000"))
		}
		if w.from.After(c.haltAt) {
			c.afterHalt++
			c.latest = max(c.latest, w.from.Sub(c.haltAt))
		}
		if w.from.After(c.haltWritten) {
			c.afterHaltWrite++
		}
		switch state {
		case rollout.StateFailed:
			failedOnWire++
			if !hc.failing[i] {
				problem("%s: failed, but its BMC does not refuse the change", srv.Name)
			}
		case rollout.StateSucceeded:
			succeededOnWire++
			if p := hc.applied(i); p != "" {
				problem("%s: succeeded, but %s", srv.Name, p)
			}
		default:
			problem("%s: changed on the wire, state %s", srv.Name, state)
		}
		if slices.Contains(st.Canary.Servers, i) {
			if w.to.After(canaryLast) {
				canaryLast = w.to
			}
		} else if othersFirst.IsZero() || w.from.Before(othersFirst) {
			othersFirst = w.from
		}
	}
	if len(st.Canary.Servers) != hc.canary || st.Canary.Succeeded != hc.canary {
		problem("canary %+v: want %d servers, all succeeded", st.Canary, hc.canary)
	}
	if !canaryLast.Before(othersFirst) {
		problem("a server outside the canary started at %s, before the canary's last request at %s", othersFirst.Format("15:04:05.000"), canaryLast.Format("15:04:05.000"))
	}
	if failedOnWire != st.Counts.Failed || succeededOnWire != st.Counts.Succeeded {
		problem("on the wire %d failed and %d succeeded; the status counts %d and %d", failedOnWire, succeededOnWire, st.Counts.Failed, st.Counts.Succeeded)
	}
	jobs, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.jobs, c.started = len(jobs), len(ws)
	if len(jobs) != len(ws) {
		problem("%d jobs stored, %d servers changed on the wire", len(jobs), len(ws))
	}
	var mostAt time.Time
	c.most, mostAt = maxOverlap(ws, nil)
	if c.most > hc.maxUnav {
		problem("%d servers unavailable at once on the wire (at %s), limit %d", c.most, mostAt.Format("15:04:05.000"), hc.maxUnav)
	}
	groups := map[string]bool{}
	for _, s := range hc.servers {
		groups[s.Labels[hc.group]] = true
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		n, at := maxOverlap(ws, func(i int) bool { return hc.servers[i].Labels[hc.group] == g })
		c.groupMost = max(c.groupMost, n)
		if n > hc.groupMax {
			problem("%s %s: %d servers unavailable at once (at %s), limit %d", hc.group, g, n, at.Format("15:04:05.000"), hc.groupMax)
		}
	}
	if c.most < hc.maxUnav/2 {
		problem("at most %d servers were unavailable at once: the rollout hardly ran in parallel (limit %d)", c.most, hc.maxUnav)
	}
	if len(ws) > 0 {
		sort.Slice(ws, func(a, b int) bool { return ws[a].from.Before(ws[b].from) })
		c.firstStart = ws[0].from
	}
	return c
}

// reportProblems fails the test listing at most 40 problems.
func reportProblems(t *testing.T, problems []string) {
	t.Helper()
	if len(problems) > 0 {
		if len(problems) > 40 {
			problems = append(problems[:40], fmt.Sprintf("... and %d more", len(problems)-40))
		}
		t.Errorf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}
