package rollout_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/rollout"
	"github.com/bmckit/bmckit/job"
	core "github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// schemeOf is client-go's scheme with the kit's kinds (t may be nil).
func schemeOf(testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func machineObj(ns, name, addr string, labels map[string]string) *v1alpha1.Machine {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	m.Spec.BMC, m.Spec.CredentialsRef = addr, "bmc"
	return m
}

func rolloutObj(ns, name string, maxUnavailable int32, sel map[string]string) *v1alpha1.BMCRollout {
	ro := &v1alpha1.BMCRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ro.Spec.Selector = metav1.LabelSelector{MatchLabels: sel}
	ro.Spec.Template.Tasks = []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}
	mu := intstr.FromInt32(maxUnavailable)
	ro.Spec.Policy.MaxUnavailable = &mu
	return ro
}

// fakeEnv is a Reconciler over controller-runtime's fake client.
type fakeEnv struct {
	t   *testing.T
	c   client.Client
	r   *rollout.Reconciler
	rec *events.FakeRecorder
	key types.NamespacedName
}

func newFakeEnv(t *testing.T, f interceptor.Funcs, objs ...client.Object) *fakeEnv {
	c := fake.NewClientBuilder().WithScheme(schemeOf(t)).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.BMCRollout{}, &v1alpha1.BMCJob{}).WithInterceptorFuncs(f).Build()
	rec := events.NewFakeRecorder(100)
	return &fakeEnv{t: t, c: c, rec: rec, r: &rollout.Reconciler{Client: c, APIReader: c, Events: rec}}
}

func (e *fakeEnv) reconcile() ctrl.Result {
	e.t.Helper()
	res, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: e.key})
	require.NoError(e.t, err)
	return res
}

func (e *fakeEnv) rollout() *v1alpha1.BMCRollout {
	e.t.Helper()
	ro := &v1alpha1.BMCRollout{}
	require.NoError(e.t, e.c.Get(context.Background(), e.key, ro))
	return ro
}

func (e *fakeEnv) jobs() map[string]*v1alpha1.BMCJob {
	e.t.Helper()
	var l v1alpha1.BMCJobList
	require.NoError(e.t, e.c.List(context.Background(), &l, client.InNamespace(e.key.Namespace)))
	out := map[string]*v1alpha1.BMCJob{}
	for i := range l.Items {
		out[l.Items[i].Name] = &l.Items[i]
	}
	return out
}

func names(m map[string]*v1alpha1.BMCJob) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// complete marks a BMCJob Completed with result res, as the BMCJob
// controller would.
func (e *fakeEnv) complete(name string, res conditions.Result) {
	e.t.Helper()
	bj := e.jobs()[name]
	require.NotNil(e.t, bj, "job %s", name)
	now := timestamp.New(time.Now().UTC())
	conditions.MarkCompleted(&bj.Status.Conditions, 1, res, string(res), "done", now.Time)
	bj.Status.Result, bj.Status.Reason, bj.Status.Message, bj.Status.CompletionTime = res, string(res), "done", &now
	require.NoError(e.t, e.c.Status().Update(context.Background(), bj))
}

func (e *fakeEnv) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// A rollout over the fake client, pass by pass: the Machines of the label
// only, sorted by name; two at a time; a held Machine skipped until its
// annotation goes; BMCJobs owned and labelled; the counts; the events of
// the rollout's transitions only.
func TestReconcilePassByPass(t *testing.T) {
	ns := "r"
	sel := map[string]string{"model": "x1"}
	objs := []client.Object{
		machineObj(ns, "m3", "redfish://10.0.0.3", sel),
		machineObj(ns, "m1", "redfish://10.0.0.1", sel),
		machineObj(ns, "m2", "redfish://10.0.0.2", sel),
		machineObj(ns, "other", "redfish://10.0.0.9", map[string]string{"model": "x2"}),
		rolloutObj(ns, "fw", 2, sel),
	}
	held := machineObj(ns, "m0", "redfish://10.0.0.4", sel)
	held.Annotations = map[string]string{v1alpha1.HoldAnnotation: "true"}
	objs = append(objs, held)
	e := newFakeEnv(t, interceptor.Funcs{}, objs...)
	e.key = types.NamespacedName{Namespace: ns, Name: "fw"}

	res := e.reconcile()
	assert.Equal(t, rollout.DefaultPollInterval, res.RequeueAfter)
	ro := e.rollout()
	var snap []string
	for _, s := range ro.Status.Servers {
		snap = append(snap, s.Name)
	}
	assert.Equal(t, []string{"m0", "m1", "m2", "m3"}, snap, "the Machines of the label, sorted")
	assert.Equal(t, "hrr.", ro.Status.States)
	assert.Equal(t, v1alpha1.RolloutCounts{Held: 1, Running: 2, Pending: 1}, ro.Status.Counts)
	jobs := e.jobs()
	assert.Equal(t, []string{"fw.1.m1", "fw.2.m2"}, names(jobs))
	bj := jobs["fw.1.m1"]
	assert.Equal(t, "redfish://10.0.0.1", bj.Spec.BMC)
	assert.Equal(t, "bmc", bj.Spec.CredentialsRef)
	assert.Equal(t, "fw", bj.Labels[v1alpha1.RolloutLabel])
	assert.True(t, metav1.IsControlledBy(bj, ro), "owned by the rollout")
	evs := e.events()
	require.Len(t, evs, 1, "%v", evs)
	assert.Contains(t, evs[0], "Started")

	// Nothing changed: no write.
	w := e.r.Writes()
	e.reconcile()
	assert.Equal(t, w, e.r.Writes(), "a pass that changes nothing writes nothing")

	e.complete("fw.1.m1", conditions.ResultSucceeded)
	e.reconcile()
	ro = e.rollout()
	assert.Equal(t, "hsrr", ro.Status.States)
	assert.Equal(t, []string{"fw.1.m1", "fw.2.m2", "fw.3.m3"}, names(e.jobs()))

	e.complete("fw.2.m2", conditions.ResultSucceeded)
	e.complete("fw.3.m3", conditions.ResultSucceeded)
	e.reconcile()
	ro = e.rollout()
	assert.Equal(t, "hsss", ro.Status.States)
	assert.False(t, conditions.IsTrue(ro.Status.Conditions, conditions.TypeCompleted), "not complete while a server is held")

	m0 := &v1alpha1.Machine{}
	require.NoError(t, e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "m0"}, m0))
	delete(m0.Annotations, v1alpha1.HoldAnnotation)
	require.NoError(t, e.c.Update(context.Background(), m0))
	e.reconcile()
	assert.Equal(t, "rsss", e.rollout().Status.States)
	e.complete("fw.0.m0", conditions.ResultSucceeded)
	res = e.reconcile()
	ro = e.rollout()
	assert.Zero(t, res.RequeueAfter, "completed: no requeue")
	assert.True(t, conditions.IsTrue(ro.Status.Conditions, conditions.TypeCompleted))
	assert.Equal(t, "Succeeded", ro.Status.Result)
	assert.Equal(t, v1alpha1.RolloutCounts{Succeeded: 4}, ro.Status.Counts)
	assert.NotNil(t, ro.Status.CompletionTime)
	for _, c := range ro.Status.Conditions {
		assert.Equal(t, ro.Generation, c.ObservedGeneration, "condition %s", c.Type)
	}
	evs = e.events()
	require.Len(t, evs, 1, "only the rollout's transitions: %v", evs)
	assert.Contains(t, evs[0], "Normal Completed Succeeded")
	assert.NotContains(t, names(e.jobs()), "fw.4.other")
}

// A status write refused with 409 creates no BMCJob, and the next
// reconcile decides again from the object as stored.
func TestConflictCreatesNothing(t *testing.T) {
	ns := "r"
	sel := map[string]string{"model": "x1"}
	conflicts := 1
	e := newFakeEnv(t, interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		if conflicts > 0 {
			conflicts--
			return apierrors.NewConflict(schema.GroupResource{Group: "bmckit.io", Resource: "bmcrollouts"}, obj.GetName(), fmt.Errorf("the object has been modified"))
		}
		return c.SubResource(sub).Patch(ctx, obj, p, opts...)
	}}, machineObj(ns, "m1", "redfish://10.0.0.1", sel), rolloutObj(ns, "fw", 1, sel))
	e.key = types.NamespacedName{Namespace: ns, Name: "fw"}
	res := e.reconcile()
	assert.Positive(t, res.RequeueAfter, "a conflict requeues")
	assert.Empty(t, e.jobs(), "nothing created after a refused write")
	assert.Empty(t, e.rollout().Status.States)
	assert.Equal(t, int64(1), e.r.Conflicts())
	assert.Empty(t, e.events(), "no event for a write that did not happen")
	e.reconcile()
	assert.Equal(t, []string{"fw.0.m1"}, names(e.jobs()))
	assert.Equal(t, "r", e.rollout().Status.States)
}

// A server recorded as running whose BMCJob does not exist (the process
// died between the write and the create) gets it created by the next
// reconcile of a new Reconciler; one that exists is left alone.
func TestMissingJobIsCreated(t *testing.T) {
	ns := "r"
	sel := map[string]string{"model": "x1"}
	e := newFakeEnv(t, interceptor.Funcs{}, machineObj(ns, "m1", "redfish://10.0.0.1", sel), machineObj(ns, "m2", "redfish://10.0.0.2", sel), rolloutObj(ns, "fw", 2, sel))
	e.key = types.NamespacedName{Namespace: ns, Name: "fw"}
	e.reconcile()
	require.Equal(t, []string{"fw.0.m1", "fw.1.m2"}, names(e.jobs()))
	first := e.jobs()["fw.0.m1"].UID
	require.NoError(t, e.c.Delete(context.Background(), e.jobs()["fw.1.m2"]))

	e.r = &rollout.Reconciler{Client: e.c, APIReader: e.c} // a restarted process
	e.reconcile()
	jobs := e.jobs()
	assert.Equal(t, []string{"fw.0.m1", "fw.1.m2"}, names(jobs))
	assert.Equal(t, first, jobs["fw.0.m1"].UID, "the existing job is not created again")
}

// The skip check: a server in state is skipped (no BMCJob), and its slot
// goes to the next server in the same reconcile. The check sees the
// credentials reference qualified with the namespace.
func TestSkipCheck(t *testing.T) {
	ns := "r"
	sel := map[string]string{"model": "x1"}
	e := newFakeEnv(t, interceptor.Funcs{}, machineObj(ns, "m1", "redfish://10.0.0.1", sel), machineObj(ns, "m2", "redfish://10.0.0.2", sel), machineObj(ns, "m3", "redfish://10.0.0.3", sel), rolloutObj(ns, "fw", 1, sel))
	e.key = types.NamespacedName{Namespace: ns, Name: "fw"}
	var refs []string
	e.r.InState = func(_ context.Context, s job.Spec) (bool, string, error) {
		refs = append(refs, s.CredentialsRef)
		return s.BMC != "redfish://10.0.0.3", "power already off then on", nil
	}
	e.reconcile()
	assert.Equal(t, "kkr", e.rollout().Status.States)
	assert.Equal(t, []string{"fw.2.m3"}, names(e.jobs()))
	assert.Equal(t, []string{"r/bmc", "r/bmc", "r/bmc"}, refs)
	assert.Equal(t, 2, e.rollout().Status.Counts.Skipped)
}

// A rollout whose Machine carries a password in its BMC address completes
// Failed, InvalidSpec, naming the Machine, without the password anywhere.
func TestInvalidMachineAddress(t *testing.T) {
	ns := "r"
	sel := map[string]string{"model": "x1"}
	e := newFakeEnv(t, interceptor.Funcs{}, machineObj(ns, "m1", "redfish://root:Hunter2-pw@10.0.0.1", sel), rolloutObj(ns, "fw", 1, sel))
	e.key = types.NamespacedName{Namespace: ns, Name: "fw"}
	e.reconcile()
	ro := e.rollout()
	assert.True(t, conditions.IsTrue(ro.Status.Conditions, conditions.TypeCompleted))
	assert.Equal(t, "Failed", ro.Status.Result)
	assert.Equal(t, conditions.ReasonInvalidSpec, ro.Status.Reason)
	assert.Contains(t, ro.Status.Message, "servers[0].bmc (Machine m1)")
	assert.Empty(t, e.jobs())
	b := fmt.Sprintf("%+v %v", ro, e.events())
	assert.NotContains(t, b, "Hunter2-pw")
	assert.True(t, strings.Contains(b, "InvalidSpec"))
}

// No Machine matches yet: the rollout waits (no snapshot), and starts once
// one exists.
func TestNoMachinesYet(t *testing.T) {
	ns := "r"
	sel := map[string]string{"model": "x1"}
	e := newFakeEnv(t, interceptor.Funcs{}, rolloutObj(ns, "fw", 1, sel))
	e.key = types.NamespacedName{Namespace: ns, Name: "fw"}
	res := e.reconcile()
	assert.Equal(t, rollout.DefaultPollInterval, res.RequeueAfter)
	ro := e.rollout()
	assert.Empty(t, ro.Status.Servers)
	assert.Equal(t, rollout.ReasonNoMachines, conditions.Get(ro.Status.Conditions, conditions.TypeRunning).Reason)
	require.NoError(t, e.c.Create(context.Background(), machineObj(ns, "m1", "redfish://10.0.0.1", sel)))
	e.reconcile()
	assert.Equal(t, "r", e.rollout().Status.States)
}

func (e *fakeEnv) setSpec(f func(*v1alpha1.BMCRollout)) {
	e.t.Helper()
	ro := e.rollout()
	f(ro)
	require.NoError(e.t, e.c.Update(context.Background(), ro))
}

// The control is the spec's: a canary with approval waits for
// canaryApproved; paused starts nothing new; abort lets the running jobs
// finish, then completes Aborted. The canary's result and the halt are
// events; a per-group limit over a Machine label holds the second server
// of a rack back.
func TestControlFromSpec(t *testing.T) {
	ns := "r"
	sel := map[string]string{"model": "x1"}
	rack := func(name, r string) *v1alpha1.Machine {
		return machineObj(ns, name, "redfish://10.0.0.1/redfish/v1/Systems/"+name, map[string]string{"model": "x1", "rack": r})
	}
	ro := rolloutObj(ns, "fw", 3, sel)
	ro.Spec.Policy.Canary, ro.Spec.Policy.CanaryApproval = 1, true
	ro.Spec.Policy.MaxUnavailablePerGroup = []v1alpha1.RolloutGroupLimit{{Label: "rack", Max: intstr.FromInt32(1)}}
	e := newFakeEnv(t, interceptor.Funcs{}, rack("a1", "a"), rack("a2", "a"), rack("b1", "b"), rack("b2", "b"), rack("c1", "c"), ro)
	e.key = types.NamespacedName{Namespace: ns, Name: "fw"}

	e.reconcile()
	assert.Equal(t, "r....", e.rollout().Status.States, "the canary alone")
	e.complete("fw.0.a1", conditions.ResultSucceeded)
	e.reconcile()
	got := e.rollout()
	assert.Equal(t, "s....", got.Status.States, "waiting for the canary's approval")
	assert.Equal(t, core.ReasonAwaitingApproval, conditions.Get(got.Status.Conditions, conditions.TypeRunning).Reason)
	assert.Equal(t, "Succeeded", got.Status.Canary.Result)

	e.setSpec(func(o *v1alpha1.BMCRollout) { o.Spec.CanaryApproved = true })
	e.reconcile()
	// a2 goes (a1 is done), b1 goes, b2 waits for rack b, c1 goes: 3
	// running, within maxUnavailable 3 and 1 per rack.
	assert.Equal(t, "srr.r", e.rollout().Status.States)

	e.setSpec(func(o *v1alpha1.BMCRollout) { o.Spec.Paused = true })
	e.complete("fw.2.b1", conditions.ResultSucceeded)
	e.reconcile()
	got = e.rollout()
	assert.Equal(t, "srs.r", got.Status.States, "paused: b2 does not start")
	assert.True(t, conditions.IsTrue(got.Status.Conditions, core.TypePaused))

	e.setSpec(func(o *v1alpha1.BMCRollout) { o.Spec.Abort = true })
	e.reconcile()
	got = e.rollout()
	assert.Equal(t, core.ReasonAborted, got.Status.Halt)
	assert.False(t, conditions.IsTrue(got.Status.Conditions, conditions.TypeCompleted), "running jobs finish first")
	e.complete("fw.1.a2", conditions.ResultSucceeded)
	e.complete("fw.4.c1", conditions.ResultFailed)
	e.reconcile()
	got = e.rollout()
	assert.Equal(t, "Aborted", got.Status.Result)
	assert.Equal(t, "sss.f", got.Status.States)
	assert.Equal(t, []v1alpha1.RolloutFailure{{Server: "c1", Job: "fw.4.c1", Reason: "Failed", Message: "done"}}, got.Status.Failures)
	var reasons []string
	for _, ev := range e.events() {
		reasons = append(reasons, strings.Fields(ev)[1])
	}
	assert.Equal(t, []string{"Started", "CanarySucceeded", "Halting", "Completed"}, reasons)
	assert.Len(t, e.jobs(), 4, "b2 never started")
}
