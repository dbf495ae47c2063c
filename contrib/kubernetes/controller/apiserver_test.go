package controller_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"

	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
)

// TestStatusPatchesOnARealAPIServer steps a BMCJob created without a status
// (as kubectl apply creates it) and stores each change with the example's
// status patch (a merge patch with the optimistic lock) on a real
// kube-apiserver with the committed CRD: the server must accept every patch
// (a required status field refused them all with 422 before), keep every
// field the Stepper wrote (a field missing from the schema would be pruned
// silently), and refuse a patch from a stale copy.
//
// It needs kube-apiserver and etcd (KUBEBUILDER_ASSETS, see
// docs/kubernetes.md); without them it skips.
func TestStatusPatchesOnARealAPIServer(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: no kube-apiserver and etcd to test against (docs/kubernetes.md says how to build them)")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	env.ControlPlane.GetAPIServer().Configure().Append("endpoint-reconciler-type", "none") // loopback only
	cfg, err := env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	obj := &v1alpha1.BMCJob{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "netboot"}}
	obj.Spec.Spec = job.Spec{BMC: "ipmi://10.9.0.3", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
	require.NoError(t, c.Create(ctx, obj))
	stale := obj.DeepCopy()

	b := fake.New(fake.Options{Power: bmc.PowerOn})
	st, err := job.NewStepper(job.StepperConfig{Dialer: b, Locks: job.NewStoreLocker(memstore.New(), job.StoreLockerConfig{})})
	require.NoError(t, err)
	defer st.Close(ctx)
	patch := func(o *v1alpha1.BMCJob) job.PatchFunc {
		return func(ctx context.Context, before, after job.Status) error {
			base := o.DeepCopy()
			base.Status.Status, o.Status.Status = before, after
			return c.Status().Patch(ctx, o, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		}
	}
	completed := func(s job.Status) bool { return (&job.Job{Status: s}).Completed() }
	var last job.Status // the status the Stepper's last patch stored
	for n := 0; n < 20; n++ {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		if completed(obj.Status.Status) {
			break
		}
		j := &job.Job{Name: obj.Name, Generation: obj.Generation, CreatedAt: obj.CreationTimestamp.Time, Spec: obj.Spec.Spec, Status: obj.Status.Status}
		_, err := st.StepPatch(ctx, j, patch(obj))
		require.NoError(t, err, "step %d: the API server refused a status patch", n+1)
		last = j.Status
	}
	var got v1alpha1.BMCJob
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), &got))
	require.True(t, completed(got.Status.Status), "completed on the API server")
	assert.Equal(t, "Succeeded", string(got.Status.Result))
	want, err := json.Marshal(last)
	require.NoError(t, err)
	stored, err := json.Marshal(got.Status.Status)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(stored), "every field the Stepper wrote survived the schema")

	// A patch from a copy read before the first step is refused.
	base := stale.DeepCopy()
	stale.Status.Message = "stale"
	err = c.Status().Patch(ctx, stale, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	require.Error(t, err, "a stale copy's patch must conflict")
}
