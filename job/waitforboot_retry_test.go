package job_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

const retryUUID = "4c4c4544-0042-4a10-8031-b2c04f4e4a31"

// The tracker satisfies the optional interfaces the wait-for-boot kind
// looks for.
var (
	_ job.BootPolicyStarter   = (*bootstate.Tracker)(nil)
	_ job.BootOutcomeReporter = (*bootstate.Tracker)(nil)
)

// retryWait: iPXE within 5 minutes of each attempt's start, 2 retries,
// 30 s backoff.
func retryWait(retries int) task.Spec {
	return task.Spec{WaitForBoot: &task.WaitForBootAction{WaitForBootPolicy: task.WaitForBootPolicy{
		Deadlines:    []task.SignalDeadline{{Signal: bootstate.SignalIPXEScriptFetched, Within: task.Duration{Duration: 5 * time.Minute}}},
		Retries:      retries,
		RetryBackoff: task.Duration{Duration: 30 * time.Second},
	}}, Timeout: task.Duration{Duration: 30 * time.Minute}}
}

func newRetryEnv(t *testing.T) (*stepEnv, *bootstate.Tracker) {
	t.Helper()
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff}, job.StepperConfig{})
	tr, err := bootstate.NewTracker(bootstate.Config{Store: memstore.New(), Clock: e.clk, InsecureSkipAuth: true})
	require.NoError(t, err)
	e.stepper, err = job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: e.bmc, Clock: e.clk, Boot: tr, BootPollInterval: 20 * time.Second})
	require.NoError(t, err)
	return e, tr
}

// The first try times out at the iPXE stage; the retry sets the PXE override
// again, power cycles, opens a new attempt, and succeeds on its signals.
func TestWaitForBootRetrySucceedsOnSecondTry(t *testing.T) {
	e, tr := newRetryEnv(t)
	ctx := context.Background()
	j := newJob(pxeOnce, powerOn, retryWait(2))
	j.Spec.SystemUUID = retryUUID
	require.NoError(t, e.crd.persist(ctx, j))
	signaled := false
	var res job.StepResult
	for n := 0; n < 200 && !res.Done; n++ {
		cur := e.crd.load(t)
		if ts := cur.Status.Tasks; len(ts) == 3 && len(ts[2].BootTries) == 2 && ts[2].BootTries[1].Step == task.BootTryWaiting && !signaled {
			// The server boots on the second try: it fetches iPXE and
			// posts /bootstate for the attempt the tracker now holds.
			rec, err := tr.Get(ctx, retryUUID)
			require.NoError(t, err)
			require.Equal(t, job.BootTryAttemptID(cur, 2, 2), rec.AttemptID, "the retry opened its own attempt")
			_, err = tr.RecordSignal(ctx, retryUUID, rec.AttemptID, bootstate.SignalIPXEScriptFetched, "")
			require.NoError(t, err)
			_, err = tr.RecordSignal(ctx, retryUUID, rec.AttemptID, bootstate.SignalBootStateReceived, "")
			require.NoError(t, err)
			signaled = true
		}
		var err error
		res, err = e.stepper.Step(ctx, cur, e.crd.persist)
		require.NoError(t, err)
		e.clk.Advance(res.RequeueAfter)
	}
	got := e.crd.load(t)
	assertCompleted(t, got, conditions.ResultSucceeded)
	tries := got.Status.Tasks[2].BootTries
	require.Len(t, tries, 2)
	assert.Equal(t, conditions.ResultTimedOut, tries[0].Result)
	assert.Equal(t, bootstate.ReasonIPXETimeout, tries[0].Stage)
	assert.Contains(t, tries[0].Message, "timed out at stage IPXEScriptFetched")
	assert.Equal(t, job.BootAttemptID(got, 2), tries[0].AttemptID)
	assert.Equal(t, conditions.ResultSucceeded, tries[1].Result)
	assert.Equal(t, bootstate.ReasonBooted, tries[1].Stage)
	require.NotNil(t, tries[1].OverrideTime)
	require.NotNil(t, tries[1].PowerCycleTime)
	require.NotNil(t, tries[1].StartTime)
	assert.False(t, tries[1].StartTime.Before(tries[0].EndTime.Add(30*time.Second)), "backoff respected")
	assert.Contains(t, got.Status.Tasks[2].Message, "booted on try 2 of 3")

	overrides := e.bmc.CallsTo(fake.MethodSetBootOverride)
	require.Len(t, overrides, 2, "the override was set again for the retry")
	assert.Equal(t, overrides[0].Args, overrides[1].Args)
	var powers []any
	for _, c := range e.bmc.CallsTo(fake.MethodSetPower) {
		powers = append(powers, c.Args...)
	}
	assert.Equal(t, []any{bmc.PowerActionOn, bmc.PowerActionCycle}, powers, "power on, then the retry's cycle")
	assert.Equal(t, 2, e.bmc.State().Boots)

	rec, err := tr.Get(ctx, retryUUID)
	require.NoError(t, err)
	require.NotEmpty(t, rec.Previous)
	assert.Equal(t, conditions.ResultTimedOut, rec.Previous[0].Result)
}

// When every try times out, the task fails with the last stage's reason and
// a message listing the tries; the backstop timer does not fire first.
func TestWaitForBootRetriesExhausted(t *testing.T) {
	e, _ := newRetryEnv(t)
	j := newJob(powerOn, retryWait(1))
	j.Spec.SystemUUID = retryUUID
	got, _ := e.reconcile(t, j, 200)
	assertCompleted(t, got, conditions.ResultFailed)
	assert.Equal(t, bootstate.ReasonIPXETimeout, got.Status.Reason)
	assert.Contains(t, got.Status.Message, "try 2 of 2 (try 1 IPXETimeout, try 2 IPXETimeout)")
	require.Len(t, got.Status.Tasks[1].BootTries, 2)
	// No bootDevice task before the wait: only the power cycle.
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetBootOverride))
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetPower), 2)
}

// A task with a policy needs a tracker that takes one; a job does not run
// with the policy silently dropped.
func TestWaitForBootPolicyNeedsPolicyStarter(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{Boot: &bootStub{}})
	j := newJob(powerOn, retryWait(0))
	j.Spec.SystemUUID = retryUUID
	got, _ := e.reconcile(t, j, 5)
	assertCompleted(t, got, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, got.Status.Reason)
	assert.Contains(t, got.Status.Message, "BootPolicyStarter")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower))
}
