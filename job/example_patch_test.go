package job_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// BMCJob stands for a controller's custom resource: job.Spec and job.Status
// embedded in the host's own type (examples/controller has the real CRD).
type BMCJob struct {
	Name   string
	Spec   job.Spec
	Status job.Status
}

// DeepCopy stands for the generated deepcopy (a JSON round trip here).
func (o *BMCJob) DeepCopy() *BMCJob {
	data, _ := json.Marshal(o)
	var out BMCJob
	_ = json.Unmarshal(data, &out)
	return &out
}

// Drive a job from a controller's Reconcile with a status patch. StepPatch
// hands persist the status before and after each change as copies of their
// own, so the patch from base to obj always carries the change. In a
// controller-runtime Reconciler (examples/controller) persist reads:
//
//	func(ctx context.Context, before, after job.Status) error {
//		base := obj.DeepCopy()
//		base.Status.Status = before
//		obj.Status.Status = after
//		return r.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
//	}
//
// and Reconcile returns ctrl.Result{RequeueAfter: res.RequeueAfter} (a
// positive delay even when the Stepper says "at once": a zero RequeueAfter
// means "do not requeue" there). Here the API server is a JSON document
// patched with the fields that differ between base and obj.
func ExampleStepper_StepPatch() {
	ctx := context.Background()
	stepper, err := job.NewStepper(job.StepperConfig{Dialer: fake.New(fake.Options{Power: bmc.PowerOn}),
		Locks: syslock.NewStoreLocker(memstore.New(), syslock.StoreLockerConfig{})}) // shared by every replica
	if err != nil {
		panic(err)
	}
	defer stepper.Close(ctx)

	stored, _ := json.Marshal(BMCJob{Name: "netboot", Spec: job.Spec{BMC: "ipmi://10.0.0.6", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}})
	patchStatus := func(base, obj *BMCJob) {
		var doc, from, to map[string]json.RawMessage
		b, _ := json.Marshal(base.Status)
		o, _ := json.Marshal(obj.Status)
		_ = json.Unmarshal(b, &from)
		_ = json.Unmarshal(o, &to)
		_ = json.Unmarshal(stored, &doc)
		var status map[string]json.RawMessage
		_ = json.Unmarshal(doc["Status"], &status)
		for k, v := range to {
			if string(from[k]) != string(v) {
				status[k] = v // what the merge patch carries
			}
		}
		for k := range from {
			if _, ok := to[k]; !ok {
				delete(status, k)
			}
		}
		doc["Status"], _ = json.Marshal(status)
		stored, _ = json.Marshal(doc)
	}

	reconcile := func() job.StepResult {
		obj := &BMCJob{}
		_ = json.Unmarshal(stored, obj) // r.Get(ctx, req.NamespacedName, obj)
		j := &job.Job{Name: obj.Name, Generation: 1, Spec: obj.Spec, Status: obj.Status}
		res, err := stepper.StepPatch(ctx, j, func(ctx context.Context, before, after job.Status) error {
			base := obj.DeepCopy()
			base.Status = before
			obj.Status = after
			patchStatus(base, obj) // r.Status().Patch(ctx, obj, client.MergeFrom(base))
			return nil
		})
		if err != nil {
			panic(err) // Reconcile returns the error and is retried
		}
		return res
	}
	for !reconcile().Done {
	}

	var obj BMCJob
	_ = json.Unmarshal(stored, &obj)
	for _, c := range obj.Status.Conditions {
		fmt.Printf("%s=%s (%s)\n", c.Type, c.Status, c.Reason)
	}
	fmt.Println("result:", obj.Status.Result, "-", obj.Status.Message)
	// Output:
	// Completed=True (Succeeded)
	// Running=False (Succeeded)
	// result: Succeeded - all 3 tasks succeeded
}
