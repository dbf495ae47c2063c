package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/controller"
	"github.com/bmckit/bmckit/contrib/kubernetes/leaselock"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

const ns = "metal"

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	return s
}

// newClient is controller-runtime's fake client with BMCJob's status
// subresource, holding objs.
func newClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(newScheme(t)).
		WithStatusSubresource(&v1alpha1.BMCJob{}).WithObjects(objs...).Build()
}

func secret(name, user, pass string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string][]byte{"username": []byte(user), "password": []byte(pass)},
	}
}

func netbootSpec(url, creds string) job.Spec {
	return job.Spec{BMC: url, CredentialsRef: creds, Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
}

func bmcJob(name string, spec job.Spec) *v1alpha1.BMCJob {
	o := &v1alpha1.BMCJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1}}
	o.Spec.Spec = spec
	return o
}

// newStepper is a Stepper with fast polling and lock retries, so the tests
// take milliseconds.
func newStepper(t *testing.T, cfg job.StepperConfig) *job.Stepper {
	t.Helper()
	cfg.PollInterval = time.Millisecond
	cfg.SlowPollInterval = 5 * time.Millisecond
	cfg.LockRetryInterval = 5 * time.Millisecond
	if cfg.Locks == nil {
		cfg.Locks = syslock.NoLocking // tests about locks pass their own
	}
	st, err := job.NewStepper(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st
}

func newLeaseLocker(t *testing.T, c client.Client) *leaselock.Locker {
	t.Helper()
	l, err := leaselock.New(c, leaselock.Config{Namespace: "bmckit-system"})
	require.NoError(t, err)
	return l
}

func get(t *testing.T, c client.Client, name string) *v1alpha1.BMCJob {
	t.Helper()
	o := &v1alpha1.BMCJob{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, o))
	return o
}

// reconcileOnce calls Reconcile for the object name once.
func reconcileOnce(t *testing.T, r *controller.Reconciler[*v1alpha1.BMCJob], name string) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(tctx(t), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	require.NoError(t, err)
	return res
}

func tctx(t *testing.T) context.Context { return logr.NewContext(context.Background(), testLogger(t)) }

// drive plays the controller's work queue for one object: it reconciles,
// waits for the RequeueAfter asked for (a requeue timer, as the queue's),
// and goes on until the object's job completed and its finalizer is gone,
// or a deadline passes.
func drive(t *testing.T, r *controller.Reconciler[*v1alpha1.BMCJob], c client.Client, name string) *v1alpha1.BMCJob {
	t.Helper()
	o, err := driveErr(r, c, name, nil)
	require.NoError(t, err)
	return o
}

// driveErr is drive for other goroutines: it returns an error instead of
// failing the test. between, if set, runs after every reconcile (e.g. to
// advance a fake BMC's clock).
func driveErr(r *controller.Reconciler[*v1alpha1.BMCJob], c client.Client, name string, between func()) (*v1alpha1.BMCJob, error) {
	key := types.NamespacedName{Namespace: ns, Name: name}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
		if err != nil {
			return nil, fmt.Errorf("reconciling %s: %w", name, err)
		}
		o := &v1alpha1.BMCJob{}
		if err := c.Get(context.Background(), key, o); err != nil {
			return nil, err
		}
		if conditions.IsTrue(o.Status.Conditions, conditions.TypeCompleted) && len(o.Finalizers) == 0 {
			return o, nil
		}
		if between != nil {
			between()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not complete in time; status: %+v", name, o.Status)
		}
		if res.RequeueAfter > 0 {
			<-time.After(res.RequeueAfter) // the work queue's requeue timer
		}
	}
}

// logSink collects every log line of a test, to check that no secret is
// ever logged.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

var sinks sync.Map // *testing.T -> *logSink

func testLogger(t *testing.T) logr.Logger {
	v, _ := sinks.LoadOrStore(t, &logSink{})
	s := v.(*logSink)
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		s.lines = append(s.lines, prefix+" "+args)
		s.mu.Unlock()
	}, funcr.Options{Verbosity: 10})
}

func logged(t *testing.T) string {
	v, _ := sinks.LoadOrStore(t, &logSink{})
	s := v.(*logSink)
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

func lease(t *testing.T, c client.Client, system string) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	err := c.Get(context.Background(), types.NamespacedName{Namespace: "bmckit-system", Name: leaselock.LeaseName(system)}, l)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return l
}

func newBMCJob() *v1alpha1.BMCJob { return &v1alpha1.BMCJob{} }
