// Package hookcall calls a host's hooks (package job/observe's observer
// functions) so that a hook cannot unwind its caller: a panic is recovered
// and logged, and the event dropped. Package job calls its observer
// through it, between a step's writes, and so does the Runner's scheduling
// engine (through [Wrap]).
package hookcall

import (
	"fmt"

	"github.com/go-logr/logr"
)

// Emit calls f(e) if f is set, recovering (and logging to log) a panic, so
// an observer cannot unwind a step between its writes.
func Emit[E any](log logr.Logger, f func(E), e E) {
	if f == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error(fmt.Errorf("panic: %v", p), "job observer panicked; event dropped")
		}
	}()
	f(e)
}

// Wrap is f (nil: nil) called through Emit: the scheduling engine's hooks
// (sched.Config.Queue, LeaseLost).
func Wrap[E any](log logr.Logger, f func(E)) func(E) {
	if f == nil {
		return nil
	}
	return func(e E) { Emit(log, f, e) }
}
