package job_test

// Tests of the read-only kinds (powerStatus, reachable), UEFI HTTP boot and
// the BMC reset against the fake, through the Stepper on a fake clock.

import (
	"context"
	"errors"
	"fmt"
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

var (
	powerStatus = task.Spec{PowerStatus: &task.PowerStatusAction{}}
	reachable   = task.Spec{Reachable: &task.ReachableAction{}}
	httpBoot    = task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://boot.example/ipxe.efi"}}
	warmReset   = task.Spec{BMCReset: &task.BMCResetAction{Type: task.BMCResetWarm}}
)

// methods lists the fake's logged calls by method, in order.
func methods(b *fake.BMC) []fake.Method {
	var out []fake.Method
	for _, c := range b.Calls() {
		out = append(out, c.Method)
	}
	return out
}

// A power status task costs one login and one read, changes nothing, and
// records the state in the task's status; its result and the intent are
// the job's only writes.
func TestStepPowerStatusOneSessionOneRead(t *testing.T) {
	for _, st := range []bmc.PowerState{bmc.PowerOn, bmc.PowerOff} {
		t.Run(string(st), func(t *testing.T) {
			e := newStepEnv(t, fake.Options{Power: st}, job.StepperConfig{})
			j, steps := e.reconcile(t, newJob(powerStatus), 5)
			assertCompleted(t, j, conditions.ResultSucceeded)
			assert.Equal(t, 1, steps)
			assert.Equal(t, string(st), j.Status.Tasks[0].PowerState)
			assert.Equal(t, string(st), j.Status.Tasks[0].Message)
			assert.Equal(t, []fake.Method{fake.MethodDial, fake.MethodPowerState, fake.MethodClose}, methods(e.bmc))
			assert.Equal(t, 3, e.crd.writes, "the submitted job, the intent, the result")
			assert.Equal(t, st, e.bmc.State().Power)
		})
	}
	// A transition in progress is recorded as it is, not waited out.
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff, PowerTransition: time.Minute}, job.StepperConfig{})
	e.bmc.SetPower(bmc.PowerOff)
	drv, err := e.bmc.Dial(context.Background(), bmc.Endpoint{}, bmc.Credentials{})
	require.NoError(t, err)
	require.NoError(t, drv.SetPower(context.Background(), bmc.PowerActionOn))
	require.NoError(t, drv.Close(context.Background()))
	j, _ := e.reconcile(t, newJob(powerStatus), 5)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, string(bmc.PowerPoweringOn), j.Status.Tasks[0].PowerState)
}

// Resumed after a crash between its intent and its result, a power status
// task reads once more and reports the state, not "effect already present".
func TestStepPowerStatusResumed(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j := e.intentStored(t, newJob(powerStatus))
	got, _ := e.reconcile(t, j, 5)
	assertCompleted(t, got, conditions.ResultSucceeded)
	assert.Equal(t, "On", got.Status.Tasks[0].Message)
	assert.Len(t, e.bmc.CallsTo(fake.MethodPowerState), 1)
}

func TestStepReachable(t *testing.T) {
	t.Run("answers", func(t *testing.T) {
		e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, Username: "u", Password: "p"}, job.StepperConfig{Credentials: bmc.StaticCredentials{"lab": {Username: "u", Password: "p"}}})
		jb := newJob(reachable)
		jb.Spec.CredentialsRef = "lab"
		j, _ := e.reconcile(t, jb, 5)
		assertCompleted(t, j, conditions.ResultSucceeded)
		assert.Equal(t, "the BMC answers with these credentials (power On)", j.Status.Tasks[0].Message)
		assert.Equal(t, "On", j.Status.Tasks[0].PowerState)
		assert.Equal(t, []fake.Method{fake.MethodDial, fake.MethodPowerState, fake.MethodClose}, methods(e.bmc))
	})
	t.Run("wrong password", func(t *testing.T) {
		e := newStepEnv(t, fake.Options{Username: "u", Password: "p"}, job.StepperConfig{Credentials: bmc.StaticCredentials{"lab": {Username: "u", Password: "wrong"}}})
		jb := newJob(reachable)
		jb.Spec.CredentialsRef = "lab"
		j, _ := e.reconcile(t, jb, 5)
		assertCompleted(t, j, conditions.ResultFailed)
		assert.Equal(t, conditions.ReasonUnauthorized, j.Status.Reason)
		assert.Contains(t, j.Status.Message, "task 1 (check BMC reachable) failed:")
		assert.Equal(t, 1, e.bmc.Sessions().FailedLogins, "rejected credentials are not retried")
		assert.NotContains(t, j.Status.Message, "wrong")
	})
	t.Run("unreachable", func(t *testing.T) {
		// A BMC that never answers: retried with backoff, then TimedOut
		// after the kind's default of a minute (not DefaultTaskTimeout's 5).
		e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
		e.bmc.FailNext(fake.MethodDial, 1<<30, bmc.Transient(errors.New("connection refused")))
		j, _ := e.reconcile(t, newJob(reachable), 200)
		assertCompleted(t, j, conditions.ResultFailed)
		assert.Equal(t, conditions.ReasonTimedOut, j.Status.Reason)
		assert.Contains(t, j.Status.Message, "timed out after 1m0s; last error:")
		assert.Contains(t, j.Status.Message, "connection refused")
		assert.Equal(t, t0.Add(time.Minute), j.Status.CompletionTime.UTC().Truncate(time.Minute), "failed after about a minute")
	})
}

func TestStepHTTPBoot(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(httpBoot, powerOn), 20)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, "uefi-http (once) from https://boot.example/ipxe.efi", j.Status.Tasks[0].Message, "read back with its URI")
	st := e.bmc.State()
	assert.Equal(t, bmc.BootDeviceUEFIHTTP, st.LastBootDevice, "the server booted over HTTP")
	assert.Equal(t, bmc.BootDeviceNone, st.BootOverride.Device, "the one-time override was consumed")
	set := e.bmc.CallsTo(fake.MethodSetBootOverride)
	require.Len(t, set, 1)
	assert.Equal(t, bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: "https://boot.example/ipxe.efi"}, set[0].Args[0])
}

// A BMC that keeps another URI than the one set did not apply the override:
// it is set again, then the task fails with VerificationFailed.
func TestStepHTTPBootWrongURIReadBack(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	e.bmc.SetHook(fake.MethodBootOverride, func(context.Context, fake.Call) error {
		e.bmc.SetBootOverride(bmc.BootOverride{Device: bmc.BootDeviceUEFIHTTP, URI: "http://stale.example/old.efi"})
		return nil
	})
	j, _ := e.reconcile(t, newJob(httpBoot), 50)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonVerificationFailed, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "from http://stale.example/old.efi")
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetBootOverride), 3, "set, then set again MaxVerifyResends (2) times")
}

func TestStepHTTPBootNotSupported(t *testing.T) {
	e := newStepEnv(t, fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityBootHTTP}}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(httpBoot, powerOn), 5)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "task 1 (boot http (once) from https://boot.example/ipxe.efi) failed:")
	assert.Contains(t, j.Status.Message, "the BMC lacks boot-http: not supported by this BMC")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetBootOverride), "refused by the preflight: nothing sent")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower), "the job stopped there")
	assert.Equal(t, conditions.ReasonSkipped, j.Status.Tasks[1].Reason)

	// Without the preflight, the task finds out by trying, once.
	e = newStepEnv(t, fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityBootHTTP}}, job.StepperConfig{})
	jb := newJob(httpBoot, powerOn)
	jb.Spec.SkipPreflight = true
	j, _ = e.reconcile(t, jb, 5)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "UEFI HTTP boot: not supported by this BMC")
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetBootOverride), 1, "not retried")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodCheckNeed), "SkipPreflight: no check")
}

// A BMC reset: the pooled session is dropped, the BMC is polled through new
// sessions while it restarts, and the task completes when it answers again;
// the server's power is untouched.
func TestStepBMCResetWaitsUntilTheBMCAnswers(t *testing.T) {
	const downtime = 20 * time.Second
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, BMCResetDowntime: downtime}, job.StepperConfig{})
	j, steps := e.reconcile(t, newJob(warmReset, powerStatus), 500)
	assertCompleted(t, j, conditions.ResultSucceeded)
	ts := j.Status.Tasks[0]
	assert.Equal(t, "the BMC answers again after a warm reset (power On)", ts.Message)
	assert.Equal(t, "On", ts.PowerState)
	assert.False(t, ts.CompletionTime.Before(ts.RequestTime.Add(downtime)), "completed %s after the reset, before the BMC answered", ts.CompletionTime.Sub(ts.RequestTime.Time))
	// Dials that fail while it restarts are retried with the Retry backoff
	// (500ms doubling to 15s, +/-20%): the return is seen within a step.
	assert.LessOrEqual(t, ts.CompletionTime.Sub(ts.RequestTime.Add(downtime)), 18*time.Second, "the BMC was seen answering within a retry of coming back")
	assert.Contains(t, methods(e.bmc), fake.MethodDial)
	assert.Greater(t, steps, 5, "polled while the BMC restarted")
	st := e.bmc.State()
	assert.Equal(t, 1, st.BMCResets, "one reset, not re-sent while waiting")
	assert.Equal(t, bmc.PowerOn, st.Power)
	assert.Equal(t, 0, st.Boots, "the server did not reboot")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower))
	s := e.bmc.Sessions()
	assert.Equal(t, 2, s.Logins, "the session the reset was sent on, then one new session after it")
	assert.Equal(t, 0, s.Open)
	assert.Equal(t, "On", j.Status.Tasks[1].PowerState, "the next task used the new session")
}

func TestStepBMCResetInstant(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff}, job.StepperConfig{})
	j, steps := e.reconcile(t, newJob(task.Spec{BMCReset: &task.BMCResetAction{Type: task.BMCResetCold}}), 5)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 1, steps)
	assert.Equal(t, "the BMC answers again after a cold reset (power Off)", j.Status.Tasks[0].Message)
	resets := e.bmc.CallsTo(fake.MethodResetBMC)
	require.Len(t, resets, 1)
	assert.Equal(t, bmc.BMCResetCold, resets[0].Args[0])
	assert.Equal(t, bmc.PowerOff, e.bmc.State().Power)
}

func TestStepBMCResetNotSupported(t *testing.T) {
	e := newStepEnv(t, fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityBMCReset}}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(warmReset), 5)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "task 1 (reset BMC (warm)) failed:")
	assert.Equal(t, 0, e.bmc.State().BMCResets)
	assert.Empty(t, e.bmc.CallsTo(fake.MethodResetBMC), "refused by the preflight")
}

// A BMC that drops the connection as it resets answers the request with a
// transient error: the task waits for it to come back instead of resetting
// it a second time.
func TestStepBMCResetTransientAnswerIsNotResent(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, BMCResetDowntime: 5 * time.Second}, job.StepperConfig{})
	e.bmc.SetHook(fake.MethodResetBMC, func(ctx context.Context, c fake.Call) error {
		// The reset happens, the answer is lost.
		drv, err := e.bmc.Dial(ctx, bmc.Endpoint{}, bmc.Credentials{})
		if err != nil {
			return err
		}
		e.bmc.SetHook(fake.MethodResetBMC, nil)
		if err := drv.(bmc.BMCResetter).ResetBMC(ctx, bmc.BMCResetWarm); err != nil {
			return err
		}
		return bmc.Transient(errors.New("connection reset by peer"))
	})
	j, _ := e.reconcile(t, newJob(warmReset), 200)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 1, e.bmc.State().BMCResets)
	assert.Len(t, e.bmc.CallsTo(fake.MethodResetBMC), 2, "the job's request (answered with the error) and the hook's own")
}

// A BMC reset is not recheckable: after a crash between its intent and its
// result it is sent again (documented: the BMC answers before and after, so
// the state cannot tell whether it happened).
func TestStepBMCResetResumedIsResent(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j := e.intentStored(t, newJob(warmReset))
	got, _ := e.reconcile(t, j, 5)
	assertCompleted(t, got, conditions.ResultSucceeded)
	assert.Equal(t, 1, e.bmc.State().BMCResets)
	assert.Equal(t, 2, got.Status.Tasks[0].Attempts)
}

// The BMC comes back with other credentials (a reset to factory defaults):
// the permanent error fails the task at once.
func TestStepBMCResetUnauthorizedAfterwards(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, BMCResetDowntime: 3 * time.Second}, job.StepperConfig{})
	e.bmc.SetHook(fake.MethodDial, func(ctx context.Context, c fake.Call) error {
		if e.bmc.State().BMCResets > 0 {
			return fmt.Errorf("login refused: %w", bmc.ErrUnauthorized)
		}
		return nil
	})
	j, _ := e.reconcile(t, newJob(warmReset), 200)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonUnauthorized, j.Status.Reason)
}

func TestStepBMCResetTimesOut(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, BMCResetDowntime: time.Hour}, job.StepperConfig{})
	rs := warmReset
	rs.Timeout = task.Duration{Duration: 2 * time.Minute}
	j, _ := e.reconcile(t, newJob(rs), 1000)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonTimedOut, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "timed out after 2m0s")
	assert.Equal(t, 1, e.bmc.State().BMCResets)
}
