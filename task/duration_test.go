package task_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/task"
)

func TestDurationJSON(t *testing.T) {
	good := []struct {
		in   string
		want time.Duration
	}{
		{`"90s"`, 90 * time.Second},
		{`"1m30s"`, 90 * time.Second},
		{`"5m"`, 5 * time.Minute},
		{`"250ms"`, 250 * time.Millisecond},
		{`"0s"`, 0},
		{`"-3s"`, -3 * time.Second},
		{`90`, 90 * time.Second},
		{`1.5`, 1500 * time.Millisecond},
		{`0`, 0},
		{`-2`, -2 * time.Second},
	}
	for _, tt := range good {
		var d task.Duration
		require.NoError(t, json.Unmarshal([]byte(tt.in), &d), tt.in)
		assert.Equal(t, tt.want, d.Duration, tt.in)
	}

	bad := []struct{ in, want string }{
		{`"soon"`, `invalid duration "soon"`},
		{`"90"`, `invalid duration "90"`},
		{`""`, `invalid duration ""`},
		{`true`, "invalid duration true"},
		{`{}`, "invalid duration {}"},
		{`[1]`, "invalid duration [1]"},
		{`1e300`, "out of range"},
		{`-1e300`, "out of range"},
	}
	for _, tt := range bad {
		var d task.Duration
		err := json.Unmarshal([]byte(tt.in), &d)
		require.Error(t, err, tt.in)
		assert.Contains(t, err.Error(), tt.want)
	}

	// null is a no-op, as encoding/json's convention asks.
	d := task.Duration{Duration: time.Minute}
	require.NoError(t, json.Unmarshal([]byte(`null`), &d))
	assert.Equal(t, time.Minute, d.Duration)

	for _, v := range []time.Duration{0, time.Second, 90 * time.Second, 36*time.Hour + 1500*time.Millisecond, -time.Minute} {
		b, err := json.Marshal(task.Duration{Duration: v})
		require.NoError(t, err)
		assert.Equal(t, `"`+v.String()+`"`, string(b))
		var back task.Duration
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, v, back.Duration)
	}
}
