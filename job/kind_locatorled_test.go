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

func locatorLED(s task.LEDState) task.Spec {
	return task.Spec{LocatorLED: &task.LocatorLEDAction{State: s}}
}

// On, blinking, off: each set once and read back.
func TestLocatorLEDSetAndReadBack(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(locatorLED(task.LEDOn), locatorLED(task.LEDBlinking)), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, "the locator LED reads On", j.Status.Tasks[0].Message)
	assert.Equal(t, "the locator LED reads Blinking", j.Status.Tasks[1].Message)
	assert.Equal(t, bmc.LEDBlinking, e.bmc.State().LocatorLED)
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetLocatorLED), 2)

	j, _ = e.reconcile(t, newJob(locatorLED(task.LEDOff)), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, bmc.LEDOff, e.bmc.State().LocatorLED)
}

// A BMC that takes the request and leaves the LED as it was: the task does
// not succeed on the BMC's word.
func TestLocatorLEDIgnoredIsNotSuccess(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	e.bmc.SetHook(fake.MethodLocatorLED, func(context.Context, fake.Call) error {
		e.bmc.SetLocatorLED(bmc.LEDOff) // the LED never lights
		return nil
	})
	s := locatorLED(task.LEDOn)
	s.Timeout = task.Duration{Duration: 5 * time.Second}
	j, _ := e.reconcile(t, newJob(s), 100)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonTimedOut, j.Status.Tasks[0].Reason, j.Status.Tasks[0].Message)
	assert.NotEmpty(t, e.bmc.CallsTo(fake.MethodSetLocatorLED))
	assert.Equal(t, bmc.LEDOff, e.bmc.State().LocatorLED)
}

// A BMC that cannot report the LED: the task succeeds on its acceptance
// and says that nothing was read back.
func TestLocatorLEDWithoutReadBack(t *testing.T) {
	e := newStepEnv(t, fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityLocatorLEDReadBack}}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(locatorLED(task.LEDOn)), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Contains(t, j.Status.Tasks[0].Message, "does not report the LED, so it was not read back")
	assert.Equal(t, bmc.LEDOn, e.bmc.State().LocatorLED)
}

// A crash after the set, before its result was stored: the recheck finds
// the LED on and does not set it again.
func TestLocatorLEDCrashAfterTheSet(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	j := e.intentStored(t, newJob(locatorLED(task.LEDOn)))
	stop := errors.New("died")
	_, err := e.stepper.Step(context.Background(), j, func(ctx context.Context, j *job.Job) error {
		if len(e.bmc.CallsTo(fake.MethodSetLocatorLED)) > 0 {
			return stop
		}
		return e.crd.persist(ctx, j)
	})
	require.ErrorIs(t, err, stop)
	stored := e.crd.load(t)
	require.Equal(t, task.PhaseStarted, stored.Status.Tasks[0].Phase)
	j, _ = e.reconcile(t, stored, 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, "effect already present", j.Status.Tasks[0].Message)
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetLocatorLED), 1, "not set again")
}

// Blinking on a BMC that cannot blink, or a BMC without a locator: the
// preflight refuses the job before its power change.
func TestLocatorLEDPreflightNotSupported(t *testing.T) {
	for name, c := range map[string]struct {
		lacks bmc.Capability
		state task.LEDState
	}{
		"no blink":   {bmc.CapabilityLocatorLEDBlink, task.LEDBlinking},
		"no locator": {bmc.CapabilityLocatorLED, task.LEDOn},
	} {
		t.Run(name, func(t *testing.T) {
			e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, Unsupported: []bmc.Capability{c.lacks}}, job.StepperConfig{})
			j, _ := e.reconcile(t, newJob(powerOff, locatorLED(c.state)), 10)
			assertCompleted(t, j, conditions.ResultFailed)
			assert.Equal(t, conditions.ReasonNotSupported, j.Status.Tasks[1].Reason)
			assert.Contains(t, j.Status.Tasks[1].Message, string(c.lacks))
			assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower))
			assert.Empty(t, e.bmc.CallsTo(fake.MethodSetLocatorLED))
		})
	}
}
