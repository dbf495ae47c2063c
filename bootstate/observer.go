package bootstate

import (
	"fmt"
	"time"

	"github.com/bmckit/bmckit/conditions"
)

// Observer receives a [Tracker]'s events for metrics and traces (set it in
// Config.Observer; docs/observability.md has the decisions, and
// contrib/prometheus an adapter). Every field is optional; a nil func is not
// called.
//
// The funcs run synchronously on the goroutine that made the event (an HTTP
// handler that stored a signal, Run's loop or a BootResult or Wait caller
// that applied a deadline), after the write and outside every lock: they
// must be fast and safe for concurrent use, and hand slow work to a
// goroutine of their own. Events are copies; a panic in a func is recovered
// and logged.
//
// Events carry the system UUID and attempt ID for logs and traces; they are
// unbounded, so do not use them as metric labels. Signal names are bounded
// by the host's configuration (Config.CallbackSignals, FetchConfig.Signal,
// RecordSignal's callers). Events never carry tokens, the secret or request
// paths.
type Observer struct {
	// SignalStored is called once a signal is in the store: posted to the
	// Handler, recorded by FetchMiddleware or by RecordSignal. A repeated
	// signal (already recorded, nothing written) and a refused one (401,
	// 403, 404, 409, or a store failure) report nothing.
	SignalStored func(SignalEvent)
	// BootCompleted is called once an attempt's success is stored (its
	// policy met).
	BootCompleted func(BootEvent)
	// BootTimedOut is called once an attempt's timeout is stored (at most
	// once per attempt, by the goroutine whose write marked it, as
	// Config.OnTimeout).
	BootTimedOut func(BootEvent)
}

// SignalEvent is a stored signal.
type SignalEvent struct {
	SystemUUID string
	AttemptID  string
	// Signal is the signal's name, e.g. [SignalBootStateReceived].
	Signal string
}

// BootEvent is a boot attempt that ended.
type BootEvent struct {
	SystemUUID string
	AttemptID  string
	// Result is Succeeded or TimedOut.
	Result conditions.Result
	// Reason is a CamelCase word fit for a label: Booted, TimedOut, or a
	// stage's timeout reason (e.g. IPXETimeout; see ReasonStageTimeout).
	Reason string
	// Stage is the signal whose own deadline ended the attempt, if one did.
	Stage string
	// Start is when the attempt was opened; End when this tracker stored
	// its end, by the tracker's clock.
	Start, End time.Time
}

// Duration is End minus Start.
func (e BootEvent) Duration() time.Duration { return e.End.Sub(e.Start) }

func (t *Tracker) observeSignal(rec Record, signal string) {
	if f := t.obs.SignalStored; f != nil {
		t.emit(func() { f(SignalEvent{SystemUUID: rec.SystemUUID, AttemptID: rec.AttemptID, Signal: signal}) })
	}
}

func (t *Tracker) observeEnd(rec Record, f func(BootEvent)) {
	if f == nil {
		return
	}
	e := BootEvent{
		SystemUUID: rec.SystemUUID, AttemptID: rec.AttemptID, Result: rec.Result, Reason: rec.Reason(),
		Stage: rec.TimedOutStage, Start: rec.StartedAt, End: t.clock.Now(),
	}
	t.emit(func() { f(e) })
}

// emit runs an observer call, recovering (and logging) a panic.
func (t *Tracker) emit(call func()) {
	defer func() {
		if p := recover(); p != nil {
			t.log.Error(fmt.Errorf("panic: %v", p), "bootstate observer panicked; event dropped")
		}
	}()
	call()
}
