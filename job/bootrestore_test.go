package job_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// The restore paths on the fake BMC (the Redfish tests cover them over HTTP
// against a BMC that stores Once as Continuous).

func emulatedPXE() task.Spec {
	on := true
	return task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, EmulateOnce: &on}}
}

var diskPersistent = bmc.BootOverride{Device: bmc.BootDeviceDisk, Persistent: true}

// A job canceled while its power on lands puts back the override the boot
// task found, and records it in that task's status.
func TestStepCanceledJobRestoresBootOverride(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff, PowerTransition: time.Minute}, job.StepperConfig{})
	e.bmc.SetBootOverride(diskPersistent)
	j := newJob(pxeOnce, powerOn)
	require.NoError(t, e.crd.persist(t.Context(), j))
	for range 5 { // until the power on is waiting
		cur := e.crd.load(t)
		if cur.Status.CurrentTask == 1 && cur.Status.Tasks[1].Phase == task.PhaseRequested {
			break
		}
		res, err := e.stepper.Step(t.Context(), cur, e.crd.persist)
		require.NoError(t, err)
		e.clk.Advance(res.RequeueAfter)
	}
	assert.Equal(t, bmc.BootDevicePXE, e.bmc.State().BootOverride.Device, "the one-time override is set")
	cur := e.crd.load(t)
	cur.CancelRequested = true
	res, err := e.stepper.Step(t.Context(), cur, e.crd.persist)
	require.NoError(t, err)
	require.True(t, res.Done)
	got := e.crd.load(t)
	assertCompleted(t, got, conditions.ResultCanceled)
	br := got.Status.Tasks[0].BootRestore
	require.NotNil(t, br)
	assert.Equal(t, task.BootRestoreRestored, br.State, br.Message)
	assert.Equal(t, task.BootOverride{Device: "disk", Persistent: true}, br.Previous)
	assert.Equal(t, diskPersistent, e.bmc.State().BootOverride, "the override found is back")
}

// Emulation needs the override read back: on a BMC that cannot report it
// the task fails at once with NotSupported, having changed nothing.
func TestStepEmulationNeedsReadBack(t *testing.T) {
	e := newStepEnv(t, fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityBootOverrideReadBack}}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(emulatedPXE(), powerOn), 10)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "emulating a one-time boot")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetBootOverride))
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower))
}

// Without a read-back and without emulation, nothing is recorded (nothing
// could be restored), and the job runs as before.
func TestStepNoReadBackNoRecord(t *testing.T) {
	e := newStepEnv(t, fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityBootOverrideReadBack}}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(pxeOnce, powerOn), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Nil(t, j.Status.Tasks[0].BootRestore)
}

// Emulated on a BMC that honours Once: the persistent override is set,
// used by the boot, and the override found is put back after the power on;
// the record is stored before the override is changed.
func TestStepEmulatedOnceRestoredAfterPowerOn(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff}, job.StepperConfig{})
	e.bmc.SetBootOverride(diskPersistent)
	var recordedBeforeSet bool
	e.bmc.SetHook(fake.MethodSetBootOverride, func(_ context.Context, c fake.Call) error {
		if o := c.Args[0].(bmc.BootOverride); o.Device == bmc.BootDevicePXE {
			stored := e.crd.load(t).Status.Tasks[0].BootRestore
			recordedBeforeSet = stored != nil && stored.State == task.BootRestorePending && stored.Previous.Device == "disk"
			assert.True(t, o.Persistent, "an emulated one-time override is set persistent")
		}
		return nil
	})
	j, _ := e.reconcile(t, newJob(emulatedPXE(), powerOn), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.True(t, recordedBeforeSet, "the override found was stored before the change")
	br := j.Status.Tasks[0].BootRestore
	require.NotNil(t, br)
	assert.True(t, br.Emulated)
	assert.Equal(t, task.BootRestoreRestored, br.State, br.Message)
	assert.Equal(t, bmc.BootDevicePXE, e.bmc.State().LastBootDevice, "the server booted from PXE")
	assert.Equal(t, diskPersistent, e.bmc.State().BootOverride, "the override found is back")
}

// After a task that used the BMC, a boot-device task's override to restore is
// read before its intent is stored and goes out in the same write as the
// previous task's result (one job write less): it is stored before the
// override changes, and the BMC is asked for it once.
func TestStepBootRestoreGoesOutWithIntent(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	e.bmc.SetBootOverride(diskPersistent)
	var atSet *task.BootRestore
	var startedAtSet bool
	e.bmc.SetHook(fake.MethodSetBootOverride, func(context.Context, fake.Call) error {
		cur := e.crd.load(t)
		atSet, startedAtSet = cur.Status.Tasks[1].BootRestore, cur.Status.Tasks[1].Phase == task.PhaseStarted
		return nil
	})
	j, _ := e.reconcile(t, newJob(powerOff, pxeOnce, powerOn), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	require.NotNil(t, atSet, "the override to restore is stored before the change")
	assert.True(t, startedAtSet)
	assert.Equal(t, task.BootOverride{Device: "disk", Persistent: true}, atSet.Previous)
	assert.Len(t, e.bmc.CallsTo(fake.MethodBootOverride), 2, "the override to restore, then the read-back")
	// The host's create, then: task 0's intent; task 0's result with task
	// 1's intent and the override to restore; task 1's result with task 2's
	// intent; the job's result. Storing the override on its own made 6.
	assert.Equal(t, 5, e.crd.writes)
}

// A read of the override to restore that fails before the intent is stored
// is handled as the action's own read failing: the task retries, reads it
// again, and still stores it before the change.
func TestStepBootRestoreReadFailsBeforeIntent(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	e.bmc.SetBootOverride(diskPersistent)
	e.bmc.FailNext(fake.MethodBootOverride, 1, bmc.Transient(errors.New("BMC busy")))
	var atSet *task.BootRestore
	e.bmc.SetHook(fake.MethodSetBootOverride, func(context.Context, fake.Call) error {
		atSet = e.crd.load(t).Status.Tasks[1].BootRestore
		return nil
	})
	j, _ := e.reconcile(t, newJob(powerOff, pxeOnce, powerOn), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	require.NotNil(t, atSet, "the override to restore is stored before the change")
	assert.Equal(t, task.BootOverride{Device: "disk", Persistent: true}, atSet.Previous)
	assert.Equal(t, 2, j.Status.Tasks[1].Attempts, "the failed read counted as the first attempt")
	// The failed read; the retry looks first (the check), reads the
	// override to restore and sets it; the read-back. As when the action's
	// own read failed.
	assert.Len(t, e.bmc.CallsTo(fake.MethodBootOverride), 4)
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetBootOverride), 1)
}

// Emulation after a power task, on a BMC that cannot report its override:
// the task fails NotSupported having asked once and changed nothing.
func TestStepEmulationNeedsReadBackAfterPowerTask(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, Unsupported: []bmc.Capability{bmc.CapabilityBootOverrideReadBack}}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(powerOff, emulatedPXE(), powerOn), 10)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Reason)
	assert.LessOrEqual(t, len(e.bmc.CallsTo(fake.MethodBootOverride)), 1, "asked at most once")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetBootOverride))
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetPower), 1, "the power off only")
}
