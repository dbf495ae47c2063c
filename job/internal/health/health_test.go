package health

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Check follows the loop's life, its turns and the store's outcomes: a
// store outage or a stuck loop is unhealthy only past a lease.
func TestCheck(t *testing.T) {
	const lease = 30 * time.Second
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var h State
	assert.EqualError(t, h.Check(t0, lease), "not started (call Start, or add it to the manager)")
	h.Start(t0)
	assert.NoError(t, h.Check(t0, lease))

	down := errors.New("store down")
	h.Store(t0, down)
	h.Turn(t0.Add(20 * time.Second))
	h.Store(t0.Add(20*time.Second), down)
	assert.NoError(t, h.Check(t0.Add(30*time.Second), lease), "failing for a lease, not longer")
	err := h.Check(t0.Add(31*time.Second), lease)
	assert.ErrorIs(t, err, down)
	assert.EqualError(t, err, "the store has failed for 31s (longer than the lease, 30s): store down")
	h.Store(t0.Add(31*time.Second), nil)
	h.Turn(t0.Add(31 * time.Second))
	assert.NoError(t, h.Check(t0.Add(31*time.Second), lease), "a success ends the outage")

	assert.EqualError(t, h.Check(t0.Add(62*time.Second), lease), "its loop has not turned over for 31s (longer than the lease, 30s)")
	h.Stop()
	assert.EqualError(t, h.Check(t0.Add(62*time.Second), lease), "stopped (Start returned)")
}
