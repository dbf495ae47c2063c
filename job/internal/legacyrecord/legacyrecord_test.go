package legacyrecord

import (
	"testing"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// TestRestoreByTheOldRules: each phase gets the conditions the old format
// left out, at that format's times; a task written with conditions (or an
// empty list) keeps what it was written with. The fixtures of whole old
// records are job's TestLegacyRecordsLoad.
func TestRestoreByTheOldRules(t *testing.T) {
	start := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	taskStart, done := start.Add(1500*time.Millisecond), start.Add(9*time.Second)
	written := []conditions.Condition{{Type: conditions.TypeCompleted, Status: conditions.True, Reason: "Kept"}}
	tasks := []task.Status{
		{Phase: task.PhaseDone, Reason: conditions.ReasonSucceeded, Message: "on", StartTime: timestamp.Ptr(taskStart), CompletionTime: timestamp.Ptr(done)},
		{Phase: task.PhaseStarted, StartTime: timestamp.Ptr(taskStart)},
		{Phase: task.PhasePending},
		{Phase: task.PhasePending, Conditions: []conditions.Condition{}},
		{Phase: task.PhasePending, Conditions: written},
		{Phase: task.PhaseDone}, // no completion time: the old format wrote its conditions out
	}
	Restore(tasks, timestamp.Ptr(start), 3)

	type want struct {
		completed, running conditions.Status
		reason             string
		completedAt        time.Time
		runningAt          time.Time
	}
	for i, w := range []want{
		{conditions.True, conditions.False, conditions.ReasonSucceeded, done, done},
		{conditions.False, conditions.True, conditions.ReasonRunning, start, taskStart.Truncate(time.Second)},
		{conditions.False, conditions.False, conditions.ReasonPending, start, start},
	} {
		cs := tasks[i].Conditions
		if len(cs) != 2 {
			t.Fatalf("task %d: %d conditions restored, want 2", i, len(cs))
		}
		c, r := cs[0], cs[1]
		if c.Type != conditions.TypeCompleted || c.Status != w.completed || c.Reason != w.reason || !c.LastTransitionTime.Equal(w.completedAt) || c.ObservedGeneration != 3 {
			t.Errorf("task %d: Completed restored as %+v, want %s %s at %s", i, c, w.completed, w.reason, w.completedAt)
		}
		if r.Type != conditions.TypeRunning || r.Status != w.running || !r.LastTransitionTime.Equal(w.runningAt) {
			t.Errorf("task %d: Running restored as %+v, want %s at %s", i, r, w.running, w.runningAt)
		}
	}
	if tasks[3].Conditions != nil {
		t.Errorf("a task written with an empty list got %v, want none", tasks[3].Conditions)
	}
	if len(tasks[4].Conditions) != 1 || tasks[4].Conditions[0].Reason != "Kept" {
		t.Errorf("a task written with conditions got %v, want them kept", tasks[4].Conditions)
	}
	if tasks[5].Conditions != nil {
		t.Errorf("a done task without a completion time got %v, want none", tasks[5].Conditions)
	}
}
