package bmcevents

import (
	"fmt"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/timestamp"
)

// TypeCriticalEvent is the condition [CriticalEvents.Condition] makes:
// True once a BMC reported a Critical event.
const TypeCriticalEvent = "CriticalBMCEvent"

// CriticalEvents are one BMC's Critical events in a batch.
type CriticalEvents struct {
	// Source is the BMC.
	Source string
	// Events are its Critical events, in the batch's order (the order
	// they were stored).
	Events []Event
}

// Critical picks the Critical events of a batch (what a [Follower]'s Next
// returned), grouped by BMC in the order each BMC first appears. A host
// (or the monitor) calls it per batch and, for each group, sets the
// condition on the machine record with conditions.Set(&conds,
// group.Condition()); metrics count every event instead (Observer.Stored).
func Critical(events []Event) []CriticalEvents {
	var out []CriticalEvents
	at := map[string]int{}
	for _, e := range events {
		if !e.Critical() {
			continue
		}
		i, ok := at[e.Source]
		if !ok {
			i = len(out)
			at[e.Source] = i
			out = append(out, CriticalEvents{Source: e.Source})
		}
		out[i].Events = append(out[i].Events, e)
	}
	return out
}

// Condition is the TypeCriticalEvent condition for the group: Status
// True, reason "Critical", a message naming how many and the latest
// (its MessageId, system and message, bounded), its transition time the
// latest event's (Event.Time, else Event.Received). Events are history:
// nothing here sets it back to False; the host does that when the
// operator has dealt with it (or drops it with conditions.Remove), or
// leaves it to the monitor's Healthy condition, which follows the BMC's
// current health.
func (c CriticalEvents) Condition() conditions.Condition {
	if len(c.Events) == 0 {
		return conditions.Condition{Type: TypeCriticalEvent, Status: conditions.False, Reason: "NoCriticalEvent"}
	}
	last := c.Events[len(c.Events)-1]
	at := last.Time
	if at.IsZero() {
		at = last.Received
	}
	where := "the BMC"
	if last.System != "" {
		where = "system " + last.System
	}
	msg := fmt.Sprintf("%d critical BMC event(s); latest %s on %s at %s: %s", len(c.Events),
		clip(last.MessageID, maxText), where, at.UTC().Format(time.RFC3339), clip(last.Message, 512))
	return conditions.Condition{Type: TypeCriticalEvent, Status: conditions.True, Reason: "Critical",
		Message: msg, LastTransitionTime: timestamp.New(conditions.TransitionTime(at))}
}
