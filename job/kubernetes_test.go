package job

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// A job record written before the status times were timestamp.Time (the
// benchmark's fixture, in time.Time's encoding) decodes with the Runner's
// codec, keeps every instant, and re-encodes to the same JSON.
func TestStoredRecordReadableAcrossTimestamp(t *testing.T) {
	var j Job
	require.NoError(t, unmarshalRecord([]byte(codecFixture), &j))
	require.NotNil(t, j.Status.StartTime)
	assert.Equal(t, time.Date(2026, 12, 1, 5, 0, 1, 500_000_000, time.UTC), j.Status.StartTime.UTC())
	assert.Equal(t, time.Date(2026, 12, 1, 5, 0, 3, 125_000_000, time.UTC), j.Status.Tasks[0].CompletionTime.UTC())
	assert.Equal(t, time.Date(2026, 12, 1, 5, 0, 9, 0, time.UTC), j.Status.Conditions[0].LastTransitionTime.UTC())
	assert.Equal(t, 150*time.Millisecond, j.Status.Wire.ThrottleWait)

	again, err := marshalRecord(&j)
	require.NoError(t, err)
	var want, got any
	require.NoError(t, json.Unmarshal([]byte(codecFixture), &want))
	require.NoError(t, json.Unmarshal(again, &got))
	assert.Equal(t, want, got)

	// encoding/json (a host's client) reads the Runner's bytes the same way.
	var viaStd Job
	require.NoError(t, json.Unmarshal(again, &viaStd))
	assert.Equal(t, j, viaStd)
}

func TestSpecAndStatusDeepCopyAreIndependent(t *testing.T) {
	spec := Spec{
		BMC: "redfish://10.0.0.5/redfish/v1/Systems/1", Timeout: task.Duration{Duration: time.Hour},
		Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}, {BootDevice: &task.BootDeviceAction{Device: task.BootPXE}}},
	}
	scp := spec.DeepCopy()
	assert.Equal(t, spec, *scp)
	scp.Tasks[0].Power.Op = task.PowerOn
	scp.Tasks[1].BootDevice.Device = task.BootDisk
	scp.Tasks = append(scp.Tasks, task.Spec{Reachable: &task.ReachableAction{}})
	assert.Equal(t, task.PowerOff, spec.Tasks[0].Power.Op)
	assert.Equal(t, task.BootPXE, spec.Tasks[1].BootDevice.Device)
	assert.Len(t, spec.Tasks, 2)

	t0 := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	st := Status{
		CurrentTask: 1, StartTime: timestamp.Ptr(t0), CompletionTime: timestamp.Ptr(t0),
		Tasks: []task.Status{{Phase: task.PhaseDone, StartTime: timestamp.Ptr(t0)}},
		Wire:  &bmc.Stats{Requests: 7, Logins: 1},
	}
	conditions.MarkRunning(&st.Conditions, 1, "task 1", t0)
	cp := st.DeepCopy()
	assert.Equal(t, st, *cp)
	cp.Conditions[1].Status = conditions.False
	cp.StartTime.Time = t0.Add(time.Hour)
	cp.CompletionTime.Time = t0.Add(time.Hour)
	cp.Tasks[0].Phase = task.PhaseStarted
	cp.Tasks[0].StartTime.Time = t0.Add(time.Hour)
	cp.Wire.Requests = 99
	assert.True(t, conditions.IsTrue(st.Conditions, conditions.TypeRunning))
	assert.Equal(t, t0, st.StartTime.Time)
	assert.Equal(t, t0, st.CompletionTime.Time)
	assert.Equal(t, task.PhaseDone, st.Tasks[0].Phase)
	assert.Equal(t, t0, st.Tasks[0].StartTime.Time)
	assert.Equal(t, int64(7), st.Wire.Requests)
}

// task.WaitForBootAction embeds its policy with `json:",inline"` (for
// controller-gen); the Runner's codec keeps it flat, as encoding/json does.
func TestInlinePolicyInRecords(t *testing.T) {
	spec := Spec{BMC: "ipmi://10.0.0.6", Tasks: []task.Spec{{WaitForBoot: &task.WaitForBootAction{
		SystemUUID:        "4c4c4544-0042-3510-8052-b4c04f565432",
		WaitForBootPolicy: task.WaitForBootPolicy{Mode: task.BootAnyOf, Signals: []string{"BootStateReceived"}, Retries: 1},
	}}}}
	std, err := json.Marshal(spec)
	require.NoError(t, err)
	rec, err := marshalRecord(spec)
	require.NoError(t, err)
	assert.JSONEq(t, string(std), string(rec))
	assert.Contains(t, string(rec), `"waitForBoot":{"systemUUID":"4c4c4544-0042-3510-8052-b4c04f565432","mode":"AnyOf"`)
	var back Spec
	require.NoError(t, unmarshalRecord(rec, &back))
	assert.Equal(t, spec, back)
}
