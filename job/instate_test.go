package job_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// readMethods are the fake's calls that change nothing on the server.
var readMethods = map[fake.Method]bool{
	fake.MethodDial: true, fake.MethodClose: true, fake.MethodOpenSystem: true,
	fake.MethodPowerState: true, fake.MethodBootOverride: true, fake.MethodMediaStatus: true,
	fake.MethodLastResetTime: true, fake.MethodFindFirmwareUpdate: true, fake.MethodFirmwareUpdateStatus: true,
	fake.MethodFirmwareVersion: true, fake.MethodInventory: true, fake.MethodBIOSSettings: true,
	fake.MethodBIOSRegistry: true, fake.MethodCheckNeed: true, fake.MethodHealth: true,
	fake.MethodSystemStatus: true, fake.MethodLogServices: true, fake.MethodLogEntries: true,
	fake.MethodLocatorLED: true, fake.MethodSecureBoot: true, fake.MethodBootOrder: true,
}

// notReads is every call in b's log that is not a read: an allowlist,
// so a method added to the fake counts as a change until listed here.
func notReads(b *fake.BMC) []fake.Call {
	var out []fake.Call
	for _, c := range b.Calls() {
		if !readMethods[c.Method] {
			out = append(out, c)
		}
	}
	return out
}

// refuseAll is a lease that has lapsed: a request under it is not sent.
type refuseAll struct{}

func (refuseAll) Admit() error { return bmc.ErrFenced }

// A component at the task's version is in state; the check reads the
// version and sends nothing, outside any job's lease: a lapsed fence and
// another job's Call in the caller's ctx are dropped, and the requests
// carry neither.
func TestInStateFirmwareAtVersionSendsNothing(t *testing.T) {
	e := newStepEnv(t, fwOptions(fake.FirmwareOptions{Components: map[string]string{"BIOS": "2.1"}}), job.StepperConfig{})
	var fenced, attributed int
	e.bmc.SetHook(fake.MethodAny, func(ctx context.Context, _ fake.Call) error {
		if bmc.FenceFrom(ctx) != nil {
			fenced++
		}
		if _, ok := job.CallFromContext(ctx); ok {
			attributed++
		}
		return nil
	})
	ctx := bmc.WithFence(job.WithCall(t.Context(), job.Call{Job: "other", Task: 3}), refuseAll{})
	ok, why, err := e.stepper.InState(ctx, newJob(fwTask("")).Spec)
	require.NoError(t, err)
	assert.True(t, ok, why)
	assert.Equal(t, "every task's effect is present", why)
	assert.Empty(t, notReads(e.bmc), "no state-changing request")
	assert.NotEmpty(t, e.bmc.CallsTo(fake.MethodFirmwareVersion), "the version was read")
	assert.Zero(t, fenced, "no lease fences the reads")
	assert.Zero(t, attributed, "the reads are no job's")
	assert.Equal(t, 1, e.stepper.Pool().Len(), "the connection is the pool's, shared with the system's jobs")
}

func TestInStatePowerOnOnAnOffServerIsNot(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff}, job.StepperConfig{})
	ok, why, err := e.stepper.InState(t.Context(), newJob(powerOn).Spec)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, why, "task 1 (power on): ")
	assert.Contains(t, why, "Off")
	assert.Empty(t, notReads(e.bmc))
	assert.NotEmpty(t, e.bmc.CallsTo(fake.MethodPowerState))
}

// A power cycle ends where it started: it cannot be read back, so the job
// is never in state, and the BMC is not asked.
func TestInStateJobWithAPowerCycleIsNot(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	cycle := task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}}
	ok, why, err := e.stepper.InState(t.Context(), newJob(powerOn, cycle).Spec)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, "task 2 (power cycle) cannot be read back", why)
	assert.Empty(t, e.bmc.Calls(), "nothing asked of the BMC")
}

// A custom kind's Check decides; its Send is never called.
func TestInStateCustomKindCheckDone(t *testing.T) {
	b := &tagBMC{tag: "rack-7"}
	e := newStepEnvDialing(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{Kinds: assetTag}, tags(b))
	ok, why, err := e.stepper.InState(t.Context(), tagSpec(`{"tag": "rack-7"}`))
	require.NoError(t, err)
	assert.True(t, ok, why)
	ok, why, err = e.stepper.InState(t.Context(), tagSpec(`{"tag": "rack-8"}`))
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, "task 1 (custom example.com/asset-tag): asset tag rack-7", why)
	assert.Zero(t, b.setsSoFar(), "nothing set")
	assert.Empty(t, notReads(e.bmc))
}

func TestInStateInvalidSpec(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	badPath := fwTask("")
	badPath.FirmwareUpdate.SatisfiedBy = []string{"2.2", ""}
	for spec, want := range map[*job.Spec]string{
		{BMC: "redfish://10.1.0.1/redfish/v1/Systems/1"}: "tasks: at least one task",
		{BMC: "gopher://x", Tasks: []task.Spec{powerOn}}: "bmc: ",
		ptr(tagSpec(`{"tag": "x"}`)):                     "is not a kind this program registered",
		&newJob(badPath).Spec:                            "tasks[0].firmwareUpdate.satisfiedBy[1]: empty",
	} {
		_, _, err := e.stepper.InState(t.Context(), *spec)
		assert.ErrorIs(t, err, job.ErrInvalidSpec)
		assert.ErrorContains(t, err, want)
	}
	assert.Empty(t, e.bmc.Calls())
}

func ptr[T any](v T) *T { return &v }

// A BMC that answers errors gives an error ("not known to be in state"),
// as does a failed login.
func TestInStateBMCErrorIsAnError(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	e.bmc.FailNext(fake.MethodPowerState, 1, bmc.Transient(errors.New("503 Service Unavailable")))
	ok, _, err := e.stepper.InState(t.Context(), newJob(powerOn).Spec)
	require.Error(t, err)
	assert.False(t, ok)
	assert.True(t, bmc.IsTransient(err), "%v", err)
	assert.Contains(t, err.Error(), "task 1 (power on)")

	assert.Empty(t, notReads(e.bmc))

	e2 := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	e2.bmc.FailNext(fake.MethodDial, 1, bmc.Transient(errors.New("connection refused")))
	_, _, err = e2.stepper.InState(t.Context(), newJob(powerOn).Spec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connecting to")
}

// The Runner's InState needs no Start: its Stepper's pool and credentials.
func TestRunnerInState(t *testing.T) {
	b := fake.New(fake.Options{Power: bmc.PowerOn})
	r, err := job.NewRunner(job.Config{Store: memstore.New(), StepperConfig: job.StepperConfig{Dialer: b}})
	require.NoError(t, err)
	ok, why, err := r.InState(t.Context(), newJob(powerOn).Spec)
	require.NoError(t, err)
	assert.True(t, ok, why)
	assert.Equal(t, 1, r.Pool().Len())
	assert.Empty(t, notReads(b))
}
