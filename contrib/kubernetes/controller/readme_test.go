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
	"sigs.k8s.io/controller-runtime/pkg/builder"
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
	Jobs *controller.Reconciler[*v1alpha1.BMCJob] // built by controller.New
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

// SetupWithManager registers your controller for your type: the kit's own
// status writes do not trigger it (Step requeues by itself), and BMC
// events a job waits for wake it at once.
func (r *MyJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.BMCJob{}, builder.WithPredicates(controller.IgnoreStatusOnlyUpdates())).
		WatchesRawSource(r.Jobs.WakeSource()).
		Complete(r)
}

// setupMyJobs is the wiring in main. controller.New builds the Stepper, the
// system locks, the credentials, the metrics and the Runnables, and
// registers no controller: yours is the only one for the type.
func setupMyJobs(mgr ctrl.Manager, opts controller.Options[*v1alpha1.BMCJob]) error {
	ctl, err := controller.New(mgr, opts) // NewObject, Dialer, Namespace of the Leases
	if err != nil {
		return err
	}
	return (&MyJobReconciler{Client: mgr.GetClient(), Jobs: ctl.Reconciler}).SetupWithManager(mgr)
}

// README:end

// The README's embedding snippet is this file's, verbatim; its Reconcile is
// at most 25 lines; and it runs a netboot job to the end (finalizer added
// and removed, Succeeded). TestREADMEHostControllerOnRealAPIServer runs the
// snippet's SetupWithManager and setupMyJobs in a manager.
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
	fn = fn[:strings.Index(fn, "\n}\n")+2]
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
