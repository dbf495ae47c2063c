package rollout

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/timestamp"
)

// Every field of rollout.Status goes through the API's status and back: a
// field added to rollout.Status fails this test until the API carries it.
func TestStatusRoundTrip(t *testing.T) {
	now := timestamp.New(time.Date(2026, 12, 7, 10, 0, 0, 123456789, time.UTC))
	later := timestamp.New(now.Add(time.Minute))
	in := rollout.Status{
		Conditions:        []conditions.Condition{{Type: conditions.TypeCompleted, Status: conditions.True, ObservedGeneration: 3, Reason: "Halted", Message: "m", LastTransitionTime: now}},
		Result:            rollout.ResultHalted,
		Reason:            rollout.ReasonBudgetSpent,
		Message:           "2 servers failed",
		States:            "rsfkh.",
		Counts:            rollout.Counts{Pending: 1, Held: 1, Running: 1, Succeeded: 1, Failed: 1, Skipped: 1},
		Canary:            rollout.CanaryStatus{Size: 2, Succeeded: 1, Failed: 1, Result: rollout.ResultFailed, Servers: []int{1, 2}},
		FailureBudget:     1,
		FailureBudgetLeft: -1,
		Halt:              rollout.ReasonBudgetSpent,
		Failures:          []rollout.Failure{{Server: "m2", Job: "fw.2.m2", Reason: "BMCError", Message: "boom"}},
		Running:           []rollout.RunningServer{{Index: 0, Since: now}},
		JobSeconds:        12.345,
		JobsTimed:         2,
		Estimate:          "1m0s",
		StartTime:         &now,
		CompletionTime:    &later,
	}
	// Every field set (a new one is zero here and fails).
	v := reflect.ValueOf(in)
	for i := 0; i < v.NumField(); i++ {
		require.False(t, v.Field(i).IsZero(), "set rollout.Status.%s in this test (and carry it in v1alpha1.BMCRolloutStatus)", v.Type().Field(i).Name)
	}
	var api v1alpha1.BMCRolloutStatus
	api.Servers = []v1alpha1.RolloutServer{{Name: "m0"}}
	fromCore(&in, &api, 3)
	assert.Equal(t, int64(12345), api.JobMilliseconds)
	assert.Len(t, api.Servers, 1, "the snapshot is kept")
	out := toCore(&api)
	assert.Equal(t, in, out)

	// Stable: converting again changes nothing (no write per pass).
	var api2 v1alpha1.BMCRolloutStatus
	fromCore(&out, &api2, 3)
	api.Servers = nil
	assert.Equal(t, api, api2)
}

func TestPolicyOf(t *testing.T) {
	pct, cnt, str := intstr.FromString("5%"), intstr.FromInt32(3), intstr.FromString("7")
	p, err := policyOf(&v1alpha1.RolloutPolicy{
		MaxUnavailable: &pct, FailureBudget: &cnt, Canary: 2, CanaryApproval: true, NoSkipCheck: true,
		MaxUnavailablePerGroup: []v1alpha1.RolloutGroupLimit{{Label: "rack", Max: str}},
	})
	require.NoError(t, err)
	assert.Equal(t, rollout.Policy{
		MaxUnavailable: rollout.Percent(5), FailureBudget: rollout.Count(3), Canary: 2, CanaryApproval: true, NoSkipCheck: true,
		MaxUnavailablePerGroup: []rollout.GroupLimit{{Label: "rack", Max: rollout.Count(7)}},
	}, p)

	bad := intstr.FromString("x%")
	_, err = policyOf(&v1alpha1.RolloutPolicy{MaxUnavailablePerGroup: []v1alpha1.RolloutGroupLimit{{Label: "rack", Max: bad}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "policy.maxUnavailablePerGroup[0].max")
	neg := intstr.FromInt32(-2)
	_, err = policyOf(&v1alpha1.RolloutPolicy{FailureBudget: &neg})
	assert.ErrorContains(t, err, "policy.failureBudget")
}

// The snapshot is sorted by name, keeps only the labels the group limits
// name, and never keeps a BMC address that does not parse (it may hold a
// password).
func TestSnapshot(t *testing.T) {
	m := func(name, addr string, labels map[string]string) v1alpha1.Machine {
		var o v1alpha1.Machine
		o.Name, o.Labels, o.Spec.BMC, o.Spec.CredentialsRef = name, labels, addr, "s-"+name
		return o
	}
	pol := &v1alpha1.RolloutPolicy{MaxUnavailablePerGroup: []v1alpha1.RolloutGroupLimit{{Label: "rack", Max: intstr.FromInt32(1)}}}
	sv, bad := snapshot([]v1alpha1.Machine{
		m("b", "redfish://10.0.0.2", map[string]string{"rack": "r1", "model": "x"}),
		m("a", "ipmi://10.0.0.1", map[string]string{"model": "x"}),
	}, pol)
	require.NoError(t, bad)
	assert.Equal(t, []v1alpha1.RolloutServer{
		{Name: "a", BMC: "ipmi://10.0.0.1", CredentialsRef: "s-a"},
		{Name: "b", BMC: "redfish://10.0.0.2", CredentialsRef: "s-b", Labels: map[string]string{"rack": "r1"}},
	}, sv)

	sv, bad = snapshot([]v1alpha1.Machine{m("c", "redfish://admin:Sekr3t-pw@10.0.0.3", nil)}, pol)
	require.Error(t, bad)
	assert.Contains(t, bad.Error(), "servers[0].bmc (Machine c)")
	assert.NotContains(t, bad.Error(), "Sekr3t-pw")
	assert.NotContains(t, sv[0].BMC, "Sekr3t-pw")
}
