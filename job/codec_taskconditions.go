package job

import (
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// A task's two conditions repeat what its status says (phase, reason,
// message, and the job's or the task's start or completion time truncated
// to the second), and were 40% of a finished job record. The record codec
// leaves them out when they are exactly what the Stepper's transitions give
// (derivedTaskConditions) and the decoder puts them back
// (restoreTaskConditions), so every reader of a *Job sees them as before.
// The design and its compatibility are in docs/jobs.md ("In the stored
// record, a task's conditions are left out when they follow from it").
//
// The rules follow the Stepper (stepper.go): initialize marks every task
// Pending at the job's start; startTask marks it Running at the task's
// start, which flips Running (its time moves) but not Completed (its time
// stays the job's start); succeedTask, failTask and finish mark it
// Completed with the task's reason and message at its completion time,
// which flips both (Running's time stays the job's start for a task that
// never started). Times are as conditions.Set stores them
// (conditions.TransitionTime), messages the constants the transitions use.

// writeAllTaskConditions turns the leaving out off: tests set it to compare
// the hand encoder's bytes with go-json's (atomic: a test's leftover
// goroutines may still encode).
var writeAllTaskConditions atomic.Bool

// derivedTaskConditions returns the Completed and Running conditions the
// Stepper gives task status ts of a job whose status is st. ok is false
// when they do not follow from the fields: no job start time, a phase the
// Stepper does not write, a missing task time.
func derivedTaskConditions(st *Status, ts *task.Status) (completed, running conditions.Condition, ok bool) {
	if st.StartTime == nil {
		return completed, running, false
	}
	gen := st.ObservedGeneration
	jobStart := conditions.TransitionTime(st.StartTime.Time)
	cond := func(typ string, status conditions.Status, reason, msg string, at time.Time) conditions.Condition {
		c := conditions.Condition{Type: typ, Status: status, ObservedGeneration: gen, Reason: reason, Message: msg}
		c.LastTransitionTime.Time = at
		return c
	}
	switch ts.Phase {
	case task.PhasePending:
		const msg = conditions.MessagePending
		return cond(conditions.TypeCompleted, conditions.False, conditions.ReasonPending, msg, jobStart),
			cond(conditions.TypeRunning, conditions.False, conditions.ReasonPending, msg, jobStart), true
	case task.PhaseStarted, task.PhaseRequested:
		if ts.StartTime == nil {
			return completed, running, false
		}
		const msg = taskStartedMessage
		return cond(conditions.TypeCompleted, conditions.False, conditions.ReasonRunning, msg, jobStart),
			cond(conditions.TypeRunning, conditions.True, conditions.ReasonRunning, msg, conditions.TransitionTime(ts.StartTime.Time)), true
	case task.PhaseDone:
		if ts.CompletionTime == nil || ts.Reason == "" {
			return completed, running, false
		}
		done := conditions.TransitionTime(ts.CompletionTime.Time)
		runningAt := done
		if ts.StartTime == nil { // never started: Running stayed False
			runningAt = jobStart
		}
		return cond(conditions.TypeCompleted, conditions.True, ts.Reason, ts.Message, done),
			cond(conditions.TypeRunning, conditions.False, ts.Reason, ts.Message, runningAt), true
	}
	return completed, running, false
}

// taskConditionsLeftOut reports whether ts's conditions may be left out of
// the record: they are exactly the derived ones, times included in the same
// representation (== on time.Time: instant, zone and no monotonic
// reading), so the decoder restores them as they were. derivable is true
// when the decoder would restore conditions for ts (a task whose
// conditions are empty must then be written as "conditions":[]).
func taskConditionsLeftOut(st *Status, ts *task.Status) (leftOut, derivable bool) {
	if writeAllTaskConditions.Load() {
		return false, false
	}
	c, r, ok := derivedTaskConditions(st, ts)
	if !ok {
		return false, false
	}
	cs := ts.Conditions
	return len(cs) == 2 && sameCondition(&cs[0], &c) && sameCondition(&cs[1], &r), true
}

func sameCondition(a, b *conditions.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.ObservedGeneration == b.ObservedGeneration &&
		a.LastTransitionTime.Time == b.LastTransitionTime.Time && a.Reason == b.Reason && a.Message == b.Message
}

// restoreTaskConditions puts back, after a record is decoded, the
// conditions the encoder left out: a task with no "conditions" in the
// record gets the derived ones, and one written with "conditions":[] gets
// none (nil, as before it was encoded).
func restoreTaskConditions(st *Status) {
	for i := range st.Tasks {
		ts := &st.Tasks[i]
		if ts.Conditions != nil {
			if len(ts.Conditions) == 0 {
				ts.Conditions = nil
			}
			continue
		}
		if c, r, ok := derivedTaskConditions(st, ts); ok {
			ts.Conditions = []conditions.Condition{c, r}
		}
	}
}
