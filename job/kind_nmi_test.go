package job_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

var nmi = task.Spec{NMI: &task.NMIAction{}}

// One NMI, accepted: the task succeeds and says nothing could be read.
func TestNMISentOnce(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(nmi), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 1, e.bmc.State().NMIs)
	assert.Contains(t, j.Status.Tasks[0].Message, "the BMC accepted the NMI")
	assert.Equal(t, bmc.PowerOn, e.bmc.State().Power)
}

// On a server that is off the task fails with the BMC's error, which says
// so; nothing reached the host.
func TestNMIServerOff(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(nmi), 10)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Contains(t, j.Status.Tasks[0].Message, "the server is Off")
	assert.Equal(t, 0, e.bmc.State().NMIs)
}

// A BMC that does not offer NMIs: the preflight refuses the job before the
// power change that came first.
func TestNMIPreflightNotSupported(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff, Unsupported: []bmc.Capability{bmc.CapabilityNMI}}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(powerOn, nmi), 10)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Tasks[1].Reason)
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower))
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSendNMI))
}

// A crash after the NMI went out, before its result was stored: the
// resumed task cannot tell, and sends it again (at least once,
// docs/indicator-nmi.md); a crash before it went out sends it once.
func TestNMICrash(t *testing.T) {
	t.Run("AfterTheSend", func(t *testing.T) {
		e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
		j := e.intentStored(t, newJob(nmi))
		stop := errors.New("died")
		_, err := e.stepper.Step(context.Background(), j, func(ctx context.Context, j *job.Job) error {
			if len(e.bmc.CallsTo(fake.MethodSendNMI)) > 0 {
				return stop
			}
			return e.crd.persist(ctx, j)
		})
		require.ErrorIs(t, err, stop)
		require.Equal(t, task.PhaseStarted, e.crd.load(t).Status.Tasks[0].Phase)
		j, _ = e.reconcile(t, e.crd.load(t), 10)
		assertCompleted(t, j, conditions.ResultSucceeded)
		assert.Equal(t, 2, e.bmc.State().NMIs, "sent again: the first cannot be read back")
	})
	t.Run("BeforeTheSend", func(t *testing.T) {
		e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
		j, _ := e.reconcile(t, e.intentStored(t, newJob(nmi)), 10)
		assertCompleted(t, j, conditions.ResultSucceeded)
		assert.Equal(t, 1, e.bmc.State().NMIs)
	})
}
