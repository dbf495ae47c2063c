package controller_test

// How a host wires the kit: controller.New (no controller registered) with
// the host's own controller, or controller.Setup; the predicate and the
// wake source they watch; and the generated RBAC (config/rbac), which the
// real-API-server tests here run under, impersonating its ServiceAccount.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/controller"
	"github.com/bmckit/bmckit/contrib/kubernetes/leaselock"
	"github.com/bmckit/bmckit/job"
)

// IgnoreStatusOnlyUpdates drops the update events of the kit's own status
// patches (and resyncs), and keeps every change a reconcile must see.
func TestIgnoreStatusOnlyUpdates(t *testing.T) {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	later := metav1.NewTime(now.Add(time.Second))
	base := func() *v1alpha1.BMCJob {
		o := bmcJob("j", netbootSpec(system1, ""))
		o.ResourceVersion = "10"
		o.Labels = map[string]string{"a": "1"}
		o.Annotations = map[string]string{"b": "2"}
		o.Finalizers = []string{"bmckit.io/release-bmc"}
		return o
	}
	for _, tc := range []struct {
		name   string
		change func(o *v1alpha1.BMCJob)
		want   bool
	}{
		{"resync", func(o *v1alpha1.BMCJob) {}, false},
		{"status", func(o *v1alpha1.BMCJob) {
			o.ResourceVersion = "11"
			o.Status.Result = conditions.ResultSucceeded
			o.Status.CurrentTask = 3
		}, false},
		{"managed fields", func(o *v1alpha1.BMCJob) {
			o.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "bmckit", Subresource: "status"}}
		}, false},
		{"spec (generation)", func(o *v1alpha1.BMCJob) { o.Generation++ }, true},
		{"deleted", func(o *v1alpha1.BMCJob) { o.DeletionTimestamp = &now }, true},
		{"label", func(o *v1alpha1.BMCJob) { o.Labels["a"] = "changed" }, true},
		{"label removed", func(o *v1alpha1.BMCJob) { o.Labels = nil }, true},
		{"annotation", func(o *v1alpha1.BMCJob) { o.Annotations["c"] = "3" }, true},
		{"finalizer removed", func(o *v1alpha1.BMCJob) { o.Finalizers = nil }, true},
		{"finalizer added", func(o *v1alpha1.BMCJob) { o.Finalizers = append(o.Finalizers, "other/x") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			p := controller.IgnoreStatusOnlyUpdates()
			assert.Equal(t, tc.want, p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}))
		})
	}
	t.Run("deletion timestamp moved", func(t *testing.T) {
		old, cur := base(), base()
		old.DeletionTimestamp, cur.DeletionTimestamp = &now, &later
		assert.True(t, controller.IgnoreStatusOnlyUpdates().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}))
	})
	t.Run("other events pass", func(t *testing.T) {
		p, o := controller.IgnoreStatusOnlyUpdates(), base()
		assert.True(t, p.Create(event.CreateEvent{Object: o}))
		assert.True(t, p.Delete(event.DeleteEvent{Object: o}))
		assert.True(t, p.Generic(event.GenericEvent{Object: o}))
	})
}

// controllerNames makes the controller names of the tests below unique in
// the process: controller-runtime keeps every validated name for the
// process's lifetime (-count=2 would otherwise refuse the second run's).
var controllerNames atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, controllerNames.Add(1))
}

// newValidatingManager is newManager with controller-runtime's check of
// controller names on: a second controller of one name is refused.
func newValidatingManager(t *testing.T) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, ctrl.Options{
		Scheme:                 newScheme(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	return mgr
}

// New registers no controller, so a host registers its own for the type
// (issue 33: with Setup it got "controller with name bmcjob already
// exists"); Setup registers one, named Options.Name.
func TestNewRegistersNoController(t *testing.T) {
	opts := func(name string) controller.Options[*v1alpha1.BMCJob] {
		return controller.Options[*v1alpha1.BMCJob]{NewObject: newBMCJob, Dialer: fake.NewFleet(),
			Registerer: prometheus.NewRegistry(), Namespace: "bmckit-system", Name: name}
	}
	mgr := newValidatingManager(t)
	name := uniqueName("bmcjob-new")
	ctl, err := controller.New(mgr, opts(name))
	require.NoError(t, err)
	assert.Equal(t, name, ctl.Reconciler.Name)
	require.NotNil(t, ctl.Reconciler.Wakes)
	host := &MyJobReconciler{Client: mgr.GetClient(), Jobs: ctl.Reconciler}
	require.NoError(t, ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.BMCJob{}).Named(name).Complete(host),
		"New registered no controller under its name")

	mgr = newValidatingManager(t)
	name = uniqueName("bmcjob-setup")
	_, err = controller.Setup(mgr, opts(name))
	require.NoError(t, err)
	err = ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.BMCJob{}).Named(name).Complete(host)
	require.ErrorContains(t, err, "already exists", "Setup registered the kit's controller")
}

// Without Options.Name the controller is named after the kind, as before.
func TestSetupNamesControllerAfterKind(t *testing.T) {
	ctl, err := controller.New(newManager(t), controller.Options[*v1alpha1.BMCJob]{NewObject: newBMCJob,
		Dialer: fake.NewFleet(), Registerer: prometheus.NewRegistry(), Namespace: "bmckit-system"})
	require.NoError(t, err)
	assert.Equal(t, "bmcjob", ctl.Reconciler.Name)
	mgr := newManager(t)
	r := &controller.Reconciler[*v1alpha1.BMCJob]{Client: mgr.GetClient(), NewObject: newBMCJob}
	require.NoError(t, r.SetupWithManager(mgr), "a Reconciler without Name or Wakes")
}

// WakeSource enqueues the object of every job the Stepper wakes (WakeFunc
// on the Reconciler's Wakes); without Wakes it is a source that never
// fires.
func TestWakeSource(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	newQueue := func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		t.Cleanup(q.ShutDown)
		return q
	}
	r := &controller.Reconciler[*v1alpha1.BMCJob]{NewObject: newBMCJob, Wakes: make(chan event.GenericEvent, 1)}
	q := newQueue()
	require.NoError(t, r.WakeSource().Start(ctx, q))
	controller.WakeFunc(newBMCJob, r.Wakes)("metal/netboot")
	got := make(chan reconcile.Request, 1)
	go func() {
		req, _ := q.Get()
		got <- req
	}()
	select {
	case req := <-got:
		assert.Equal(t, types.NamespacedName{Namespace: "metal", Name: "netboot"}, req.NamespacedName)
	case <-time.After(10 * time.Second):
		t.Fatal("the wake was not enqueued")
	}

	q = newQueue()
	require.NoError(t, (&controller.Reconciler[*v1alpha1.BMCJob]{}).WakeSource().Start(ctx, q))
	assert.Zero(t, q.Len())
}

// rbacDir holds the committed RBAC: role.yaml generated by controller-gen
// from the markers (scripts/crdcheck.sh checks it), the rest written by
// hand.
const rbacDir = "../config/rbac"

// The generated role names the API group the kit's types are registered
// under (the markers carry it as a literal), with what the Reconciler
// writes, and the Leases in a namespaced Role.
func TestGeneratedRBACNamesTheAPIGroup(t *testing.T) {
	objs := rbacObjects(t, "role.yaml")
	var cluster *rbacv1.ClusterRole
	var role *rbacv1.Role
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			cluster = o
		case *rbacv1.Role:
			role = o
		}
	}
	require.NotNil(t, cluster)
	require.NotNil(t, role)
	assert.Equal(t, "bmckit-controller", cluster.Name)
	verbs := func(rules []rbacv1.PolicyRule, group, resource string) []string {
		var out []string
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) {
				out = append(out, r.Verbs...)
			}
		}
		slices.Sort(out)
		return out
	}
	g := v1alpha1.GroupVersion.Group
	// create: the BMCRollout controller's (rollout.Setup) BMCJobs.
	assert.Equal(t, []string{"create", "get", "list", "patch", "update", "watch"}, verbs(cluster.Rules, g, "bmcjobs"), "group %s", g)
	assert.Equal(t, []string{"get", "list", "watch"}, verbs(cluster.Rules, g, "bmcrollouts"))
	assert.Equal(t, []string{"get", "patch", "update"}, verbs(cluster.Rules, g, "bmcrollouts/status"))
	assert.Equal(t, []string{"get", "patch", "update"}, verbs(cluster.Rules, g, "bmcjobs/status"))
	assert.Equal(t, []string{"update"}, verbs(cluster.Rules, g, "bmcjobs/finalizers"))
	assert.Equal(t, []string{"get", "list", "watch"}, verbs(cluster.Rules, "", "secrets"))
	assert.Equal(t, []string{"create", "patch"}, verbs(cluster.Rules, "events.k8s.io", "events"))
	assert.Empty(t, verbs(cluster.Rules, "coordination.k8s.io", "leases"), "Leases only in the lock namespace")
	assert.Equal(t, []string{"create", "get", "update"}, verbs(role.Rules, "coordination.k8s.io", "leases"))
}

// rbacObjects decodes the YAML documents of the named files in rbacDir.
func rbacObjects(t *testing.T, files ...string) []client.Object {
	t.Helper()
	return rbacObjectsIn(t, rbacDir, files...)
}

// rbacObjectsIn decodes the YAML documents of the named files in dir.
func rbacObjectsIn(t *testing.T, dir string, files ...string) []client.Object {
	t.Helper()
	dec := serializer.NewCodecFactory(schemeOf()).UniversalDeserializer()
	var out []client.Object
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			if len(bytes.TrimSpace(doc)) == 0 || strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			obj, _, err := dec.Decode(doc, nil, nil)
			require.NoError(t, err, "%s", f)
			out = append(out, obj.(client.Object))
		}
	}
	return out
}

func stripComments(doc []byte) string {
	var b strings.Builder
	for l := range strings.SplitSeq(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// kustomizeResources is the resources list of rbacDir's kustomization.yaml.
func kustomizeResources(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rbacDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		Namespace string   `json:"namespace"`
		Resources []string `json:"resources"`
	}
	require.NoError(t, yaml.Unmarshal(data, &k))
	require.Equal(t, "bmckit-system", k.Namespace)
	ents, err := os.ReadDir(rbacDir)
	require.NoError(t, err)
	var files []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".yaml") && e.Name() != "kustomization.yaml" {
			files = append(files, e.Name())
		}
	}
	assert.ElementsMatch(t, files, k.Resources, "kustomization.yaml lists every file of config/rbac")
	return k.Resources
}

// The controller's ServiceAccount in config/rbac.
const rbacServiceAccount = "bmckit-controller"

// applyRBAC applies config/rbac (what `kubectl apply -k` applies) moved to
// namespace ns, as kustomize's namespace does, with the cluster-scoped
// objects' names suffixed with ns (so each test has its own binding; they
// are deleted when t ends). It returns a rest.Config that impersonates the
// ServiceAccount, once the API server authorizes it.
func applyRBAC(t *testing.T, c client.Client, env *rest.Config, ns string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	sa := 0
	for _, o := range rbacObjects(t, kustomizeResources(t)...) {
		if _, ok := o.(*corev1.ServiceAccount); ok {
			sa++
			require.Equal(t, rbacServiceAccount, o.GetName())
		}
		createMoved(t, c, ns, o)
	}
	require.Equal(t, 1, sa, "one ServiceAccount")

	cfg := rest.CopyConfig(env)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + rbacServiceAccount}
	sac, err := client.New(cfg, client.Options{Scheme: schemeOf()})
	require.NoError(t, err)
	// The API server's authorizer sees new bindings through its informers:
	// wait until it does (reads it must allow), not for a fixed time.
	waitFor(t, 30*time.Second, "the bindings to take effect", func() bool {
		errJobs := sac.List(ctx, &v1alpha1.BMCJobList{})
		errLease := sac.Get(ctx, types.NamespacedName{Namespace: ns, Name: "none"}, &coordinationv1.Lease{})
		return errJobs == nil && apierrors.IsNotFound(errLease)
	})
	// ... and it is that ServiceAccount, not the admin.
	err = sac.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-allowed"}})
	require.True(t, apierrors.IsForbidden(err), "the ServiceAccount may not create ConfigMaps: %v", err)
	err = sac.Get(ctx, types.NamespacedName{Namespace: "default", Name: "none"}, &coordinationv1.Lease{})
	require.True(t, apierrors.IsForbidden(err), "Leases only in the controller's namespace: %v", err)
	return cfg
}

// createMoved creates o moved to namespace ns as kustomize's namespace
// moves it, with a cluster-scoped object's name (and a binding's reference
// to a ClusterRole) suffixed with ns; cluster-scoped objects are deleted
// when t ends.
func createMoved(t *testing.T, c client.Client, ns string, o client.Object) {
	t.Helper()
	switch o := o.(type) {
	case *rbacv1.ClusterRole:
		o.Name += "-" + ns
	case *rbacv1.ClusterRoleBinding:
		o.Name += "-" + ns
		o.RoleRef.Name += "-" + ns
		moveSubjects(o.Subjects, ns)
	case *rbacv1.RoleBinding:
		o.Namespace = ns
		if o.RoleRef.Kind == "ClusterRole" {
			o.RoleRef.Name += "-" + ns
		}
		moveSubjects(o.Subjects, ns)
	case *rbacv1.Role:
		o.Namespace = ns
	case *corev1.ServiceAccount:
		o.Namespace = ns
	default:
		t.Fatalf("config: unexpected %T", o)
	}
	require.NoError(t, c.Create(context.Background(), o), "%T %s", o, o.GetName())
	if o.GetNamespace() == "" {
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
}

func moveSubjects(subjects []rbacv1.Subject, ns string) {
	for i := range subjects {
		if subjects[i].Kind == rbacv1.ServiceAccountKind {
			subjects[i].Namespace = ns
		}
	}
}

// lines collects a manager's log lines.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	l.all = append(l.all, prefix+" "+args)
	l.mu.Unlock()
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

func (l *lines) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.all {
		if strings.Contains(strings.ToLower(s), sub) {
			out = append(out, s)
		}
	}
	return out
}

// netbootWithRBAC runs a netboot BMCJob against the Redfish simulator in a
// manager that authenticates as config/rbac's ServiceAccount (only the
// committed RBAC), with leader election in the test's namespace; setup
// adds the controller to the manager. The job must succeed with each state
// change sent once, the system's Lease released, the Started and Completed
// events recorded, and nothing forbidden logged.
func netbootWithRBAC(t *testing.T, setup func(ctrl.Manager, controller.Options[*v1alpha1.BMCJob]) error) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	c := adminClient(t, env)
	cfg := applyRBAC(t, c, env.Config, ns)

	var ch changes
	sim := newSim(redfishtest.Config{PowerDelay: 200 * time.Millisecond, OnStateChange: ch.add})
	defer sim.Close()
	require.NoError(t, c.Create(context.Background(), simSecret(ns, "bmc", sim.Credentials())))

	var log lines
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        schemeOf(),
		Logger:                        funcr.New(log.add, funcr.Options{}),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              "bmckit-rbac-test",
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr(true)},
	})
	require.NoError(t, err)
	// The defaults of New: Leases in Namespace, Secrets through the cache,
	// the manager's event recorder.
	require.NoError(t, setup(mgr, controller.Options[*v1alpha1.BMCJob]{
		NewObject:  newBMCJob,
		Dialer:     redfish.NewDialer(redfish.Options{WrapTransport: callerTag("r1")}),
		Namespace:  ns,
		Registerer: prometheus.NewRegistry(),
		Stepper: job.StepperConfig{
			PollInterval: 20 * time.Millisecond, SlowPollInterval: 100 * time.Millisecond,
			LockRetryInterval: 100 * time.Millisecond,
		},
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)

	require.NoError(t, c.Create(context.Background(), netbootJob(ns, "netboot", sim.Address("1"), "bmc")))
	waitFor(t, time.Minute, "the job to finish", func() bool { return finished(c, ns, "netboot") })
	got := getJob(t, c, ns, "netboot")
	assert.Equal(t, conditions.ResultSucceeded, got.Status.Result, "status: %+v", got.Status)
	assert.Equal(t, [][]string{{"reset:ForceOff", "boot:Pxe/Once", "reset:On"}}, values(ch.byJob()), "each state change sent once")

	var l coordinationv1.Lease
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: leaselock.LeaseName(systemKey(sim))}, &l))
	assert.Nil(t, l.Spec.HolderIdentity, "the system's Lease is released")

	// Events are sent asynchronously: the job's (events.k8s.io, the
	// recorder the Reconciler uses) and leader election's (core/v1).
	reasons := map[string]bool{}
	waitFor(t, 30*time.Second, "the Started, Completed and LeaderElection events", func() bool {
		var evs corev1.EventList
		if c.List(context.Background(), &evs, client.InNamespace(ns)) != nil {
			return false
		}
		for _, e := range evs.Items {
			reasons[e.Reason] = true
		}
		return reasons[controller.EventStarted] && reasons[controller.EventCompleted] && reasons["LeaderElection"]
	})
	stop()
	assert.Empty(t, log.matching("forbidden"), "the manager was refused nothing")
}

// The README's own-Reconcile pattern, as a host writes it: controller.New,
// and the host's MyJobReconciler (readme_test.go, the README's snippet)
// registered by its own SetupWithManager for BMCJob, with the predicate and
// the wake source. It runs a netboot job to Completed/Succeeded against
// the Redfish simulator in a real manager with only the generated RBAC.
func TestREADMEHostControllerOnRealAPIServer(t *testing.T) {
	netbootWithRBAC(t, setupMyJobs)
}

// The kit's own controller (Setup) runs a netboot job to the end with only
// the generated RBAC.
func TestKitControllerWithGeneratedRBACOnRealAPIServer(t *testing.T) {
	netbootWithRBAC(t, func(mgr ctrl.Manager, opts controller.Options[*v1alpha1.BMCJob]) error {
		_, err := controller.Setup(mgr, opts)
		return err
	})
}
