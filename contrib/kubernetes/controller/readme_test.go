package controller_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/controller"
	"github.com/bmckit/bmckit/job"
)

// README:begin

// MyJobReconciler is your controller; your CRD type (here the kit's BMCJob)
// embeds job.Spec and job.Status and has JobSpec() and JobStatus() methods.
type MyJobReconciler struct {
	client.Client
	Jobs *controller.Reconciler[*v1alpha1.BMCJob] // built by controller.Setup
}

func (r *MyJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &v1alpha1.BMCJob{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Your own logic here: your fields, labels, other objects.
	// Step adds the finalizer, steps the job, patches the status with the
	// optimistic lock, shows Waiting, records events, and on delete releases
	// the BMC session and the system before it removes the finalizer.
	return r.Jobs.Step(ctx, obj)
}

// README:end

// The README's embedding snippet is this file's, verbatim; its Reconcile is
// at most 25 lines; and it runs a netboot job to the end (finalizer added
// and removed, Succeeded).
func TestREADMESnippet(t *testing.T) {
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)// README:begin\n\n(.*?)\n// README:end`).FindSubmatch(src)
	require.NotNil(t, m)
	snippet := string(m[1])
	readme, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), snippet, "README.md's embedding snippet must be contrib/kubernetes/controller/readme_test.go's, verbatim")
	fn := snippet[strings.Index(snippet, "func (r *MyJobReconciler) Reconcile"):]
	assert.LessOrEqual(t, strings.Count(strings.TrimSpace(fn), "\n")+1, 25, "Reconcile in 25 lines or fewer")

	fleet := fake.NewFleet()
	_, err = fleet.AddNew(system1, fake.Options{Power: bmc.PowerOn, PowerTransition: time.Millisecond})
	require.NoError(t, err)
	c := newClient(t, bmcJob("netboot", netbootSpec(system1, "")))
	r := &MyJobReconciler{Client: c, Jobs: &controller.Reconciler[*v1alpha1.BMCJob]{
		Client: c, NewObject: newBMCJob, Stepper: newStepper(t, job.StepperConfig{Dialer: fleet, Locks: newLeaseLocker(t, c)}),
	}}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "netboot"}}
	sawFinalizer := false
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := r.Reconcile(context.Background(), req)
		require.NoError(t, err)
		o := get(t, c, "netboot")
		sawFinalizer = sawFinalizer || len(o.Finalizers) > 0
		if conditions.IsTrue(o.Status.Conditions, conditions.TypeCompleted) && len(o.Finalizers) == 0 {
			assert.Equal(t, conditions.ResultSucceeded, o.Status.Result)
			break
		}
		require.False(t, time.Now().After(deadline), "not done in time: %+v", o.Status)
		<-time.After(res.RequeueAfter)
	}
	assert.True(t, sawFinalizer, "the finalizer held the object while the job ran")
}
