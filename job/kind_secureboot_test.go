package job_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

func secureBoot(on, verifyOnly bool) task.Spec {
	return task.Spec{SecureBoot: &task.SecureBootAction{Enabled: &on, VerifyOnly: verifyOnly}}
}

var powerCycle = task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}}

// Secure Boot on, as a DMTF-shaped BMC takes it: pending until the next
// boot (the task is done and says a reboot is required), the reboot, then
// the verification that the boot runs with it. One change sent.
func TestSecureBootPendingThenVerified(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(powerOn, secureBoot(true, false), powerCycle, secureBoot(true, true)), 40)
	assertCompleted(t, j, conditions.ResultSucceeded)
	require.NotNil(t, j.Status.Tasks[1].SecureBoot)
	assert.True(t, j.Status.Tasks[1].SecureBoot.RebootRequired, j.Status.Tasks[1].Message)
	assert.Contains(t, j.Status.Tasks[1].Message, "pending until the next boot")
	assert.False(t, j.Status.Tasks[3].SecureBoot.RebootRequired)
	assert.Equal(t, bmc.SecureBootCurrentEnabled, j.Status.Tasks[3].SecureBoot.State.CurrentBoot)
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetSecureBoot), 1)
}

// VerifyOnly sends nothing and fails while the boot does not run with it.
func TestSecureBootVerifyOnlyFails(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(secureBoot(true, true)), 10)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonVerificationFailed, j.Status.Tasks[0].Reason, j.Status.Tasks[0].Message)
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetSecureBoot))
}

// A key reset is sent once and done on the BMC's acceptance; a BMC that
// does not offer it fails the preflight with nothing sent.
func TestSecureBootResetKeys(t *testing.T) {
	reset := task.Spec{SecureBoot: &task.SecureBootAction{ResetKeys: bmc.SecureBootResetAllKeysToDefault}}
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(reset), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Len(t, e.bmc.CallsTo(fake.MethodResetSecureBootKeys), 1)

	e = newStepEnv(t, fake.Options{Unsupported: []bmc.Capability{bmc.CapabilitySecureBootResetKeys}}, job.StepperConfig{})
	j, _ = e.reconcile(t, newJob(powerOff, reset), 10)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Tasks[1].Reason, j.Status.Tasks[1].Message)
	assert.Empty(t, e.bmc.CallsTo(fake.MethodResetSecureBootKeys))
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower), "the preflight fails the job before its first task")
}

// The boot order: the disk first, pending until the reboot, verified
// after it; one change sent.
func TestBootOrderPendingThenVerified(t *testing.T) {
	order := task.Spec{BootOrder: &task.BootOrderAction{Order: []string{"Boot0002"}, Enabled: map[string]bool{"Boot0004": true}}}
	verify := task.Spec{BootOrder: &task.BootOrderAction{Order: []string{"Boot0002"}, Enabled: map[string]bool{"Boot0004": true}, VerifyOnly: true}}
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(powerOn, order, powerCycle, verify), 40)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.True(t, j.Status.Tasks[1].BootOrder.RebootRequired, j.Status.Tasks[1].Message)
	assert.Equal(t, "boot order set", j.Status.Tasks[3].Message)
	assert.Equal(t, "Boot0002", e.bmc.BootOrderState().Order[0])
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetBootOrder), 1)
}

// A reference the BMC does not list fails the job's preflight, reason
// InvalidSpec, naming it, before the first task: nothing is changed.
func TestBootOrderUnknownOption(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(powerOff, task.Spec{BootOrder: &task.BootOrderAction{Order: []string{"Boot00FF"}}}), 10)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonInvalidSpec, j.Status.Tasks[1].Reason)
	assert.Contains(t, j.Status.Tasks[1].Message, "Boot00FF")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetBootOrder))
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower))
}
