package bootstate_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
)

type bootRecorder struct {
	mu       sync.Mutex
	signals  []bootstate.SignalEvent
	done     []bootstate.BootEvent
	timeouts []bootstate.BootEvent
}

func (r *bootRecorder) observer() bootstate.Observer {
	return bootstate.Observer{
		SignalStored: func(e bootstate.SignalEvent) { r.mu.Lock(); r.signals = append(r.signals, e); r.mu.Unlock() },
		BootCompleted: func(e bootstate.BootEvent) {
			r.mu.Lock()
			r.done = append(r.done, e)
			r.mu.Unlock()
			panic("an observer bug must not fail the callback")
		},
		BootTimedOut: func(e bootstate.BootEvent) { r.mu.Lock(); r.timeouts = append(r.timeouts, e); r.mu.Unlock() },
	}
}

func TestObserverSignalsCompletionsTimeouts(t *testing.T) {
	rec := &bootRecorder{}
	e := newEnv(t, func(c *bootstate.Config) { c.Observer = rec.observer() })
	ctx := context.Background()
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "job-1", Timeout: time.Hour,
		Policy: bootstate.AllOfSignals(bootstate.SignalIPXEScriptFetched, bootstate.SignalBootStateReceived)})
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidB, AttemptID: "job-2", Timeout: time.Minute})

	_, err := e.tr.RecordSignal(ctx, uuidA, "job-1", bootstate.SignalIPXEScriptFetched, "")
	require.NoError(t, err)
	_, err = e.tr.RecordSignal(ctx, uuidA, "job-1", bootstate.SignalIPXEScriptFetched, "")
	require.NoError(t, err) // a repeat writes nothing and reports nothing
	e.clock.Advance(30 * time.Second)

	// The callback completes the boot; the panicking observer changes
	// nothing for the caller.
	tok, err := e.tr.Token(uuidA, "job-1")
	require.NoError(t, err)
	h := bootstate.NewHandler(e.tr, bootstate.HandlerConfig{})
	code, out := post(t, h, http.MethodPost, fmt.Sprintf(`{"systemUUID":%q,"attemptID":"job-1","token":%q}`, uuidA, tok))
	require.Equal(t, http.StatusOK, code, out)
	// A refused callback (wrong token) reports nothing.
	code, _ = post(t, h, http.MethodPost, fmt.Sprintf(`{"systemUUID":%q,"attemptID":"job-2","token":%q}`, uuidB, tok))
	require.Equal(t, http.StatusUnauthorized, code)

	// uuidB's deadline passes; the timeout is reported once.
	e.clock.Advance(time.Minute)
	for range 2 {
		_, res, _, err := e.tr.BootResult(ctx, uuidB, "job-2")
		require.NoError(t, err)
		require.Equal(t, conditions.ResultTimedOut, res)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, []bootstate.SignalEvent{
		{SystemUUID: uuidA, AttemptID: "job-1", Signal: bootstate.SignalIPXEScriptFetched},
		{SystemUUID: uuidA, AttemptID: "job-1", Signal: bootstate.SignalBootStateReceived},
	}, rec.signals)
	require.Len(t, rec.done, 1)
	assert.Equal(t, conditions.ResultSucceeded, rec.done[0].Result)
	assert.Equal(t, bootstate.ReasonBooted, rec.done[0].Reason)
	assert.Equal(t, 30*time.Second, rec.done[0].Duration())
	require.Len(t, rec.timeouts, 1)
	assert.Equal(t, uuidB, rec.timeouts[0].SystemUUID)
	assert.Equal(t, conditions.ResultTimedOut, rec.timeouts[0].Result)
	assert.Equal(t, conditions.ReasonTimedOut, rec.timeouts[0].Reason)
	assert.Equal(t, 90*time.Second, rec.timeouts[0].Duration())
}
