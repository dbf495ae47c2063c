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

// A transitional state never counts as the power task's target: PoweringOn
// is not On, PoweringOff is not Off. Another client's change is landing
// (10 s on the fake clock); the task completes only once it landed.
func TestStepPowerTransitionalIsNotTarget(t *testing.T) {
	for _, tc := range []struct {
		name         string
		from         bmc.PowerState
		other        bmc.PowerAction
		transitional bmc.PowerState
		spec         task.Spec
	}{
		{"PoweringOn is not On", bmc.PowerOff, bmc.PowerActionOn, bmc.PowerPoweringOn, powerOn},
		{"PoweringOff is not Off", bmc.PowerOn, bmc.PowerActionOff, bmc.PowerPoweringOff, powerOff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const transition = 10 * time.Second
			e := newStepEnv(t, fake.Options{Power: tc.from, PowerTransition: transition}, job.StepperConfig{})
			drv, err := e.bmc.Dial(context.Background(), bmc.Endpoint{}, bmc.Credentials{})
			require.NoError(t, err)
			require.NoError(t, drv.SetPower(context.Background(), tc.other))
			require.NoError(t, drv.Close(context.Background()))
			require.Equal(t, tc.transitional, e.bmc.State().Power)

			j, _ := e.reconcile(t, newJob(tc.spec), 200)
			assertCompleted(t, j, conditions.ResultSucceeded)
			ts := j.Status.Tasks[0]
			require.NotNil(t, ts.CompletionTime)
			assert.False(t, ts.CompletionTime.Before(t0.Add(transition)), "completed at %s, before the transition landed at %s", ts.CompletionTime, t0.Add(transition))
			assert.Equal(t, string(tc.other.Target()), ts.Message)
			assert.Equal(t, tc.other.Target(), e.bmc.State().Power)
		})
	}
}
