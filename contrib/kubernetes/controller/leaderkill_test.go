package controller_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/kubetest"
)

// TestLeaderKillDefaultsOnRealAPIServer: two replicas (processes) with
// leader election and the kit's defaults (the system Leases' duration and
// owner as controller.Setup makes them, the Stepper's task timeout and
// intervals; controller-runtime's leader election: LeaseDuration 15 s,
// RenewDeadline 10 s, RetryPeriod 2 s) run 20 netboot jobs on 20 BMCs
// whose power changes land 1-11 s late. The leader is killed with SIGKILL
// mid-run. It asserts:
//
//   - the takeover: the new leader's first state-changing request comes at
//     most 30 s (BMCKIT_LEADERKILL_TAKEOVER) after the leader-election
//     Lease changed holder (its acquireTime), and its first request for
//     each job the killed leader left unfinished (a read, for a job whose
//     power change is landing) at most 60 s after it
//     (BMCKIT_LEADERKILL_JOB_TAKEOVER). The system Leases the killed leader
//     held keep its jobs waiting one Lease duration (the kit's default,
//     15 s) from when the new leader first saw each, plus a lock retry; the
//     jobs are then reached one after another (the last 30-31 s after the
//     handover in the rounds measured on two cores under -race). The kit's
//     earlier 5-minute Lease failed the per-job bound in every round;
//   - only the leader of the moment sends state changes: the killed one
//     before the kill, the new one after it took the Lease;
//   - every job Completed with result Succeeded (none TimedOut), every
//     state-changing request accepted exactly once, and no task whose
//     effect the BMC accepted reported Failed or TimedOut;
//   - no system Lease held at the end.
//
// Knobs: BMCKIT_LEADERKILL_ROUNDS (default 1), BMCKIT_LEADERKILL_JOBS (20),
// BMCKIT_LEADERKILL_TAKEOVER (30s), BMCKIT_LEADERKILL_JOB_TAKEOVER (1m),
// BMCKIT_LEADERKILL_TIMEOUT (how long the jobs may take after the kill, 4m),
// BMCKIT_LEADERKILL_SEED, BMCKIT_LEADERKILL_FULL=1 (after a late takeover,
// wait for the jobs anyway to see how they end, up to 12 minutes). Each
// round prints one LEADERKILL-ROUND line.
func TestLeaderKillDefaultsOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	rounds, jobs := 1, 20
	b := leaderKillBounds{takeover: 30 * time.Second, jobTakeover: time.Minute}
	timeout := 4 * time.Minute
	seed := time.Now().UnixNano() % 1e9
	for k, p := range map[string]*int{"BMCKIT_LEADERKILL_ROUNDS": &rounds, "BMCKIT_LEADERKILL_JOBS": &jobs} {
		if v := os.Getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, k)
			*p = n
		}
	}
	for k, p := range map[string]*time.Duration{"BMCKIT_LEADERKILL_TAKEOVER": &b.takeover, "BMCKIT_LEADERKILL_JOB_TAKEOVER": &b.jobTakeover, "BMCKIT_LEADERKILL_TIMEOUT": &timeout} {
		if v := os.Getenv(k); v != "" {
			d, err := time.ParseDuration(v)
			require.NoError(t, err, k)
			*p = d
		}
	}
	if v := os.Getenv("BMCKIT_LEADERKILL_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err)
		seed = n
	}
	full := os.Getenv("BMCKIT_LEADERKILL_FULL") == "1"
	for i := range rounds {
		t.Run(fmt.Sprintf("round-%02d", i+1), func(t *testing.T) {
			runLeaderKillRound(t, env, i, jobs, seed+int64(i)*7919, b, timeout, full)
		})
	}
}

// leHolder is a holder of the leader-election Lease, as the test saw it.
type leHolder struct {
	holder   string
	seen     time.Time // when the test first saw it
	acquired time.Time // the Lease's acquireTime
}

// leaderKillBounds are the takeover bounds, from the new leader taking the
// leader-election Lease: to its first state-changing request, and to its
// first request for each job the killed leader left unfinished.
type leaderKillBounds struct{ takeover, jobTakeover time.Duration }

func runLeaderKillRound(t *testing.T, env *kubetest.Env, index, jobs int, seed int64, b leaderKillBounds, timeout time.Duration, full bool) {
	ns := env.Namespace(t)
	c := adminClient(t, env)
	rng := rand.New(rand.NewSource(seed))
	t.Logf("round %d: seed %d, %d jobs, the kit's default Lease and task timeout", index+1, seed, jobs)
	fleet := newFleet(t, jobs, rng.Int63(), 0)
	require.NoError(t, c.Create(context.Background(), simSecret(ns, "bmc", fleet.sims[0].Credentials())))
	removeJobs(t, c, ns)

	const leID = "bmckit-leaderkill"
	logs := replicaLogDir(t)
	reps := []*replicaProc{
		startReplica(t, env, logs, replicaConfig{ns: ns, name: "r1", leaderElect: true, leID: leID}),
		startReplica(t, env, logs, replicaConfig{ns: ns, name: "r2", leaderElect: true, leID: leID}),
	}
	defer stopReplicas(t, reps)
	waitFor(t, 2*time.Minute, "both replicas' caches and a leader", func() bool {
		return reps[0].ready() && reps[1].ready() && (reps[0].leader() || reps[1].leader())
	})

	// The leader-election Lease's holders, as they change.
	var lmu sync.Mutex
	var holders []leHolder
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			var l coordinationv1.Lease
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: leID}, &l); err == nil && l.Spec.HolderIdentity != nil {
				lmu.Lock()
				if len(holders) == 0 || holders[len(holders)-1].holder != *l.Spec.HolderIdentity {
					h := leHolder{holder: *l.Spec.HolderIdentity, seen: time.Now()}
					if l.Spec.AcquireTime != nil {
						h.acquired = l.Spec.AcquireTime.Time
					}
					holders = append(holders, h)
				}
				lmu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer wg.Wait()
	defer cancel()
	holderChange := func(after string) (leHolder, bool) {
		lmu.Lock()
		defer lmu.Unlock()
		// The first holder after the last time `after` held it.
		for i := len(holders) - 1; i >= 0; i-- {
			if holders[i].holder == after {
				if i+1 < len(holders) {
					return holders[i+1], true
				}
				break
			}
		}
		return leHolder{}, false
	}
	waitFor(t, time.Minute, "the leader-election Lease", func() bool {
		lmu.Lock()
		defer lmu.Unlock()
		return len(holders) > 0
	})

	began := time.Now()
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%02d", i+1)
		require.NoError(t, c.Create(context.Background(), netbootJob(ns, names[i], fleet.sims[i].Address("1"), "bmc")))
	}
	total := len(netbootChanges) * jobs
	killAfter := total/4 + rng.Intn(total/4+1)
	waitFor(t, 3*time.Minute, fmt.Sprintf("%d state changes before the kill", killAfter), func() bool { return fleet.ch.count() >= killAfter })

	var leader, other *replicaProc
	switch {
	case reps[0].leader() && !reps[1].leader():
		leader, other = reps[0], reps[1]
	case reps[1].leader() && !reps[0].leader():
		leader, other = reps[1], reps[0]
	default:
		t.Fatalf("not exactly one leader: r1 %v, r2 %v", reps[0].leader(), reps[1].leader())
	}
	lmu.Lock()
	oldHolder := holders[len(holders)-1].holder
	lmu.Unlock()
	changesAtKill := fleet.ch.count()
	killedTag, err := leader.kill()
	require.NoError(t, err)
	killedAt := time.Now()
	newTag, _, _ := other.current()
	// What the killed leader left unfinished: its last writes are in (it is
	// gone), so the stored status is final for it.
	var left []string
	waitFor(t, time.Minute, "the jobs' status after the kill", func() bool {
		left = left[:0]
		for _, n := range names {
			o := &v1alpha1.BMCJob{}
			if c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: n}, o) != nil {
				return false
			}
			if !conditions.IsTrue(o.Status.Conditions, conditions.TypeCompleted) {
				left = append(left, n)
			}
		}
		return true
	})
	t.Logf("SIGKILLed the leader %s (leader-election Lease holder %s) after %d state changes, %d jobs unfinished; %s takes over",
		killedTag, oldHolder, changesAtKill, len(left), newTag)

	waitFor(t, time.Minute, "the leader-election Lease to change holder", func() bool { _, ok := holderChange(oldHolder); return ok })
	nh, _ := holderChange(oldHolder)
	becameLeader := nh.seen
	if !nh.acquired.IsZero() && nh.acquired.Before(becameLeader) {
		becameLeader = nh.acquired
	}
	handover := becameLeader.Sub(killedAt)

	// The takeover: the new leader's first state-changing request after it
	// took the leader-election Lease (within b.takeover), and its first
	// request (a read, for a job waiting for a power change to land) for
	// each job the killed one left unfinished (within b.jobTakeover).
	firstChange := func() (time.Time, bool) {
		fleet.ch.mu.Lock()
		defer fleet.ch.mu.Unlock()
		for _, sc := range fleet.ch.all {
			if strings.HasSuffix(sc.Caller, "|"+newTag) && !sc.Time.Before(becameLeader) {
				return sc.Time, true
			}
		}
		return time.Time{}, false
	}
	perJob := map[string]time.Duration{}
	firstRequests := func() {
		fleet.mu.Lock()
		defer fleet.mu.Unlock()
		for _, n := range left {
			if _, ok := perJob[n]; ok {
				continue
			}
			i, _ := strconv.Atoi(strings.TrimPrefix(n, "job-"))
			for _, r := range fleet.reqs[i-1] {
				if r.replica == newTag && !r.login && !r.at.Before(becameLeader) {
					perJob[n] = r.at.Sub(becameLeader)
					break
				}
			}
		}
	}
	var tookOver time.Time
	deadline := becameLeader.Add(max(b.takeover, b.jobTakeover))
	for {
		firstRequests()
		if tookOver.IsZero() {
			tookOver, _ = firstChange()
		}
		if !tookOver.IsZero() && len(perJob) == len(left) || time.Now().After(deadline.Add(time.Second)) {
			break
		}
		<-time.After(50 * time.Millisecond)
	}
	takeover := tookOver.Sub(becameLeader)
	var late []string
	var perJobD []time.Duration
	for _, n := range left {
		d, ok := perJob[n]
		if !ok || d > b.jobTakeover {
			late = append(late, n)
		}
		if ok {
			perJobD = append(perJobD, d)
		}
	}
	slices.Sort(perJobD)
	line := func(res string) string {
		to := "none"
		if !tookOver.IsZero() {
			to = takeover.Round(100 * time.Millisecond).String()
		}
		return fmt.Sprintf("LEADERKILL-ROUND round=%d kill_after=%d killed=%s new_leader=%s le_handover=%s takeover=%s left=%d taken_over=%d late=%d per_job_takeover_median=%s per_job_takeover_max=%s",
			index+1, changesAtKill, killedTag, newTag, handover.Round(100*time.Millisecond), to, len(left), len(left)-len(late), len(late),
			quantile(perJobD, 0.5), quantile(perJobD, 1)) + res
	}
	t.Logf("leader-election handover %s after the kill; the new leader's first state change after it took the Lease: %s; its first request per unfinished job: %v",
		handover.Round(100*time.Millisecond), map[bool]string{true: "none", false: takeover.Round(100 * time.Millisecond).String()}[tookOver.IsZero()], roundAll(perJobD))
	if tookOver.IsZero() || takeover > b.takeover || len(late) > 0 {
		first := "never came"
		if !tookOver.IsZero() {
			first = "came after " + takeover.Round(100*time.Millisecond).String()
		}
		t.Errorf("late takeover: the new leader %s took the leader-election Lease at %s (%s after the kill); its first state change %s (bound %s), and %d of the %d jobs the killed leader left unfinished got no request from it within %s: %v\n%s",
			newTag, becameLeader.Format("15:04:05.000"), handover.Round(100*time.Millisecond), first, b.takeover,
			len(late), len(left), b.jobTakeover, late, fleet.evidence(t, c, ns, firstN(late, 3), reps))
		if !full {
			fmt.Println(line(" result=FAIL"))
			t.Log(line(" result=FAIL"))
			return
		}
		timeout = 12 * time.Minute
	}

	// Every job completes.
	var notDone []string
	until := time.Now().Add(timeout)
	for {
		notDone = unfinishedJobs(c, ns, names, nil)
		if len(notDone) == 0 || time.Now().After(until) {
			break
		}
		<-time.After(200 * time.Millisecond)
	}
	duration := time.Since(began)
	var held []string
	settleBy := time.Now().Add(time.Minute)
	for len(notDone) == 0 {
		if held = heldLocks(t, c, ns); len(held) == 0 || time.Now().After(settleBy) {
			break
		}
		<-time.After(200 * time.Millisecond)
	}
	stopReplicas(t, reps)

	by := fleet.ch.byJob()
	var off, bad []string
	succeeded, timedOut := 0, 0
	for _, n := range names {
		got := by[ns+"/"+n]
		if !slices.Equal(got, netbootChanges) {
			off = append(off, n)
		}
		if len(notDone) > 0 {
			continue
		}
		o := getJob(t, c, ns, n)
		switch {
		case o.Status.Result == conditions.ResultSucceeded:
			succeeded++
		case o.Status.Result == conditions.ResultTimedOut || o.Status.Reason == conditions.ReasonTimedOut:
			timedOut++
			bad = append(bad, fmt.Sprintf("%s: %s %s: %s", n, o.Status.Result, o.Status.Reason, o.Status.Message))
		default:
			bad = append(bad, fmt.Sprintf("%s: %s %s: %s", n, o.Status.Result, o.Status.Reason, o.Status.Message))
		}
		// A task whose effect the BMC accepted is never reported failed.
		for k, ts := range o.Status.Tasks {
			if k < len(netbootChanges) && slices.Contains(got, netbootChanges[k]) &&
				(ts.Result == conditions.ResultFailed || ts.Result == conditions.ResultTimedOut || ts.Reason == conditions.ReasonTimedOut) {
				bad = append(bad, fmt.Sprintf("%s task %d: the BMC accepted %s, the task reports %s %s: %s", n, k+1, netbootChanges[k], ts.Result, ts.Reason, ts.Message))
			}
		}
	}
	// Only the leader of the moment acts.
	var wrongActor []string
	fleet.ch.mu.Lock()
	for _, sc := range fleet.ch.all {
		switch {
		case strings.HasSuffix(sc.Caller, "|"+killedTag) && sc.Time.After(killedAt.Add(time.Second)):
			wrongActor = append(wrongActor, fmt.Sprintf("#%d %s by the killed %s at %s", sc.Seq, sc.What, killedTag, sc.Time.Format("15:04:05.000")))
		case strings.HasSuffix(sc.Caller, "|"+newTag) && sc.Time.Before(becameLeader):
			wrongActor = append(wrongActor, fmt.Sprintf("#%d %s (%s) by %s at %s, before it led (%s)", sc.Seq, sc.What, sc.Caller, newTag, sc.Time.Format("15:04:05.000"), becameLeader.Format("15:04:05.000")))
		case !strings.HasSuffix(sc.Caller, "|"+newTag) && !strings.HasSuffix(sc.Caller, "|"+killedTag):
			wrongActor = append(wrongActor, fmt.Sprintf("#%d %s by %q", sc.Seq, sc.What, sc.Caller))
		}
	}
	fleet.ch.mu.Unlock()

	res := " result=PASS"
	defer func() {
		if t.Failed() {
			res = " result=FAIL"
		}
		l := line(fmt.Sprintf(" succeeded=%d/%d timed_out=%d jobs_off=%d unfinished=%d locks_left=%d duration=%s",
			succeeded, jobs, timedOut, len(off), len(notDone), len(held), duration.Round(time.Second))) + res
		fmt.Println(l)
		t.Log(l)
	}()
	if len(notDone) > 0 {
		t.Errorf("%d jobs not finished %s after the kill: %s\n%s", len(notDone), timeout, strings.Join(notDone, ", "), fleet.evidence(t, c, ns, firstN(notDone, 5), reps))
	}
	for _, n := range off {
		t.Errorf("job %s: the BMC accepted %v, want ForceOff, Pxe/Once, On each exactly once\n%s", n, by[ns+"/"+n], fleet.evidence(t, c, ns, []string{n}, reps))
	}
	for _, b := range bad {
		t.Errorf("job %s", b)
	}
	assert.Empty(t, wrongActor, "state changes sent by a replica that did not lead")
	assert.Empty(t, held, "system Leases still held a minute after every job completed")
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func quantile(d []time.Duration, q float64) string {
	if len(d) == 0 {
		return "none"
	}
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q * float64(len(s)-1))
	return s[i].Round(100 * time.Millisecond).String()
}

func roundAll(d []time.Duration) []string {
	out := make([]string, len(d))
	for i, x := range d {
		out[i] = x.Round(100 * time.Millisecond).String()
	}
	return out
}
