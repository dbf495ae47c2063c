//go:build linux

package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
	"github.com/bmckit/bmckit/task"
)

// The parent's side of the replica tests (sigstop_test.go): one simulator
// child, replica children (replicachild_test.go) that live across runs,
// and the runs themselves. Each run has tables of its own (a fresh
// TablePrefix in the test's schema), so runs share no jobs and no locks.

const (
	envReplicaRuns = "BMCKIT_REPLICATEST_RUNS" // runs with a takeover to do (default replicaMinRuns)
	envReplicaDump = "BMCKIT_REPLICATEST_DUMP" // a directory: each run's request log goes to a file there

	replicaSystems       = 6
	replicaJobsPerSystem = 2
	replicaMinRuns       = 30
	replicaLease         = time.Second
	// A run that has no takeover (the stopped replica's jobs all finished
	// just as it stopped) is not counted; these many more runs at most.
	replicaSpareRuns = 15
	// How long after a replica first wrote a job it is disturbed, at most
	// (uniformly from 0): stops land in every phase of a task.
	replicaMaxStopDelay = 400 * time.Millisecond
	// How long sigstop watches for a store transaction at most, in the
	// runs where it aims at one.
	replicaAimFor = 3 * time.Second
)

// replicaHarness runs the simulator and the replicas.
type replicaHarness struct {
	t      *testing.T
	mode   string // "runner" or "controller"
	names  []string
	reps   map[string]*childtest.Child
	sim    *childtest.Child
	addr   string // the simulator's redfish+http:// address
	dsn    string
	schema string
	rng    *rand.Rand
	lines  chan childLine
	tails  map[string][]string

	cur *replicaRunState
	// probe is a store of the parent's own, for looking at the replicas'
	// sessions in pg_stat_activity.
	probe *sqlstore.Store
}

type childLine struct {
	from, line string
	ok         bool // false: the child's stdout closed
}

// replicaRunState is what the children said during one run.
type replicaRunState struct {
	run        int
	jobs       []string
	lastWriter map[string]string // job -> replica whose write of it came last
	completed  map[string]bool
	started    map[string]bool // replicas that started the run
	stopped    map[string]bool
	relocked   map[string]bool // "<replica> <job>": see relockReporter
	connWaits  []connWait
	hangBegan  time.Time
	hangEnded  time.Time
	barrier    bool
	reqs       []loggedRequest
	changes    []redfishtest.StateChange
}

// newReplicaHarness starts the simulator and replicas children of the
// calling test (its name is the children's -test.run). The simulator
// answers the fraction slow of the actions (resets, boot PATCHes) only
// after reqLogSlowDelay.
func newReplicaHarness(t *testing.T, mode string, replicas int, slow float64) *replicaHarness {
	dsn := pgtest.DSN(t)
	if s := os.Getenv(envReqLogSlow); s != "" {
		var err error
		if slow, err = strconv.ParseFloat(s, 64); err != nil || slow < 0 || slow > 1 {
			t.Fatalf("%s=%q: want a fraction", envReqLogSlow, s)
		}
		t.Logf("%s=%s: %v of the actions are answered after %v", envReqLogSlow, s, slow, reqLogSlowDelay)
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv(envReqLogSeed); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envReqLogSeed, s, err)
		}
	}
	t.Logf("seed %d (%s=%d repeats the power delays and stop moments)", seed, envReqLogSeed, seed)
	h := &replicaHarness{
		t: t, mode: mode, reps: map[string]*childtest.Child{}, dsn: dsn, schema: pgtest.Schema(t, dsn),
		rng:   rand.New(rand.NewPCG(uint64(seed), 3)), //nolint:gosec // test randomness
		lines: make(chan childLine, 4096), tails: map[string][]string{},
	}
	probe, err := postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: h.schema, TablePrefix: "probe_"}, MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = probe.Close(context.Background()) })
	h.probe = probe
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	forward := func(from string, c *childtest.Child) {
		go func() {
			for l := range c.Lines() {
				select {
				case h.lines <- childLine{from: from, line: l, ok: true}:
				case <-quit:
					return
				}
			}
			select {
			case h.lines <- childLine{from: from}:
			case <-quit:
			}
		}()
	}
	h.sim = childtest.Start(t, t.Name(), "replica-sim",
		envReqLogSeed+"="+strconv.FormatInt(seed, 10), envReqLogSystems+"="+strconv.Itoa(replicaSystems),
		envReqLogSlow+"="+strconv.FormatFloat(slow, 'g', -1, 64))
	forward("sim", h.sim)
	h.waitFor("the simulator's address", time.Minute, func() bool { return h.addr != "" })
	for i := 1; i <= replicas; i++ {
		name := fmt.Sprintf("%s%d", mode[:1], i)
		h.names = append(h.names, name)
		h.reps[name] = childtest.Start(t, t.Name(), "replica",
			envReplicaName+"="+name, envReplicaMode+"="+mode, envReplicaSim+"="+h.addr,
			envReplicaDSN+"="+dsn, envReplicaSchema+"="+h.schema, envReplicaLease+"="+replicaLease.String())
		forward(name, h.reps[name])
	}
	return h
}

// take handles one line of a child.
func (h *replicaHarness) take(cl childLine) {
	h.t.Helper()
	if !cl.ok {
		h.t.Fatalf("child %s exited; its last lines:\n%s", cl.from, h.tail(cl.from))
	}
	if !strings.HasPrefix(cl.line, "req ") && !strings.HasPrefix(cl.line, "{") {
		tail := append(h.tails[cl.from], cl.line)
		if len(tail) > 60 {
			tail = tail[len(tail)-30:]
		}
		h.tails[cl.from] = tail
	}
	rs := h.cur
	f := strings.Fields(cl.line)
	if cl.from == "sim" {
		switch {
		case strings.HasPrefix(cl.line, "addr "):
			h.addr = strings.TrimPrefix(cl.line, "addr ")
		case strings.HasPrefix(cl.line, "req "):
			r, err := parseRequestLine(cl.line)
			if err != nil {
				h.t.Fatal(err)
			}
			if rs == nil {
				return
			}
			if r.Replica == barrierName(rs.run) {
				rs.barrier = true
				return
			}
			rs.reqs = append(rs.reqs, r)
		case strings.HasPrefix(cl.line, "{"):
			var c redfishtest.StateChange
			if err := json.Unmarshal([]byte(cl.line), &c); err != nil {
				h.t.Fatalf("simulator line %q: %v", cl.line, err)
			}
			if rs != nil {
				rs.changes = append(rs.changes, c)
			}
		}
		return
	}
	if len(f) == 0 {
		return
	}
	switch f[0] {
	case "error":
		h.t.Fatalf("replica %s: %s", cl.from, cl.line)
	case "upd":
		if rs != nil && len(f) == 3 {
			rs.lastWriter[f[1]] = cl.from
			if f[2] == "1" {
				rs.completed[f[1]] = true
			}
		}
	case "connwait":
		if rs != nil && len(f) == 4 {
			name, tk, at, ok := parseCallerTag(f[1])
			from, err1 := strconv.ParseInt(f[2], 10, 64)
			got, err2 := strconv.ParseInt(f[3], 10, 64)
			if ok && err1 == nil && err2 == nil {
				rs.connWaits = append(rs.connWaits, connWait{Replica: cl.from, Job: name, Task: tk, Attempt: at, Began: time.Unix(0, from), Got: time.Unix(0, got)})
			}
		}
	case "relocked":
		if rs != nil && len(f) == 2 {
			rs.relocked[cl.from+" "+f[1]] = true
		}
	case "started":
		if rs != nil {
			rs.started[cl.from] = true
		}
	case "stopped":
		if rs != nil {
			rs.stopped[cl.from] = true
		}
	case "hang", "unhang":
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || rs == nil {
			h.t.Fatalf("replica %s: %q", cl.from, cl.line)
		}
		if f[0] == "hang" {
			rs.hangBegan = time.Unix(0, ns)
		} else {
			rs.hangEnded = time.Unix(0, ns)
		}
	}
}

func (h *replicaHarness) tail(from string) string {
	if len(h.tails[from]) == 0 {
		return "(no output)"
	}
	return strings.Join(h.tails[from], "\n")
}

func (h *replicaHarness) allTails() string {
	var b strings.Builder
	for _, n := range h.names {
		fmt.Fprintf(&b, "--- %s:\n%s\n", n, h.tail(n))
	}
	return b.String()
}

// waitFor takes lines until cond holds, failing the test after within.
func (h *replicaHarness) waitFor(what string, within time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for !cond() {
		select {
		case cl := <-h.lines:
			h.take(cl)
		case <-deadline.C:
			h.t.Fatalf("%s: not within %v; the replicas' last lines:\n%s", what, within, h.allTails())
		}
	}
}

// drainFor takes lines for d.
func (h *replicaHarness) drainFor(d time.Duration) {
	h.t.Helper()
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case cl := <-h.lines:
			h.take(cl)
		case <-t.C:
			return
		}
	}
}

func (h *replicaHarness) send(name, cmd string) {
	h.t.Helper()
	if err := h.reps[name].Send(cmd); err != nil {
		h.t.Fatalf("command %q to replica %s: %v", cmd, name, err)
	}
}

func barrierName(run int) string { return "barrier-" + strconv.Itoa(run) }

// replicaRunResult is what one run showed.
type replicaRunResult struct {
	d        disturbance
	after    time.Duration
	jobs     []*job.Job
	findings replicaFindings
	sched    killFindings
	took     time.Duration
}

// run does run i: start the replicas on fresh tables, submit the jobs,
// disturb the replica that first holds a started job (disturb does it and
// returns when it is over), wait until every job completed, stop the
// replicas and analyze the BMC's log.
func (h *replicaHarness) run(i int, disturb func(name string) disturbance) replicaRunResult {
	h.t.Helper()
	began := time.Now()
	ctx := context.Background()
	prefix := fmt.Sprintf("run%02d_", i)
	store, err := postgres.Open(ctx, h.dsn, postgres.Options{Store: sqlstore.Options{Schema: h.schema, TablePrefix: prefix}, MaxOpenConns: 2})
	if err != nil {
		h.t.Fatal(err)
	}
	defer store.Close(ctx)
	rs := &replicaRunState{run: i, lastWriter: map[string]string{}, completed: map[string]bool{},
		started: map[string]bool{}, stopped: map[string]bool{}, relocked: map[string]bool{}}
	h.cur = rs
	for _, n := range h.names {
		h.send(n, "start "+prefix)
	}
	h.waitFor("the replicas to start run "+strconv.Itoa(i), time.Minute, func() bool { return len(rs.started) == len(h.names) })

	// Submit, interleaved across systems so each system's jobs go in order.
	submitted := map[string][]string{}
	var submitter *job.Runner
	if h.mode == "runner" {
		if submitter, err = job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: &bmc.SchemeDialer{}}}); err != nil {
			h.t.Fatal(err)
		}
	}
	for n := range replicaJobsPerSystem {
		for s := 1; s <= replicaSystems; s++ {
			name := ctrlJobName(i, s, n)
			spec := replicaSpec(h.addr, strconv.Itoa(s))
			if h.mode == "runner" {
				_, err = submitter.Submit(ctx, name, spec)
			} else {
				var data []byte
				if data, err = json.Marshal(&job.Job{Name: name, Generation: 1, CreatedAt: time.Now().UTC(), Spec: spec}); err == nil {
					_, err = store.Create(ctx, ctrlJobPrefix+name, data)
				}
			}
			if err != nil {
				h.t.Fatalf("submit %s: %v", name, err)
			}
			submitted[strconv.Itoa(s)] = append(submitted[strconv.Itoa(s)], name)
			rs.jobs = append(rs.jobs, name)
		}
	}
	allDone := func() bool { return len(rs.completed) == len(rs.jobs) }

	// Pick the replica to disturb. In odd runs: the first that writes a
	// started job, a random moment (up to replicaMaxStopDelay) later, if it
	// still holds one then; otherwise the next that writes one, at once. In
	// even runs: the sender of the n-th action (reset, boot PATCH; n from 1
	// to 6) the moment the BMC received it, while the replica waits for the
	// answer (RequestDelayFunc) with the rest of its step to come.
	res := replicaRunResult{}
	delay := time.Duration(h.rng.Int64N(int64(replicaMaxStopDelay)))
	atAction := 0
	if i%2 == 0 {
		atAction = 1 + h.rng.IntN(6)
	}
	var target, acting string
	var timer <-chan time.Time
	deadline := time.NewTimer(time.Minute)
	for target == "" || timer != nil {
		if allDone() {
			h.t.Fatalf("run %d: every job completed before a replica could be disturbed", i)
		}
		select {
		case cl := <-h.lines:
			h.take(cl)
			if target != "" {
				break
			}
			if f := strings.Fields(cl.line); atAction == 0 && cl.from != "sim" && len(f) == 3 && f[0] == "upd" && f[2] == "0" {
				target = cl.from
				if delay > 0 {
					timer = time.After(delay)
				}
			}
			if atAction > 0 && cl.from == "sim" && strings.HasPrefix(cl.line, "req ") {
				if r, err := parseRequestLine(cl.line); err == nil && r.Replica != "" && r.Job != "" && r.stateChanging() {
					if atAction--; atAction == 0 {
						target, acting = r.Replica, r.Job
					}
				}
			}
		case <-timer:
			timer = nil
			if len(h.holding(target)) == 0 {
				target = ""
				delay = 0
			}
		case <-deadline.C:
			h.t.Fatalf("run %d: no replica held a started job within a minute:\n%s", i, h.allTails())
		}
	}
	deadline.Stop()
	res.after = time.Since(began)
	held := h.holding(target)
	if acting != "" && !slices.Contains(held, acting) {
		held = append(held, acting) // its line may not have come yet
		slices.Sort(held)
	}
	res.d = disturb(target)
	res.d.Lease = replicaLease
	if res.d.Held == nil { // the disturbance did not say (it began at once)
		res.d.Held = held
	}

	h.waitFor(fmt.Sprintf("run %d: every job completed", i), 2*time.Minute, allDone)
	for _, n := range h.names {
		h.send(n, "stop")
	}
	h.waitFor(fmt.Sprintf("run %d: the replicas to stop", i), time.Minute, func() bool { return len(rs.stopped) == len(h.names) })
	// Every request of the run was answered before the replicas stopped;
	// the simulator logs a request before it answers, so every line of the
	// run is in its pipe before the barrier's.
	req, _ := http.NewRequest(http.MethodGet, strings.Replace(h.addr, "redfish+http://", "http://", 1)+"/redfish/v1/"+barrierName(i), nil)
	req.Header.Set(ReplicaHeader, barrierName(i))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("barrier request: %v", err)
	}
	resp.Body.Close()
	h.waitFor("the simulator's log of run "+strconv.Itoa(i), time.Minute, func() bool { return rs.barrier })
	h.cur = nil

	// The jobs as stored.
	if h.mode == "runner" {
		res.jobs, err = submitter.List(ctx)
	} else {
		recs, lerr := store.List(ctx, ctrlJobPrefix)
		err = lerr
		for _, rec := range recs {
			j := new(job.Job)
			if err = json.Unmarshal(rec.Value, j); err != nil {
				break
			}
			res.jobs = append(res.jobs, j)
		}
	}
	if err != nil {
		h.t.Fatalf("run %d: reading the jobs: %v", i, err)
	}
	res.d.Relocked, res.d.ConnWaits = rs.relocked, rs.connWaits
	res.findings = analyzeReplicaLog(rs.reqs, res.d)
	if dir := os.Getenv(envReplicaDump); dir != "" {
		h.dump(filepath.Join(dir, fmt.Sprintf("%s-run%02d.log", h.t.Name(), i)), rs, res.d)
	}
	var changes []bmcRequest
	for _, c := range rs.changes {
		r := bmcRequest{Seq: c.Seq, System: c.System, What: c.What}
		if name, tk, at, ok := parseCallerTag(c.Caller); ok {
			r.Job, r.Task, r.Attempt = name, tk, at
		}
		changes = append(changes, r)
	}
	res.sched = analyzeKillLog(changes, submitted)
	res.took = time.Since(began)
	return res
}

// dump writes the run's request log, in the BMC's order, to file.
func (h *replicaHarness) dump(file string, rs *replicaRunState, d disturbance) {
	reqs := slices.Clone(rs.reqs)
	slices.SortFunc(reqs, func(a, b loggedRequest) int { return int(a.Seq - b.Seq) })
	var b strings.Builder
	fmt.Fprintf(&b, "disturbed %s from %s to %s\n", d.Replica, d.Began.Format("15:04:05.000"), d.Ended.Format("15:04:05.000"))
	for _, r := range reqs {
		fmt.Fprintln(&b, r)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		h.t.Errorf("dump: %v", err)
	}
}

// sigstop pauses name for stopFor. In every fourth run (1, 5, 9, ...) it
// aims at a store transaction: for up to replicaAimFor it watches the
// replica's sessions in pg_stat_activity and stops the replica the moment
// one is inside a transaction that has written (it holds the store's
// revision counter, which the other replica's writes need); if the stopped
// replica is not idle inside that transaction (it had just committed), it
// continues it and watches again. A random moment lands there in about one
// run of 30; these runs make sure the pause that would stall the other
// replica's store (sqlstore.Options.IdleInTransactionTimeout) is tried
// every time.
func (h *replicaHarness) sigstop(name string, stopFor time.Duration) disturbance {
	h.t.Helper()
	c := h.reps[name]
	ctx := context.Background()
	stop := func() disturbance {
		d := disturbance{Replica: name, Began: time.Now()}
		if err := c.Signal(syscall.SIGSTOP); err != nil {
			h.t.Fatalf("SIGSTOP %s: %v", name, err)
		}
		n, err := pgtest.IdleInWriteTransaction(ctx, h.probe.DB(), replicaAppName(name), 10*time.Second)
		if err != nil {
			h.t.Fatal(err)
		}
		d.InTx = n > 0
		return d
	}
	var d disturbance
	if h.cur.run%4 == 1 {
		for deadline := time.Now().Add(replicaAimFor); ; {
			if time.Now().After(deadline) {
				d = stop()
				break
			}
			writing, err := pgtest.WriteTransactions(ctx, h.probe.DB(), replicaAppName(name))
			if err != nil {
				h.t.Fatal(err)
			}
			if writing > 0 {
				if d = stop(); d.InTx {
					break
				}
				if err := c.Signal(syscall.SIGCONT); err != nil {
					h.t.Fatalf("SIGCONT %s: %v", name, err)
				}
			}
			h.takePending()
		}
		// The jobs it holds now: some may have completed or started while
		// it was watched.
		h.takePending()
		d.Held = h.holding(name)
	} else {
		d = stop()
	}
	h.drainFor(stopFor)
	// Ended is before the SIGCONT: whatever the replica sends from then on
	// it sent after it was continued.
	d.Ended = time.Now()
	if err := c.Signal(syscall.SIGCONT); err != nil {
		h.t.Fatalf("SIGCONT %s: %v", name, err)
	}
	return d
}

// takePending handles the children's lines that have arrived, without
// waiting for more.
func (h *replicaHarness) takePending() {
	for {
		select {
		case cl := <-h.lines:
			h.take(cl)
		default:
			return
		}
	}
}

// holding lists the jobs name holds in the current run: it wrote them last
// and they have not completed.
func (h *replicaHarness) holding(name string) []string {
	var held []string
	for j, w := range h.cur.lastWriter {
		if w == name && !h.cur.completed[j] {
			held = append(held, j)
		}
	}
	slices.Sort(held)
	return held
}

// hang makes name's store calls hang for hangFor.
func (h *replicaHarness) hang(name string, hangFor time.Duration) disturbance {
	h.t.Helper()
	rs := h.cur
	h.send(name, fmt.Sprintf("hang %d", hangFor.Milliseconds()))
	h.waitFor("the hang of "+name, hangFor+time.Minute, func() bool { return !rs.hangEnded.IsZero() })
	return disturbance{Replica: name, Began: rs.hangBegan, Ended: rs.hangEnded}
}

// replicaSpec is every job's task list: power off, one-time PXE boot,
// power on. All recheckable: a task resumed by another replica reads the
// BMC first and sends only what is missing.
func replicaSpec(addr, system string) job.Spec {
	return job.Spec{
		BMC:            addr + "/redfish/v1/Systems/" + system,
		CredentialsRef: "sim",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		},
	}
}

// replicaTotals sums the runs of one test.
type replicaTotals struct {
	runs, counted, noTakeover                                    int
	jobs, succeeded                                              int
	requests, untagged                                           int
	takeovers                                                    int
	stale, staleFromDisturbed, staleStateChanges                 int
	stoppedInTx, takeoversAfterResume, inTxLateTakeovers         int
	maxTakeoverDelay                                             time.Duration
	staleRelocked, relocks                                       int
	late, lateIssued, lateConnWait, lateInFlight, lateInFlightSC int
	inFlight                                                     []string
	inWindow, inWindowUntagged                                   int
	dupAttempts, oldAttempts                                     int
	interleavings, reorders, resent, misdirected, untagged2      int
	resumedForHeld                                               int
	maxLateness                                                  time.Duration
	unsucceeded                                                  []string
	examples                                                     []string
	sched                                                        []string
}

func (tt *replicaTotals) add(i int, r replicaRunResult) {
	tt.runs++
	f := r.findings
	if f.Takeovers > 0 {
		tt.counted++
	} else {
		tt.noTakeover++
	}
	tt.jobs += len(r.jobs)
	for _, j := range r.jobs {
		if j.Completed() && j.Status.Result == conditions.ResultSucceeded {
			tt.succeeded++
		} else {
			tt.unsucceeded = append(tt.unsucceeded, fmt.Sprintf("run %d: %s (completed %v, result %q: %s)", i, j.Name, j.Completed(), j.Status.Result, j.Status.Message))
		}
	}
	tt.requests += f.Requests
	tt.untagged += f.Untagged
	tt.takeovers += f.Takeovers
	tt.stale += f.Stale
	tt.staleFromDisturbed += f.StaleFromDisturbed
	tt.staleStateChanges += f.StaleStateChanges
	tt.staleRelocked += f.StaleRelocked
	tt.late += f.Late
	tt.lateIssued += f.LateIssued
	tt.lateConnWait += f.LateConnWait
	tt.lateInFlight += f.LateInFlight
	tt.lateInFlightSC += f.LateInFlightStateChanges
	tt.relocks += len(r.d.Relocked)
	tt.inWindow += f.InWindow
	tt.inWindowUntagged += f.InWindowUntagged
	tt.dupAttempts += f.DupAttempts
	tt.oldAttempts += f.OldAttempts
	tt.maxLateness = max(tt.maxLateness, f.MaxLateness)
	if r.d.InTx {
		tt.stoppedInTx++
	}
	tt.takeoversAfterResume += f.TakeoversAfterResume
	if r.d.InTx && f.TakeoversAfterResume > 0 {
		tt.inTxLateTakeovers += f.TakeoversAfterResume
		tt.examples = append(tt.examples, fmt.Sprintf("run %d: stopped inside a store transaction, %d of its %d jobs were taken over only after it resumed (the last %v after the stop began)",
			i, f.TakeoversAfterResume, f.Takeovers, f.MaxTakeoverDelay.Round(time.Millisecond)))
	}
	tt.maxTakeoverDelay = max(tt.maxTakeoverDelay, f.MaxTakeoverDelay)
	tt.resumedForHeld += f.ResumedForHeld
	for _, e := range f.Examples {
		if len(tt.examples) < 15 {
			tt.examples = append(tt.examples, fmt.Sprintf("run %d: %s", i, e))
		}
	}
	s := r.sched
	tt.interleavings += s.Interleavings
	tt.reorders += s.Reorders
	tt.resent += s.Resent
	tt.misdirected += s.Misdirected
	tt.untagged2 += s.Untagged
	for _, e := range s.Examples {
		if len(tt.sched) < 10 {
			tt.sched = append(tt.sched, fmt.Sprintf("run %d: %s", i, e))
		}
	}
}

// check fails the test for every violation the runs showed. window says
// whether requests in the disturbed replica's lapsed-lease window count (a
// hang); after a SIGSTOP the process sent nothing in it.
func (tt *replicaTotals) check(t *testing.T, minRuns int) {
	t.Helper()
	if tt.counted < minRuns {
		t.Errorf("only %d of %d runs had a takeover (a job the disturbed replica had started, continued by another); want %d", tt.counted, tt.runs, minRuns)
	}
	if len(tt.unsucceeded) > 0 {
		t.Errorf("%d of %d jobs did not end Completed with result Succeeded, e.g. %s", len(tt.unsucceeded), tt.jobs, tt.unsucceeded[0])
	}
	// Reads in flight when the replica was paused (between the fence's
	// check and the write) are the fence's known limit: reported, not
	// failed. Everything else late fails.
	fromOthers := tt.stale - tt.staleFromDisturbed
	if fromOthers > 0 || tt.late-tt.lateInFlight+tt.lateInFlightSC > 0 || tt.dupAttempts > 0 || tt.oldAttempts > 0 {
		t.Errorf("stale BMC requests: %d after the job moved to another replica (%d of them from the disturbed replica, %d state-changing, "+
			"%d sent after a Lock let the job act again although it had completed); %d from the disturbed replica after its lease had lapsed "+
			"and before it resumed; of the disturbed replica's %d late ones %d were issued after it resumed (or its lease lapsed), %d waited for a connection "+
			"from before the lapse until after it, %d were in flight at the pause (%d state-changing); "+
			"%d state-changing requests repeated an attempt, %d came from an older attempt; e.g.:\n%s",
			tt.stale, tt.staleFromDisturbed, tt.staleStateChanges, tt.staleRelocked, tt.inWindow,
			tt.late, tt.lateIssued, tt.lateConnWait, tt.lateInFlight, tt.lateInFlightSC,
			tt.dupAttempts, tt.oldAttempts, strings.Join(tt.examples, "\n"))
	} else if tt.lateInFlight > 0 {
		t.Logf("%d reads were in flight when the replica was paused, between the fence's check and the write (docs/jobs.md, \"The fence\"): not failed; e.g.:\n%s",
			tt.lateInFlight, strings.Join(tt.examples, "\n"))
	}
	// A replica stopped inside a store transaction holds the revision
	// counter's row lock; until PostgreSQL ends its session the other
	// replica can write nothing, lock renewals included. Its takeover must
	// still come while the stopped one is stopped (3 leases; it comes after
	// about 1.2), or the resumed one finds the other's systems free.
	if tt.inTxLateTakeovers > 0 {
		t.Errorf("%d takeovers came only after the replica stopped inside a store transaction resumed: the other replica's store waited behind it; e.g.:\n%s",
			tt.inTxLateTakeovers, strings.Join(tt.examples, "\n"))
	}
	if n := tt.interleavings + tt.reorders + tt.resent + tt.misdirected + tt.untagged2; n > 0 {
		t.Errorf("%d scheduling violations in the state changes (interleavings %d, reorders %d, re-sent tasks %d, misdirected %d, untagged %d), e.g.:\n%s",
			n, tt.interleavings, tt.reorders, tt.resent, tt.misdirected, tt.untagged2, strings.Join(tt.sched, "\n"))
	}
}

func (tt *replicaTotals) lateness() string {
	if tt.maxLateness == 0 {
		return "none"
	}
	return tt.maxLateness.Round(time.Millisecond).String()
}

// replicaRuns is how many runs with a takeover a test does.
func replicaRuns(t *testing.T) int {
	if s := os.Getenv(envReplicaRuns); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q", envReplicaRuns, s)
		}
		return n
	}
	return replicaMinRuns
}

// runAll does runs until want of them had a takeover (replicaSpareRuns more
// at most), logging each.
func (h *replicaHarness) runAll(want int, disturb func(name string) disturbance) *replicaTotals {
	tt := &replicaTotals{}
	for i := 1; tt.counted < want && tt.runs < want+replicaSpareRuns; i++ {
		r := h.run(i, disturb)
		tt.add(i, r)
		f := r.findings
		inTx := ""
		if r.d.InTx {
			inTx = ", inside a store transaction"
		}
		h.t.Logf("run %d: %s disturbed %v after the start%s holding %d started jobs (%v); %d requests (%d untagged), takeovers %d (the last %v after the disturbance began, %d after it ended), stale %d (disturbed replica %d), in the lapsed window %d (+%d untagged), sent for its held jobs after it resumed %d, waits over %v for a connection %d; interleavings %d, reorders %d, re-sent %d; %v",
			i, r.d.Replica, r.after.Round(time.Millisecond), inTx, len(r.d.Held), r.d.Ended.Sub(r.d.Began).Round(time.Millisecond),
			f.Requests, f.Untagged, f.Takeovers, f.MaxTakeoverDelay.Round(time.Millisecond), f.TakeoversAfterResume, f.Stale, f.StaleFromDisturbed, f.InWindow, f.InWindowUntagged, f.ResumedForHeld, connWaitReported, len(r.d.ConnWaits),
			r.sched.Interleavings, r.sched.Reorders, r.sched.Resent, r.took.Round(time.Millisecond))
	}
	return tt
}
