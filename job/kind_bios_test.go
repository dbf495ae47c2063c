package job_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

func biosTask(verify bool, attrs map[string]string) task.Spec {
	return task.Spec{BIOS: &task.BIOSAction{Attributes: attrs, VerifyOnly: verify}}
}

// The flow on a BMC that applies at the next boot: set (pending,
// RebootRequired), power cycle, verify after the boot.
func TestBIOSSetRebootVerify(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	want := map[string]string{"BootMode": "Bios", "PxeRetryCount": "5"}
	j, _ := e.reconcile(t, newJob(
		biosTask(false, want),
		task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}},
		biosTask(true, want),
	), 200)
	assertCompleted(t, j, conditions.ResultSucceeded)
	set := j.Status.Tasks[0]
	require.NotNil(t, set.BIOS)
	assert.True(t, set.BIOS.RebootRequired)
	assert.Equal(t, bmc.BIOSAttributes{"BootMode": "Bios", "PxeRetryCount": "5"}, set.BIOS.Pending)
	assert.Contains(t, set.Message, "pending until the next boot")
	verify := j.Status.Tasks[2]
	assert.Equal(t, bmc.BIOSAttributes{"BootMode": "Bios", "PxeRetryCount": "5"}, verify.BIOS.Attributes)
	assert.False(t, verify.BIOS.RebootRequired)
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetBIOSAttributes), 1, "set once; verify sends nothing")
}

// Without the reboot, the verify task fails naming the attribute that
// differs and its current value, not the requested one.
func TestBIOSVerifyWithoutRebootFails(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	want := map[string]string{"BootMode": "Bios"}
	j, _ := e.reconcile(t, newJob(biosTask(false, want), biosTask(true, want)), 100)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonVerificationFailed, j.Status.Tasks[1].Reason)
	assert.Contains(t, j.Status.Tasks[1].Message, "BootMode (now Uefi)")
}

// A BMC that applies at once: the set task reads the values back.
func TestBIOSSetImmediate(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, BIOSImmediate: true}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(biosTask(false, map[string]string{"SriovEnable": "true"})), 100)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.False(t, j.Status.Tasks[0].BIOS.RebootRequired)
	assert.Contains(t, j.Status.Tasks[0].Message, "BIOS attributes set: SriovEnable")
}

// An unknown attribute or a value outside the registry fails the task
// naming it, and no change is sent.
func TestBIOSInvalidAttributeSendsNothing(t *testing.T) {
	for _, c := range []struct {
		attrs map[string]string
		want  string
	}{
		{map[string]string{"BootMode": "Bios", "Turbo": "On"}, "Turbo"},
		{map[string]string{"BootMode": "Legacy"}, "BootMode"},
		{map[string]string{"PxeRetryCount": "11"}, "PxeRetryCount"},
		{map[string]string{"SystemModelName": "x"}, "SystemModelName"},
	} {
		e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
		j, _ := e.reconcile(t, newJob(biosTask(false, c.attrs)), 20)
		assertCompleted(t, j, conditions.ResultFailed)
		assert.Equal(t, conditions.ReasonInvalidSpec, j.Status.Tasks[0].Reason, "%v", c.attrs)
		assert.Contains(t, j.Status.Tasks[0].Message, c.want)
		assert.Empty(t, e.bmc.CallsTo(fake.MethodSetBIOSAttributes), "nothing sent for %v", c.attrs)
	}
}

// Values already there: nothing is sent.
func TestBIOSAlreadySetSendsNothing(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j := e.intentStored(t, newJob(biosTask(false, map[string]string{"BootMode": "Uefi"})))
	got, _ := e.reconcile(t, j, 10)
	assertCompleted(t, got, conditions.ResultSucceeded)
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetBIOSAttributes))
}

// A read stores the current and pending attributes.
func TestBIOSRead(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(biosTask(false, nil)), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, "Uefi", j.Status.Tasks[0].BIOS.Attributes["BootMode"])
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetBIOSAttributes))
}

func TestBIOSSpecErrors(t *testing.T) {
	s := biosTask(true, nil)
	assert.ErrorContains(t, s.Validate(), "bios.verifyOnly: set attributes to verify")
	s = biosTask(false, map[string]string{"": "x"})
	assert.ErrorContains(t, s.Validate(), "bios.attributes")
}

func TestInventoryTask(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(task.Spec{Inventory: &task.InventoryAction{}}), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	inv := j.Status.Tasks[0].Inventory
	require.NotNil(t, inv)
	assert.NotEmpty(t, inv.Processors)
	assert.NotEmpty(t, inv.NetworkInterfaces)
	assert.Contains(t, j.Status.Tasks[0].Message, "processors")

	opts := fake.Options{Power: bmc.PowerOn, Unsupported: []bmc.Capability{bmc.CapabilityInventory}}
	e = newStepEnv(t, opts, job.StepperConfig{})
	j, _ = e.reconcile(t, newJob(task.Spec{Inventory: &task.InventoryAction{}}), 10)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Tasks[0].Reason)
}

// A read stores each value bounded: a structured attribute kept as JSON
// (a Cray EX boot order) is cut to 1024 bytes, and Truncated says so.
func TestBIOSReadBoundsLongValues(t *testing.T) {
	attrs := fake.DefaultBIOSAttributes()
	attrs["AssetTag"] = strings.Repeat(`"Pxe",`, 1000)
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, BIOSAttributes: attrs}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(task.Spec{BIOS: &task.BIOSAction{}}), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	st := j.Status.Tasks[0].BIOS
	require.NotNil(t, st)
	assert.Len(t, st.Attributes["AssetTag"], 1024)
	assert.Equal(t, "Uefi", st.Attributes["BootMode"])
	assert.True(t, st.Truncated)
}
