package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/task"
)

const fwImage = "https://images.example/bios-2.1.bin?X-Amz-Signature=s3cr3t"

func fwOptions(fo fake.FirmwareOptions) fake.Options {
	if fo.Images == nil {
		fo.Images = map[string]fake.FirmwareImageInfo{fwImage: {Component: "BIOS", Version: "2.1"}}
	}
	return fake.Options{Power: bmc.PowerOn, Firmware: fo}
}

func fwTask(reset task.FirmwareReset) task.Spec {
	return task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: fwImage, Component: "BIOS", Version: "2.1", Reset: reset}}
}

func TestFirmwareUpdateFollowsTheTaskAndVerifiesTheVersion(t *testing.T) {
	e := newStepEnv(t, fwOptions(fake.FirmwareOptions{Duration: 10 * time.Minute}), job.StepperConfig{})
	j, steps := e.reconcile(t, newJob(fwTask("")), 1000)
	assertCompleted(t, j, conditions.ResultSucceeded)
	ts := j.Status.Tasks[0]
	require.NotNil(t, ts.Firmware)
	assert.NotEmpty(t, ts.Firmware.TaskURI+ts.Firmware.TaskID, "the BMC task is stored")
	assert.Equal(t, "Completed", ts.Firmware.State)
	assert.Equal(t, "2.1", ts.Firmware.Version)
	assert.Nil(t, ts.Firmware.ResetTime, "no reset asked for")
	assert.Contains(t, ts.Message, "BIOS at version 2.1")
	assert.Len(t, e.bmc.FirmwareTasks(), 1, "one update")
	assert.Equal(t, "2.1", e.bmc.FirmwareVersion("BIOS"))
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower), "no reset")
	// 10 minutes of update polled at most every 5 s (plus the first steps).
	assert.LessOrEqual(t, steps, 10*60/5+5)
	status, err := json.Marshal(j.Status)
	require.NoError(t, err)
	assert.NotContains(t, string(status), "s3cr3t", "the spec holds the image URI; the status never repeats it")
}

func TestFirmwareUpdateResetsWhatTheBMCAsksFor(t *testing.T) {
	for _, c := range []struct {
		component   string
		resetMethod fake.Method
	}{{"BIOS", fake.MethodSetPower}, {"BMC", fake.MethodResetBMC}} {
		t.Run(c.component, func(t *testing.T) {
			fo := fake.FirmwareOptions{Duration: time.Minute, ActivateOnReset: true,
				Images: map[string]fake.FirmwareImageInfo{fwImage: {Component: c.component, Version: "2.1"}}}
			e := newStepEnv(t, fwOptions(fo), job.StepperConfig{})
			spec := fwTask("")
			spec.FirmwareUpdate.Component = c.component
			j, _ := e.reconcile(t, newJob(spec), 1000)
			assertCompleted(t, j, conditions.ResultSucceeded)
			fs := j.Status.Tasks[0].Firmware
			require.NotNil(t, fs.ResetTime, "the reset is stored")
			assert.Len(t, e.bmc.CallsTo(c.resetMethod), 1, "one reset")
			assert.Equal(t, "2.1", e.bmc.FirmwareVersion(c.component))
			assert.Len(t, e.bmc.FirmwareTasks(), 1)
		})
	}
}

func TestFirmwareUpdateWithResetNoneFailsNamingTheReset(t *testing.T) {
	e := newStepEnv(t, fwOptions(fake.FirmwareOptions{ActivateOnReset: true}), job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(fwTask(task.FirmwareResetNone)), 100)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonResetRequired, j.Status.Tasks[0].Reason)
	assert.Contains(t, j.Status.Tasks[0].Message, "reset of the system")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower))
	assert.Equal(t, "1.0.0", e.bmc.FirmwareVersion("BIOS"), "staged, not active")
}

func TestFirmwareUpdateAlreadyAtTheVersionSendsNothing(t *testing.T) {
	fo := fake.FirmwareOptions{Components: map[string]string{"BIOS": "2.1"}}
	e := newStepEnv(t, fwOptions(fo), job.StepperConfig{})
	j := e.intentStored(t, newJob(fwTask(""))) // resumed: re-checked first
	got, _ := e.reconcile(t, j, 10)
	assertCompleted(t, got, conditions.ResultSucceeded)
	assert.Empty(t, e.bmc.FirmwareTasks(), "no update started")
	assert.Contains(t, got.Status.Tasks[0].Message, "effect already present")
}

// A fresh task (not a resume) reads the version before it starts anything:
// a component already at it gets no update (issue 34: re-flashed at the
// current version on Gigabyte, DL325, EX235a and the DMTF mockup).
func TestFirmwareUpdateFreshAtTheVersionSendsNothing(t *testing.T) {
	fo := fake.FirmwareOptions{Components: map[string]string{"BIOS": "2.1"}}
	e := newStepEnv(t, fwOptions(fo), job.StepperConfig{})
	got, _ := e.reconcile(t, newJob(fwTask("")), 10)
	assertCompleted(t, got, conditions.ResultSucceeded)
	assert.Empty(t, e.bmc.CallsTo(fake.MethodStartFirmwareUpdate), "no update sent")
	assert.Equal(t, "2.1", got.Status.Tasks[0].Firmware.Version)
	assert.False(t, got.Status.Tasks[0].Firmware.StartSent)
}

// A start whose answer was lost after the BMC took it, on a BMC that lists
// no update tasks (iLO style): nothing can show whether it started, so it
// is not sent again; the task fails FirmwareStartUnknown, and the BMC saw
// one start.
func TestFirmwareLostStartNotSentAgainWhereTheBMCListsNoTasks(t *testing.T) {
	e := newStepEnv(t, fwOptions(fake.FirmwareOptions{NoTasks: true, Duration: 10 * time.Minute}), job.StepperConfig{})
	took := false
	e.bmc.SetHook(fake.MethodStartFirmwareUpdate, func(ctx context.Context, _ fake.Call) error {
		if took {
			return nil
		}
		took = true // the BMC starts the update; its answer is lost
		drv, err := e.bmc.Dial(ctx, bmc.Endpoint{}, bmc.Credentials{})
		if err != nil {
			return err
		}
		if _, err := drv.(bmc.FirmwareUpdater).StartFirmwareUpdate(ctx, bmc.FirmwareImage{URI: fwImage, Component: "BIOS"}); err != nil {
			return err
		}
		return bmc.Transient(errors.New("503 Service Unavailable"))
	})
	j, _ := e.reconcile(t, newJob(fwTask("")), 1000)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonFirmwareStartUnknown, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "not sent again")
	assert.Len(t, e.bmc.FirmwareTasks(), 1, "one update on the BMC")
	assert.Len(t, e.bmc.CallsTo(fake.MethodStartFirmwareUpdate), 2, "the lost start, and the hook's own (the BMC taking it); none from a retry")
}

// The same lost start on a BMC that lists every update as a task, when the
// BMC did not take it: the task finds no update, and starts it again, once.
func TestFirmwareLostStartSentAgainWhereTheBMCShowsItAbsent(t *testing.T) {
	e := newStepEnv(t, fwOptions(fake.FirmwareOptions{}), job.StepperConfig{})
	e.bmc.FailNext(fake.MethodStartFirmwareUpdate, 1, bmc.Transient(errors.New("503 Service Unavailable")))
	j, _ := e.reconcile(t, newJob(fwTask("")), 1000)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Len(t, e.bmc.FirmwareTasks(), 1, "one update on the BMC")
	assert.Len(t, e.bmc.CallsTo(fake.MethodFindFirmwareUpdate), 1, "looked before starting again")
}

func TestFirmwareUpdateFailedTaskFailsTheJob(t *testing.T) {
	e := newStepEnv(t, fwOptions(fake.FirmwareOptions{Fail: true}), job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(fwTask("")), 100)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonBMCError, j.Status.Tasks[0].Reason)
	assert.Contains(t, j.Status.Tasks[0].Message, "firmware update task failed")
	assert.Len(t, e.bmc.FirmwareTasks(), 1, "not started again")
}

// A crash after the BMC accepted the update and before its task was stored:
// the resumed job finds the update among the BMC's tasks and follows it; the
// BMC never sees a second update.
func TestFirmwareUpdateResumedFindsTheUpdateItStarted(t *testing.T) {
	e := newStepEnv(t, fwOptions(fake.FirmwareOptions{Duration: 10 * time.Minute}), job.StepperConfig{})
	require.NoError(t, e.crd.persist(context.Background(), newJob(fwTask(""))))
	died := errors.New("died")
	writes := 0
	_, err := e.stepper.Step(context.Background(), e.crd.load(t), func(ctx context.Context, j *job.Job) error {
		writes++
		if writes > 2 { // the intent and StartSent are stored; the write after the request is lost
			return died
		}
		return e.crd.persist(ctx, j)
	})
	require.ErrorIs(t, err, died)
	require.Len(t, e.bmc.FirmwareTasks(), 1, "the BMC took the update")
	stored := e.crd.load(t)
	require.Equal(t, task.PhaseStarted, stored.Status.Tasks[0].Phase)
	require.True(t, stored.Status.Tasks[0].Firmware.StartSent && stored.Status.Tasks[0].Firmware.TaskURI == "", "StartSent stored before the request, its task not stored")

	j, _ := e.reconcile(t, stored, 1000)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Len(t, e.bmc.FirmwareTasks(), 1, "no second update")
	assert.Equal(t, "2.1", j.Status.Tasks[0].Firmware.Version)
}

// A resumed attempt reads the version (not there yet), then finds no update
// for its image: the earlier attempt's update ended in between (a finished
// multipart push matches no image; here another image with the same
// version, finished meanwhile, stands for it). The task reads the version
// again before it would start: no second update.
func TestFirmwareUpdateResumedSeesTheVersionBeforeStartingAgain(t *testing.T) {
	const other = "https://images.example/bios-2.1-pushed.bin"
	e := newStepEnv(t, fwOptions(fake.FirmwareOptions{Images: map[string]fake.FirmwareImageInfo{
		fwImage: {Component: "BIOS", Version: "2.1"}, other: {Component: "BIOS", Version: "2.1"},
	}}), job.StepperConfig{})
	// The first attempt's request fails transiently: it may have landed.
	e.bmc.FailNext(fake.MethodStartFirmwareUpdate, 1, bmc.Transient(errors.New("connection reset")))
	landed := false
	e.bmc.SetHook(fake.MethodFindFirmwareUpdate, func(ctx context.Context, _ fake.Call) error {
		if !landed { // the update lands and ends while the task looks for it
			landed = true
			drv, err := e.bmc.Dial(ctx, bmc.Endpoint{}, bmc.Credentials{})
			if err != nil {
				return err
			}
			if _, err := drv.(bmc.FirmwareUpdater).StartFirmwareUpdate(ctx, bmc.FirmwareImage{URI: other, Component: "BIOS"}); err != nil {
				return err
			}
		}
		return nil
	})
	j, _ := e.reconcile(t, newJob(fwTask("")), 1000)
	assertCompleted(t, j, conditions.ResultSucceeded)
	require.True(t, landed, "the resumed attempt looked for the update")
	assert.Len(t, e.bmc.FirmwareTasks(), 1, "no second update")
	assert.Equal(t, "2.1", j.Status.Tasks[0].Firmware.Version)
}

func TestFirmwareUpdateSpecErrorsNameTheField(t *testing.T) {
	for _, c := range []struct {
		a     task.FirmwareUpdateAction
		field string
	}{
		{task.FirmwareUpdateAction{Component: "BIOS", Version: "2"}, "firmwareUpdate.imageURI: required"},
		{task.FirmwareUpdateAction{ImageURI: "ftp://x/y", Component: "BIOS", Version: "2"}, "firmwareUpdate.imageURI: not an absolute http"},
		{task.FirmwareUpdateAction{ImageURI: "https://u:pw@x/y", Component: "BIOS", Version: "2"}, "firmwareUpdate.imageURI: user info"},
		{task.FirmwareUpdateAction{ImageURI: fwImage, Version: "2"}, "firmwareUpdate.component: required"},
		{task.FirmwareUpdateAction{ImageURI: fwImage, Component: "BIOS"}, "firmwareUpdate.version: required"},
		{task.FirmwareUpdateAction{ImageURI: fwImage, Component: "BIOS", Version: "2", Reset: "later"}, "firmwareUpdate.reset: \"later\" is not one of auto, none"},
		{task.FirmwareUpdateAction{ImageURI: fwImage, Component: "BIOS", Version: "2", SatisfiedBy: []string{"3", "2"}}, "firmwareUpdate.satisfiedBy[1]: \"2\" is the task's version"},
	} {
		s := task.Spec{FirmwareUpdate: &c.a}
		err := s.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.field)
		assert.NotContains(t, err.Error(), "pw@")
		assert.NotContains(t, err.Error(), "s3cr3t")
	}
}

// The fake without firmware support (a BMC lacking it) fails the task
// NotSupported.
func TestFirmwareUpdateUnsupportedFails(t *testing.T) {
	opts := fwOptions(fake.FirmwareOptions{})
	opts.Unsupported = []bmc.Capability{bmc.CapabilityFirmwareUpdate}
	e := newStepEnv(t, opts, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(fwTask("")), 20)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Tasks[0].Reason)
}

// The same task through a Runner (real clock): a staged BIOS update, the
// system reset it asks for, the version verified.
func TestFirmwareUpdateOnTheRunner(t *testing.T) {
	fo := fake.FirmwareOptions{ActivateOnReset: true}
	b := fake.New(fwOptions(fo))
	j := jobtest.Run(t, job.Config{StepperConfig: job.StepperConfig{Dialer: b, SlowPollInterval: 10 * time.Millisecond}},
		bmc.Credentials{Username: "u", Password: "p"},
		job.Spec{BMC: "redfish://10.9.0.1", CredentialsRef: "lab", Tasks: []task.Spec{fwTask("")}}, time.Minute)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, "2.1", b.FirmwareVersion("BIOS"))
	assert.Len(t, b.FirmwareTasks(), 1)
	assert.NotNil(t, j.Status.Tasks[0].Firmware.ResetTime)
}

// A firmware path A -> B -> C (task.FirmwarePath) on servers at an older
// version, at B and at C: each runs only the updates it lacks, in order,
// and succeeds; the server at C is in state and sends nothing.
func TestFirmwarePathRunsOnlyTheMissingSteps(t *testing.T) {
	const uri = "https://images.example/bmc-"
	steps := []task.FirmwareStep{{Version: "A", ImageURI: uri + "a.bin"}, {Version: "B", ImageURI: uri + "b.bin"}, {Version: "C", ImageURI: uri + "c.bin"}}
	images := map[string]fake.FirmwareImageInfo{}
	for _, s := range steps {
		images[s.ImageURI] = fake.FirmwareImageInfo{Component: "BMC", Version: s.Version}
	}
	specs, err := task.FirmwarePath("BMC", steps...)
	require.NoError(t, err)
	for _, c := range []struct {
		at      string
		updates []string // the images started, in order
	}{
		{"0.9", []string{uri + "a.bin", uri + "b.bin", uri + "c.bin"}},
		{"B", []string{uri + "c.bin"}},
		{"C", nil},
	} {
		t.Run("at "+c.at, func(t *testing.T) {
			e := newStepEnv(t, fwOptions(fake.FirmwareOptions{Components: map[string]string{"BMC": c.at}, Images: images}), job.StepperConfig{})
			inState, why, err := e.stepper.InState(t.Context(), newJob(specs...).Spec)
			require.NoError(t, err)
			assert.Equal(t, c.at == "C", inState, why)
			e.bmc.ResetCalls()

			j, _ := e.reconcile(t, newJob(specs...), 100)
			assertCompleted(t, j, conditions.ResultSucceeded)
			var started []string
			for _, call := range e.bmc.CallsTo(fake.MethodStartFirmwareUpdate) {
				started = append(started, call.Args[0].(string))
			}
			assert.Equal(t, c.updates, started)
			assert.Equal(t, "C", e.bmc.FirmwareVersion("BMC"))
			if c.at == "B" {
				assert.Contains(t, j.Status.Tasks[0].Message, "BMC at version B, which satisfies the task")
				assert.Equal(t, "BMC at version B", j.Status.Tasks[1].Message)
			}
		})
	}
}
