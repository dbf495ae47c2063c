package controller_test

// The Kubernetes path under a misbehaving control plane (issue 33): two
// controller replicas, each its own process (the test binary, as
// TestHelperReplicaProcess), run netboot BMCJobs against simulated Redfish
// BMCs whose power changes land 1-11 s late and which answer 503 to 30% of
// state-changing requests, while the kube-apiserver is killed (SIGKILL) and
// restarted on the same etcd. Every state-changing request the BMCs accept is
// counted, by job and by the replica process that sent it.
//
// Knobs (environment; scripts/kube-outage-rounds.sh sets them):
//
//	BMCKIT_OUTAGE_ROUNDS                 rounds per subtest (default 2)
//	BMCKIT_OUTAGE_DOWN                   downtimes, one per round in turn (default "7s,30s")
//	BMCKIT_OUTAGE_JOBS                   jobs (and BMCs) per round (default 20)
//	BMCKIT_OUTAGE_FAULT_RATE             share of state-changing requests answered 503 (default 0.3)
//	BMCKIT_OUTAGE_LEASE                  the system Leases' duration, or "default" for the kit's (default 20s)
//	BMCKIT_OUTAGE_MAX_CONFLICTS_PER_JOB  the conflict bound per job and round (default 5)
//	BMCKIT_OUTAGE_SEED                   seed of the random draws (default: the clock; logged)
//	BMCKIT_OUTAGE_TIMEOUT                how long a round may take to finish its jobs after the restart (default 4m)
//	BMCKIT_OUTAGE_SETTLE                 how long the system Leases may take to be released at the end (default 60s)

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/controller"
	"github.com/bmckit/bmckit/contrib/kubernetes/kubetest"
	"github.com/bmckit/bmckit/contrib/kubernetes/leaselock"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/syslock"
)

// netbootChanges are the state changes of a netboot job, in order: each
// accepted exactly once.
var netbootChanges = []string{"reset:ForceOff", "boot:Pxe/Once", "reset:On"}

// TestAPIServerOutageOnRealAPIServer: two replicas (processes), with and
// without leader election, 20 netboot jobs on 20 BMCs (power changes landing
// 1-11 s late, 503 to 30% of state-changing requests), the API server killed
// and restarted mid-run (down 7 s, then 30 s, in turn). Each round asserts:
//
//   - every job Completed with result Succeeded, and every state-changing
//     request accepted by its BMC exactly once (ForceOff, Pxe/Once, On: 3 per
//     job), whoever sent it;
//   - 0 system Leases held at the end (by a completed or deleted job), within
//     BMCKIT_OUTAGE_SETTLE;
//   - the replicas' conflicts (Reconciler.Conflicts, summed over the
//     processes) at most BMCKIT_OUTAGE_MAX_CONFLICTS_PER_JOB per job;
//   - no BMC session opened that was not used: every login of a replica
//     process at a BMC is followed by a request of that process for a job
//     (a step that loses its lock, or whose write conflicts, opens none);
//     and logins at most one per (BMC, process) pair that made a request for
//     a job, plus one per conflict and per job (a completion closes the
//     job's session before it is written; a failed write costs a login).
//
// In every round whose index is 0 or 3 modulo 4, 2 jobs that have started
// are deleted just before the kill: their objects must go, their Leases be
// released, and what they sent be a prefix of the netboot changes, each
// once. Each round prints one OUTAGE-ROUND line (scripts/kube-outage-rounds.sh
// tabulates them).
func TestAPIServerOutageOnRealAPIServer(t *testing.T) {
	for _, le := range []bool{true, false} {
		mode := "no-leader-election"
		if le {
			mode = "leader-election"
		}
		t.Run(mode, func(t *testing.T) {
			env := apiServer.Get(t)
			o := outageOptionsFromEnv(t)
			for i := range o.rounds {
				down := o.downs[i%len(o.downs)]
				t.Run(fmt.Sprintf("round-%02d", i+1), func(t *testing.T) {
					runOutageRound(t, env, o, outageRound{mode: mode, leaderElect: le, index: i, down: down,
						deleteTwo: i%4 == 0 || i%4 == 3, seed: o.seed + int64(i)*7919 + map[bool]int64{true: 1}[le]})
				})
			}
		})
	}
}

type outageOptions struct {
	rounds       int
	downs        []time.Duration
	jobs         int
	faultRate    float64
	lease        time.Duration // 0: the kit's default
	maxConflicts int           // per job and round
	seed         int64
	timeout      time.Duration
	settle       time.Duration
}

func outageOptionsFromEnv(t *testing.T) outageOptions {
	t.Helper()
	o := outageOptions{rounds: 2, downs: []time.Duration{7 * time.Second, 30 * time.Second}, jobs: 20, faultRate: 0.3,
		lease: 20 * time.Second, maxConflicts: 5, seed: time.Now().UnixNano() % 1e9, timeout: 4 * time.Minute, settle: time.Minute}
	envInt := func(k string, p *int) {
		if v := os.Getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, k)
			*p = n
		}
	}
	envDur := func(k string, p *time.Duration) {
		if v := os.Getenv(k); v != "" {
			d, err := time.ParseDuration(v)
			require.NoError(t, err, k)
			*p = d
		}
	}
	envInt("BMCKIT_OUTAGE_ROUNDS", &o.rounds)
	envInt("BMCKIT_OUTAGE_JOBS", &o.jobs)
	envInt("BMCKIT_OUTAGE_MAX_CONFLICTS_PER_JOB", &o.maxConflicts)
	if v := os.Getenv("BMCKIT_OUTAGE_DOWN"); v != "" {
		o.downs = nil
		for _, s := range strings.Split(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			require.NoError(t, err, "BMCKIT_OUTAGE_DOWN")
			o.downs = append(o.downs, d)
		}
	}
	if v := os.Getenv("BMCKIT_OUTAGE_FAULT_RATE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, "BMCKIT_OUTAGE_FAULT_RATE")
		o.faultRate = f
	}
	if v := os.Getenv("BMCKIT_OUTAGE_LEASE"); v == "default" {
		o.lease = 0
	} else {
		envDur("BMCKIT_OUTAGE_LEASE", &o.lease)
	}
	if v := os.Getenv("BMCKIT_OUTAGE_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "BMCKIT_OUTAGE_SEED")
		o.seed = n
	}
	envDur("BMCKIT_OUTAGE_TIMEOUT", &o.timeout)
	envDur("BMCKIT_OUTAGE_SETTLE", &o.settle)
	require.Positive(t, o.rounds)
	require.NotEmpty(t, o.downs)
	require.GreaterOrEqual(t, o.jobs, 4)
	return o
}

type outageRound struct {
	mode        string
	leaderElect bool
	index       int
	down        time.Duration
	deleteTwo   bool
	seed        int64
}

func runOutageRound(t *testing.T, env *kubetest.Env, o outageOptions, r outageRound) {
	ns := env.Namespace(t)
	c := adminClient(t, env)
	rng := rand.New(rand.NewSource(r.seed))
	t.Logf("%s round %d: seed %d (BMCKIT_OUTAGE_SEED=%d reproduces the draws of the run), down %s, %d jobs, 503 to %.0f%% of state changes, system Lease %s",
		r.mode, r.index+1, r.seed, o.seed, r.down, o.jobs, 100*o.faultRate, leaseString(o.lease))

	fleet := newFleet(t, o.jobs, rng.Int63(), o.faultRate)
	require.NoError(t, c.Create(context.Background(), simSecret(ns, "bmc", fleet.sims[0].Credentials())))
	removeJobs(t, c, ns)

	logs := replicaLogDir(t)
	reps := []*replicaProc{
		startReplica(t, env, logs, replicaConfig{ns: ns, name: "r1", leaderElect: r.leaderElect, leID: "bmckit-outage", owner: "r1", lease: o.lease}),
		startReplica(t, env, logs, replicaConfig{ns: ns, name: "r2", leaderElect: r.leaderElect, leID: "bmckit-outage", owner: "r2", lease: o.lease}),
	}
	defer stopReplicas(t, reps)
	waitFor(t, 2*time.Minute, "both replicas' caches", func() bool { return reps[0].ready() && reps[1].ready() })

	began := time.Now()
	names := make([]string, o.jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%02d", i+1)
		require.NoError(t, c.Create(context.Background(), netbootJob(ns, names[i], fleet.sims[i].Address("1"), "bmc")))
	}
	// Kill somewhere between a sixth and a half of the way through the
	// state changes, so outages hit every phase over the rounds.
	total := len(netbootChanges) * o.jobs
	killAfter := total/6 + rng.Intn(total/3+1)
	waitFor(t, 3*time.Minute, fmt.Sprintf("%d state changes before the outage", killAfter), func() bool { return fleet.ch.count() >= killAfter })

	deleted := map[string]bool{}
	if r.deleteTwo {
		for _, n := range pickStarted(fleet.ch, ns, names, 2, rng) {
			require.NoError(t, c.Delete(context.Background(), &v1alpha1.BMCJob{ObjectMeta: metaName(ns, n)}), "deleting %s", n)
			deleted[n] = true
		}
	}
	changesAtKill := fleet.ch.count()
	outage, err := env.RestartAPIServer(r.down)
	require.NoError(t, err, "restarting the API server")
	t.Logf("API server killed after %d state changes, down %s (unreachable %s); deleted before the kill: %v",
		changesAtKill, r.down, outage.Round(100*time.Millisecond), sortedKeys(deleted))

	// Every job completes (its finalizer gone); a deleted job's object goes.
	var notDone []string
	deadline := time.Now().Add(o.timeout)
	for {
		notDone = unfinishedJobs(c, ns, names, deleted)
		if len(notDone) == 0 || time.Now().After(deadline) {
			break
		}
		<-time.After(200 * time.Millisecond)
	}
	finishedIn := time.Since(began)
	// The system Leases settle: none held by a completed or deleted job.
	var held []string
	settleBy := time.Now().Add(o.settle)
	for {
		held = heldLocks(t, c, ns)
		if len(held) == 0 || time.Now().After(settleBy) || len(notDone) > 0 {
			break
		}
		<-time.After(200 * time.Millisecond)
	}
	stopReplicas(t, reps)

	// What the BMCs saw.
	by := fleet.ch.byJob()
	var off []string
	per := map[int]int{}
	for _, n := range names {
		got := by[ns+"/"+n]
		per[len(got)]++
		if deleted[n] {
			if !isOncePrefix(got, netbootChanges) {
				off = append(off, n)
			}
			continue
		}
		if !slices.Equal(got, netbootChanges) {
			off = append(off, n)
		}
	}
	var failed []string
	if len(notDone) == 0 {
		for _, n := range names {
			if deleted[n] {
				continue
			}
			if o := getJob(t, c, ns, n); o.Status.Result != conditions.ResultSucceeded {
				failed = append(failed, fmt.Sprintf("%s: %s %s: %s", n, o.Status.Result, o.Status.Reason, o.Status.Message))
			}
		}
	}
	conflicts, c409 := replicaConflicts(reps)
	logins, pairs, unused, mostLogins := fleet.sessions()
	restarts := reps[0].restarts() + reps[1].restarts()
	maxConflicts := o.maxConflicts * o.jobs

	line := fmt.Sprintf("OUTAGE-ROUND mode=%s round=%d down=%s outage=%s kill_after=%d deleted=%d conflicts=%d http409=%s changes=%d per_job=%s jobs_off=%d failed=%d unfinished=%d locks_left=%d restarts=%d logins=%d login_pairs=%d unused_logins=%d faults503=%d duration=%s",
		r.mode, r.index+1, r.down, outage.Round(100*time.Millisecond), changesAtKill, len(deleted), conflicts, formatCounts(c409), fleet.ch.count(),
		formatPerJob(per), len(off), len(failed), len(notDone), len(held), restarts, logins, pairs, len(unused), fleet.faulted.Load(), finishedIn.Round(time.Second))
	defer func() {
		res := "PASS"
		if t.Failed() {
			res = "FAIL"
		}
		// On stdout as well as in the test log, so that the rounds script
		// finds it with or without -v.
		fmt.Println(line + " result=" + res)
		t.Log(line + " result=" + res)
	}()
	t.Logf("conflicts by replica process: %s; 409s by resource: %s; restarts: r1 %d, r2 %d; state changes by replica process: %v; logins: %d for %d (BMC, process) pairs that made requests for a job, most logins: %s",
		formatCounts(replicaConflictsBy(reps)), formatCounts(c409), reps[0].restarts(), reps[1].restarts(), fleet.ch.replicas(), logins, pairs, mostLogins)

	if len(notDone) > 0 {
		t.Errorf("%d jobs not finished %s after the restart (%s):\n%s", len(notDone), o.timeout, strings.Join(notDone, ", "),
			fleet.evidence(t, c, ns, notDone, reps))
	}
	for _, n := range off {
		what := "ForceOff, Pxe/Once, On each accepted exactly once"
		if deleted[n] {
			what = "deleted mid-run: a prefix of ForceOff, Pxe/Once, On, each accepted at most once"
		}
		t.Errorf("job %s: the BMC accepted %v, want %s\n%s", n, by[ns+"/"+n], what, fleet.evidence(t, c, ns, []string{n}, reps))
	}
	for _, f := range failed {
		t.Errorf("job %s", f)
	}
	if len(held) > 0 {
		t.Errorf("%d system Leases still held %s after every job completed or was deleted: %v", len(held), o.settle, held)
	}
	for n := range deleted {
		for _, h := range held {
			if strings.HasPrefix(h, ns+"/"+n+"@") {
				t.Errorf("deleted job %s still holds its system's Lease: %s", n, h)
			}
		}
	}
	if conflicts > int64(maxConflicts) {
		t.Errorf("conflicts: %d in the round, more than %d (%d per job): by replica process %s, 409s %s",
			conflicts, maxConflicts, o.maxConflicts, formatCounts(replicaConflictsBy(reps)), formatCounts(c409))
	}
	// A (BMC, process) pair needs one session. Nothing here expires or
	// breaks one (faults hit only state-changing requests, and a 503 keeps
	// the session), but a job's completion closes its session before it is
	// written, so a completion write that fails (a 409, or the API server
	// down: at most one per job) costs a login again.
	if bound := int64(pairs) + conflicts + int64(o.jobs); int64(logins) > bound {
		t.Errorf("%d BMC logins, more than the %d (BMC, process) pairs that needed a session + %d conflicts + %d jobs (a completion write lost to the outage): most %s",
			logins, pairs, conflicts, o.jobs, mostLogins)
	}
	if len(unused) > 0 {
		t.Errorf("%d BMC sessions opened by a replica process that then sent nothing for a job on that BMC (a losing step logged in): %v", len(unused), unused)
	}
}

// removeJobs deletes the BMCJobs left in ns when t ends (their finalizers
// removed first), so that no later test's controller, which may watch every
// namespace, picks up a job of a failed round.
func removeJobs(t *testing.T, c client.Client, ns string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var l v1alpha1.BMCJobList
		if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			t.Logf("cleanup: listing BMCJobs in %s: %v", ns, err)
			return
		}
		for i := range l.Items {
			o := &l.Items[i]
			if len(o.Finalizers) > 0 {
				patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
				if err := c.Patch(ctx, o, patch); err != nil && !apierrors.IsNotFound(err) {
					t.Logf("cleanup: removing the finalizers of %s: %v", o.Name, err)
				}
			}
			if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup: deleting %s: %v", o.Name, err)
			}
		}
	})
}

func leaseString(d time.Duration) string {
	if d == 0 {
		return "the kit's default"
	}
	return d.String()
}

// isOncePrefix reports whether got is a prefix of want.
func isOncePrefix(got, want []string) bool {
	return len(got) <= len(want) && slices.Equal(got, want[:len(got)])
}

func formatPerJob(per map[int]int) string {
	keys := make([]int, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%dx%d", per[k], k)) // jobs x changes
	}
	return strings.Join(parts, ",")
}

func formatCounts[V int | int64](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", strings.ReplaceAll(k, " ", "_"), m[k]))
	}
	return strings.Join(parts, ",")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pickStarted picks n jobs that have sent something but not everything.
func pickStarted(ch *changes, ns string, names []string, n int, rng *rand.Rand) []string {
	by := ch.byJob()
	var started, rest []string
	for _, name := range names {
		switch k := len(by[ns+"/"+name]); {
		case k > 0 && k < len(netbootChanges):
			started = append(started, name)
		case k == 0:
			rest = append(rest, name)
		}
	}
	rng.Shuffle(len(started), func(i, j int) { started[i], started[j] = started[j], started[i] })
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	out := append(started, rest...)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// unfinishedJobs lists the jobs not yet Completed with their finalizer
// removed, and the deleted ones whose object is not gone. Errors (the API
// server restarting) count as not finished.
func unfinishedJobs(c client.Client, ns string, names []string, deleted map[string]bool) []string {
	var out []string
	for _, n := range names {
		o := &v1alpha1.BMCJob{}
		err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: n}, o)
		switch {
		case deleted[n] && apierrors.IsNotFound(err):
		case deleted[n]:
			out = append(out, n+" (deleted, object not gone)")
		case err != nil:
			out = append(out, n+" ("+err.Error()+")")
		case !conditions.IsTrue(o.Status.Conditions, conditions.TypeCompleted):
			phase := "not started"
			if k := o.Status.CurrentTask; k < len(o.Status.Tasks) && o.Status.Tasks[k].Phase != "" {
				phase = string(o.Status.Tasks[k].Phase)
			}
			out = append(out, fmt.Sprintf("%s (task %d %s)", n, o.Status.CurrentTask+1, phase))
		case len(o.Finalizers) > 0:
			out = append(out, n+" (completed, finalizer not removed)")
		}
	}
	return out
}

// heldLocks lists the system Leases (leaselock's) in ns that have a holder,
// as "holder (lease name)".
func heldLocks(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	var ls coordinationv1.LeaseList
	if err := c.List(context.Background(), &ls, client.InNamespace(ns), client.MatchingLabels{leaselock.LeaseManagedByLabel: leaselock.LeaseManagedBy}); err != nil {
		return []string{"(listing Leases: " + err.Error() + ")"}
	}
	var out []string
	for _, l := range ls.Items {
		if h := l.Spec.HolderIdentity; h != nil && *h != "" {
			out = append(out, fmt.Sprintf("%s (%s)", *h, l.Name))
		}
	}
	sort.Strings(out)
	return out
}

// A fleet is one simulated BMC per job (one system each), so that sessions
// are per job and attributable.
type fleet struct {
	sims    []*redfishtest.Server
	ch      *changes
	faulted atomic.Int64

	mu   sync.Mutex
	reqs [][]bmcRequest // per BMC, in arrival order: logins and job requests
}

// bmcRequest is a request a BMC received: a login, or a request the Stepper
// made for a job (it carries redfishtest.CallerHeader).
type bmcRequest struct {
	at      time.Time
	method  string
	path    string
	replica string // the replica process (replicaHeader)
	caller  string // job|task|attempt|replica, empty for a login
	login   bool
}

// replicaHeader names the replica process that sent a BMC request (every
// request of a replica process carries it).
const replicaHeader = "X-Bmckit-Test-Replica"

var systemPath = regexp.MustCompile(`^/redfish/v1/Systems/[^/]+$`)

func isStateChanging(method, path string) bool {
	return method == http.MethodPost && strings.HasSuffix(path, "/Actions/ComputerSystem.Reset") ||
		method == http.MethodPatch && systemPath.MatchString(path)
}

func newFleet(t *testing.T, n int, seed int64, faultRate float64) *fleet {
	t.Helper()
	f := &fleet{ch: &changes{}, reqs: make([][]bmcRequest, n)}
	var rmu sync.Mutex
	rng := rand.New(rand.NewSource(seed))
	draw := func() float64 {
		rmu.Lock()
		defer rmu.Unlock()
		return rng.Float64()
	}
	for i := range n {
		cfg := redfishtest.Config{
			OnStateChange: f.ch.add,
			// Power changes land 1-11 s after the request was accepted.
			PowerDelayFunc: func() time.Duration { return time.Second + time.Duration(draw()*float64(10*time.Second)) },
			// 503 to a share of the state-changing requests only: such a
			// 503 changes nothing (it is not a state change), and reads,
			// logins and logouts are never faulted.
			Faults: redfishtest.Faults{Func: func(method, path string) redfishtest.Fault {
				if faultRate > 0 && isStateChanging(method, path) && draw() < faultRate {
					f.faulted.Add(1)
					return redfishtest.Fault503
				}
				return redfishtest.FaultNone
			}},
			OnRequest: func(r *http.Request) {
				login := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/SessionService/Sessions")
				caller := r.Header.Get(redfishtest.CallerHeader)
				if !login && caller == "" {
					return
				}
				f.mu.Lock()
				f.reqs[i] = append(f.reqs[i], bmcRequest{at: time.Now(), method: r.Method, path: r.URL.Path,
					replica: r.Header.Get(replicaHeader), caller: caller, login: login})
				f.mu.Unlock()
			},
		}
		f.sims = append(f.sims, newSim(cfg))
	}
	t.Cleanup(func() {
		for _, s := range f.sims {
			s.Close()
		}
	})
	return f
}

// sessions counts the logins at the BMCs, the (BMC, replica process) pairs
// that made a request for a job (those needed a session), and lists the
// logins not followed by any request of their process for a job on that BMC
// before its next login there: a session a step opened and never used.
func (f *fleet) sessions() (logins, pairs int, unused []string, most string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mostN := 0
	for i, rs := range f.reqs {
		per := map[string]int{}
		for _, r := range rs {
			if r.login {
				per[r.replica]++
			}
		}
		for rep, n := range per {
			if n > mostN {
				mostN, most = n, fmt.Sprintf("%d by %s at BMC %d", n, rep, i+1)
			}
		}
		used := map[string]bool{}
		pending := map[string]time.Time{} // replica -> its last login not yet used
		flush := func(rep string) {
			if at, ok := pending[rep]; ok {
				unused = append(unused, fmt.Sprintf("BMC %d: login by %s at %s", i+1, rep, at.Format("15:04:05.000")))
				delete(pending, rep)
			}
		}
		for _, r := range rs {
			if r.login {
				logins++
				flush(r.replica)
				pending[r.replica] = r.at
				continue
			}
			delete(pending, r.replica)
			used[r.replica] = true
		}
		for rep := range pending {
			flush(rep)
		}
		pairs += len(used)
	}
	return logins, pairs, unused, most
}

// evidence is what the BMCs and the API server say about jobs: every
// state-changing request each job's BMC received (the 503s included) with
// its caller, what the BMC accepted, the job's stored status, its system's
// Lease, and the replica processes' log lines that name it.
func (f *fleet) evidence(t *testing.T, c client.Client, ns string, jobs []string, reps []*replicaProc) string {
	t.Helper()
	var b strings.Builder
	for _, entry := range jobs {
		name, _, _ := strings.Cut(entry, " ")
		i, err := strconv.Atoi(strings.TrimPrefix(name, "job-"))
		if err != nil || i < 1 || i > len(f.sims) {
			continue
		}
		fmt.Fprintf(&b, "--- %s (BMC %d, %s)\n", name, i, f.sims[i-1].Address("1"))
		f.mu.Lock()
		for _, r := range f.reqs[i-1] {
			switch {
			case r.login:
				fmt.Fprintf(&b, "  %s login by %s\n", r.at.Format("15:04:05.000"), r.replica)
			case isStateChanging(r.method, r.path):
				fmt.Fprintf(&b, "  %s sent %s %s caller=%s\n", r.at.Format("15:04:05.000"), r.method, r.path, r.caller)
			}
		}
		f.mu.Unlock()
		f.ch.mu.Lock()
		for _, sc := range f.ch.all {
			if j, _, _ := strings.Cut(sc.Caller, "|"); j == ns+"/"+name {
				fmt.Fprintf(&b, "  %s accepted #%d %s caller=%s %s\n", sc.Time.Format("15:04:05.000"), sc.Seq, sc.What, sc.Caller, sc.Note)
			}
		}
		f.ch.mu.Unlock()
		o := &v1alpha1.BMCJob{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, o); err != nil {
			fmt.Fprintf(&b, "  object: %v\n", err)
		} else {
			fmt.Fprintf(&b, "  status: result=%q reason=%q message=%q currentTask=%d finalizers=%v\n", o.Status.Result, o.Status.Reason, o.Status.Message, o.Status.CurrentTask, o.Finalizers)
			for k, ts := range o.Status.Tasks {
				fmt.Fprintf(&b, "    task %d: phase=%s result=%s reason=%s attempts=%d lastError=%q\n", k+1, ts.Phase, ts.Result, ts.Reason, ts.Attempts, ts.LastError)
			}
		}
		var l coordinationv1.Lease
		key := types.NamespacedName{Namespace: ns, Name: leaselock.LeaseName(strings.TrimPrefix(f.sims[i-1].Address("1"), "redfish+http://"))}
		if err := c.Get(context.Background(), key, &l); err != nil {
			fmt.Fprintf(&b, "  Lease: %v\n", err)
		} else {
			h := "<none>"
			if l.Spec.HolderIdentity != nil {
				h = *l.Spec.HolderIdentity
			}
			fmt.Fprintf(&b, "  Lease: holder=%s transitions=%d rv=%s\n", h, ptrVal(l.Spec.LeaseTransitions), l.ResourceVersion)
		}
		for _, rp := range reps {
			for _, line := range rp.grep(ns + "/" + name) {
				fmt.Fprintf(&b, "  log %s\n", line)
			}
		}
	}
	return b.String()
}

func ptrVal[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Replica processes.

// Environment of TestHelperReplicaProcess (besides envKubeconfig,
// envNamespace and envReplica, which names the process: replica#incarnation).
const (
	envReplicaHelper = "BMCKIT_KUBETEST_REPLICA"
	envReplicaLE     = "BMCKIT_KUBETEST_LEADER_ELECT"
	envReplicaLEID   = "BMCKIT_KUBETEST_LEADER_ELECTION_ID"
	envReplicaOwner  = "BMCKIT_KUBETEST_LOCK_OWNER" // empty: the kit's default locker (Setup's)
	envReplicaLease  = "BMCKIT_KUBETEST_LOCK_LEASE" // empty: the kit's default duration
	envReplicaTag    = "BMCKIT_KUBETEST_REPLICA_TAG"
	statsPrefix      = "REPLICA-STATS "
)

type replicaConfig struct {
	ns          string
	name        string // r1, r2
	leaderElect bool
	leID        string
	owner       string        // the system Leases' owner; "" for the kit's default locker
	lease       time.Duration // 0: the kit's default
}

// replicaStats is what a replica process reports on its stdout.
type replicaStats struct {
	Conflicts int64          `json:"conflicts"`
	HTTP409   map[string]int `json:"http409"`
	Ready     bool           `json:"ready"`
	Elected   bool           `json:"elected"`
}

// replicaProc is a supervised replica: a process running the kit's
// controller, restarted when it exits by itself (as a kubelet restarts a
// container: after losing leader election a manager exits), not after
// kill or stop.
type replicaProc struct {
	t    *testing.T
	cfg  replicaConfig
	env  *kubetest.Env
	logs string

	mu      sync.Mutex
	inc     int
	cmd     *exec.Cmd
	stats   map[string]replicaStats // by process tag
	lines   []string                // the processes' log lines
	done    bool                    // killed or stopped: no restart
	exits   []string
	stopped chan struct{}
}

func replicaLogDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bmckit-replicas-")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

func startReplica(t *testing.T, env *kubetest.Env, logs string, cfg replicaConfig) *replicaProc {
	t.Helper()
	p := &replicaProc{t: t, cfg: cfg, env: env, logs: logs, stats: map[string]replicaStats{}, stopped: make(chan struct{})}
	started := make(chan error, 1)
	go p.supervise(started)
	require.NoError(t, <-started)
	return p
}

func (p *replicaProc) tag() string { return fmt.Sprintf("%s#%d", p.cfg.name, p.inc) }

// supervise runs the replica's processes one after another.
func (p *replicaProc) supervise(started chan<- error) {
	defer close(p.stopped)
	first := true
	for {
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			return
		}
		p.inc++
		tag := p.tag()
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReplicaProcess$")
		cmd.Env = append(os.Environ(), envReplicaHelper+"=1", envKubeconfig+"="+p.env.Kubeconfig, envNamespace+"="+p.cfg.ns,
			envReplicaTag+"="+tag, envReplicaOwner+"="+p.cfg.owner, envReplicaLEID+"="+p.cfg.leID,
			envReplicaLE+"="+strconv.FormatBool(p.cfg.leaderElect), envReplicaLease+"="+durString(p.cfg.lease))
		logf, err := os.Create(filepath.Join(p.logs, strings.ReplaceAll(p.cfg.ns+"-"+tag, "#", "-")+".log"))
		if err != nil {
			p.mu.Unlock()
			if first {
				started <- err
			}
			return
		}
		out, err := cmd.StdoutPipe()
		if err == nil {
			stderr := &lineWriter{p: p, tag: tag, file: logf}
			cmd.Stderr = stderr
			err = cmd.Start()
		}
		if err != nil {
			p.mu.Unlock()
			_ = logf.Close()
			if first {
				started <- err
			}
			return
		}
		p.cmd = cmd
		p.mu.Unlock()
		if first {
			started <- nil
			first = false
		}
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if s, ok := strings.CutPrefix(line, statsPrefix); ok {
				var st replicaStats
				if json.Unmarshal([]byte(s), &st) == nil {
					p.mu.Lock()
					p.stats[tag] = st
					p.mu.Unlock()
				}
				continue
			}
			_, _ = fmt.Fprintln(logf, line)
		}
		err = cmd.Wait()
		_ = logf.Close()
		p.mu.Lock()
		p.exits = append(p.exits, fmt.Sprintf("%s: %v", tag, err))
		done := p.done
		p.mu.Unlock()
		if done {
			return
		}
		// Restarted as a kubelet would, after a short back-off (a policy
		// delay, not a wait for some state).
		<-time.After(time.Second)
	}
}

// lineWriter keeps a process's stderr lines (its log) in memory and in its
// log file.
type lineWriter struct {
	p    *replicaProc
	tag  string
	file io.Writer
	buf  []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	_, _ = w.file.Write(b)
	w.buf = append(w.buf, b...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		line := w.tag + " " + string(w.buf[:i])
		w.buf = w.buf[i+1:]
		w.p.mu.Lock()
		w.p.lines = append(w.p.lines, line)
		w.p.mu.Unlock()
	}
	return len(b), nil
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// current returns the stats of the running process.
func (p *replicaProc) current() (string, replicaStats, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return "", replicaStats{}, false
	}
	tag := p.tag()
	st, ok := p.stats[tag]
	return tag, st, ok
}

func (p *replicaProc) ready() bool {
	_, st, ok := p.current()
	return ok && st.Ready
}

// leader reports whether the running process leads (with leader election).
func (p *replicaProc) leader() bool {
	_, st, ok := p.current()
	return ok && st.Elected
}

func (p *replicaProc) restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inc - 1
}

// grep returns the processes' log lines that contain s (the first 5 and
// the last 15), without controller-runtime's per-reconcile keys.
func (p *replicaProc) grep(s string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.lines {
		if strings.Contains(l, s) {
			out = append(out, reconcileKeys.ReplaceAllString(l, ""))
		}
	}
	if len(out) > 20 {
		out = append(out[:5:5], append([]string{fmt.Sprintf("... (%d lines omitted)", len(out)-20)}, out[len(out)-15:]...)...)
	}
	return out
}

var reconcileKeys = regexp.MustCompile(` "(controller|controllerGroup|controllerKind|namespace|name|reconcileID|job)"=("[^"]*"|\{[^}]*\})| "BMCJob"=\{[^}]*\}`)

// kill SIGKILLs the running process; it is not restarted.
func (p *replicaProc) kill() (string, error) {
	p.mu.Lock()
	p.done = true
	cmd, tag := p.cmd, p.tag()
	p.mu.Unlock()
	err := cmd.Process.Signal(syscall.SIGKILL)
	<-p.stopped
	return tag, err
}

// stop ends the running process with SIGTERM (SIGKILL after a minute).
func (p *replicaProc) stop() {
	p.mu.Lock()
	already := p.done
	p.done = true
	cmd := p.cmd
	p.mu.Unlock()
	if already {
		<-p.stopped
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.stopped:
	case <-time.After(time.Minute):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-p.stopped
	}
}

func stopReplicas(t *testing.T, reps []*replicaProc) {
	t.Helper()
	var wg sync.WaitGroup
	for _, r := range reps {
		wg.Add(1)
		go func() { defer wg.Done(); r.stop() }()
	}
	wg.Wait()
}

// replicaConflicts sums the processes' last reported conflicts, and their
// 409 answers by resource.
func replicaConflicts(reps []*replicaProc) (int64, map[string]int) {
	var n int64
	c409 := map[string]int{}
	for _, r := range reps {
		r.mu.Lock()
		for _, st := range r.stats {
			n += st.Conflicts
			for k, v := range st.HTTP409 {
				c409[k] += v
			}
		}
		r.mu.Unlock()
	}
	return n, c409
}

func replicaConflictsBy(reps []*replicaProc) map[string]int64 {
	out := map[string]int64{}
	for _, r := range reps {
		r.mu.Lock()
		for tag, st := range r.stats {
			out[tag] = st.Conflicts
		}
		r.mu.Unlock()
	}
	return out
}

// TestHelperReplicaProcess is a controller replica of
// TestAPIServerOutageOnRealAPIServer and
// TestLeaderKillDefaultsOnRealAPIServer; it runs only when started by them.
// It runs the kit's controller (Setup) with the Stepper's defaults, tags
// every BMC request with its process (replicaHeader) and the job's call
// (redfishtest.CallerHeader), prints its stats on stdout (statsPrefix) and
// its log on stderr, and exits when its manager stops by itself (leader
// election lost), as a controller's main does.
func TestHelperReplicaProcess(t *testing.T) {
	if os.Getenv(envReplicaHelper) != "1" {
		t.Skip("a replica process of TestAPIServerOutageOnRealAPIServer and TestLeaderKillDefaultsOnRealAPIServer")
	}
	kc, err := os.ReadFile(os.Getenv(envKubeconfig))
	require.NoError(t, err)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	require.NoError(t, err)
	// As ctrl.GetConfig (controller-runtime v0.25) leaves a config without
	// a QPS: no client-side rate limit, the API server's priority and
	// fairness instead. client-go's own default (5/s, burst 10) throttled
	// the new leader's takeover of 20 jobs past its fence's deadlines.
	cfg.QPS = -1
	ns, tag := os.Getenv(envNamespace), os.Getenv(envReplicaTag)

	var mu sync.Mutex
	c409 := map[string]int{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil && resp.StatusCode == http.StatusConflict {
				mu.Lock()
				c409[kubetest.Key(r)]++
				mu.Unlock()
			}
			return resp, err
		})
	})
	log := funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: 1})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        schemeOf(),
		Logger:                        log,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                os.Getenv(envReplicaLE) == "true",
		LeaderElectionID:              os.Getenv(envReplicaLEID),
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr(true)},
		// Only this test's namespace: the package's other tests leave
		// objects in theirs.
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	require.NoError(t, err)
	opts := controller.Options[*v1alpha1.BMCJob]{
		NewObject:  newBMCJob,
		Dialer:     redfish.NewDialer(redfish.Options{WrapTransport: replicaTag(tag)}),
		Namespace:  ns,
		Registerer: prometheus.NewRegistry(),
		// The Stepper's defaults: poll intervals, lock retry, task timeout.
	}
	if owner, lease := os.Getenv(envReplicaOwner), os.Getenv(envReplicaLease); owner != "" || lease != "" {
		var d time.Duration
		if lease != "" {
			d, err = time.ParseDuration(lease)
			require.NoError(t, err)
		}
		var locks syslock.Locker
		locks, err = leaselock.New(mgr.GetClient(), leaselock.Config{Namespace: ns, Reader: mgr.GetAPIReader(), LeaseDuration: d, Owner: owner})
		require.NoError(t, err)
		opts.Locks = locks
	}
	ctl, err := controller.Setup(mgr, opts)
	require.NoError(t, err)

	ctx, cancel := signalContext()
	defer cancel()
	var ready atomic.Bool
	go func() {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			ready.Store(true)
		}
	}()
	go func() { // stats, whenever they change
		var last string
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			elected := false
			select {
			case <-mgr.Elected():
				elected = true
			default:
			}
			mu.Lock()
			b, _ := json.Marshal(replicaStats{Conflicts: ctl.Reconciler.Conflicts(), HTTP409: c409, Ready: ready.Load(), Elected: elected})
			mu.Unlock()
			if s := string(b); s != last {
				fmt.Println(statsPrefix + s)
				last = s
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	err = mgr.Start(ctx)
	if ctx.Err() == nil {
		// The manager stopped by itself: leader election lost, or an error.
		fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), "replica", tag, "exits: the manager stopped:", err)
		os.Exit(3)
	}
	require.NoError(t, err)
}

// replicaTag tags every BMC request with the replica process, and a request
// the Stepper makes for a job also with "job|task|attempt|process" (as
// callerTag does).
func replicaTag(tag string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set(replicaHeader, tag)
			if c, ok := job.CallFromContext(r.Context()); ok {
				r.Header.Set(redfishtest.CallerHeader, fmt.Sprintf("%s|%d|%d|%s", c.Job, c.Task, c.Attempt, tag))
			}
			return rt.RoundTrip(r)
		})
	}
}

// changes.count is the number of state changes so far.
func (c *changes) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.all)
}

func metaName(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
