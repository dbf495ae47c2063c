// Package legacyrecord restores what job records written by earlier
// versions of package job left out: records written before they were plain
// JSON (CHANGELOG "Unreleased") left each task's two conditions out when
// they were exactly what the Stepper's transitions of that version gave,
// and wrote "conditions":[] for a task that had none where they would have
// been restored (docs/jobs.md, "Stored records"). [Restore] puts them
// back; package job calls it on every job record it decodes. The rules
// below are that format's, frozen: they describe what those records left
// out, not what today's Stepper writes, so they do not change with the
// Stepper. Today's records always carry every task's
// conditions, so the restore finds nothing to do on them (json.Marshal
// omits an empty list, and the Stepper gives every task of a started job
// its conditions at the start).
//
// The old rules: initialize marked every task Pending at the job's start;
// startTask marked it Running at the task's start (Running's time moves,
// Completed's stays the job's start); the task's completion marked both
// with its reason and message at its completion time (Running's time stays
// the job's start for a task that never started). Times were truncated to
// the second (conditions.TransitionTime).
package legacyrecord

import (
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// Restore gives each task status in tasks without conditions the ones the
// old format left out, and none to one written with an empty list. The
// job's StartTime and ObservedGeneration are the rest of its status the
// rules read.
func Restore(tasks []task.Status, jobStart *timestamp.Time, observedGeneration int64) {
	st := jobStatus{StartTime: jobStart, ObservedGeneration: observedGeneration}
	for i := range tasks {
		ts := &tasks[i]
		if ts.Conditions != nil {
			if len(ts.Conditions) == 0 {
				ts.Conditions = nil
			}
			continue
		}
		if c, r, ok := taskConditions(&st, ts); ok {
			ts.Conditions = []conditions.Condition{c, r}
		}
	}
}

// jobStatus is what the rules read of the job's status.
type jobStatus struct {
	StartTime          *timestamp.Time
	ObservedGeneration int64
}

// taskConditions returns the Completed and Running conditions the old
// format left out of task status ts of a job whose status is st; ok is
// false when it wrote them out (they did not follow from the fields).
func taskConditions(st *jobStatus, ts *task.Status) (completed, running conditions.Condition, ok bool) {
	if st.StartTime == nil {
		return completed, running, false
	}
	jobStart := conditions.TransitionTime(st.StartTime.Time)
	cond := func(typ string, status conditions.Status, reason, msg string, at time.Time) conditions.Condition {
		c := conditions.Condition{Type: typ, Status: status, ObservedGeneration: st.ObservedGeneration, Reason: reason, Message: msg}
		c.LastTransitionTime.Time = at
		return c
	}
	switch ts.Phase {
	case task.PhasePending:
		return cond(conditions.TypeCompleted, conditions.False, conditions.ReasonPending, conditions.MessagePending, jobStart),
			cond(conditions.TypeRunning, conditions.False, conditions.ReasonPending, conditions.MessagePending, jobStart), true
	case task.PhaseStarted, task.PhaseRequested:
		if ts.StartTime == nil {
			return completed, running, false
		}
		const msg = "started" // the old taskStartedMessage
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
