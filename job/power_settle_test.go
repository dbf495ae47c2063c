package job_test

import (
	"context"
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

// stepAdvancing runs one Step while advancing the fake clock each time the
// step waits on it (a settle window is waited out within the step).
func (e *stepEnv) stepAdvancing(t *testing.T, j *job.Job, by time.Duration) job.StepResult {
	t.Helper()
	type out struct {
		res job.StepResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := e.stepper.Step(context.Background(), j, e.crd.persist)
		done <- out{res, err}
	}()
	for {
		select {
		case o := <-done:
			require.NoError(t, o.err)
			return o.res
		case <-e.clk.WaiterAdded():
			e.clk.Advance(by)
		case <-time.After(10 * time.Second):
			t.Fatal("the step neither returned nor waited on the clock")
		}
	}
}

// A task whose target holds through the PowerSettle window completes when
// the window ends, and so does its job, not when the step began (issue 22:
// 5.1 s early with a 5 s window). The next task starts no earlier.
func TestStepPowerSettleCompletionStampedAfterWindow(t *testing.T) {
	const settle, poll = 5 * time.Second, time.Second
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff}, job.StepperConfig{PowerSettle: settle, PollInterval: poll, AdaptivePoll: job.AdaptivePoll{Disabled: true}})

	t.Run("job", func(t *testing.T) {
		start := e.clk.Now()
		j := newJob(powerOff)
		require.NoError(t, e.crd.persist(context.Background(), j))
		res := e.stepAdvancing(t, e.crd.load(t), poll)
		require.True(t, res.Done)
		got := e.crd.load(t)
		assertCompleted(t, got, conditions.ResultSucceeded)
		end := start.Add(settle)
		require.Equal(t, end, e.clk.Now(), "the window was waited out on the clock")
		assert.Equal(t, start, got.Status.StartTime.Time)
		assert.Equal(t, end, got.Status.Tasks[0].RequestTime.Time, "nothing was sent before the window ended")
		assert.Equal(t, end, got.Status.Tasks[0].CompletionTime.Time, "task completion")
		assert.Equal(t, end, got.Status.CompletionTime.Time, "job completion")
		c := conditions.Get(got.Status.Conditions, conditions.TypeCompleted)
		require.NotNil(t, c)
		assert.Equal(t, end, c.LastTransitionTime.Time, "the job's Completed condition")
		assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower), "the target held: nothing sent")
	})

	t.Run("next task", func(t *testing.T) {
		e.bmc.SetPower(bmc.PowerOff)
		start := e.clk.Now()
		j := newJob(powerOff, task.Spec{PowerStatus: &task.PowerStatusAction{}})
		j.Name = "j2"
		require.NoError(t, e.crd.persist(context.Background(), j))
		res := e.stepAdvancing(t, e.crd.load(t), poll)
		require.True(t, res.Done)
		got := e.crd.load(t)
		assertCompleted(t, got, conditions.ResultSucceeded)
		end := start.Add(settle)
		assert.Equal(t, end, got.Status.Tasks[0].CompletionTime.Time)
		assert.Equal(t, end, got.Status.Tasks[1].StartTime.Time, "the next task starts when the first completed")
		assert.Equal(t, end, got.Status.CompletionTime.Time)
	})
}
