package rollout_test

// Tests against a real kube-apiserver and etcd (package kubetest; the
// binaries come from KUBEBUILDER_ASSETS, built by scripts/kube-binaries.sh)
// and the Redfish simulator over loopback, with the kit's BMCJob controller
// (controller.Setup) and the rollout controller (rollout.Setup) in one
// manager. They skip without the binaries, and fail under CI=true.

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
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
	"github.com/bmckit/bmckit/contrib/kubernetes/rollout"
	"github.com/bmckit/bmckit/job"
)

var apiServer = kubetest.Shared{Options: kubetest.Options{CRDDirectoryPaths: []string{"../config/crd"}, Scheme: schemeOf(nil)}}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	apiServer.Stop()
	os.Exit(code)
}

// startManager runs the BMCJob controller and the rollout controller in a
// manager until stop is called (or t ends). The replica name is the
// identity in the system Leases: a manager started again with the same
// one takes its Leases back at once (a pod restarted in place).
func startManager(t *testing.T, cfg *rest.Config, ns, replica string) (*rollout.Reconciler, func()) {
	t.Helper()
	s := schemeOf(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: s, Logger: logr.Discard(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr(true)},
	})
	require.NoError(t, err)
	locks, err := leaselock.New(mgr.GetClient(), leaselock.Config{Namespace: ns, Reader: mgr.GetAPIReader(), LeaseDuration: time.Minute, Owner: replica})
	require.NoError(t, err)
	ctl, err := controller.Setup(mgr, controller.Options[*v1alpha1.BMCJob]{
		NewObject:  func() *v1alpha1.BMCJob { return &v1alpha1.BMCJob{} },
		Dialer:     redfish.NewDialer(redfish.Options{}),
		Locks:      locks,
		Registerer: prometheus.NewRegistry(),
		Stepper:    job.StepperConfig{PollInterval: 20 * time.Millisecond, SlowPollInterval: 100 * time.Millisecond, LockRetryInterval: 100 * time.Millisecond},
	})
	require.NoError(t, err)
	r, err := rollout.Setup(mgr, rollout.Options{Stepper: ctl.Stepper, PollInterval: 2 * time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return r, stop
}

func ptr[T any](v T) *T { return &v }

// changes collects the simulator's accepted state changes.
type changes struct {
	mu  sync.Mutex
	all []redfishtest.StateChange
}

func (c *changes) add(sc redfishtest.StateChange) {
	c.mu.Lock()
	c.all = append(c.all, sc)
	c.mu.Unlock()
}

// bySystem is, per system, what was changed in order.
func (c *changes) bySystem() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := append([]redfishtest.StateChange(nil), c.all...)
	sort.Slice(all, func(a, b int) bool { return all[a].Seq < all[b].Seq })
	out := map[string][]string{}
	for _, sc := range all {
		out[sc.System] = append(out[sc.System], sc.What)
	}
	return out
}

// maxBusy is the most systems at once between their first and last state
// change (the interval in which a server is unavailable at the BMC).
func (c *changes) maxBusy() int {
	c.mu.Lock()
	first, last := map[string]time.Time{}, map[string]time.Time{}
	for _, sc := range c.all {
		if f, ok := first[sc.System]; !ok || sc.Time.Before(f) {
			first[sc.System] = sc.Time
		}
		if l, ok := last[sc.System]; !ok || sc.Time.After(l) {
			last[sc.System] = sc.Time
		}
	}
	c.mu.Unlock()
	type edge struct {
		at    time.Time
		delta int
	}
	var es []edge
	for s, f := range first {
		es = append(es, edge{f, 1}, edge{last[s], -1})
	}
	sort.Slice(es, func(a, b int) bool {
		if es[a].at.Equal(es[b].at) {
			return es[a].delta > es[b].delta // touching intervals count as overlapping
		}
		return es[a].at.Before(es[b].at)
	})
	n, most := 0, 0
	for _, e := range es {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// fleet creates the Secret and one Machine per simulator system:
// machine-<i> for system i, labelled with labels(i).
func fleet(t *testing.T, c client.Client, ns string, sim *redfishtest.Server, n int, labels func(i int) map[string]string) {
	t.Helper()
	cr := sim.Credentials()
	require.NoError(t, c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bmc"},
		Data: map[string][]byte{"username": []byte(cr.Username), "password": []byte(cr.Password)}}))
	for i := 1; i <= n; i++ {
		require.NoError(t, c.Create(context.Background(), machineObj(ns, fmt.Sprintf("machine-%d", i), sim.Address(fmt.Sprint(i)), labels(i))))
	}
}

func newSim(systems int, delay time.Duration, ch *changes) *redfishtest.Server {
	sim := redfishtest.NewServer(redfishtest.Config{Systems: systems, PowerDelay: delay, OnStateChange: ch.add})
	for i := 1; i <= systems; i++ {
		sim.SetPower(fmt.Sprint(i), "On")
	}
	return sim
}

// waitFor: kubetest.WaitFor.
var waitFor = kubetest.WaitFor

func getRollout(t *testing.T, c client.Client, ns, name string) *v1alpha1.BMCRollout {
	t.Helper()
	ro := &v1alpha1.BMCRollout{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ro))
	return ro
}

func listJobs(t *testing.T, c client.Client, ns string) []v1alpha1.BMCJob {
	t.Helper()
	var l v1alpha1.BMCJobList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace(ns)))
	return l.Items
}

func rolloutEvents(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	var evs corev1.EventList
	require.NoError(t, c.List(context.Background(), &evs, client.InNamespace(ns)))
	var out []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "BMCRollout" {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	sort.Strings(out)
	return out
}

// A rollout over the Machines of one label, two at a time, on the Redfish
// simulator: the Machines of another label are not touched; a held
// Machine is skipped until its annotation is removed; at no moment were
// more than two systems between their first and last state change (the
// simulator's log); every server's changes were sent once; the status
// counts match the BMCJobs; the events are the rollout's own. It logs the
// API calls per server.
func TestRolloutOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	c := env.Client
	ctx := context.Background()
	var ch changes
	const n = 8 // machine-1..6 model x1 (machine-3 held), machine-7..8 model x2
	sim := newSim(n, 200*time.Millisecond, &ch)
	defer sim.Close()
	fleet(t, c, ns, sim, n, func(i int) map[string]string {
		if i > 6 {
			return map[string]string{"model": "x2"}
		}
		return map[string]string{"model": "x1"}
	})
	m3 := &v1alpha1.Machine{}
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "machine-3"}, m3))
	m3.Annotations = map[string]string{v1alpha1.HoldAnnotation: "true"}
	require.NoError(t, c.Update(ctx, m3))

	var calls kubetest.Calls
	r, stop := startManager(t, calls.Config(env.Config), ns, "r1")
	waitFor(t, time.Minute, "the manager's cache", func() bool {
		return r.Client.List(ctx, &v1alpha1.BMCRolloutList{}, client.InNamespace(ns)) == nil
	})
	before := calls.Snapshot()
	require.NoError(t, c.Create(ctx, rolloutObj(ns, "power-cycle", 2, map[string]string{"model": "x1"})))

	waitFor(t, 2*time.Minute, "every server but the held one", func() bool {
		ro := getRollout(t, c, ns, "power-cycle")
		return ro.Status.Counts.Succeeded == 5 && ro.Status.Counts.Held == 1
	})
	ro := getRollout(t, c, ns, "power-cycle")
	assert.False(t, conditions.IsTrue(ro.Status.Conditions, conditions.TypeCompleted), "not completed while a server is held")
	assert.Equal(t, "sshsss", ro.Status.States)
	assert.Empty(t, ch.bySystem()["3"], "the held Machine's BMC untouched")
	for _, j := range listJobs(t, c, ns) {
		assert.NotContains(t, j.Name, "machine-3", "no BMCJob for the held Machine")
	}

	delete(m3.Annotations, v1alpha1.HoldAnnotation)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "machine-3"}, m3))
	delete(m3.Annotations, v1alpha1.HoldAnnotation)
	require.NoError(t, c.Update(ctx, m3))
	released := time.Now()
	waitFor(t, 2*time.Minute, "the rollout to complete", func() bool {
		return conditions.IsTrue(getRollout(t, c, ns, "power-cycle").Status.Conditions, conditions.TypeCompleted)
	})
	t.Logf("the held server released and run in %s", time.Since(released).Round(time.Millisecond))
	waitFor(t, time.Minute, "the BMCJobs' finalizers", func() bool {
		for _, j := range listJobs(t, c, ns) {
			if len(j.Finalizers) > 0 {
				return false
			}
		}
		return true
	})
	cost := calls.Since(before)
	stop()

	ro = getRollout(t, c, ns, "power-cycle")
	assert.Equal(t, "Succeeded", ro.Status.Result, "%+v", ro.Status)
	assert.Equal(t, v1alpha1.RolloutCounts{Succeeded: 6}, ro.Status.Counts)
	var names []string
	for _, s := range ro.Status.Servers {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"machine-1", "machine-2", "machine-3", "machine-4", "machine-5", "machine-6"}, names, "the x1 Machines, sorted")

	// The status counts match the BMCJobs.
	jobs := listJobs(t, c, ns)
	succeeded := 0
	for _, j := range jobs {
		assert.True(t, metav1.IsControlledBy(&j, ro), "%s owned by the rollout", j.Name)
		assert.Equal(t, "power-cycle", j.Labels[v1alpha1.RolloutLabel])
		if conditions.IsTrue(j.Status.Conditions, conditions.TypeCompleted) && j.Status.Result == conditions.ResultSucceeded {
			succeeded++
		}
	}
	assert.Len(t, jobs, 6)
	assert.Equal(t, ro.Status.Counts.Succeeded, succeeded)

	// At the BMCs: each x1 server off then on, once; the x2 ones untouched;
	// never more than maxUnavailable between their first and last change.
	bs := ch.bySystem()
	for i := 1; i <= n; i++ {
		want := []string{"reset:ForceOff", "reset:On"}
		if i > 6 {
			want = nil
		}
		assert.Equal(t, want, bs[fmt.Sprint(i)], "system %d", i)
	}
	busy := ch.maxBusy()
	assert.LessOrEqual(t, busy, 2, "maxUnavailable at the BMCs")
	t.Logf("at most %d systems between their first and last state change at once (maxUnavailable 2)", busy)

	evs := rolloutEvents(t, c, ns)
	t.Logf("events: %q", evs)
	require.Len(t, evs, 2, "the rollout's transitions only: %q", evs)
	assert.True(t, strings.HasPrefix(evs[0], "Completed: Succeeded"), "%q", evs)
	assert.True(t, strings.HasPrefix(evs[1], "Started: started: 6 servers"), "%q", evs)
	for _, e := range evs {
		assert.NotContains(t, e, sim.Credentials().Password)
	}

	t.Logf("API calls of the rollout (6 servers, BMCJob controller included): %s", kubetest.Format(cost))
	t.Logf("per server: POST bmcjobs %.2f, PATCH bmcrollouts/status %.2f, GET bmcrollouts %.2f; status writes %d, conflicts %d",
		float64(cost["POST bmcjobs"])/6, float64(cost["PATCH bmcrollouts/status"])/6, float64(cost["GET bmcrollouts"])/6, r.Writes(), r.Conflicts())
	assert.Equal(t, 6, cost["POST bmcjobs"], "one create per server")
}

// The controller stopped mid-rollout (the manager ends; a pod restarted)
// and a new one started: the rollout completes, every server's BMCJob was
// created once (the jobs seen before the restart keep their UIDs; each
// system's changes were sent once), and maxUnavailable held across the
// restart at the BMCs.
func TestRolloutControllerRestartOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	c := env.Client
	ctx := context.Background()
	var ch changes
	const n = 8
	sim := newSim(n, 300*time.Millisecond, &ch)
	defer sim.Close()
	fleet(t, c, ns, sim, n, func(int) map[string]string { return map[string]string{"model": "x1"} })

	var calls kubetest.Calls
	_, stop := startManager(t, calls.Config(env.Config), ns, "r1")
	require.NoError(t, c.Create(ctx, rolloutObj(ns, "fw", 2, map[string]string{"model": "x1"})))
	waitFor(t, 2*time.Minute, "the rollout to be half-way", func() bool {
		ro := getRollout(t, c, ns, "fw")
		return ro.Status.Counts.Succeeded >= 3 && ro.Status.Counts.Running > 0
	})
	stop()
	mid := getRollout(t, c, ns, "fw")
	t.Logf("stopped at states %q", mid.Status.States)
	uids := map[string]types.UID{}
	for _, j := range listJobs(t, c, ns) {
		uids[j.Name] = j.UID
	}
	require.NotEmpty(t, uids)
	require.Less(t, len(uids), n, "stopped before every job was created")

	r2, stop2 := startManager(t, calls.Config(env.Config), ns, "r1")
	waitFor(t, 2*time.Minute, "the rollout to complete", func() bool {
		return conditions.IsTrue(getRollout(t, c, ns, "fw").Status.Conditions, conditions.TypeCompleted)
	})
	stop2()
	ro := getRollout(t, c, ns, "fw")
	assert.Equal(t, "Succeeded", ro.Status.Result, "%+v", ro.Status)
	assert.Equal(t, v1alpha1.RolloutCounts{Succeeded: n}, ro.Status.Counts)
	jobs := listJobs(t, c, ns)
	assert.Len(t, jobs, n)
	for _, j := range jobs {
		if uid, ok := uids[j.Name]; ok {
			assert.Equal(t, uid, j.UID, "%s not created again", j.Name)
		}
	}
	for i := 1; i <= n; i++ {
		assert.Equal(t, []string{"reset:ForceOff", "reset:On"}, ch.bySystem()[fmt.Sprint(i)], "system %d: each change once", i)
	}
	assert.LessOrEqual(t, ch.maxBusy(), 2, "maxUnavailable at the BMCs, across the restart")
	t.Logf("second controller: %d status writes, %d conflicts; all calls: %s", r2.Writes(), r2.Conflicts(), kubetest.Format(calls.Snapshot()))
}
