package conditions_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/timestamp"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func TestSetNewConditionTruncatesToSecondUTC(t *testing.T) {
	var conds []conditions.Condition
	at := time.Date(2026, 3, 1, 12, 30, 15, 987654321, time.FixedZone("CET", 3600))
	changed := conditions.Set(&conds, conditions.Condition{Type: "Ready", Status: conditions.True, Reason: "Up", Message: "m", LastTransitionTime: timestamp.New(at)})
	require.True(t, changed)
	require.Len(t, conds, 1)
	got := conds[0].LastTransitionTime
	assert.Equal(t, time.UTC, got.Location())
	assert.True(t, got.Equal(time.Date(2026, 3, 1, 11, 30, 15, 0, time.UTC)), "got %v", got)
	assert.Zero(t, got.Nanosecond())
}

func TestSetZeroTimeUsesNow(t *testing.T) {
	var conds []conditions.Condition
	before := time.Now().UTC().Truncate(time.Second)
	conditions.Set(&conds, conditions.Condition{Type: "Ready", Status: conditions.True})
	after := time.Now().UTC()
	got := conds[0].LastTransitionTime
	assert.False(t, got.Before(before), "%v before %v", got, before)
	assert.False(t, got.After(after), "%v after %v", got, after)
	assert.Zero(t, got.Nanosecond())
	assert.Equal(t, time.UTC, got.Location())
}

func TestSetReportsChangesAndMovesTimeOnlyOnStatusFlip(t *testing.T) {
	var conds []conditions.Condition
	base := conditions.Condition{Type: "Ready", Status: conditions.False, Reason: "Init", Message: "starting", ObservedGeneration: 1, LastTransitionTime: timestamp.New(t0)}
	require.True(t, conditions.Set(&conds, base))

	// Identical: no change, even with a later time.
	same := base
	same.LastTransitionTime = timestamp.New(t0.Add(time.Hour))
	assert.False(t, conditions.Set(&conds, same))
	assert.Equal(t, t0, conds[0].LastTransitionTime.Time)

	// Reason, message and generation change without a status flip: changed,
	// but the transition time stays.
	for _, mod := range []func(*conditions.Condition){
		func(c *conditions.Condition) { c.Reason = "Other" },
		func(c *conditions.Condition) { c.Message = "other message" },
		func(c *conditions.Condition) { c.ObservedGeneration = 7 },
	} {
		c := conds[0]
		mod(&c)
		c.LastTransitionTime = timestamp.New(t0.Add(2 * time.Hour))
		assert.True(t, conditions.Set(&conds, c))
		assert.Equal(t, t0, conds[0].LastTransitionTime.Time, "time moved without a status flip")
	}
	assert.Equal(t, "Other", conds[0].Reason)
	assert.Equal(t, "other message", conds[0].Message)
	assert.Equal(t, int64(7), conds[0].ObservedGeneration)

	// Status flip moves the time.
	flip := conds[0]
	flip.Status = conditions.True
	flip.LastTransitionTime = timestamp.New(t0.Add(3*time.Hour + 400*time.Millisecond))
	assert.True(t, conditions.Set(&conds, flip))
	assert.Equal(t, t0.Add(3*time.Hour), conds[0].LastTransitionTime.Time)
	assert.Len(t, conds, 1, "Set must update in place, not append")
}

func TestSetNilPointer(t *testing.T) {
	assert.False(t, conditions.Set(nil, conditions.Condition{Type: "Ready", Status: conditions.True}))
}

func TestGetIsRemove(t *testing.T) {
	var conds []conditions.Condition
	conditions.Set(&conds, conditions.Condition{Type: "A", Status: conditions.True, LastTransitionTime: timestamp.New(t0)})
	conditions.Set(&conds, conditions.Condition{Type: "B", Status: conditions.False, LastTransitionTime: timestamp.New(t0)})
	conditions.Set(&conds, conditions.Condition{Type: "C", Status: conditions.Unknown, LastTransitionTime: timestamp.New(t0)})

	require.NotNil(t, conditions.Get(conds, "B"))
	assert.Equal(t, conditions.False, conditions.Get(conds, "B").Status)
	assert.Nil(t, conditions.Get(conds, "missing"))
	assert.Nil(t, conditions.Get(nil, "A"))

	tests := []struct {
		typ                    string
		isTrue, isFalse, isUnk bool
	}{
		{"A", true, false, false},
		{"B", false, true, false},
		{"C", false, false, true},
		{"missing", false, false, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.isTrue, conditions.IsTrue(conds, tt.typ), "IsTrue(%s)", tt.typ)
		assert.Equal(t, tt.isFalse, conditions.IsFalse(conds, tt.typ), "IsFalse(%s)", tt.typ)
		assert.Equal(t, tt.isUnk, conditions.IsUnknown(conds, tt.typ), "IsUnknown(%s)", tt.typ)
	}

	assert.True(t, conditions.Remove(&conds, "B"))
	assert.False(t, conditions.Remove(&conds, "B"))
	assert.False(t, conditions.Remove(nil, "A"))
	assert.Nil(t, conditions.Get(conds, "B"))
	require.Len(t, conds, 2)
	assert.Equal(t, "A", conds[0].Type)
	assert.Equal(t, "C", conds[1].Type)
}

// The JSON names must be metav1.Condition's so a host can copy conditions
// into a CRD status verbatim.
func TestJSONFieldNamesMatchMetav1(t *testing.T) {
	c := conditions.Condition{Type: "Completed", Status: conditions.True, ObservedGeneration: 3, LastTransitionTime: timestamp.New(t0), Reason: "Succeeded", Message: "done"}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, map[string]any{
		"type":               "Completed",
		"status":             "True",
		"observedGeneration": float64(3),
		"lastTransitionTime": "2026-03-01T10:00:00Z",
		"reason":             "Succeeded",
		"message":            "done",
	}, m)

	var back conditions.Condition
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, c, back)
}

func TestMarkLifecycleKeepsInvariants(t *testing.T) {
	var conds []conditions.Condition
	assertOnlyLifecycleTypes := func() {
		t.Helper()
		for _, c := range conds {
			assert.Contains(t, []string{conditions.TypeCompleted, conditions.TypeRunning}, c.Type, "helpers must not add other condition types")
		}
		assert.Len(t, conds, 2)
	}

	require.True(t, conditions.MarkPending(&conds, 1, t0))
	assertOnlyLifecycleTypes()
	assert.True(t, conditions.IsFalse(conds, conditions.TypeCompleted))
	assert.True(t, conditions.IsFalse(conds, conditions.TypeRunning))
	assert.Equal(t, conditions.ReasonPending, conditions.Get(conds, conditions.TypeCompleted).Reason)
	assert.False(t, conditions.MarkPending(&conds, 1, t0.Add(time.Minute)), "repeat MarkPending is no change")

	t1 := t0.Add(time.Minute)
	require.True(t, conditions.MarkRunning(&conds, 1, "power off", t1))
	assertOnlyLifecycleTypes()
	assert.True(t, conditions.IsTrue(conds, conditions.TypeRunning))
	assert.True(t, conditions.IsFalse(conds, conditions.TypeCompleted))
	assert.Equal(t, t1, conditions.Get(conds, conditions.TypeRunning).LastTransitionTime.Time)
	assert.Equal(t, t0, conditions.Get(conds, conditions.TypeCompleted).LastTransitionTime.Time, "Completed stayed False: time must not move")
	assert.Equal(t, "power off", conditions.Get(conds, conditions.TypeRunning).Message)

	// Progress message update: changed, no time move.
	require.True(t, conditions.MarkRunning(&conds, 1, "boot pxe", t1.Add(time.Minute)))
	assert.Equal(t, t1, conditions.Get(conds, conditions.TypeRunning).LastTransitionTime.Time)

	for _, res := range []conditions.Result{conditions.ResultSucceeded, conditions.ResultFailed, conditions.ResultCanceled, conditions.ResultTimedOut} {
		t.Run(string(res), func(t *testing.T) {
			c := append([]conditions.Condition(nil), conds...)
			t2 := t1.Add(5 * time.Minute)
			require.True(t, conditions.MarkCompleted(&c, 2, res, "", "task 1 (power off): bmc set power: boom", t2))
			require.Len(t, c, 2)
			for _, cc := range c {
				assert.NotEqual(t, string(conditions.ResultFailed), cc.Type, "no Failed condition mirroring Completed")
				assert.NotEqual(t, string(conditions.ResultSucceeded), cc.Type)
				assert.Equal(t, int64(2), cc.ObservedGeneration)
			}
			assert.True(t, conditions.IsTrue(c, conditions.TypeCompleted))
			assert.True(t, conditions.IsFalse(c, conditions.TypeRunning), "no stale Running=True on a completed object")
			comp := conditions.Get(c, conditions.TypeCompleted)
			assert.Equal(t, string(res), comp.Reason, "reason defaults to the result")
			assert.Equal(t, t2, comp.LastTransitionTime.Time)
			assert.Equal(t, t2, conditions.Get(c, conditions.TypeRunning).LastTransitionTime.Time)
		})
	}

	// An explicit reason wins over the result name.
	c := append([]conditions.Condition(nil), conds...)
	conditions.MarkCompleted(&c, 1, conditions.ResultFailed, conditions.ReasonBMCError, "x", t1)
	assert.Equal(t, conditions.ReasonBMCError, conditions.Get(c, conditions.TypeCompleted).Reason)
	assert.Equal(t, conditions.ReasonBMCError, conditions.Get(c, conditions.TypeRunning).Reason)
	assert.False(t, conditions.MarkCompleted(&c, 1, conditions.ResultFailed, conditions.ReasonBMCError, "x", t1.Add(time.Hour)), "repeat is no change")
}

// MarkCompleted straight from Pending (a job that fails validation) still
// ends with Running=False.
func TestMarkCompletedFromEmpty(t *testing.T) {
	var conds []conditions.Condition
	conditions.MarkCompleted(&conds, 0, conditions.ResultFailed, conditions.ReasonInvalidSpec, "tasks[0].power.op: bad", t0)
	assert.True(t, conditions.IsTrue(conds, conditions.TypeCompleted))
	assert.True(t, conditions.IsFalse(conds, conditions.TypeRunning))
	assert.Len(t, conds, 2)
}
