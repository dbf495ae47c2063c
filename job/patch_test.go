package job_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// hostObject stands for a controller's custom resource: the job's Spec and
// Status embedded in the host's own type.
type hostObject struct {
	Name   string     `json:"name"`
	Spec   job.Spec   `json:"spec"`
	Status job.Status `json:"status"`
}

// statusMergePatch is the JSON merge patch (RFC 7386) from base's status to
// obj's, as client.MergeFrom computes it for the status: changed fields are
// replaced whole (lists always are), removed ones set to null.
func statusMergePatch(t *testing.T, base, obj *hostObject) map[string]any {
	t.Helper()
	fields := func(o *hostObject) map[string]json.RawMessage {
		data, err := json.Marshal(o.Status)
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &m))
		return m
	}
	from, to := fields(base), fields(obj)
	patch := map[string]any{}
	for k, v := range to {
		if string(from[k]) != string(v) {
			patch[k] = v
		}
	}
	for k := range from {
		if _, ok := to[k]; !ok {
			patch[k] = nil
		}
	}
	return patch
}

// apiServer keeps objects as JSON and applies status merge patches, so
// nothing a patch leaves out reaches the stored object.
type apiServer struct{ docs map[string][]byte }

func (a *apiServer) get(t *testing.T, name string) *hostObject {
	var o hostObject
	require.NoError(t, json.Unmarshal(a.docs[name], &o))
	return &o
}

func (a *apiServer) patchStatus(t *testing.T, name string, patch map[string]any) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(a.docs[name], &doc))
	status, _ := doc["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		doc["status"] = status
	}
	for k, v := range patch {
		if v == nil {
			delete(status, k)
			continue
		}
		status[k] = v
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	a.docs[name] = data
}

// The natural controller persist (base := obj.DeepCopy(), set the status,
// patch from base) stores every change with StepPatch, although the Job
// shares its status's memory with the object: the stored object ends with
// Completed=True, Running=False and the result, and every task completed.
func TestStepPatchStoresEveryChange(t *testing.T) {
	ctx := context.Background()
	b := fake.New(fake.Options{Power: bmc.PowerOn})
	stepper, err := job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: b})
	require.NoError(t, err)
	defer stepper.Close(ctx)

	spec := job.Spec{BMC: "ipmi://10.0.0.6", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
	api := &apiServer{docs: map[string][]byte{}}
	api.docs["netboot"], err = json.Marshal(hostObject{Name: "netboot", Spec: spec, Status: job.Status{}})
	require.NoError(t, err)

	conditionChanges := 0
	for range 100 {
		obj := api.get(t, "netboot")
		// Built the way a Reconciler builds it: the Job shares the
		// object's Conditions and Tasks slices.
		j := &job.Job{Name: obj.Name, Generation: 1, Spec: obj.Spec, Status: obj.Status}
		res, err := stepper.StepPatch(ctx, j, func(_ context.Context, before, after job.Status) error {
			// The deep copy, as obj.DeepCopy() (a JSON round trip here).
			data, err := json.Marshal(obj)
			require.NoError(t, err)
			base := &hostObject{}
			require.NoError(t, json.Unmarshal(data, base))
			base.Status = before
			obj.Status = after
			patch := statusMergePatch(t, base, obj)
			if _, ok := patch["conditions"]; ok {
				conditionChanges++
			}
			api.patchStatus(t, obj.Name, patch)
			return nil
		})
		require.NoError(t, err)
		if res.Done {
			break
		}
	}
	stored := api.get(t, "netboot")
	st := stored.Status
	require.True(t, conditions.IsTrue(st.Conditions, conditions.TypeCompleted), "stored conditions: %+v", st.Conditions)
	assert.False(t, conditions.IsTrue(st.Conditions, conditions.TypeRunning), "a completed job is not Running: %+v", st.Conditions)
	assert.Equal(t, conditions.ResultSucceeded, st.Result)
	require.Len(t, st.Tasks, 3)
	for i, ts := range st.Tasks {
		assert.True(t, conditions.IsTrue(ts.Conditions, conditions.TypeCompleted), "task %d: %+v", i, ts.Conditions)
		assert.Equal(t, conditions.ResultSucceeded, ts.Result, "task %d", i)
	}
	assert.GreaterOrEqual(t, conditionChanges, 2, "the patches carried the condition changes")
	assert.Equal(t, bmc.PowerOn, b.State().Power)
}

// before and after are copies of their own: changing them (a host that
// decodes a patch response into its object) changes neither the job nor
// what the next call receives.
func TestStepPatchHandsOutCopies(t *testing.T) {
	ctx := context.Background()
	stepper, err := job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: fake.New(fake.Options{Power: bmc.PowerOn})})
	require.NoError(t, err)
	defer stepper.Close(ctx)
	j := &job.Job{Name: "j", Generation: 1, Spec: job.Spec{BMC: "ipmi://10.0.0.7", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}}
	calls := 0
	for range 100 {
		res, err := stepper.StepPatch(ctx, j, func(_ context.Context, before, after job.Status) error {
			calls++
			for _, st := range []job.Status{before, after} {
				data, err := json.Marshal(st)
				require.NoError(t, err)
				require.NotContains(t, string(data), "scribbled", "call %d was handed memory an earlier call scribbled on", calls)
			}
			// Scribble over what we were handed.
			for _, st := range []job.Status{before, after} {
				for i := range st.Conditions {
					st.Conditions[i].Message = "scribbled"
				}
				for i := range st.Tasks {
					for k := range st.Tasks[i].Conditions {
						st.Tasks[i].Conditions[k].Message = "scribbled"
					}
				}
			}
			return nil
		})
		require.NoError(t, err)
		if res.Done {
			break
		}
	}
	require.True(t, j.Completed())
	require.GreaterOrEqual(t, calls, 3)
	data, err := json.Marshal(j.Status)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "scribbled", "the job's own status is not the one handed out")
}
