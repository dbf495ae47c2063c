//go:build linux

package rollout_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

// TestRolloutReplicasUnderFaults is the rollout's crash test (issue 37): two
// replica processes, each a job.Runner and a rollout.Controller over one
// PostgreSQL store, carry out a firmware rollout over Redfish simulators
// that live in this process (so the BMCs and their request logs outlive
// every fault), with maxUnavailable 10 and at most 2 per rack. At random
// moments (200-900 ms apart) the parent SIGKILLs a replica and starts a
// new one at once, alternately with the same Owner (it takes its locks back
// at once) and with a new one (its locks lapse after the lease), or
// SIGSTOPs one for 1.5-3 leases and continues it. Then, from the BMCs and
// the store:
//
//   - the rollout completed Succeeded, every server succeeded;
//   - every server's BMC got exactly one update start (one state-changing
//     request, one update task), from the server's own job, and is at
//     2.0.0; the store holds exactly one job per server, each Succeeded;
//   - at no instant were more than 10 servers, nor more than 2 of a rack,
//     between their first state-changing request and the last request of
//     their job (requests after the job's completion are counted too, and
//     reported).
//
// By default (CI) 4 SIGKILLs and 2 SIGSTOPs over 150 servers;
// BMCKIT_ROLLKILL_FULL=1 delivers 20 and 10 over 400 servers. It needs
// PostgreSQL (BMCKIT_TEST_POSTGRES_DSN; skipped without it, failed under
// CI=true).
func TestRolloutReplicasUnderFaults(t *testing.T) {
	if childtest.IsChild("rollout-replica") {
		rolloutReplicaChild()
		return
	}
	if testing.Short() {
		t.Skip("kills and stops rollout replicas; takes a minute or more")
	}
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	kills, stops, servers, update := 4, 2, 150, 800*time.Millisecond
	if os.Getenv(envRollKillFull) != "" {
		kills, stops, servers, update = 20, 10, 400, 1500*time.Millisecond
	}
	const (
		maxUnav, rackMax, racks = 10, 2, 10
		lease                   = time.Second
	)
	seed := time.Now().UnixNano()
	if s := os.Getenv(envRollKillSeed); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envRollKillSeed, s, err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 3737)) //nolint:gosec // test randomness
	t.Logf("seed %d (%s repeats the faults' order and moments), %d SIGKILLs, %d SIGSTOPs, %d servers, update %v", seed, envRollKillSeed, kills, stops, servers, update)
	began := time.Now()

	img, imageURI := imageServer()
	defer img.Close()
	f := newFleetSim(t, servers, racks, nil, update)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := postgres.Open(ctx, dsn, postgres.Options{Store: sqlstore.Options{Schema: schema, IdleInTransactionTimeout: lease / 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(context.Background())
	// The parent's Runner and Controller are never started: they create
	// the rollout and read the results.
	reader, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: &bmc.SchemeDialer{}}})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := rollout.New(rollout.Config{Runner: reader, Store: store, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	// The replicas.
	env := []string{envRollKillDSN + "=" + dsn, envRollKillSchema + "=" + schema, envRollKillLease + "=" + lease.String()}
	var errMu sync.Mutex
	var childErrors []string
	start := func(owner string) *childtest.Child {
		c := childtest.Start(t, "TestRolloutReplicasUnderFaults", "rollout-replica", append(slices.Clone(env), envRollKillOwner+"="+owner)...)
		go func() {
			for l := range c.Lines() {
				if strings.HasPrefix(l, "error ") {
					errMu.Lock()
					childErrors = append(childErrors, l)
					errMu.Unlock()
				}
			}
		}()
		return c
	}
	replicas := []*childtest.Child{start("replica-a"), start("replica-b")}
	owners := []string{"replica-a", "replica-b"}

	const name = "bios"
	if _, err := ctl.Create(ctx, name, rollout.Spec{Template: fwTemplate(imageURI), Servers: f.servers, Policy: rollout.Policy{
		MaxUnavailable:         rollout.Count(maxUnav),
		MaxUnavailablePerGroup: []rollout.GroupLimit{{Label: "rack", Max: rollout.Count(rackMax)}},
	}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan *rollout.Rollout, 1)
	wctx, wcancel := context.WithTimeout(ctx, 6*time.Minute)
	defer wcancel()
	go func() {
		r, err := ctl.Wait(wctx, name)
		if err != nil {
			r = nil
		}
		done <- r
	}()

	// The faults, in a shuffled order, at random moments.
	plan := slices.Repeat([]string{"kill"}, kills)
	plan = append(plan, slices.Repeat([]string{"stop"}, stops)...)
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	var (
		delivered             []string
		stableKills, newKills int
		stopped               time.Duration
		ro                    *rollout.Rollout
		finished              bool
	)
	for k := 0; k < len(plan) && !finished; k++ {
		select {
		case ro = <-done:
			finished = true
			continue
		case <-time.After(200*time.Millisecond + time.Duration(rng.Int64N(int64(700*time.Millisecond)))): // the fault's moment
		}
		victim := rng.IntN(len(replicas))
		switch plan[k] {
		case "kill":
			replicas[victim].Kill()
			owner := owners[victim]
			how := "same Owner"
			if k%2 == 1 { // alternately a new Owner: its old locks lapse after the lease
				owner = fmt.Sprintf("replica-%c-%d", 'a'+victim, k)
				how = "new Owner"
				newKills++
			} else {
				stableKills++
			}
			owners[victim] = owner
			replicas[victim] = start(owner)
			delivered = append(delivered, fmt.Sprintf("%s SIGKILL %d, restarted as %s (%s)", time.Since(began).Round(time.Millisecond), victim, owner, how))
		case "stop":
			d := lease*3/2 + time.Duration(rng.Int64N(int64(lease*3/2)))
			if err := replicas[victim].Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			<-time.After(d) // the stop's length
			if err := replicas[victim].Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			stopped += d
			delivered = append(delivered, fmt.Sprintf("%s SIGSTOP %d for %v", time.Since(began).Round(time.Millisecond), victim, d.Round(time.Millisecond)))
		}
	}
	faultsEnded := time.Since(began)
	if !finished {
		ro = <-done
	}
	took := time.Since(began)
	if ro == nil {
		r, _ := ctl.Get(ctx, name)
		if r != nil {
			t.Fatalf("the rollout did not complete: %+v %s\nfaults:\n%s", r.Status.Counts, r.Status.Message, strings.Join(delivered, "\n"))
		}
		t.Fatalf("the rollout did not complete\nfaults:\n%s", strings.Join(delivered, "\n"))
	}
	for _, c := range replicas {
		c.Kill()
	}

	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(delivered) < len(plan) {
		problem("the rollout completed after %d of the %d faults: make it longer", len(delivered), len(plan))
	}
	st := ro.Status
	if st.Result != rollout.ResultSucceeded || st.Counts.Succeeded != servers {
		problem("result %s %q, counts %+v; want Succeeded, %d succeeded", st.Result, st.Message, st.Counts, servers)
	}
	jobs, err := reader.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*job.Job{}
	for _, j := range jobs {
		byName[j.Name] = j
	}
	if len(jobs) != servers {
		problem("the store holds %d jobs, want %d (one per server)", len(jobs), servers)
	}
	var ws []window
	late, lateServers := 0, 0
	for i, sv := range f.servers {
		jn := rollout.JobName(name, i, sv.Name)
		reqs := f.logs[i].snapshot()
		w, touched := windowOf(i, reqs, jn)
		tasks := f.srvs[i].FirmwareTasks()
		switch {
		case !touched:
			problem("%s: no state-changing request", sv.Name)
			continue
		case w.starts != 1 || len(tasks) != 1:
			problem("%s: %d state-changing requests, %d update tasks; want one of each", sv.Name, w.starts, len(tasks))
		}
		if w.foreign > 0 {
			problem("%s: %d state-changing requests not from its job", sv.Name, w.foreign)
		}
		if v := f.srvs[i].FirmwareVersion(fwComponent); v != fwVersion {
			problem("%s: BIOS at %s", sv.Name, v)
		}
		j := byName[jn]
		switch {
		case j == nil:
			problem("%s: its job %s is not stored", sv.Name, jn)
		case j.Status.Result != conditions.ResultSucceeded:
			problem("%s: job %s %s %q", sv.Name, jn, j.Status.Result, j.Status.Message)
		case j.Status.CompletionTime != nil:
			n := 0
			for _, r := range reqs {
				if r.Job == jn && r.At.After(j.Status.CompletionTime.Time) {
					n++
				}
			}
			if n > 0 {
				late += n
				lateServers++
			}
		}
		ws = append(ws, w)
	}
	most, at := maxOverlap(ws, nil)
	if most > maxUnav {
		problem("%d servers unavailable at once on the wire (at %s), limit %d", most, at.Format("15:04:05.000"), maxUnav)
	}
	rackMost := 0
	for rk := range racks {
		rack := fmt.Sprintf("r%02d", rk)
		n, at := maxOverlap(ws, func(i int) bool { return f.servers[i].Labels["rack"] == rack })
		rackMost = max(rackMost, n)
		if n > rackMax {
			problem("rack %s: %d servers unavailable at once (at %s), limit %d", rack, n, at.Format("15:04:05.000"), rackMax)
		}
	}
	errMu.Lock()
	for _, e := range childErrors {
		problem("replica: %s", e)
	}
	errMu.Unlock()
	summary := fmt.Sprintf("rollout replicas under faults: 2 replicas (Runner + Controller) on PostgreSQL, lease %v, %d servers (update %v), maxUnavailable %d, rack limit %d; "+
		"%d faults delivered in %v: %d SIGKILLs (%d restarted with the same Owner, %d with a new one), %d SIGSTOPs (%v stopped in all); "+
		"%s (%d succeeded) after %v; update tasks %d on %d BMCs, jobs stored %d; max overlap on the wire %d (rack max %d); job requests after their job's completion %d (on %d servers)",
		lease, servers, update, maxUnav, rackMax,
		len(delivered), faultsEnded.Round(100*time.Millisecond), stableKills+newKills, stableKills, newKills, len(delivered)-stableKills-newKills, stopped.Round(100*time.Millisecond),
		st.Result, st.Counts.Succeeded, took.Round(100*time.Millisecond), countTasks(f), servers, len(jobs), most, rackMost, late, lateServers)
	t.Log(summary)
	fmt.Println(summary)
	t.Logf("faults:\n%s", strings.Join(delivered, "\n"))
	if len(problems) > 0 {
		if len(problems) > 40 {
			problems = append(problems[:40], fmt.Sprintf("... and %d more", len(problems)-40))
		}
		t.Errorf("%d problems:\n%s\nfaults:\n%s", len(problems), strings.Join(problems, "\n"), strings.Join(delivered, "\n"))
	}
}

func countTasks(f *fleetSim) int {
	n := 0
	for _, s := range f.srvs {
		n += len(s.FirmwareTasks())
	}
	return n
}

const (
	envRollKillFull   = "BMCKIT_ROLLKILL_FULL" // set: 20 SIGKILLs, 10 SIGSTOPs, 400 servers
	envRollKillSeed   = "BMCKIT_ROLLKILL_SEED"
	envRollKillDSN    = "BMCKIT_ROLLKILL_DSN"
	envRollKillSchema = "BMCKIT_ROLLKILL_SCHEMA"
	envRollKillOwner  = "BMCKIT_ROLLKILL_OWNER" // the Runner's Owner
	envRollKillLease  = "BMCKIT_ROLLKILL_LEASE"
)

// rolloutReplicaChild is one replica: a Runner and a Controller over the
// PostgreSQL store, until it is killed or its stdin closes. It prints
// "ready", and "error ..." when something fails.
func rolloutReplicaChild() {
	fail := func(format string, args ...any) {
		fmt.Printf("error "+format+"\n", args...)
		os.Exit(1)
	}
	lease, err := time.ParseDuration(os.Getenv(envRollKillLease))
	if err != nil {
		fail("%s: %v", envRollKillLease, err)
	}
	time.AfterFunc(10*time.Minute, func() { fail("replica gave up after 10 minutes") })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := postgres.Open(ctx, os.Getenv(envRollKillDSN), postgres.Options{Store: sqlstore.Options{
		Schema: os.Getenv(envRollKillSchema),
		// A replica stopped inside a transaction holds the store's
		// revision counter until PostgreSQL ends its session: a quarter
		// lease, as the job replica tests (replicachild_test.go).
		IdleInTransactionTimeout: lease / 4,
	}})
	if err != nil {
		fail("open store: %v", err)
	}
	owner := os.Getenv(envRollKillOwner)
	d := &bmc.SchemeDialer{}
	d.Register("redfish", redfish.NewDialer(redfish.Options{
		RequestsPerSecond: -1,
		WrapTransport:     func(next http.RoundTripper) http.RoundTripper { return callTagger{next} },
	}))
	r, err := job.NewRunner(job.Config{
		Store: store,
		StepperConfig: job.StepperConfig{
			Dialer:       d,
			Credentials:  bmc.StaticCredentials{"sim": {Username: simUser, Password: simPassword}},
			PollInterval: 40 * time.Millisecond, SlowPollInterval: 80 * time.Millisecond,
		},
		Owner: owner, LeaseDuration: lease, ScanInterval: 100 * time.Millisecond,
	})
	if err != nil {
		fail("new runner: %v", err)
	}
	ctl, err := rollout.New(rollout.Config{Runner: r, Store: store, PollInterval: 100 * time.Millisecond})
	if err != nil {
		fail("new controller: %v", err)
	}
	go func() {
		if err := r.Start(ctx); err != nil && ctx.Err() == nil {
			fail("runner: %v", err)
		}
	}()
	go func() { _ = ctl.Start(ctx) }()
	fmt.Println("ready")
	for range childtest.Commands() { // until stdin closes
	}
	os.Exit(0)
}
