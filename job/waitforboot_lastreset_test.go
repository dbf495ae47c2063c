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
	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// runRetryWithCrash steps a job whose wait-for-boot task retries once (every
// try times out) until it completes. The process dies once, at the write
// matching crashAt: before it is stored (the write is lost), or right after
// (stored, nothing sent after it) with afterWrite. The next step starts from
// what was stored, as a resumed job does.
func runRetryWithCrash(t *testing.T, e *stepEnv, j *job.Job, crashAt func(*job.Job) bool, afterWrite bool) *job.Job {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.crd.persist(ctx, j))
	died := errors.New("the process died")
	crashed := false
	persist := func(ctx context.Context, j *job.Job) error {
		if !crashed && crashAt(j) {
			crashed = true
			if afterWrite {
				require.NoError(t, e.crd.persist(ctx, j))
			}
			return died
		}
		return e.crd.persist(ctx, j)
	}
	for n := 0; n < 300; n++ {
		res, err := e.stepper.Step(ctx, e.crd.load(t), persist)
		if errors.Is(err, died) {
			continue // resumed from the stored record
		}
		require.NoError(t, err)
		if res.Done {
			require.True(t, crashed, "the crash point was never reached")
			return e.crd.load(t)
		}
		e.clk.Advance(res.RequeueAfter)
	}
	t.Fatal("job not done")
	return nil
}

// retryCycleStep is the write of try 2 of the last task at step s.
func retryCycleStep(s task.BootTryStep) func(*job.Job) bool {
	return func(j *job.Job) bool {
		ts := j.Status.Tasks[len(j.Status.Tasks)-1].BootTries
		return len(ts) == 2 && ts[1].Step == s
	}
}

// newRetryEnvWith is newRetryEnv with the fake BMC's options.
func newRetryEnvWith(t *testing.T, opts fake.Options) *stepEnv {
	t.Helper()
	e := newStepEnv(t, opts, job.StepperConfig{})
	tr, err := bootstate.NewTracker(bootstate.Config{Store: memstore.New(), Clock: e.clk, InsecureSkipAuth: true})
	require.NoError(t, err)
	e.stepper, err = job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: e.bmc, Clock: e.clk, Boot: tr, BootPollInterval: 20 * time.Second})
	require.NoError(t, err)
	return e
}

func powerActions(b *fake.BMC) []any {
	var out []any
	for _, c := range b.CallsTo(fake.MethodSetPower) {
		out = append(out, c.Args...)
	}
	return out
}

// A boot retry's power cycle is not recheckable from the power state, so a
// crash after the BMC accepted it and before its result was stored sent it
// again: one extra power cycle each time (issue 22, 7 of 7 such kills). The
// BMC's last reset time, read before the cycle and stored with its intent,
// now tells that it landed, and it is not sent again; a BMC that does not
// report it gets the cycle again (at least once). A crash before the cycle
// was sent still sends it, once.
func TestWaitForBootRetryCycleNotRepeatedAfterCrash(t *testing.T) {
	for _, c := range []struct {
		name        string
		tasks       []task.Spec
		unsupported []bmc.Capability
		crashAt     task.BootTryStep
		afterWrite  bool
		want        []any
	}{
		// The cycle was accepted; the write of its result is lost.
		{"landed", []task.Spec{powerOn, retryWait(1)}, nil, task.BootTryWaiting, false,
			[]any{bmc.PowerActionOn, bmc.PowerActionCycle}},
		{"landed after the override", []task.Spec{pxeOnce, powerOn, retryWait(1)}, nil, task.BootTryWaiting, false,
			[]any{bmc.PowerActionOn, bmc.PowerActionCycle}},
		{"no last reset time", []task.Spec{powerOn, retryWait(1)}, []bmc.Capability{bmc.CapabilityLastResetTime}, task.BootTryWaiting, false,
			[]any{bmc.PowerActionOn, bmc.PowerActionCycle, bmc.PowerActionCycle}},
		// Died right after the cycle's intent was stored: never sent, so
		// the resumed step sends it.
		{"intent stored", []task.Spec{powerOn, retryWait(1)}, nil, task.BootTryPowerCycling, true,
			[]any{bmc.PowerActionOn, bmc.PowerActionCycle}},
		{"intent stored after the override", []task.Spec{pxeOnce, powerOn, retryWait(1)}, nil, task.BootTryPowerCycling, true,
			[]any{bmc.PowerActionOn, bmc.PowerActionCycle}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newRetryEnvWith(t, fake.Options{Power: bmc.PowerOff, Unsupported: c.unsupported})
			j := newJob(c.tasks...)
			j.Spec.SystemUUID = retryUUID
			got := runRetryWithCrash(t, e, j, retryCycleStep(c.crashAt), c.afterWrite)
			assertCompleted(t, got, conditions.ResultFailed) // every try timed out
			last := got.Status.Tasks[len(got.Status.Tasks)-1]
			require.Len(t, last.BootTries, 2)
			assert.NotNil(t, last.BootTries[1].PowerCycleTime)
			assert.Nil(t, last.LastResetBefore, "cleared once the cycle's result was stored")
			assert.Equal(t, c.want, powerActions(e.bmc))
			assert.Equal(t, len(c.want), e.bmc.State().Boots)
		})
	}
}
