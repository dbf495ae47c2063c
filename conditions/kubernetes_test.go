package conditions_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/conditions"
)

func TestConditionDeepCopyIsIndependent(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	var conds []conditions.Condition
	conditions.MarkRunning(&conds, 3, "running task 1", t0)
	orig := conds[0]
	cp := orig.DeepCopy()
	assert.Equal(t, orig, *cp)
	cp.Status = conditions.Unknown
	cp.Message = "changed"
	cp.LastTransitionTime.Time = t0.Add(time.Hour)
	assert.Equal(t, conditions.False, orig.Status)
	assert.Equal(t, "running task 1", orig.Message)
	assert.Equal(t, t0, orig.LastTransitionTime.Time)
}

// A condition stored before LastTransitionTime was a timestamp.Time (by
// time.Time's encoding) decodes and re-encodes unchanged.
func TestConditionJSONUnchanged(t *testing.T) {
	const stored = `{"type":"Completed","status":"True","observedGeneration":2,"lastTransitionTime":"2026-12-01T05:00:09Z","reason":"Succeeded","message":"3 tasks done"}`
	var c conditions.Condition
	require.NoError(t, json.Unmarshal([]byte(stored), &c))
	assert.Equal(t, time.Date(2026, 12, 1, 5, 0, 9, 0, time.UTC), c.LastTransitionTime.UTC())
	b, err := json.Marshal(c)
	require.NoError(t, err)
	assert.Equal(t, stored, string(b))
}
