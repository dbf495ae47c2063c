package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// stateChanges are the fake's calls that change the server or the BMC.
func stateChanges(b *fake.BMC) []fake.Method {
	var out []fake.Method
	for _, c := range b.Calls() {
		switch c.Method {
		case fake.MethodSetPower, fake.MethodSetBootOverride, fake.MethodInsertMedia, fake.MethodEjectMedia,
			fake.MethodResetBMC, fake.MethodStartFirmwareUpdate, fake.MethodSetBIOSAttributes:
			out = append(out, c.Method)
		}
	}
	return out
}

// Each task's needs are checked before the job's first action: a job whose
// later task cannot run ends with that task Failed (its reason), the
// others not run, and nothing sent to the BMC.
func TestPreflightRefusesBeforeTheFirstAction(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   fake.Options
		second task.Spec
		reason string
		says   string
	}{
		{"boot mode", fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityBootMode}},
			task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
			conditions.ReasonNotSupported, "the BMC lacks boot-mode"},
		{"usb media", fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityVirtualMediaUSB}},
			task.Spec{VirtualMedia: &task.VirtualMediaAction{Kind: task.MediaUSB, ImageURL: "http://images.example/x.iso"}},
			conditions.ReasonNotSupported, "virtual media usb"},
		{"unknown BIOS attribute", fake.Options{},
			task.Spec{BIOS: &task.BIOSAction{Attributes: map[string]string{"NoSuchKnob": "1"}}},
			conditions.ReasonInvalidSpec, "NoSuchKnob"},
		{"no BIOS", fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityBIOS}},
			task.Spec{BIOS: &task.BIOSAction{}},
			conditions.ReasonNotSupported, "not supported"},
		{"unknown firmware component", fwOptions(fake.FirmwareOptions{}),
			task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: fwImage, Component: "NIC9", Version: "2.1"}},
			conditions.ReasonBMCError, `no firmware component "NIC9"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Power = bmc.PowerOn
			e := newStepEnv(t, c.opts, job.StepperConfig{})
			j, _ := e.reconcile(t, newJob(powerOff, c.second, powerOn), 20)
			assertCompleted(t, j, conditions.ResultFailed)
			assert.Equal(t, c.reason, j.Status.Reason)
			assert.Contains(t, j.Status.Message, "task 2 (")
			assert.Contains(t, j.Status.Message, c.says)
			assert.Contains(t, j.Status.Message, "the job sent nothing")
			assert.Empty(t, stateChanges(e.bmc), "nothing sent")
			assert.Equal(t, bmc.PowerOn, e.bmc.State().Power)
			assert.Equal(t, c.reason, j.Status.Tasks[1].Reason, "the task that cannot run carries the reason")
			for _, i := range []int{0, 2} {
				assert.Equal(t, conditions.ReasonSkipped, j.Status.Tasks[i].Reason)
				assert.Contains(t, j.Status.Tasks[i].Message, "not run")
			}
		})
	}
}

// A transient error during the check is retried as the first task's; the
// job then runs. Once the first task has acted, no later step checks again.
func TestPreflightTransientErrorRetriedThenRuns(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	e.bmc.FailNext(fake.MethodCheckNeed, 1, bmc.Transient(errors.New("503 Service Unavailable")))
	j, _ := e.reconcile(t, newJob(powerOff, task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}}, powerOn), 50)
	assertCompleted(t, j, conditions.ResultSucceeded)
	// Three needs (off, pxe, on) checked on the first try, which failed at
	// the first; then all three on the retry; never after the first action.
	checks := e.bmc.CallsTo(fake.MethodCheckNeed)
	assert.Len(t, checks, 4)
	first := e.bmc.CallsTo(fake.MethodSetPower)[0].Time
	for _, c := range checks {
		assert.False(t, c.Time.After(first), "a check after the first action")
	}
	assert.Equal(t, 2, j.Status.Tasks[0].Attempts, "the retry counted on the first task")
}

// precheckKind is a custom kind with a Prechecker: it refuses when its
// params say so.
type precheckKind struct{ sent atomic.Int32 }

func (*precheckKind) Validate(json.RawMessage) error { return nil }
func (k *precheckKind) Send(context.Context, *job.KindTask) error {
	k.sent.Add(1)
	return nil
}
func (*precheckKind) Check(context.Context, *job.KindTask) (bool, string, error) {
	return true, "done", nil
}
func (*precheckKind) Precheck(_ context.Context, t *job.KindTask) error {
	if string(t.Params) == `{"raid":"absent"}` {
		return job.Fail("NoRAIDController", "the system has no RAID controller")
	}
	return nil
}

// A custom kind's Precheck takes part: its refusal ends the job before the
// first task acts, naming the custom task and the kind's reason.
func TestPreflightAsksCustomKinds(t *testing.T) {
	k := &precheckKind{}
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{Kinds: job.Kinds{"example.com/raid": k}})
	custom := func(params string) task.Spec {
		return task.Spec{Custom: &task.CustomAction{Kind: "example.com/raid", Params: task.CustomParams(params)}}
	}
	j, _ := e.reconcile(t, newJob(powerOff, custom(`{"raid":"absent"}`)), 20)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, "NoRAIDController", j.Status.Reason)
	assert.Contains(t, j.Status.Message, "task 2 (")
	assert.Empty(t, stateChanges(e.bmc))
	assert.Zero(t, k.sent.Load())

	e = newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{Kinds: job.Kinds{"example.com/raid": k}})
	j, _ = e.reconcile(t, newJob(powerOff, custom(`{"raid":"present"}`)), 20)
	assertCompleted(t, j, conditions.ResultSucceeded)
	require.Equal(t, int32(1), k.sent.Load())
}
